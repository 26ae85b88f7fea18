#pragma once
/// The dynamic pathway's constants and per-element math (Marat et al. 2009, section 3), shared by
/// the CPU and CUDA paths (`__host__ __device__`).
///
/// Working resolution: frames are box-averaged by K × K (K a power of two, `MotionParams::scale`;
/// auto: the smallest K with W/K <= kAutoWidth) and scaled to [0, 1]; every motion stage runs on
/// these [H/K, W/K] frames, and the dynamic map is brought back to [H, W] bilinearly at the end.
///
/// Dominant motion: a 2D affine model in working pixels,
///   u(x, y) = θ0 + θ1 x̂ + θ2 ŷ,  v(x, y) = θ3 + θ4 x̂ + θ5 ŷ,  x̂ = (x − cx) / s, ŷ = (y − cy) / s,
/// with (cx, cy) the frame centre and s = max(w, h) / 2, such that prev(x + u, y + v) ≈ cur(x, y).
/// It is estimated coarse to fine over a 2 × 2 box pyramid by Gauss-Newton on the brightness
/// constancy residual r = prev(p + d(p)) − cur(p), each step an iteratively reweighted least-squares
/// solve with Tukey's biweight (c = 4.685 σ, σ = 1.4826 · median |r| of the previous step, read from
/// a histogram of |r|; the very first step is plain least squares). θ stays in level-0 pixels at
/// every level (a level-l pixel is 2^l working pixels), so no rescaling between levels.
#include <cmath>
#include <cstdint>

#include "weft/tasks/flow/params.hpp"
#include "weft/tasks/saliency/bank.hpp"

namespace weft::saliency {

inline constexpr int kAffineParams = 6;
inline constexpr int kAffineSums = 27;     ///< 21 entries of the upper triangle of JᵀWJ, then 6 of JᵀWr
inline constexpr int kResidualBins = 128;  ///< |r| histogram: kResidualBins bins then one overflow bin
inline constexpr double kResidualBinWidth = 1.0 / 512.0;
inline constexpr double kTukeyC = 4.685;
inline constexpr double kMadToSigma = 1.4826;
inline constexpr double kMinSigma = 1.0 / 255.0;  ///< floor of σ: one grey level of an 8-bit frame
inline constexpr int kMaxMedianFrames = 9;
inline constexpr std::int64_t kAutoWidth = 512;
inline constexpr int kMinLevelSide = 16;  ///< coarsest pyramid level at least this many pixels a side

/// Parameters of the dynamic pathway (defaults chosen for speed on GPUs; see docs/saliency.md).
struct MotionParams {
  int scale = 0;          ///< working resolution divisor K (1, 2, 4, 8); 0: auto (W/K <= kAutoWidth)
  int levels = 4;         ///< most pyramid levels of the dominant-motion estimate
  int iterations = 5;     ///< IRLS Gauss-Newton steps per level
  int median_frames = 5;  ///< temporal median over this many frames (1..9, causal: t−n+1 .. t)
  flow::FlowParams flow = default_flow();
  /// Residual flow: Horn-Schunck, 3 scales, 2 warps × 30 iterations, fixed (epsilon 0: no host
  /// synchronisation on GPUs), no median filter inside the flow (the temporal median follows).
  static flow::FlowParams default_flow() {
    flow::FlowParams f = flow::default_params(flow::Method::hs);
    f.scales = 3;
    f.warps = 2;
    f.iterations = 30;
    f.epsilon = 0.0;
    f.median = 0;
    return f;
  }
};

/// K for a frame width (params.scale when set).
[[nodiscard]] inline int motion_scale(const MotionParams& p, std::int64_t width) {
  if (p.scale > 0) return p.scale;
  int k = 1;
  while (width / k > kAutoWidth) k *= 2;
  return k;
}
/// Working size of an extent (at least 2, as the flow needs).
[[nodiscard]] inline std::int64_t working_extent(std::int64_t extent, int k) {
  const std::int64_t e = extent / k;
  return e < 2 ? 2 : e;
}

/// Clamped pixel read.
WEFT_SALIENCY_HD inline float pixel_at(const float* img, std::int64_t h, std::int64_t w, std::int64_t y, std::int64_t x) {
  y = y < 0 ? 0 : (y >= h ? h - 1 : y);
  x = x < 0 ? 0 : (x >= w ? w - 1 : x);
  return img[y * w + x];
}
/// Bilinear sample at (y, x), coordinates clamped to the image.
WEFT_SALIENCY_HD inline float bilinear(const float* img, std::int64_t h, std::int64_t w, float y, float x) {
  x = fminf(fmaxf(x, 0.0f), static_cast<float>(w - 1));
  y = fminf(fmaxf(y, 0.0f), static_cast<float>(h - 1));
  const float fx = floorf(x), fy = floorf(y);
  const auto x0 = static_cast<std::int64_t>(fx), y0 = static_cast<std::int64_t>(fy);
  const float ax = x - fx, ay = y - fy;
  const float a = pixel_at(img, h, w, y0, x0), b = pixel_at(img, h, w, y0, x0 + 1);
  const float c = pixel_at(img, h, w, y0 + 1, x0), d = pixel_at(img, h, w, y0 + 1, x0 + 1);
  return (1.0f - ay) * ((1.0f - ax) * a + ax * b) + ay * ((1.0f - ax) * c + ax * d);
}

/// Geometry of the affine model at pyramid level `level` of a working frame [h0, w0].
struct AffineFrame {
  float cx, cy, inv_s;  ///< centre and 1 / s of level 0
  float step;           ///< 2^level: working pixels per level pixel
};
WEFT_SALIENCY_HD inline AffineFrame affine_frame(std::int64_t h0, std::int64_t w0, int level) {
  const float s = 0.5f * static_cast<float>(w0 > h0 ? w0 : h0);
  return {0.5f * static_cast<float>(w0 - 1), 0.5f * static_cast<float>(h0 - 1), 1.0f / s,
          static_cast<float>(1 << level)};
}
/// Displacement (in level pixels) of level pixel (y, x) under θ (double or float).
template <class T>
WEFT_SALIENCY_HD inline void affine_displacement(const T* theta, const AffineFrame& f, std::int64_t y, std::int64_t x,
                                                 float& u, float& v, float& xh, float& yh) {
  xh = ((static_cast<float>(x) + 0.5f) * f.step - 0.5f - f.cx) * f.inv_s;
  yh = ((static_cast<float>(y) + 0.5f) * f.step - 0.5f - f.cy) * f.inv_s;
  u = static_cast<float>(theta[0] + theta[1] * xh + theta[2] * yh) / f.step;
  v = static_cast<float>(theta[3] + theta[4] * xh + theta[5] * yh) / f.step;
}

/// One pixel's Gauss-Newton terms at a level: residual r and Jacobian row j (∂r/∂θ, with the
/// gradient of cur standing for that of the warped prev). False when p + d(p) leaves the image.
template <class T>
WEFT_SALIENCY_HD inline bool affine_terms(const float* cur, const float* prev, std::int64_t h, std::int64_t w,
                                          const T* theta, const AffineFrame& f, std::int64_t y, std::int64_t x,
                                          float& r, float j[kAffineParams]) {
  float u, v, xh, yh;
  affine_displacement(theta, f, y, x, u, v, xh, yh);
  const float qx = static_cast<float>(x) + u, qy = static_cast<float>(y) + v;
  if (!(qx >= 0.0f && qy >= 0.0f && qx <= static_cast<float>(w - 1) && qy <= static_cast<float>(h - 1))) return false;
  const float c = cur[y * w + x];
  r = bilinear(prev, h, w, qy, qx) - c;
  const float gx = 0.5f * (pixel_at(cur, h, w, y, x + 1) - pixel_at(cur, h, w, y, x - 1)) / f.step;
  const float gy = 0.5f * (pixel_at(cur, h, w, y + 1, x) - pixel_at(cur, h, w, y - 1, x)) / f.step;
  j[0] = gx;
  j[1] = gx * xh;
  j[2] = gx * yh;
  j[3] = gy;
  j[4] = gy * xh;
  j[5] = gy * yh;
  return true;
}
/// Compensated previous frame at (y, x): prev(p + d(p)), or cur(p) where p + d(p) leaves the frame
/// (content that entered the view: no evidence of motion there, so no residual).
WEFT_SALIENCY_HD inline float compensated(const float* cur, const float* prev, std::int64_t h, std::int64_t w,
                                          const double* theta, const AffineFrame& f, std::int64_t y, std::int64_t x) {
  float u, v, xh, yh;
  affine_displacement(theta, f, y, x, u, v, xh, yh);
  const float qx = static_cast<float>(x) + u, qy = static_cast<float>(y) + v;
  if (!(qx >= 0.0f && qy >= 0.0f && qx <= static_cast<float>(w - 1) && qy <= static_cast<float>(h - 1)))
    return cur[y * w + x];
  return bilinear(prev, h, w, qy, qx);
}
/// Tukey's biweight of r for the scale σ (σ <= 0: least squares, weight 1).
WEFT_SALIENCY_HD inline float tukey_weight(float r, float sigma) {
  if (sigma <= 0.0f) return 1.0f;
  const float c = static_cast<float>(kTukeyC) * sigma;
  if (fabsf(r) >= c) return 0.0f;
  const float t = 1.0f - (r / c) * (r / c);
  return t * t;
}
/// Histogram bin of |r|.
WEFT_SALIENCY_HD inline int residual_bin(float r) {
  const float b = fabsf(r) / static_cast<float>(kResidualBinWidth);
  return b >= static_cast<float>(kResidualBins) ? kResidualBins : static_cast<int>(b);
}
/// Adds w·jjᵀ (upper triangle, row-major) and w·j·r to `sums` (float or double).
template <class S>
WEFT_SALIENCY_HD inline void accumulate_affine(S* sums, const float j[kAffineParams], float r, float weight) {
  int k = 0;
  for (int a = 0; a < kAffineParams; ++a)
    for (int b = a; b < kAffineParams; ++b) sums[k++] += static_cast<S>(weight * j[a] * j[b]);
  for (int a = 0; a < kAffineParams; ++a) sums[k++] += static_cast<S>(weight * j[a] * r);
}
/// σ for the next step from the |r| histogram: 1.4826 · median, at least kMinSigma (median taken
/// within its bin by linear interpolation). No counted pixel: kMinSigma.
WEFT_SALIENCY_HD inline double sigma_from_histogram(const unsigned* hist) {
  unsigned long long total = 0;
  for (int b = 0; b <= kResidualBins; ++b) total += hist[b];
  if (total == 0) return kMinSigma;
  const double half = 0.5 * static_cast<double>(total);
  double below = 0.0;
  double median = kResidualBins * kResidualBinWidth;
  for (int b = 0; b < kResidualBins; ++b) {
    const double n = hist[b];
    if (below + n >= half) {
      median = (b + (n > 0 ? (half - below) / n : 0.0)) * kResidualBinWidth;
      break;
    }
    below += n;
  }
  const double s = kMadToSigma * median;
  return s > kMinSigma ? s : kMinSigma;
}
/// Solves the normal equations from `sums` (kAffineSums) for the step δθ = −A⁻¹b by Gaussian
/// elimination with partial pivoting in double; a tiny ridge keeps flat frames finite. False (δθ
/// = 0) when the system is singular or not finite.
WEFT_SALIENCY_HD inline bool solve_affine_step(const double* sums, double* step) {
  double a[kAffineParams][kAffineParams + 1];
  int k = 0;
  double trace = 0.0;
  for (int i = 0; i < kAffineParams; ++i)
    for (int j = i; j < kAffineParams; ++j) {
      a[i][j] = a[j][i] = sums[k++];
      if (i == j) trace += sums[k - 1];
    }
  for (int i = 0; i < kAffineParams; ++i) {
    a[i][kAffineParams] = -sums[21 + i];
    a[i][i] += 1e-9 * trace + 1e-30;
    step[i] = 0.0;
  }
  for (int c = 0; c < kAffineParams; ++c) {
    int pivot = c;
    for (int i = c + 1; i < kAffineParams; ++i)
      if (fabs(a[i][c]) > fabs(a[pivot][c])) pivot = i;
    if (!(fabs(a[pivot][c]) > 1e-12 * (trace > 0 ? trace : 1.0))) return false;
    for (int j = 0; j <= kAffineParams; ++j) {
      const double t = a[c][j];
      a[c][j] = a[pivot][j];
      a[pivot][j] = t;
    }
    for (int i = c + 1; i < kAffineParams; ++i) {
      const double m = a[i][c] / a[c][c];
      for (int j = c; j <= kAffineParams; ++j) a[i][j] -= m * a[c][j];
    }
  }
  double x[kAffineParams];
  for (int i = kAffineParams - 1; i >= 0; --i) {
    double s = a[i][kAffineParams];
    for (int j = i + 1; j < kAffineParams; ++j) s -= a[i][j] * x[j];
    x[i] = s / a[i][i];
    if (!(fabs(x[i]) < 1e300)) return false;  // also rejects NaN
  }
  for (int i = 0; i < kAffineParams; ++i) step[i] = x[i];
  return true;
}

/// Median of v[0..n) (n <= kMaxMedianFrames; v is reordered): the middle value, or the mean of
/// the two middle values for even n.
WEFT_SALIENCY_HD inline float small_median(float* v, int n) {
  for (int i = 1; i < n; ++i) {
    const float x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = x;
  }
  return n % 2 == 1 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/// Value of the working-resolution map [h, w] at frame pixel (y, x) for divisor k (bilinear).
WEFT_SALIENCY_HD inline float upsampled(const float* map, std::int64_t h, std::int64_t w, int k, std::int64_t y,
                                        std::int64_t x) {
  const float inv = 1.0f / static_cast<float>(k);
  return bilinear(map, h, w, (static_cast<float>(y) + 0.5f) * inv - 0.5f, (static_cast<float>(x) + 0.5f) * inv - 0.5f);
}

/// Fusion (Marat et al. 2009, eq. 11): Mf = α Ms + β Md + α β Ms Md.
WEFT_SALIENCY_HD inline float fuse(float ms, float md, float alpha, float beta) {
  return alpha * ms + beta * md + alpha * beta * ms * md;
}
/// β from the raw moments of Md (count n, Σx, Σx², Σx³): its skewness, clipped at 0 (a dynamic
/// map without concentrated motion adds nothing; a constant map has none).
WEFT_SALIENCY_HD inline double skewness_weight(double n, double s1, double s2, double s3) {
  if (n <= 0) return 0.0;
  const double mean = s1 / n;
  const double var = s2 / n - mean * mean;
  if (!(var > 1e-12)) return 0.0;
  const double m3 = s3 / n - 3.0 * mean * s2 / n + 2.0 * mean * mean * mean;
  const double skew = m3 / (var * sqrt(var));
  return skew > 0.0 ? skew : 0.0;
}

}  // namespace weft::saliency
