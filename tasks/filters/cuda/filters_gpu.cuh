#pragma once
// Internal to the CUDA filters: image views, tuning policies and the shared-memory tile loader.
#include <charconv>
#include <cstdint>
#include <string_view>
#include <type_traits>

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
/// DPX min/max), and their aligned form for whole 16-byte rows with a clamp or mirror border
/// (median3_aligned_rows, the "aligned" methods: 32-bit offsets, no branch between the row loads;
/// "sums" and "sumc": part of the network as wrapping sums on the FMA pipe, FmaSums).
/// Chosen by measurement (filters_bench, H100, bench/results/filters.json): 3×3 aligned with sums
/// (sumc) where it applies (2 rows below 2048², 8 from there), else DPX with 1 row per thread below
/// 1024², 2 rows above (2 rows beat 4 and 8 at every size; fp16 keys never beat DPX by more than
/// noise); 5×5 the tile kernel below 1024², packed with 2 rows from 1024² (packed 4 rows only 3 %
/// better at 8192²).
struct MedianPolicy {
  int block_x = 32;
  int block_y = 8;
  int rows_per_thread = 2;
  bool packed = true;
  int packed_block_y = 4;
  int packed_rows_3 = 4;
  int packed_rows_5 = 2;
  long long packed_5_min_pixels = 1024LL * 1024;
  bool interleaved = true;
  bool interleaved_half_keys = false;
  long long interleaved_rows_8_min_pixels = 1LL << 62;      // never: slower than 2 rows at every size
  long long interleaved_rows_4_min_pixels = 1LL << 62;      // never
  long long interleaved_rows_2_min_pixels = 1024LL * 1024;  // else 1 row
  // Aligned interleaved strips (median3_aligned_rows: whole 16-byte rows, clamp or mirror), probe
  // on an H100 (nvcc 13, printed): 2048² 5.6 µs with 2 to 8 rows; 4096² 14.8 µs with 8
  // (15.3-16.2 with fewer); 8192² 59.5 µs with 8 (60.2-62.3 with fewer); the generic dpx2 strip
  // 14.2, 29.4, 83 µs. filters_bench agreed from 4096²; below, one of its runs had 4 rows 5-6 %
  // ahead of 2 at 1024² and 2048² (not taken).
  // Their network with each column's middle value, the med3 of the column medians and the final
  // med3 as sums less max and min on the FMA pipe (kSumColumns, the "sumc" methods): H100, batches
  // (printed; then filters.json): 8192² sumc8 1252 GP/s against aligned8 1158 (kSumMedians: 1161),
  // 4096² 1283 against 1172, 2048² 966 against 768; sumc8 the fastest at all three.
  bool aligned = true;
  int aligned_sums = kSumColumns;
  long long aligned_rows_8_min_pixels = 2048LL * 2048;  // else 2 rows
  [[nodiscard]] constexpr int aligned_rows_for(long long pixels) const {
    return pixels >= aligned_rows_8_min_pixels ? 8 : 2;
  }
  [[nodiscard]] constexpr int interleaved_rows_for(long long pixels) const {
    return pixels >= interleaved_rows_8_min_pixels   ? 8
           : pixels >= interleaved_rows_4_min_pixels ? 4
           : pixels >= interleaved_rows_2_min_pixels ? 2
                                                     : 1;
  }
};
/// Full convolution: tile of (block_y · rows_per_thread + 2r) × (block_x + 2r) floats in shared
/// memory, each thread keeping rows_per_thread accumulators (register blocking). The blocked kernel:
/// each thread a blocked_columns × blocked_rows block of outputs read from float4 rows of the tile
/// (radius ≤ 5). The streaming and rolling kernels (convolve_stream.cuh, radius ≤ 3). cuFFT in
/// fp64 from fft_min_size. method_for() is what filters_bench measured fastest (H100, f32, 512² to
/// 8192², bench/results/filters.json): for radius ≤ 3 the rolling strips from 512² (roll_min_pixels
/// and the fields after it; rows ahead through a shared-memory ring where that wins), the 4-row streaming strips where they lose (5×5 at 8192², 1×1 from
/// 4096²), the tile kernel below 512²; blocked for radius 4 and 5 from 1024², the tile
/// kernel below and up to 21×21; cuFFT from 31×31 (7-9.5 GP/s, flat in the size, against the tile's
/// 11.9 GP/s at 21×21: 25 is the estimated crossing). Streaming with 8 or 16 rows was slower than 4
/// at every size.
struct ConvolveChoice {
  const char* kind;
  int rows;
};
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
  int fft_min_size = 25;
  long long small_max_pixels = 1024LL * 1024 - 1;  // up to this many pixels: the tile kernel
  int stream_rows = 4;
  /// Rolling strips (convolve_roll_strip, one wave of long strips), f32 batches on an H100 in GP/s
  /// (filters_bench, bench/filters/NOTES.md): at 2048² every radius ≤ 3 with two rows ahead
  /// ("roll": 397 / 345 / 226 for 3×3 / 5×5 / 7×7 against 340 / 206 / 155 for the 4-row strips
  /// and the blocked kernel); from 4096² 7×7 with one row ahead at 64 registers ("rolls": 267 at
  /// 4096², 306 at 8192², against 198 and 273), 5×5 "rolls" below 8192² (304 against 285; at 8192²
  /// 322 against 349); 3×3 from 4096² stays with the 4-row strips (319 against 323, 276 against 360).
  /// Below 2048² too (filters_bench, batches in µs, "roll" against the former choice):
  /// 1024² 6.3 / 6.8 / 8.0 against 8.3 (4-row strips) / 11.7 (4-row strips) / 15.7 (tile) for
  /// 3×3 / 5×5 / 7×7, 512² 5.9 / 6.6 / 8.0 against the tile's 6.0 / 7.0 / 8.5. Smaller images keep
  /// the tile kernel (not measured).
  long long roll_min_pixels = 512LL * 512;
  /// From 4096² the rows ahead of 7×7 and of 3×3 (strips of 4 rows) go
  /// through a ring in shared memory ("rollq": cp.async, no register held per row in flight; 3 rows
  /// ahead, which beat 4). H100, batches, GP/s (filters_bench, bench/filters/NOTES.md):
  /// 7×7 at 4096² 297-301 (4 ahead: 290-293) against 267-275 for "rolls"; 3×3 "rollq4" at 4096²
  /// 347-349 (4 ahead: 350-351) against 321-324 for "rolls", at 8192² 366-368. 7×7 at 8192²:
  /// "rolls", because with the ring's shared addresses converted once and the strips split evenly
  /// over the wave, "rolls" gave 322 GP/s against "rollq"'s 310 (one H100, two runs; at 4096²
  /// "rollq" 318 against 287).
  long long roll_large_min_pixels = 4096LL * 4096;  // from here the choice depends on the radius
  /// Below 4096² the ring pays too where the image is small: filters_bench (H100,
  /// batches, GP/s, every method in one run): at 512² 4-row strips through the ring ("rollq4")
  /// 70 / 60 / 47 for 3×3 / 5×5 / 7×7 against "roll"'s 47 / 42 / 35; 3×3 at 1024² "rollq4" 237
  /// against 177. 5×5 and 7×7 above 1024² keep "roll" (at 1024² 5×5 162 against 168, 7×7 140
  /// against 105) up to ring_long_min_pixels. At 2048² (H100, three runs, 3 rows
  /// ahead): 3×3 "rollq4" 465-484 (L2-resident) against "rollq" 334-342; 5×5 "rollq" 292-299
  /// against "roll" 230-232 and "rolls" 290-291; 7×7 "rollq" 187-199 against "roll" 166-169.
  long long ring_strips_max_pixels = 1024LL * 1024 - 1;  // every radius ≤ 3: "rollq4"; 3×3 always
  long long ring_long_min_pixels = 2048LL * 2048;        // 5×5, 7×7: "rollq" (one wave) from here
  long long roll_max_pixels = 8192LL * 8192;  // from here 5×5: the 4-row streaming strips; 7×7: "rolls"
  [[nodiscard]] constexpr int stream_rows_for(long long /*pixels*/) const { return stream_rows; }
  /// Tensor cores (convolve_tensor_gpu.cu) for u8 and f16 images from tensor_min_size on, on images
  /// of tensor_min_pixels or more; from tensor_large_size on only from tensor_large_min_pixels
  /// (cuFFT below). filters_bench on an H100 (f16, batches): at 8192² the tensor method
  /// 61-65 GP/s at 15×15 against 22 (tile), 32 at 31×31 against 9.6 (cuFFT), 12.5 at 55×55 against
  /// 7.9 (cuFFT); at 9×9 the blocked kernel is faster (124 GP/s, the tensor method 62-64 in earlier
  /// runs); below 2048² the tile kernel or cuFFT win (512², 15×15: tile 13 GP/s, tensor 4.8), and
  /// at 55×55 cuFFT up to 2048².
  int tensor_min_size = 13;  // the first size past the blocked kernel's
  long long tensor_min_pixels = 2048LL * 2048;
  int tensor_large_size = 49;
  long long tensor_large_min_pixels = 4096LL * 4096;
  /// `tensor_type`: the image's values are exact in fp16 (u8, f16), so the tensor method applies.
  [[nodiscard]] constexpr ConvolveChoice method_for(int ksize, long long pixels, bool tensor_type = false) const {
    const int r = ksize / 2;
    if (tensor_type && ksize >= tensor_min_size && pixels >= tensor_min_pixels &&
        (ksize < tensor_large_size || pixels >= tensor_large_min_pixels))
      return {"tensor", 0};
    if (ksize >= fft_min_size) return {"fft", 0};
    if (r <= stream_max_radius && pixels >= roll_min_pixels) {
      if (pixels <= ring_strips_max_pixels || r == 1) return {"rollq", 4};
      if (pixels < roll_large_min_pixels)
        return r >= 2 && pixels >= ring_long_min_pixels ? ConvolveChoice{"rollq", 0} : ConvolveChoice{"roll", 0};
      if (r == 3) return {pixels < roll_max_pixels ? "rollq" : "rolls", 0};
      if (r == 2 && pixels < roll_max_pixels) return {"rolls", 0};
    }
    if (pixels <= small_max_pixels || r > blocked_max_radius) return {"tile", 0};
    if (r <= 2) return {"stream", stream_rows};
    return {"blocked", 0};  // radius 4 and 5 (radius 3 from 512² rolls)
  }
};
/// Separable passes: rows (each thread columns_per_thread outputs), then columns, through an fp32
/// scratch image; or one fused streaming kernel (convolve_stream.cuh), one pass over memory, up to
/// radius fused_max_radius. fused_for() is what filters_bench measured fastest (H100):
/// fused at every size for 3 taps, from 1024² for 5, from 2048² for 7 and 9, from 4096² for 11
/// to 15 (with 8 rows from 11 taps), two passes otherwise.
struct SeparablePolicy {
  int block_x = 32;
  int block_y = 8;
  int columns_per_thread = 4;
  int rows_per_thread = 4;
  int fused_max_radius = 7;
  /// Rows per thread of the fused kernel for this size and image, or 0: the two-pass kernels.
  [[nodiscard]] constexpr int fused_rows_for(int ksize, long long pixels) const {
    const int r = ksize / 2;
    const long long min_pixels = r <= 1 ? 0 : r == 2 ? 1024LL * 1024 : r <= 4 ? 2048LL * 2048 : 4096LL * 4096;
    if (r > fused_max_radius || pixels < min_pixels) return 0;
    return r >= 5 ? 8 : 4;
  }
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

/// Streaming convolutions (convolve_stream_launch.cuh): host weights passed by value (the device
/// copy `d_kernel` serves the strips at the image's edges), rows 4, 8, 16.
template <class T>
void launch_convolve_stream(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                            int rows, int border, cudaStream_t s);
/// Rolling strips of `rows` rows (0: sized to whole waves), `ahead` input rows loaded ahead (1 or 2 in
/// registers, 3 through a ring in shared memory); `paired` (ring only): the even strips of one wave
/// in pairs that exchange their boundary sums (convolve_roll_pair_kernel).
template <class T>
void launch_convolve_roll(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                          int rows, int ahead, int border, bool paired, cudaStream_t s);
template <class T>
void launch_separable_stream(const T* src, T* dst, Extent e, const float* h_row, const float* h_column, int ksize,
                             int rows, int border, cudaStream_t s);

/// Convolution on tensor cores (convolve_tensor_gpu.cu), u8 and f16 images, any odd size up to 63;
/// `strips`: 32-pixel strips per warp (1, 2 or 4; 0: 1, measured fastest or within 2 %).
template <class T>
void launch_convolve_tensor(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                            int strips, int border, cudaStream_t stream);
template <class T> inline constexpr bool kTensorType = std::is_same_v<T, std::uint8_t> || std::is_same_v<T, Half>;

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
