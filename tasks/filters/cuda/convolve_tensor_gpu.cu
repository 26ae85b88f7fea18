// Full K×K convolution on tensor cores (method "tensor"; u8 and f16 images: their values are exact
// in fp16), fp32 accumulation. bench/filters/NOTES.md derives the layout; in short:
//
// One input row convolved with all K kernel rows is a matrix product. For 16 output pixels
// p_m = X + 2m + par (m = 0..15, par = 0 for the even pixels of a 32-pixel strip, 1 for the odd
// ones) and kernel row dy, P[m][dy] = Σ_j A[m][j] · W_par[j][dy] with A[m][j] = in[X + 2m + j] (a
// Hankel matrix: its rows are windows of one image row) and W_par[j][dy] = w[dy][j − par]. Both
// parities share A, whose fragments are then pairs of adjacent pixels at X + 2(g + q) + 8v, so a
// lane loads 2·KS + 2 pairs per input row and m16n8k16 multiplies them by every kernel row.
//
// The product for input row i contributes P[·][dy] to output row i − dy. The accumulators form a
// ring of Kp = 8·NT ≥ K columns: output row o lives in column o mod Kp, and at input row i the
// column c takes kernel row (i − c) mod Kp (zero from K on). The B fragment of lane (g, q) in
// accumulator tile t is then row (i − 8t − g) mod Kp of a weight table in shared memory, so B
// needs no copy per ring position. After input row i, output row i − K + 1 is complete: its column
// is stored by the 8 lanes that hold it and cleared.
//
// Weights are scaled by a power of two (max |w| in [2^14, 2^15)) and split into fp16 hi + lo
// parts: the products carry ~22 bits of each weight. Each input row's hi and lo products are
// summed in two zeroed mma chains (KS steps each) and added to the ring with rounded fp32 adds, so
// the tensor cores' truncating accumulation never runs over more than KS steps of one kernel row.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <cuda_fp16.h>

#include "../src/detail/element.hpp"
#include "filters_gpu.cuh"
#include "weft/cuda.hpp"

namespace weft::filters {
namespace device {

inline constexpr int kTensorPitch = 72;  // halves per weight-table row: 36 words, 4 dy·36 + q hits 32 banks
inline constexpr int kTensorWarps = 4;   // warps per block, each its own strip of columns

/// Ring of 8·NT columns, KS k-steps of 16 taps, MT strips of 32 pixels per warp.
template <int NT, int KS> struct TensorShape {
  static constexpr int kRing = 8 * NT;
  static constexpr int kTable = kRing * kTensorPitch;  // halves per table (4 tables: par × hi/lo)
  static_assert((kRing & (kRing - 1)) == 0, "ring of a power of two");
  static_assert(16 * KS <= kTensorPitch - 8);
};

__device__ __forceinline__ void mma16816(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const unsigned short* row) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

template <class T> __device__ __forceinline__ std::uint32_t half_bits_of(const T* row, long long x) {
  if constexpr (std::is_same_v<T, Half>) return __ldg(&row[x].bits);
  else return __half_as_ushort(__ushort2half_rn(__ldg(row + x)));  // u8: exact
}

/// Two u8 pixels (low byte first) as fp16x2: 0x64vv is the fp16 number 1024 + v; minus 1024, exact.
__device__ __forceinline__ std::uint32_t u8_pair_to_half2(std::uint32_t bytes) {
  const std::uint32_t biased = __byte_perm(bytes, 0x64646464u, 0x4140);
  const __half2 v = __hsub2(*reinterpret_cast<const __half2*>(&biased), __float2half2_rn(1024.0f));
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

/// The lane's pairs (p + 32mt + 8v, +1) of a row wholly inside the image as fp16x2 words; `even`:
/// p is 4-byte aligned (f16) or 2-byte aligned (u8), so each pair is one load.
template <int KS, int MT, class T>
__device__ __forceinline__ void load_pairs_inside(std::uint32_t (&a)[MT][2 * KS + 2], const T* __restrict__ p,
                                                  bool even) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int v = 0; v < 2 * KS + 2; ++v) {
      const T* q = p + 32 * mt + 8 * v;
      if constexpr (std::is_same_v<T, Half>) {
        a[mt][v] = even ? __ldg(reinterpret_cast<const unsigned*>(q))
                        : __ldg(&q[0].bits) | (static_cast<std::uint32_t>(__ldg(&q[1].bits)) << 16);
      } else {
        const std::uint32_t bytes = even ? __ldg(reinterpret_cast<const unsigned short*>(q))
                                         : __ldg(q) | (static_cast<std::uint32_t>(__ldg(q + 1)) << 8);
        a[mt][v] = u8_pair_to_half2(bytes);
      }
    }
}

/// The same pairs from column x0 on in a warp that meets the left or right edge: each column
/// mapped through the border (zero outside for a zero border).
template <int KS, int MT, class T>
__device__ __forceinline__ void load_pairs_edge(std::uint32_t (&a)[MT][2 * KS + 2], const T* __restrict__ row, int x0,
                                             int nx, int border) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int v = 0; v < 2 * KS + 2; ++v) {
      std::uint32_t h[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const long long xi = border_index(x0 + 32 * mt + 8 * v + e, nx, border);
        h[e] = xi < 0 ? 0u : half_bits_of(row, xi);
      }
      a[mt][v] = h[0] | (h[1] << 16);
    }
}

template <int NT, int KS, int MT, class T>
__global__ void __launch_bounds__(32 * kTensorWarps)
    convolve_tensor_kernel(const T* __restrict__ src, T* __restrict__ dst, Extent e, const float* __restrict__ w,
                           int ksize, float scale, int rows_per_strip, int border) {
  using S = TensorShape<NT, KS>;
  constexpr int kRing = S::kRing;
  constexpr int kTable = S::kTable;
  constexpr int kPairs = 2 * KS + 2;
  extern __shared__ __align__(16) unsigned short table[];  // [par][hi, lo][dy][j]
  const int K = ksize;
  const int r = K / 2;

  // Weight tables: par 0 holds w[dy][j], par 1 w[dy][j − 1]; zero outside the kernel.
  for (int idx = threadIdx.x; idx < 2 * kRing * 16 * KS; idx += blockDim.x) {
    const int par = idx / (kRing * 16 * KS);
    const int dy = idx / (16 * KS) % kRing;
    const int j = idx % (16 * KS);
    const int jj = j - par;
    const float v = dy < K && jj >= 0 && jj < K ? __ldg(w + dy * K + jj) * scale : 0.0f;
    const __half hi = __float2half_rn(v);
    const __half lo = __float2half_rn(v - __half2float(hi));
    table[(2 * par) * kTable + dy * kTensorPitch + j] = __half_as_ushort(hi);
    table[(2 * par + 1) * kTable + dy * kTensorPitch + j] = __half_as_ushort(lo);
  }
  __syncthreads();

  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;
  const int q = lane & 3;
  const int nx = static_cast<int>(e.nx);
  const int ny = static_cast<int>(e.ny);
  const int strip = blockIdx.x * kTensorWarps + (threadIdx.x >> 5);
  const int xs = strip * 32 * MT - (r & 1);  // X = xs − r even: pairs are whole fp16x2 words
  if (xs >= nx) return;
  const int X = xs - r;
  const bool inside = X >= 0 && X + 32 * MT + 16 * KS <= nx;
  const int y0 = static_cast<int>(blockIdx.y) * rows_per_strip;
  const int y1 = min(y0 + rows_per_strip, ny);
  const long long plane = static_cast<long long>(blockIdx.z) * e.ny;
  const int xl = X + 2 * (g + q);  // this lane's first pair
  const float unscale = 1.0f / scale;
  // This lane's ldmatrix row: table (2·par + lo), taps 16·ks + 8·(lane >> 3 & 1), ring row per t.
  const unsigned short* matrix_row = table + (lane >> 4) * kTable + 8 * (lane >> 3 & 1);

  float acc[MT][NT][2][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int t = 0; t < NT; ++t)
#pragma unroll
      for (int par = 0; par < 2; ++par)
#pragma unroll
        for (int k = 0; k < 4; ++k) acc[mt][t][par][k] = 0.0f;

  // Input row i of the strip is image row y0 − r + i; the next row's pairs load during this one's products.
  const int rows_in = (y1 - y0) + K - 1;
  auto load_row = [&](int i, std::uint32_t (&a)[MT][kPairs]) {
    const int yi = static_cast<int>(border_index(y0 - r + i, ny, border));
    if (yi < 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int v = 0; v < kPairs; ++v) a[mt][v] = 0u;
      return;
    }
    const long long start = (plane + yi) * e.nx;
    if (inside) load_pairs_inside<KS, MT>(a, src + start + xl, (start & 1) == 0);
    else load_pairs_edge<KS, MT>(a, src + start, xl, nx, border);
  };
  std::uint32_t a[MT][kPairs];
  load_row(0, a);
  for (int i = 0; i < rows_in; ++i) {
    std::uint32_t next[MT][kPairs];
    if (i + 1 < rows_in) load_row(i + 1, next);
    // ldmatrix: lanes 8m..8m+7 address the rows of matrix m (m = 2·lo + upper half of the 16
    // taps) for accumulator columns 8t + (lane & 7); each lane receives its B fragments.
    const int ring = (i - (lane & 7)) & (kRing - 1);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const unsigned short* wrow = matrix_row + ((ring - 8 * t) & (kRing - 1)) * kTensorPitch;
#pragma unroll
      for (int par = 0; par < 2; ++par) {
        float part[2][MT][4];  // hi and lo products in separate chains, from zero
#pragma unroll
        for (int lo = 0; lo < 2; ++lo)
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int k = 0; k < 4; ++k) part[lo][mt][k] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
          std::uint32_t b[4];  // hi taps 0-7, hi 8-15, lo 0-7, lo 8-15 of this k-step
          ldmatrix_x4(b, wrow + 2 * par * kTable + 16 * ks);
#pragma unroll
          for (int lo = 0; lo < 2; ++lo)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
              mma16816(part[lo][mt], a[mt][2 * ks], a[mt][2 * ks + 2], a[mt][2 * ks + 1], a[mt][2 * ks + 3],
                       b[2 * lo], b[2 * lo + 1]);
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int k = 0; k < 4; ++k) acc[mt][t][par][k] += part[0][mt][k] + part[1][mt][k];
      }
    }
    {
      // Output row o = i − K + 1 is complete: the 8 lanes of its column store it (o ≥ 0) and clear
      // it. Rows o < 0 are the strip's lead-in: their columns took the first rows' products for
      // kernel rows ≥ 1 and are cleared before their own rows start.
      const int o = i - (K - 1);
      const int c = o & (kRing - 1);
      const int qc = (c & 7) >> 1;
      const bool high = c & 1;
      const int tc = c >> 3;
      // Values gathered and cleared with selects over every tile: a branch per tile lets the
      // compiler index acc at run time, which moves it to local memory.
      float v[MT][2][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int par = 0; par < 2; ++par) {
          v[mt][par][0] = v[mt][par][1] = 0.0f;
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            float (&d)[4] = acc[mt][t][par];
            const bool here = t == tc;
            v[mt][par][0] = here ? (high ? d[1] : d[0]) : v[mt][par][0];
            v[mt][par][1] = here ? (high ? d[3] : d[2]) : v[mt][par][1];
            const bool clear = here && q == qc;
            d[0] = clear && !high ? 0.0f : d[0];
            d[1] = clear && high ? 0.0f : d[1];
            d[2] = clear && !high ? 0.0f : d[2];
            d[3] = clear && high ? 0.0f : d[3];
          }
        }
      if (q == qc && o >= 0) {
        T* out = dst + (plane + y0 + o) * e.nx + xs + 2 * g;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int par = 0; par < 2; ++par) {
            const int x = xs + 32 * mt + 2 * g + par;  // inside strips: every x in [0, nx)
            if (inside || (x >= 0 && x < nx)) out[32 * mt + par] = from_float<T>(v[mt][par][0] * unscale);
            if (inside || x + 16 < nx) out[32 * mt + 16 + par] = from_float<T>(v[mt][par][1] * unscale);
          }
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int v = 0; v < kPairs; ++v) a[mt][v] = next[mt][v];
  }
}

/// Scale 2^s with max |w| · 2^s in [2^14, 2^15): the hi parts keep 11 bits of the largest weights
/// and the lo parts stay normal fp16 numbers down to 2^-28 of them.
inline float tensor_weight_scale(const float* h_kernel, int ksize) {
  float top = 0.0f;
  for (int i = 0; i < ksize * ksize; ++i) top = std::fmax(top, std::fabs(h_kernel[i]));
  if (!(top > 0.0f) || !std::isfinite(top)) return 1.0f;
  int exponent = 0;
  (void)std::frexp(top, &exponent);  // top = f · 2^exponent, f in [0.5, 1)
  return std::ldexp(1.0f, 15 - exponent);
}

template <int NT, int KS, int MT, class T>
void tensor_launch(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize, int border,
                   cudaStream_t stream) {
  using S = TensorShape<NT, KS>;
  const long long strips = (e.nx + (ksize / 2 & 1) + 32 * MT - 1) / (32 * MT);
  if (e.nx >= (1LL << 30) || e.ny >= (1LL << 30) || strips * 32 * MT >= (1LL << 30))
    throw ConfigError("convolve: the tensor method takes rows and columns under 2^30");
  // Rows per strip: enough warps for two waves of 16 per SM, but at least 2K rows (the K − 1 halo
  // rows are read twice) when the image has them. Tried together on an H100 and 20-35 % slower at
  // 15×15 to 55×55: bands sized for whole waves of resident blocks (occupancy API, fewer and
  // longer) with one mma chain for the hi and lo products.
  const long long target = 2LL * 16 * multiprocessor_count();
  const long long columns = strips * e.slices;
  long long rows = (e.ny * columns + target - 1) / target;
  rows = std::max(rows, std::min<long long>(e.ny, 2LL * ksize));
  rows = std::max(rows, 16LL);
  rows = std::max(rows, (e.ny + 65534) / 65535);  // grid.y limit
  const std::size_t shared = sizeof(unsigned short) * 4 * S::kTable;  // 9, 18 or 36 KB
  const dim3 block(32 * kTensorWarps);
  const dim3 grid(static_cast<unsigned>((strips + kTensorWarps - 1) / kTensorWarps),
                  static_cast<unsigned>((e.ny + rows - 1) / rows), static_cast<unsigned>(e.slices));
  device::convolve_tensor_kernel<NT, KS, MT><<<grid, block, shared, stream>>>(
      src, dst, e, d_kernel, ksize, tensor_weight_scale(h_kernel, ksize), static_cast<int>(rows), border);
  check_launch("convolve_tensor_kernel", stream);
}

template <int NT, int KS, class T>
void tensor_strips(int strips, const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                   int border, cudaStream_t stream) {
  switch (strips) {
    case 1: return tensor_launch<NT, KS, 1>(src, dst, e, h_kernel, d_kernel, ksize, border, stream);
    case 2: return tensor_launch<NT, KS, 2>(src, dst, e, h_kernel, d_kernel, ksize, border, stream);
    default: return tensor_launch<NT, KS, 4>(src, dst, e, h_kernel, d_kernel, ksize, border, stream);
  }
}

template <class T>
void launch_convolve_tensor(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                            int strips, int border, cudaStream_t stream) {
  if (strips != 0 && strips != 1 && strips != 2 && strips != 4)
    throw ConfigError("convolve: the tensor method takes 1, 2 or 4 strips per warp, not " + std::to_string(strips));
  const int s = strips ? strips : 1;
  if (ksize <= 15) return tensor_strips<2, 1>(s, src, dst, e, h_kernel, d_kernel, ksize, border, stream);
  if (ksize <= 31) return tensor_strips<4, 2>(s, src, dst, e, h_kernel, d_kernel, ksize, border, stream);
  if (ksize <= 47) return tensor_strips<8, 3>(s, src, dst, e, h_kernel, d_kernel, ksize, border, stream);
  if (ksize <= 63) return tensor_strips<8, 4>(s, src, dst, e, h_kernel, d_kernel, ksize, border, stream);
  throw ConfigError("convolve: the tensor method takes sizes up to 63, not " + std::to_string(ksize));
}

template void launch_convolve_tensor<std::uint8_t>(const std::uint8_t*, std::uint8_t*, Extent, const float*,
                                                   const float*, int, int, int, cudaStream_t);
template void launch_convolve_tensor<Half>(const Half*, Half*, Extent, const float*, const float*, int, int, int,
                                           cudaStream_t);

}  // namespace device
}  // namespace weft::filters
