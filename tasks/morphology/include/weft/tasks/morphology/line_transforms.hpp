#pragma once
/// Per-line distance transforms shared by the CPU path and the CUDA kernels (layer 4).
/// A 3D distance transform is three passes of these over the lines of each axis. Each pass maps
/// g to f(x) = min_i metric(x - i, g(i)) along one line; every value is an exact integer.
/// Lines are (pointer, element stride, length); kInfinity marks "no seed reachable".
#include <cstdint>

#if defined(__CUDACC__)
#define WEFT_MORPHOLOGY_HD __host__ __device__ __forceinline__
#else
#define WEFT_MORPHOLOGY_HD inline
#endif

namespace weft::morphology::device {

inline constexpr std::int32_t kInfinity = 1 << 30;

WEFT_MORPHOLOGY_HD std::int64_t floor_div(std::int64_t a, std::int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
WEFT_MORPHOLOGY_HD std::int32_t clamp_infinity(std::int64_t v) {
  return v >= kInfinity ? kInfinity : static_cast<std::int32_t>(v);
}

/// Saturating successor: distances stop at `inf` (the type's "unreachable").
template <class T>
WEFT_MORPHOLOGY_HD T next_distance(T run, T inf) {
  return run >= inf ? inf : static_cast<T>(run + 1);
}

/// f(x) = min_i g(i) + |x - i|: the L1 (octahedron) pass, and the first pass of every metric
/// (with g ∈ {0, ∞} it is the 1D distance to the nearest seed). Two scans, exact; values
/// saturate at `inf`.
template <class T>
WEFT_MORPHOLOGY_HD void cone_line(T* f, std::int64_t stride, int n, T inf) {
  T run = inf;
  for (int i = 0; i < n; ++i) {
    T& v = f[i * stride];
    run = next_distance(run, inf);
    if (v < run) run = v; else v = run;
  }
  run = inf;
  for (int i = n - 1; i >= 0; --i) {
    T& v = f[i * stride];
    run = next_distance(run, inf);
    if (v < run) run = v; else v = run;
  }
}
WEFT_MORPHOLOGY_HD void cone_line(std::int32_t* f, std::int64_t stride, int n) { cone_line(f, stride, n, kInfinity); }

/// f(x) = distance along the line to the nearest i with f(i) ≤ r (saturating at `inf`): one axis
/// of the dilation by a cube of radius r, when the previous axis left distances in f.
template <class T>
WEFT_MORPHOLOGY_HD void window_line(T* f, std::int64_t stride, int n, T inf, std::int64_t r) {
  T run = inf;
  for (int i = 0; i < n; ++i) {
    T& v = f[i * stride];
    run = static_cast<std::int64_t>(v) <= r ? T(0) : next_distance(run, inf);
    v = run;
  }
  run = inf;
  for (int i = n - 1; i >= 0; --i) {
    T& v = f[i * stride];
    run = v == T(0) ? T(0) : next_distance(run, inf);
    if (run < v) v = run;
  }
}

/// Squared Euclidean metric: f(x) = min_i (x - i)² + g(i).
struct Parabola {
  WEFT_MORPHOLOGY_HD static std::int64_t at(std::int64_t x, std::int64_t i, std::int64_t g) {
    return (x - i) * (x - i) + g;
  }
  /// First x where the parabola of u is not above the parabola of i (i < u), minus one.
  WEFT_MORPHOLOGY_HD static std::int64_t sep(std::int64_t i, std::int64_t gi, std::int64_t u, std::int64_t gu) {
    return floor_div(u * u - i * i + gu - gi, 2 * (u - i));
  }
};

/// Chessboard metric: f(x) = min_i max(|x - i|, g(i)) (Meijster et al. 2000, table 1).
struct Chessboard {
  WEFT_MORPHOLOGY_HD static std::int64_t at(std::int64_t x, std::int64_t i, std::int64_t g) {
    std::int64_t d = x > i ? x - i : i - x;
    return d > g ? d : g;
  }
  WEFT_MORPHOLOGY_HD static std::int64_t sep(std::int64_t i, std::int64_t gi, std::int64_t u, std::int64_t gu) {
    std::int64_t mid = floor_div(i + u, 2);
    if (gi <= gu) return (i + gu) > mid ? i + gu : mid;
    return (u - gi) < mid ? u - gi : mid;
  }
};

/// Lower envelope pass (Meijster, Roerdink, Hesselink 2000, phase 2) for Parabola or Chessboard.
/// Values ≥ `inf` are "no seed"; results saturate at `inf`. `seeds`, `starts`, `values` are stacks
/// of n entries each, `stack_stride` apart (so that GPU threads working on neighbouring lines touch
/// neighbouring words); S must hold positions 0..n−1.
template <class Metric, class T, class S>
WEFT_MORPHOLOGY_HD void envelope_line(T* f, std::int64_t stride, int n, T inf, S* seeds, S* starts, T* values,
                                      std::int64_t stack_stride) {
  int k = -1;
  for (int u = 0; u < n; ++u) {
    const T gu = f[u * stride];
    if (gu >= inf) continue;
    while (k >= 0 && Metric::at(starts[k * stack_stride], seeds[k * stack_stride], values[k * stack_stride]) >
                         Metric::at(starts[k * stack_stride], u, gu))
      --k;
    if (k < 0) {
      k = 0;
      seeds[0] = static_cast<S>(u);
      starts[0] = 0;
      values[0] = gu;
    } else {
      const std::int64_t w = 1 + Metric::sep(seeds[k * stack_stride], values[k * stack_stride], u, gu);
      if (w < n) {
        ++k;
        seeds[k * stack_stride] = static_cast<S>(u);
        starts[k * stack_stride] = static_cast<S>(w);
        values[k * stack_stride] = gu;
      }
    }
  }
  if (k < 0) return;  // no seed on this line: every value is already `inf`
  for (int u = n - 1; u >= 0; --u) {
    const std::int64_t v = Metric::at(u, seeds[k * stack_stride], values[k * stack_stride]);
    f[u * stride] = v >= static_cast<std::int64_t>(inf) ? inf : static_cast<T>(v);
    if (u == static_cast<int>(starts[k * stack_stride])) --k;
  }
}

}  // namespace weft::morphology::device
