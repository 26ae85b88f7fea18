#pragma once
// CUDA distance transforms of the granulometry (internal to weft_tasks_morphology).
// Layers: launchers here → kernels (distance_gpu.cu) → tile functions → line_transforms.hpp.
#include <cstdint>

#include <cuda_runtime.h>

#include "weft/tasks/morphology/element.hpp"

namespace weft::morphology::cuda {

/// Tuning of the distance kernels. Chosen for sm_90 (H100/H200); to be revisited with
/// bench/results/granulometry.json once measured on the GPU machine.
struct DistancePolicy {
  static constexpr int kRowThreads = 256;    // one block per x-row, block scans over tiles
  static constexpr int kRowItems = 4;        // items per thread per tile (tile = 1024 voxels)
  static constexpr int kColumnThreads = 128; // one thread per y- or z-line
  static constexpr int kReduceThreads = 256;
  static constexpr int kPackedChunk = 8;     // words loaded ahead per thread in the u8 column passes
  // Windowed parabola passes of the ball openings: a block is kWindowX consecutive x (one warp
  // wide) by kWindowY warps, each thread kWindowItems consecutive outputs along the line.
  static constexpr int kWindowX = 32;
  static constexpr int kWindowY = 8;
  static constexpr int kWindowItems = 8;
  // Packed windows (u16x2 parabola, u8x4 chessboard) up to this radius: shared (64 + 2·150 + 8)
  // rows × 128 B < 48 KiB, r + 1 + (w + 7)² < 65536 (parabola) and w + 7 < 256 (chessboard).
  static constexpr int kPackedMaxRadius = 150;
  // Octahedron openings on bits (octahedron_bits_gpu.cu) up to this radius, the distance passes
  // beyond. Estimate, not measured: per size one pack of the u8 distances plus ⌈r/2⌉ launches
  // over 1/8 byte per voxel, against about four u8 passes for the distance method.
  static constexpr int kBitMaxRadius = 128;
  // Cross steps per launch (GranulometryOptions::bit_steps overrides). Measured by
  // granulometry_bench (H200, 1024³, N = 50; `bit_steps` in bench/results/granulometry.json):
  // 1 step 0.215 s, 2 steps 0.376 s, 3 steps 0.572 s, 4 steps 0.772 s.
  static constexpr int kBitSteps = 1;
  static_assert(kWindowX == 32, "one warp per line row of the window tile");
  static_assert((kPackedMaxRadius + 1) * (kPackedMaxRadius + 1) + (kPackedMaxRadius + 7) * (kPackedMaxRadius + 7) <
                65536);
  static_assert(kRowThreads % 32 == 0 && kColumnThreads % 32 == 0 && kReduceThreads % 32 == 0);
};

struct VolumeDims {
  std::int64_t z, y, x;
  [[nodiscard]] std::int64_t voxels() const { return z * y * x; }
};

/// Which voxels are seeds of a transform: background of a u8 mask, or distance > r.
struct SeedRule {
  const std::uint8_t* mask = nullptr;  ///< seeds where mask == 0 (if set)
  const std::int32_t* distance = nullptr;
  std::int64_t above = 0;              ///< seeds where distance > above (if distance set)
  const std::uint8_t* distance8 = nullptr;  ///< if set instead of distance: min(distance, 255), above < 255
  const std::uint16_t* distance16 = nullptr;  ///< if set instead: a bounded ball transform, above ≤ its bound
  /// Seeds where within ≤ above (a pass's u8 output), read only by the passes compiled for it
  /// (is_seed<true>, launch_rows<T, true>); the other passes never look at it.
  const std::uint8_t* within = nullptr;
};

/// f ← distance to the nearest seed (element's metric, squared for balls); kInfinity if none.
/// `stacks` holds 3 × voxels int32 (envelope stacks; unused for octahedra).
void launch_distance_transform(const SeedRule& seeds, std::int32_t* f, std::int32_t* stacks, const VolumeDims& dims,
                               Element element, cudaStream_t stream);

/// Opening of size n from the erosion distances D: *count += |{p : d(p, {D > r}) ≤ r}| and
/// size_map ← n there (if set). `work` holds one i32 per voxel; the passes use it as u16 (values
/// saturate at 65535) except for balls of r = n² ≥ 65535. `stacks` holds 3 × voxels i32 (balls).
/// `distance16` (may be null; balls) is D from launch_bounded_ball_distance with bound ≥ r, used
/// instead of `distance` (which may then be null); with it, the shell method of
/// launch_ball_shell_opening_count where it applies, unless `ball_windowed`.
/// `distance8` (may be null) is min(D, 255): octahedra and cubes with r < 255 then run on u8
/// (values saturate at 255), their y and z passes on words of 4 voxels when X % 4 == 0. For
/// balls it is launch_ball_levels of distance16 (the shell method's pack reads it).
/// Only voxels [count_first, count_first + count_voxels) of the volume are counted (and written
/// in `size_map`, which starts at count_first): the others only shape the opening.
void launch_opening_count(const std::int32_t* distance, const std::uint16_t* distance16,
                          const std::uint8_t* distance8, std::int64_t r, void* work, std::int32_t* stacks,
                          const VolumeDims& dims, Element element, std::int32_t* size_map, int n,
                          std::int64_t count_first, std::int64_t count_voxels, unsigned long long* count,
                          cudaStream_t stream, int bit_steps = 0, bool ball_windowed = false);

/// Whether launch_ball_row_distance takes a box of dims d (X ≥ 32).
[[nodiscard]] bool ball_row_distance_applies(const VolumeDims& d);
/// f ← the squared distance along x to the nearest background voxel (mask = 0) of the row, 0xFFFF
/// beyond 63 or none (ball_shell_gpu.cu: foreground bits, then 64-bit windows each side). `bits`
/// holds 2 · ⌈X/32⌉ words per row (≤ 2 bytes per voxel for X ≥ 32).
void launch_ball_row_distance(const std::uint8_t* mask, std::uint16_t* f, void* bits, const VolumeDims& d,
                              cudaStream_t stream);

/// levels ← 0 where distance16 = 0, else min(255, ⌈√distance16⌉): {D > w²} = {level > w}.
void launch_ball_levels(const std::uint16_t* distance16, std::uint8_t* levels, std::int64_t voxels,
                        cudaStream_t stream);

/// Whether launch_ball_shell_opening_count takes the ball opening of r on a box of dims d
/// (X even and ≥ 32, ⌊√r⌋ ≤ 63, the counted voxels whole planes).
[[nodiscard]] bool ball_shell_applies(const VolumeDims& d, std::int64_t r, std::int64_t count_first,
                                      std::int64_t count_voxels);
/// Ball opening of r (ball_shell_gpu.cu): *count += |{p counted : d(p, {D > r}) ≤ r}| and
/// size_map ← n there (if set), from `distance16` (launch_bounded_ball_distance with bound ≥ r):
/// a pack of the erosion and the rest of the foreground to bits (counting the erosion), a y pass
/// that turns the bits into x distances, takes windowed minima on u16 pairs and stores each
/// voxel's reach along z, and a z pass that decides the rest of the foreground by two sweeps over
/// those reaches, O(1) per voxel. `levels` (may be null) is launch_ball_levels of distance16: the
/// pack reads it instead (half the bytes) when r is a perfect square. `work` holds 4 bytes per voxel.
void launch_ball_shell_opening_count(const std::uint16_t* distance16, const std::uint8_t* levels, std::int64_t r,
                                     void* work, const VolumeDims& d,
                                     std::int32_t* size_map, int n, std::int64_t count_first,
                                     std::int64_t count_voxels, unsigned long long* count, cudaStream_t stream);

/// Whether launch_bit_octahedron_opening_count takes the opening of radius r of a box of dims d
/// (X % 32 == 0, 1 ≤ r ≤ DistancePolicy::kBitMaxRadius, no size map).
[[nodiscard]] bool bit_octahedron_applies(const VolumeDims& d, std::int64_t r, bool size_map);
/// Octahedron opening of radius r on bits: *count += |{p counted : d_L1(p, {D > r}) ≤ r}|, with
/// D from `distance8` (min(D, 255)), the dilation confined to the box d; the counted voxels
/// [count_first, count_first + count_voxels) are whole planes of the box. `work` holds
/// 2 × voxels / 8 bytes. `steps`: cross steps per launch, 1 to 4 (0: DistancePolicy::kBitSteps).
void launch_bit_octahedron_opening_count(const std::uint8_t* distance8, std::int64_t r, void* work,
                                         const VolumeDims& d, std::int64_t count_first, std::int64_t count_voxels,
                                         unsigned long long* count, cudaStream_t stream, int steps = 0);

/// ⌊√r⌋ exactly (r ≥ 0): the window half-width of the ball passes for squared radius r.
[[nodiscard]] int window_radius(std::int64_t r);

/// One y- (axis 1) or z-pass (axis 0) of the squared Euclidean transform restricted to a window:
/// out(p) = min(r + 1, min_{|d| ≤ w} in(p + d) + d²) along the lines of `axis`, with w = ⌊√r⌋.
/// Exact wherever the full transform is ≤ r (its minimiser is within w); > r exactly elsewhere.
/// `in` and `out` are distinct u16 volumes; r < 65535. Only positions [line_first, line_end) of
/// each line are sure to be written (line_end < 0: to the line's end); the whole line is read.
void launch_parabola_window(const std::uint16_t* in, std::uint16_t* out, const VolumeDims& dims, int axis,
                            std::int64_t r, cudaStream_t stream, std::int64_t line_first = 0,
                            std::int64_t line_end = -1);

/// *count += number of non-zero mask voxels; size_map (if set) ← 0 on them, −1 elsewhere.
void launch_count_mask(const std::uint8_t* mask, std::int64_t voxels, std::int32_t* size_map,
                       unsigned long long* count, cudaStream_t stream);
/// out ← squared Euclidean distance to the nearest background voxel (mask == 0) where it is
/// ≤ bound, bound + 1 elsewhere (bound < 65535): the erosion distances of every ball of
/// n² ≤ bound, from one row pass and two windowed passes. `scratch` holds 2 × voxels u16. Only
/// planes [z_first, z_end) of out are sure to be written (z_end < 0: every plane); the others
/// still shape them.
void launch_bounded_ball_distance(const std::uint8_t* mask, std::uint16_t* out, std::uint16_t* scratch,
                                  const VolumeDims& dims, std::int64_t bound, cudaStream_t stream,
                                  std::int64_t z_first = 0, std::int64_t z_end = -1);
/// out ← min(255, L1 distance to the nearest background voxel) as u8: the octahedron's erosion
/// distances for every size < 255 (row pass and two cone passes on u8).
void launch_clamped_l1_distance(const std::uint8_t* mask, std::uint8_t* out, const VolumeDims& dims,
                                cudaStream_t stream);
/// out ← chessboard (cube) distance to the nearest background voxel where it is ≤ bound,
/// bound + 1 elsewhere, as u8 (bound ≤ DistancePolicy::kPackedMaxRadius, X % 4 == 0): the
/// cube's erosion distances for every size ≤ bound, from a row pass and two windowed passes on
/// words of 4 voxels. `scratch` holds voxels u8. Only planes [z_first, z_end) of out are sure to
/// be written (z_end < 0: every plane).
void launch_bounded_chessboard_distance(const std::uint8_t* mask, std::uint8_t* out, std::uint8_t* scratch,
                                        const VolumeDims& dims, std::int64_t bound, cudaStream_t stream,
                                        std::int64_t z_first = 0, std::int64_t z_end = -1);
/// *maximum = max(*maximum, max f) over u8 values.
void launch_max_u8(const std::uint8_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream);
/// *maximum = max(*maximum, max f) over u16 values.
void launch_max_u16(const std::uint16_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream);
/// out ← min(f, 255) as u8.
void launch_clamp_u8(const std::int32_t* f, std::uint8_t* out, std::int64_t voxels, cudaStream_t stream);
/// *maximum = max(*maximum, max f).
void launch_max(const std::int32_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream);

}  // namespace weft::morphology::cuda
