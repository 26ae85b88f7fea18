#pragma once
/// Granulometry of a binary 3D volume: the number of foreground voxels left by the opening of
/// every size n, on the CPU (multi-threaded) or on one GPU.
///
/// Definition (issue 4): opening of size n = erosion then dilation by the element of size n;
/// voxels outside the volume are ignored (an erosion only looks at voxels inside the volume, a
/// dilation only reaches voxels inside it). Both steps are thresholds of exact distance
/// transforms in the element's metric: erosion_n = {d(·, background) > r(n)} and
/// opening_n = {d(·, erosion_n) ≤ r(n)} with r(n) = radius_limit(element, n).
#include <cstdint>
#include <functional>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/morphology/element.hpp"

namespace weft::morphology {

/// How a size map is handed out: the value n (the radius, in voxels) or 2n + 1 (the diameter)
/// of the largest kept opening, in `dtype`, with the background the type's largest value (u8:
/// 255, u16: 65535) or −1 in i32. The default is the map as computed (i32 radii). A narrow form
/// is made where the map was computed, so a GPU's map crosses to the host in 1 or 2 bytes a voxel.
struct SizeMapForm {
  DType dtype = DType::i32;
  bool diameter = false;
  /// The smallest of u8, u16, i32 that holds every value for sizes up to `max_size`.
  [[nodiscard]] static SizeMapForm smallest(int max_size, bool diameter);
  [[nodiscard]] std::int64_t background() const noexcept {
    return dtype == DType::u8 ? 255 : dtype == DType::u16 ? 65535 : -1;
  }
  /// The value stored for size n.
  [[nodiscard]] std::int64_t value(std::int64_t n) const noexcept { return diameter ? 2 * n + 1 : n; }
  [[nodiscard]] bool as_computed() const noexcept { return dtype == DType::i32 && !diameter; }
};

struct GranulometryOptions {
  Element element = Element::octahedron;
  int max_size = -1;      ///< N; -1: until nothing remains (a volume without background is an error)
  bool size_map = false;  ///< also compute the opening function
  SizeMapForm size_map_form;  ///< its form (ConfigError if a size's value does not fit)
  /// Called after each size is done (n, last n), e.g. for a progress bar; may be empty.
  std::function<void(int, int)> on_size;
  /// Called before the opening of each size n = 1 .. last + 1 (the last one checks that nothing
  /// remains), e.g. to mark a phase of the task in a trace; may be empty.
  std::function<void(int, int)> on_size_start;
  /// Planes [first_plane, end_plane) of axis 0 are counted (and make the size map); the others
  /// are a halo that only shapes the openings, for a slab of a larger volume (slabs.hpp says how
  /// wide it must be). end_plane −1: the last plane. With a halo, max_size must be given.
  std::int64_t first_plane = 0;
  std::int64_t end_plane = -1;
  /// GPU octahedra on bits: cross steps fused per launch, 1 to 4 (0: the tuned default). For
  /// benchmarks and tests; every value gives the same result.
  int bit_steps = 0;
  /// GPU balls: the row pass, two windowed passes and a count per size instead of the shell
  /// method (ball_shell_gpu.cu). For benchmarks and tests; both give the same result.
  bool ball_windowed = false;
};

struct GranulometryResult {
  std::vector<std::int64_t> remaining;  ///< remaining[n], n = 0 (the input) .. N
  std::vector<std::int64_t> spectrum;   ///< spectrum[n] = remaining[n] − remaining[n+1], n = 0 .. N
  /// [counted planes,Y,X] when asked (empty otherwise), host for the CPU path, device for the GPU
  /// path: the largest n ≤ N whose opening keeps the voxel in the options' size_map_form.
  Array size_map;
};

/// Granulometry of a host u8 mask [Z,Y,X] (non-zero = foreground) on the CPU.
[[nodiscard]] GranulometryResult granulometry_cpu(const Array& mask, const GranulometryOptions& options);

/// Distance (in the element's metric, squared for balls) from every voxel to the nearest voxel
/// of the volume whose mask value is (non-zero == `seed_foreground`); kInfinity if none. i32.
[[nodiscard]] Array distance_transform_cpu(const Array& mask, Element element, bool seed_foreground);

/// Largest distance to the background (the element's metric, squared for balls) over planes
/// [first_plane, end_plane) of a host u8 mask, the background looked for in the whole mask;
/// device::kInfinity if the mask has no background, 0 if those planes have no foreground.
[[nodiscard]] std::int64_t max_distance_cpu(const Array& mask, Element element, std::int64_t first_plane = 0,
                                            std::int64_t end_plane = -1);

/// Opening of a host u8 mask by the element of size n, as a u8 0/1 mask (CPU).
[[nodiscard]] Array opening_cpu(const Array& mask, Element element, int n);

#if defined(WEFT_HAVE_CUDA)
/// The same on the GPU: `mask` is a u8 array on the current device; work is ordered on
/// `stream` (a cudaStream_t) and the call returns when the curve is known. The size map stays on
/// that GPU.
[[nodiscard]] GranulometryResult granulometry_gpu(const Array& mask, const GranulometryOptions& options,
                                                  void* stream);
/// max_distance_cpu on the GPU (mask on the current device, work ordered on `stream`).
[[nodiscard]] std::int64_t max_distance_gpu(const Array& mask, Element element, std::int64_t first_plane,
                                            std::int64_t end_plane, void* stream);
#endif

}  // namespace weft::morphology
