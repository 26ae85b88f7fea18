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

/// Loads rows [y0 − ry, y0 + rows + ry) × columns [x0 − rx, x0 + cols + rx) of slice z (border
/// applied) into `tile` (row pitch `pitch`), converted by `convert`, with all threads of the block:
/// a warp per tile row (blockDim.x = 32), border arithmetic only in blocks that touch an edge.
template <class S, class T, class Convert>
__device__ __forceinline__ void load_tile_pitched(S* tile, int pitch, const T* __restrict__ src, Extent e, long long z, long long y0,
                                  long long x0, int rows, int cols, int ry, int rx, int border, Convert convert) {
  const bool inside = y0 - ry >= 0 && x0 - rx >= 0 && y0 + rows + ry <= e.ny && x0 + cols + rx <= e.nx;
  const int h = rows + 2 * ry;
  const int w = cols + 2 * rx;
  for (int ty = threadIdx.y; ty < h; ty += blockDim.y) {
    const long long yi = inside ? y0 - ry + ty : border_index(y0 - ry + ty, e.ny, border);
    S* line = tile + ty * pitch;
    if (yi < 0) {
      for (int tx = threadIdx.x; tx < w; tx += blockDim.x) line[tx] = S(0);
      continue;
    }
    const T* row = src + (z * e.ny + yi) * e.nx;
    if (inside) {
      for (int tx = threadIdx.x; tx < w; tx += blockDim.x) line[tx] = convert(row[x0 - rx + tx]);
    } else {
      for (int tx = threadIdx.x; tx < w; tx += blockDim.x) {
        const long long xi = border_index(x0 - rx + tx, e.nx, border);
        line[tx] = xi < 0 ? S(0) : convert(row[xi]);
      }
    }
  }
}

/// load_tile_pitched with the tile's rows packed (pitch cols + 2rx).
template <class S, class T, class Convert>
__device__ __forceinline__ void load_tile(S* tile, const T* __restrict__ src, Extent e, long long z, long long y0, long long x0,
                          int rows, int cols, int ry, int rx, int border, Convert convert) {
  load_tile_pitched(tile, cols + 2 * rx, src, e, z, y0, x0, rows, cols, ry, rx, border, convert);
}

}  // namespace weft::filters::device
