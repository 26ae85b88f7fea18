#pragma once
// Per-element math shared by the CPU path and the CUDA kernels (layer 4): border index mapping,
// conversions to and from float, and the forgetful selection of the median.
#if defined(__CUDACC__)
#define WEFT_FILTERS_HD __host__ __device__ __forceinline__
#include <cuda_fp16.h>
#else
#define WEFT_FILTERS_HD inline
#endif
#include <cstdint>
#include <type_traits>

#include "weft/data/dtype.hpp"

namespace weft::filters::device {

/// slices × ny × nx elements, row-major.
struct Extent {
  long long slices, ny, nx;
};

enum BorderCode : int { kClamp = 0, kMirror = 1, kZero = 2 };

/// How much of the 3×3 median network (interleaved_median.hpp's median3_row) is computed by sums
/// on the FMA pipe (FmaSums) instead of min/max:
/// kNoSums none; kSumMedians the med3 of the column medians and the final med3 (about 3 of the
/// ~18 ALU operations per output word move, 8 IMADs come); kSumColumns also each column's middle
/// value (a + b + t − lo − hi, with a + b shared by the two rows of a pair: 2.5 more move).
inline constexpr int kNoSums = 0, kSumMedians = 1, kSumColumns = 2;

/// Index i mapped into [0, n) for clamp and mirror; -1 for a zero border outside.
WEFT_FILTERS_HD std::int64_t border_index(std::int64_t i, std::int64_t n, int border) {
  if (i >= 0 && i < n) return i;
  if (border == kZero) return -1;
  if (border == kClamp) return i < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  const std::int64_t period = 2 * (n - 1);  // mirror: reflection without repeating the edge
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

/// Row or column i, at most n − 1 outside [0, n), under a clamp or mirror border, with selects
/// only (no branch: the aligned and inside paths compute their row indices between loads).
WEFT_FILTERS_HD int near_index(int i, int n, int border) {
  const bool mirror = border == kMirror;
  const int below = mirror ? -i : 0;
  const int above = mirror ? 2 * (n - 1) - i : n - 1;
  return i < 0 ? below : i >= n ? above : i;
}

template <class T> WEFT_FILTERS_HD float to_float(T v) { return static_cast<float>(v); }
#if defined(__CUDACC__)
template <> WEFT_FILTERS_HD float to_float<Half>(Half v) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(v.bits));
#else
  return half_to_float(v);
#endif
}
#else
template <> inline float to_float<Half>(Half v) { return half_to_float(v); }
#endif

/// float → T: u8/u16 rounded to nearest and saturated, f16 rounded to nearest even.
template <class T> WEFT_FILTERS_HD T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, Half>) {
#if defined(__CUDA_ARCH__)
    return Half{__half_as_ushort(__float2half_rn(v))};
#else
    return float_to_half(v);
#endif
  } else {
    constexpr float hi = static_cast<float>(static_cast<T>(~T(0)));
    if (!(v > 0.0f)) return T(0);  // also NaN
    if (v >= hi) return static_cast<T>(hi);
    return static_cast<T>(static_cast<std::uint32_t>(v + 0.5f));
  }
}

template <class T> WEFT_FILTERS_HD void order(T& a, T& b) {
  const T lo = a < b ? a : b;
  const T hi = a < b ? b : a;
  a = lo;
  b = hi;
}

/// Median of v[0..N) (N odd) by forgetful selection (Perrot et al.): keep m+2 candidates, drop
/// their minimum and maximum (neither can be the median), take the next value, until 3 remain.
/// Every index is a compile-time constant once unrolled, so v stays in registers on the GPU.
template <int N, class T> WEFT_FILTERS_HD T forgetful_median(T (&v)[N]) {
  static_assert(N % 2 == 1 && N >= 3, "odd window");
  constexpr int m = N / 2;
  constexpr int hi = m + 1;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int lo = 0; lo <= m - 1; ++lo) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = lo + 1; i <= hi; ++i) order(v[lo], v[i]);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = lo + 1; i < hi; ++i) order(v[i], v[hi]);
    if (lo < m - 1) v[hi] = v[hi + 1 + lo];  // the max is forgotten, the next value comes in
  }
  return v[m];
}

}  // namespace weft::filters::device
