#pragma once
// Internal to the CUDA filters: image views, tuning policies and the shared-memory tile loader.
#include <charconv>
#include <cstdint>
#include <string_view>

#include <cuda_runtime.h>

#include "../src/detail/element.hpp"
#include "weft/cuda.hpp"

namespace weft::filters::device {

/// Multiprocessors of the current device (grids of small images are shaped to fill them).
inline int multiprocessor_count() {
  int device = 0, count = 0;
  WEFT_CUDA_CHECK(cudaGetDevice(&device));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

/// Median tiles: each block covers block_x × (block_y · rows_per_thread) outputs of one slice.
/// Packed u8/u16 3×3 and 5×5 (packed_median.hpp): each thread one strip of 16 bytes ×
/// packed_rows_3 (or _5) rows, blocks of 32 × packed_block_y strips (fewer rows of strips when
/// the grid would not give two blocks per SM). Interleaved u8/u16 3×3 (interleaved_median.hpp,
/// DPX min/max): rows per thread from the image size, fp16 keys for u8 if interleaved_half_keys.
/// bench/results/filters.json (H100, 5bfd79e) measured the packed and tile kernels only: packed
/// 5×5 was slower than NPP below 8192² and the tile kernel's 7×7 at 512² ran at 9.2 GP/s against
/// packed 5×5's 5.9, hence packed_5_min_pixels. The interleaved rows and the fp16 keys are chosen by
/// counting (bench/filters/NOTES.md); filters_bench measures every method per size and prints
/// the values to put here.
struct MedianPolicy {
  int block_x = 32;
  int block_y = 8;
  int rows_per_thread = 2;
  bool packed = true;
  int packed_block_y = 4;
  int packed_rows_3 = 4;
  int packed_rows_5 = 2;
  long long packed_5_min_pixels = 2048LL * 2048;
  bool interleaved = true;
  bool interleaved_half_keys = false;
  long long interleaved_rows_8_min_pixels = 4096LL * 4096;  // at least this many pixels: 8 rows
  long long interleaved_rows_4_min_pixels = 2048LL * 2048;  // else 4 rows, else 2
  [[nodiscard]] constexpr int interleaved_rows_for(long long pixels) const {
    return pixels >= interleaved_rows_8_min_pixels ? 8 : pixels >= interleaved_rows_4_min_pixels ? 4 : 2;
  }
};
/// Full convolution: tile of (block_y · rows_per_thread + 2r) × (block_x + 2r) floats in shared
/// memory, each thread keeping rows_per_thread accumulators (register blocking).
/// Radius ≤ blocked_max_radius (at most 5): the blocked kernel instead, each thread a blocked_columns ×
/// blocked_rows block of outputs read from float4 rows of the tile (each tile value loaded once
/// per thread row, not once per tap: (4 + 2r)(8 + 2r) / 32 shared loads per output instead of
/// (2r + 1)²), weights in registers, the tile gathered without border arithmetic when inside.
/// Radius ≤ stream_max_radius: the streaming kernel (convolve_stream.cuh, no shared memory),
/// rows per thread from the image size. bench/results/filters.json (H100, 5bfd79e): the blocked
/// kernel reached 40-53 % of the copy bandwidth at 8192² for 3×3..7×7 and 30 % for 9×9, hence
/// streaming up to 7×7 (its own figures: chosen by counting, bench/filters/NOTES.md).
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
  int stream_max_radius = 3;
  /// Sizes from fft_min_size: the cuFFT path (convolve_fft_gpu.cu). Estimated (NOTES.md): the tile
  /// kernel ran 15×15 at 21.8 GP/s and 21×21 at 11.8 GP/s at 8192² (filters.json, 5bfd79e); three
  /// fp64 transforms of 8232² read and write ~9 GB, ~3.5 ms, i.e. ~19 GP/s.
  int fft_min_size = 21;
  long long stream_rows_16_min_pixels = 4096LL * 4096;  // at least this many pixels: 16 rows
  long long stream_rows_8_min_pixels = 1024LL * 1024;   // else 8, else 4
  [[nodiscard]] constexpr int stream_rows_for(long long pixels) const {
    return pixels >= stream_rows_16_min_pixels ? 16 : pixels >= stream_rows_8_min_pixels ? 8 : 4;
  }
};
/// Separable passes: rows (each thread columns_per_thread outputs), then columns, through an fp32
/// scratch image; radius ≤ fused_max_radius: one fused streaming kernel (convolve_stream.cuh), one
/// pass over memory, rows per thread as the full streaming kernel. The two-pass kernels ran at
/// 91 GP/s for 3-tap f32 at 8192² (filters.json, 5bfd79e), half the full 3×3 kernel.
struct SeparablePolicy {
  int block_x = 32;
  int block_y = 8;
  int columns_per_thread = 4;
  int rows_per_thread = 4;
  int fused_max_radius = 7;
};
[[nodiscard]] constexpr MedianPolicy median_policy(int /*compute_capability*/) { return {}; }
[[nodiscard]] constexpr ConvolvePolicy convolve_policy(int /*compute_capability*/) { return {}; }
[[nodiscard]] constexpr SeparablePolicy separable_policy(int /*compute_capability*/) { return {}; }
inline constexpr int kMaxThreads = 256;
static_assert(median_policy(90).block_x * median_policy(90).block_y <= kMaxThreads);
static_assert(32 * median_policy(90).packed_block_y <= kMaxThreads);
static_assert(median_policy(90).packed_rows_3 % 2 == 0, "3×3 strips take rows in pairs");
static_assert(convolve_policy(90).block_x * convolve_policy(90).block_y <= kMaxThreads);
static_assert(convolve_policy(90).blocked_block_x * convolve_policy(90).blocked_block_y <= kMaxThreads);
static_assert(convolve_policy(90).blocked_columns == 4, "one float4 per tile read");
static_assert(convolve_policy(90).blocked_max_radius <= 5, "blocked kernels instantiated up to radius 5");
static_assert(separable_policy(90).block_x * separable_policy(90).block_y <= kMaxThreads);

/// Radii of the streaming kernels' instantiations (convolve_stream_launch.cuh).
inline constexpr int kStreamMaxRadius = 3;
inline constexpr int kFusedMaxRadius = 7;
static_assert(convolve_policy(90).stream_max_radius <= kStreamMaxRadius);
static_assert(separable_policy(90).fused_max_radius <= kFusedMaxRadius);

/// Streaming convolutions (convolve_stream_launch.cuh): host weights passed by value, rows 4, 8, 16.
template <class T>
void launch_convolve_stream(const T* src, T* dst, Extent e, const float* h_kernel, int ksize, int rows, int border,
                            cudaStream_t s);
template <class T>
void launch_separable_stream(const T* src, T* dst, Extent e, const float* h_row, const float* h_column, int ksize,
                             int rows, int border, cudaStream_t s);

/// Convolution through cuFFT in fp64 (convolve_fft_gpu.cu), any odd size, device weights.
template <class T>
void launch_convolve_fft(const T* src, T* dst, Extent e, const float* d_kernel, int ksize, int border,
                         cudaStream_t stream);

/// A method name of the launchers: letters (the kernel) then optional digits (rows per thread),
/// e.g. "dpx4", "stream16"; rows −1 when the digits do not parse.
struct Method {
  std::string_view kind;
  int rows = 0;
};
[[nodiscard]] inline Method parse_method(std::string_view name) {
  std::size_t i = 0;
  while (i < name.size() && (name[i] < '0' || name[i] > '9')) ++i;
  Method m{name.substr(0, i)};
  if (i < name.size()) {
    const auto [end, ec] = std::from_chars(name.data() + i, name.data() + name.size(), m.rows);
    if (ec != std::errc{} || end != name.data() + name.size()) m.rows = -1;
  }
  return m;
}

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
