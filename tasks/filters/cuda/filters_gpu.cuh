#pragma once
// Internal to the CUDA filters: image views, tuning policies and the shared-memory tile loader.
#include <cstdint>

#include <cuda_runtime.h>

#include "../src/detail/element.hpp"

namespace weft::filters::device {

/// Median tiles: each block covers block_x × (block_y · rows_per_thread) outputs of one slice.
/// Chosen for correctness first (bench/results/filters.json not yet run on a GPU); retune there.
/// Packed u8/u16 3×3 and 5×5 (packed_median.hpp): each thread one strip of 16 bytes ×
/// packed_rows_3 (or _5) rows, blocks of packed_block_x × packed_block_y strips. Chosen by
/// counting (not yet measured): a warp reads 512 contiguous bytes per row; 4 rows per 3×3 strip
/// (two row pairs) re-reads 6/4 rows from L1/L2 but leaves 2048² u8 with 64 K threads; packed =
/// false selects the tile kernel above for every type.
struct MedianPolicy {
  int block_x = 32;
  int block_y = 8;
  int rows_per_thread = 2;
  bool packed = true;
  int packed_block_x = 32;
  int packed_block_y = 4;
  int packed_rows_3 = 4;
  int packed_rows_5 = 2;
};
/// Full convolution: tile of (block_y · rows_per_thread + 2r) × (block_x + 2r) floats in shared
/// memory, each thread keeping rows_per_thread accumulators (register blocking).
/// Radius ≤ blocked_max_radius (at most 5): the blocked kernel instead, each thread a blocked_columns ×
/// blocked_rows block of outputs read from float4 rows of the tile (each tile value loaded once
/// per thread row, not once per tap: (4 + 2r)(8 + 2r) / 32 shared loads per output instead of
/// (2r + 1)²), weights in registers, the tile gathered without border arithmetic when inside.
/// Chosen by counting (not yet measured); blocked = false selects the tile kernel above.
struct ConvolvePolicy {
  int block_x = 32;
  int block_y = 8;
  int rows_per_thread = 4;
  bool blocked = true;
  int blocked_max_radius = 5;
  int blocked_block_x = 32;
  int blocked_block_y = 4;
  int blocked_columns = 4;
  int blocked_rows = 8;
};
/// Separable passes: rows (each thread columns_per_thread outputs), then columns.
struct SeparablePolicy {
  int block_x = 32;
  int block_y = 8;
  int columns_per_thread = 4;
  int rows_per_thread = 4;
};
[[nodiscard]] constexpr MedianPolicy median_policy(int /*compute_capability*/) { return {}; }
[[nodiscard]] constexpr ConvolvePolicy convolve_policy(int /*compute_capability*/) { return {}; }
[[nodiscard]] constexpr SeparablePolicy separable_policy(int /*compute_capability*/) { return {}; }
inline constexpr int kMaxThreads = 256;
static_assert(median_policy(90).block_x * median_policy(90).block_y <= kMaxThreads);
static_assert(median_policy(90).packed_block_x * median_policy(90).packed_block_y <= kMaxThreads);
static_assert(median_policy(90).packed_rows_3 % 2 == 0, "3×3 strips take rows in pairs");
static_assert(convolve_policy(90).block_x * convolve_policy(90).block_y <= kMaxThreads);
static_assert(convolve_policy(90).blocked_block_x * convolve_policy(90).blocked_block_y <= kMaxThreads);
static_assert(convolve_policy(90).blocked_columns == 4, "one float4 per tile read");
static_assert(convolve_policy(90).blocked_max_radius <= 5, "blocked kernels instantiated up to radius 5");
static_assert(separable_policy(90).block_x * separable_policy(90).block_y <= kMaxThreads);

/// Loads rows [y0 - ry, y0 + rows + ry) × columns [x0 - rx, x0 + cols + rx) of slice z (border
/// applied) into `tile` (pitch cols + 2rx), converted by `convert`, with all threads of the block.
template <class S, class T, class Convert>
__device__ void load_tile(S* tile, const T* __restrict__ src, Extent e, long long z, long long y0, long long x0,
                          int rows, int cols, int ry, int rx, int border, Convert convert) {
  const int pitch = cols + 2 * rx;
  const int count = (rows + 2 * ry) * pitch;
  const int threads = blockDim.x * blockDim.y;
  for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < count; i += threads) {
    const int ty = i / pitch;
    const int tx = i - ty * pitch;
    const long long yi = border_index(y0 - ry + ty, e.ny, border);
    const long long xi = border_index(x0 - rx + tx, e.nx, border);
    tile[i] = (yi < 0 || xi < 0) ? S(0) : convert(src[(z * e.ny + yi) * e.nx + xi]);
  }
}

}  // namespace weft::filters::device
