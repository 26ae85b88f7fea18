#pragma once
// The granulometry loop, written once for every backend (CPU, CUDA). Internal to the library.
//
// A Backend is built over a mask [Z,Y,X] and the counted planes [first, end) (Planes below) and
// provides:
//   std::int64_t count_foreground();         // over the counted planes
//   std::int64_t distance_to_background();   // keeps D = d(·, background) on the planes the
//                                            // openings read (at least the counted ones ± (N + 1)
//                                            // for a max size N, else the whole mask), returns
//                                            // max D over at least those planes
//   void init_size_map();                    // counted planes: foreground → 0, background → −1
//   void opening_count(int n, std::int64_t r, bool size_map, std::int64_t* count);
//        // *count = |{p counted : d(p, {D > r}) ≤ r}| (written at the latest by flush()), and
//        // the size map ← n on those voxels when asked; computed on planes(n) only
//   void flush();                            // every pending count written
//   Array take_size_map(const SizeMapForm& form);  // the map in that form
//
// Why a slab with a halo gives exact counts on its own planes (slabs.hpp chooses the halo):
// with the element of size n reaching n planes along z (true of the three metrics: |dz| ≤ L1,
// L∞ and Euclidean distances) and the slab extended by h ≥ 2n planes on each side (clamped at
// the volume's faces):
// - D on the slab, D', is the distance to the background inside the slab: D' ≥ D, equal
//   wherever the nearest background voxel lies in the slab. For q within n planes of the
//   counted ones, D(q) ≤ r(n) means a background voxel within n planes of q, so within 2n ≤ h
//   planes of the counted ones, so inside the slab: D'(q) ≤ r(n) ⇔ D(q) ≤ r(n). The erosion
//   {D > r(n)} is exact on those planes.
// - A counted voxel p is in the opening iff some q with D(q) > r(n) lies within r(n) of p, and
//   such q are within n planes of p. So the dilation only needs the erosion on the counted
//   planes ± n, which is exact, and may be computed on those planes alone (planes(n)): the
//   volume's border convention (an erosion ignores voxels outside, a dilation only reaches
//   voxels inside) is the slab's own at the volume's faces and never matters elsewhere.
// - A size whose r(n) is at least max D' over the planes its opening reads (the counted ones ± n,
//   within those ± (N + 1)) has an empty erosion there (D ≤ D'), hence zero counted voxels:
//   skipping it is exact.
#include <algorithm>
#include <string>

#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology::detail {

/// The counted planes [first, end) of a mask of `depth` planes.
struct Planes {
  std::int64_t depth = 0, first = 0, end = 0;
  [[nodiscard]] static Planes of(std::int64_t depth, const GranulometryOptions& o) {
    const std::int64_t end = o.end_plane < 0 ? depth : o.end_plane;
    if (o.first_plane < 0 || o.first_plane > end || end > depth)
      throw ConfigError("granulometry: counted planes [" + std::to_string(o.first_plane) + ", " +
                        std::to_string(o.end_plane) + ") outside a mask of " + std::to_string(depth) + " planes");
    if (o.max_size < 0 && (o.first_plane > 0 || end < depth))
      throw ConfigError("granulometry: a slab with a halo needs the largest size (max_size >= 0)");
    return {depth, o.first_plane, end};
  }
  [[nodiscard]] bool whole() const { return first == 0 && end == depth; }
  [[nodiscard]] std::int64_t count() const { return end - first; }
  /// Planes the opening of size n is computed on: the counted ones ± n (the element's reach).
  [[nodiscard]] std::int64_t from(int n) const { return std::max<std::int64_t>(0, first - n); }
  [[nodiscard]] std::int64_t to(int n) const { return std::min<std::int64_t>(depth, end + n); }
};

template <class Backend>
GranulometryResult run_granulometry(Backend& backend, const GranulometryOptions& options) {
  const Element element = options.element;
  const std::int64_t total = backend.count_foreground();
  std::int64_t max_distance = 0;
  if (total > 0) max_distance = backend.distance_to_background();
  int last = options.max_size;
  if (last < 0) {
    if (total > 0 && max_distance >= device::kInfinity)
      throw ConfigError("the volume has no background voxel, so no opening removes anything; give --max-size N");
    last = 0;
    // Erosion (hence opening) n is empty once r(n) ≥ max D: that n is the last row.
    while (total > 0 && radius_limit(element, last) < max_distance) ++last;
  }
  if (options.size_map) {
    const SizeMapForm& form = options.size_map_form;
    if (form.background() >= 0 && form.value(last) >= form.background())
      throw ConfigError("granulometry: size map values up to " + std::to_string(form.value(last)) + " do not fit in " +
                        std::string(dtype_name(form.dtype)));
    backend.init_size_map();
  }
  GranulometryResult result;
  result.remaining.assign(static_cast<std::size_t>(last) + 2, 0);
  result.remaining[0] = total;
  for (int n = 1; n <= last + 1; ++n) {
    if (options.on_size_start) options.on_size_start(n, last);
    const std::int64_t r = radius_limit(element, n);
    if (total > 0 && r < max_distance) backend.opening_count(n, r, options.size_map && n <= last, &result.remaining[n]);
    if (options.on_size && n <= last) options.on_size(n, last);
  }
  backend.flush();
  result.spectrum.resize(static_cast<std::size_t>(last) + 1);
  for (int n = 0; n <= last; ++n) result.spectrum[n] = result.remaining[n] - result.remaining[n + 1];
  result.remaining.pop_back();
  if (options.size_map) result.size_map = backend.take_size_map(options.size_map_form);
  return result;
}

}  // namespace weft::morphology::detail
