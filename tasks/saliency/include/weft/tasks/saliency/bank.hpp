#pragma once
/// The static pathway's filter bank and constants (Marat et al. 2009, "Modelling spatio-temporal
/// saliency to predict gaze direction for short videos", IJCV 82:231-243), shared by the CPU and
/// CUDA paths. Per-element math is `__host__ __device__` so both paths evaluate the same formula.
///
/// Bank: 6 orientations θ_o = o·30° (o = 0..5; θ is the direction of the frequency vector, x to
/// the right and y down, so θ = 0 answers to vertical structures) × 4 bands with centre
/// frequencies f_b = 0.25 / 2^b cycles/pixel (b = 0..3: 0.25, 0.125, 0.0625, 0.03125).
/// Each filter is a Gaussian in the frequency domain centred on (f_b cos θ_o, f_b sin θ_o):
///   G(u, v) = exp(−(u − f_b)² / 2σ_r² − v² / 2σ_t²),  u = fx cos θ + fy sin θ,  v = −fx sin θ + fy cos θ
/// Bandwidths: one octave radially at half amplitude (FWHM = f_b (√2 − 1/√2), σ_r = 0.30028 f_b)
/// and 30° angularly at half amplitude, i.e. the orientation spacing (σ_t = f_b tan 15° / √(2 ln 2)
/// = 0.22758 f_b). The filter applied is the real even sum G(f) + G(−f), so the response is real
/// and the energy is its square. The Nyquist row and column get zero gain, which keeps the filtered
/// spectrum Hermitian so that a real inverse transform is exact.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define WEFT_SALIENCY_HD __host__ __device__
#else
#define WEFT_SALIENCY_HD
#endif

namespace weft::saliency {

inline constexpr int kOrientations = 6;
inline constexpr int kBands = 4;
inline constexpr int kMaps = kOrientations * kBands;  ///< map m = o · kBands + b
inline constexpr double kHighestFrequency = 0.25;     ///< f_0 in cycles/pixel; f_b = f_0 / 2^b
inline constexpr double kRadialSigma = 0.3002806022;  ///< σ_r / f_b (one octave FWHM)
inline constexpr double kTangentialSigma = 0.2275750905;  ///< σ_t / f_b (30° FWHM)
/// Short-range interactions (Marat et al. 2009, eq. 5): same orientation, neighbouring bands
/// reinforce (+0.5 each); same band, neighbouring orientations (circular: 150° next to 0°) inhibit
/// (−0.5 each). Negative results are clipped to zero.
inline constexpr double kBandExcitation = 0.5;
inline constexpr double kOrientationInhibition = 0.5;
/// Normalisation of each interacted map: to [0, 1] by its min and max, then Itti's weight
/// (M − m̄)² with M = 1 the normalised maximum and m̄ the mean of the map's other local maxima,
/// taken as the maxima of kStatTile × kStatTile tiles other than the tile of the global maximum
/// (a map with one peak keeps its weight, a map with many similar peaks is suppressed: pop-out).
/// Then values below kThreshold (of the normalised maximum, 1) are set to zero. The static map
/// is the sum of the 24 maps.
inline constexpr int kStatTile = 32;
inline constexpr double kThreshold = 0.2;

/// Frequency of index k on an n-point grid, in (−0.5, 0.5] cycles/pixel.
WEFT_SALIENCY_HD inline double grid_frequency(std::int64_t k, std::int64_t n) {
  return static_cast<double>(k <= n / 2 ? k : k - n) / static_cast<double>(n);
}

/// cos and sin of orientation o (exact table: no drift between host and device libm).
WEFT_SALIENCY_HD inline void orientation_direction(int o, float& c, float& s) {
  constexpr float kCos[kOrientations] = {1.0f, 0.8660254037844387f, 0.5f, 0.0f, -0.5f, -0.8660254037844387f};
  constexpr float kSin[kOrientations] = {0.0f, 0.5f, 0.8660254037844387f, 1.0f, 0.8660254037844387f, 0.5f};
  c = kCos[o];
  s = kSin[o];
}

/// Gain of the even filter G(f) + G(−f) of direction (c, s) = (cos θ, sin θ) and band b at
/// frequency (fy, fx), in float (the CPU float path and the CUDA kernel share it; the tests'
/// reference is in double).
WEFT_SALIENCY_HD inline float gabor_gain(float c, float s, int b, float fy, float fx) {
  const float f0 = static_cast<float>(kHighestFrequency) / static_cast<float>(1 << b);
  const float inv_r = 1.0f / (2.0f * (static_cast<float>(kRadialSigma) * f0) * (static_cast<float>(kRadialSigma) * f0));
  const float inv_t =
      1.0f / (2.0f * (static_cast<float>(kTangentialSigma) * f0) * (static_cast<float>(kTangentialSigma) * f0));
  const float u = fx * c + fy * s;
  const float v = -fx * s + fy * c;
  const float ep = (u - f0) * (u - f0) * inv_r + v * v * inv_t;
  const float em = (u + f0) * (u + f0) * inv_r + v * v * inv_t;
  // exp(−30) < 1e-13: far below float resolution of the sum, skipped.
  return (ep < 30.0f ? expf(-ep) : 0.0f) + (em < 30.0f ? expf(-em) : 0.0f);
}
/// The same for orientation o.
WEFT_SALIENCY_HD inline float gabor_gain(int o, int b, float fy, float fx) {
  float c, s;
  orientation_direction(o, c, s);
  return gabor_gain(c, s, b, fy, fx);
}

/// Whether (ky, kx) of an H × (W/2+1) half spectrum (W even) lies on a Nyquist line (zero gain).
WEFT_SALIENCY_HD inline bool on_nyquist(std::int64_t ky, std::int64_t kx, std::int64_t height, std::int64_t width) {
  return 2 * kx == width || (height % 2 == 0 && 2 * ky == height);
}

/// Hann window value at i of n (zero at both ends; 1 when n == 1).
WEFT_SALIENCY_HD inline float hann(std::int64_t i, std::int64_t n) {
  if (n <= 1) return 1.0f;
  return 0.5f - 0.5f * cosf(6.283185307179586f * static_cast<float>(i) / static_cast<float>(n - 1));
}

/// Interacted energy of map (o, b) from the 24 energies e[o · kBands + b] (clipped at zero).
WEFT_SALIENCY_HD inline float interact(const float* e, int o, int b) {
  float v = e[o * kBands + b];
  if (b > 0) v += static_cast<float>(kBandExcitation) * e[o * kBands + b - 1];
  if (b + 1 < kBands) v += static_cast<float>(kBandExcitation) * e[o * kBands + b + 1];
  const int prev = (o + kOrientations - 1) % kOrientations, next = (o + 1) % kOrientations;
  v -= static_cast<float>(kOrientationInhibition) * (e[prev * kBands + b] + e[next * kBands + b]);
  return v > 0.0f ? v : 0.0f;
}

/// Per-map normalisation constants from the interacted map's min, max and m̄ (mean of the other
/// local maxima).
/// Trivial (no member initialisers) so that kernels can hold it in shared memory.
struct MapNorm {
  float min;
  float inv_range;  ///< 1 / (max − min), 0 for a constant map (which then contributes nothing)
  float weight;     ///< Itti's (1 − normalised m̄)²
};
WEFT_SALIENCY_HD inline MapNorm map_norm(double min, double max, double mean) {
  MapNorm n{0.0f, 0.0f, 0.0f};
  if (!(max > min)) return n;
  n.min = static_cast<float>(min);
  n.inv_range = static_cast<float>(1.0 / (max - min));
  const double m = (mean - min) / (max - min);
  n.weight = static_cast<float>((1.0 - m) * (1.0 - m));
  return n;
}
/// Contribution of one interacted value to the static map.
WEFT_SALIENCY_HD inline float normalized_contribution(float value, const MapNorm& n) {
  const float x = (value - n.min) * n.inv_range;
  return x >= static_cast<float>(kThreshold) ? x * n.weight : 0.0f;
}

}  // namespace weft::saliency
