#pragma once
// The granulometry loop, written once for every backend (CPU, CUDA). Internal to the library.
//
// A Backend provides, over the mask it was built with:
//   std::int64_t count_foreground();
//   std::int64_t distance_to_background();   // keeps D = d(·, background), returns max D
//   void init_size_map();                    // foreground → 0, background → −1
//   void opening_count(int n, std::int64_t r, bool size_map, std::int64_t* count);
//        // *count = |{p : d(p, {D > r}) ≤ r}| (written at the latest by flush()), and the
//        // size map ← n on those voxels when asked
//   void flush();                            // every pending count written
//   Array take_size_map();
#include <string>

#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology::detail {

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
  if (options.size_map) backend.init_size_map();
  GranulometryResult result;
  result.remaining.assign(static_cast<std::size_t>(last) + 2, 0);
  result.remaining[0] = total;
  for (int n = 1; n <= last + 1; ++n) {
    const std::int64_t r = radius_limit(element, n);
    if (total > 0 && r < max_distance) backend.opening_count(n, r, options.size_map && n <= last, &result.remaining[n]);
    if (options.on_size && n <= last) options.on_size(n, last);
  }
  backend.flush();
  result.spectrum.resize(static_cast<std::size_t>(last) + 1);
  for (int n = 0; n <= last; ++n) result.spectrum[n] = result.remaining[n] - result.remaining[n + 1];
  result.remaining.pop_back();
  if (options.size_map) result.size_map = backend.take_size_map();
  return result;
}

}  // namespace weft::morphology::detail
