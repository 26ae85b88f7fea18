// The per-pair choice of the structure-texture split: on only when the frames' brightness differs.
// Why a rule: on the evaluation set (bench/flow/eval.py, tune half) the split wins by far on
// pairs with a gain or bias change (TV-L1's data term assumes constant brightness) and loses on
// the others, most on large and rigid motion (docs/flow.md, "Evaluation set").
#include <cmath>
#include <cstdint>
#include <limits>

#include "weft/tasks/flow/flow.hpp"

namespace weft::flow {

namespace {

struct Moments {
  double mean = 0, variance = 0;
};

template <class T> Moments moments(const T* v, std::int64_t n) {
  // Two passes in double: the variance of 8-bit frames is exact enough, and the cost (one read of
  // each frame) is small next to the flow's.
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]);
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (std::int64_t i = 0; i < n; ++i) sq += (static_cast<double>(v[i]) - mean) * (static_cast<double>(v[i]) - mean);
  return {mean, sq / static_cast<double>(n)};
}

Moments moments(const Array& frame) {
  // Device frames are read back once (the CUDA paths measure on the GPU instead, flow_gpu.cu).
  const Array h = frame.memory().is_host() ? frame : frame.to_host();
  switch (h.dtype()) {
    case DType::u8: return moments(h.data<std::uint8_t>(), h.size());
    case DType::u16: return moments(h.data<std::uint16_t>(), h.size());
    case DType::f32: return moments(h.data<float>(), h.size());
    default: return moments(h.data<double>(), h.size());
  }
}

}  // namespace

double brightness_change(double mean0, double variance0, double mean1, double variance1) {
  if (variance0 == 0 || variance1 == 0)
    return variance0 == variance1 ? 0.0 : std::numeric_limits<double>::infinity();
  // Both terms are unchanged by a joint affine rescaling of the intensities, so integer and
  // floating-point frames measure alike whatever their range (and the GPU path measures its
  // frames after their conversion to [0, 1]).
  const double spread = std::sqrt(0.5 * (variance0 + variance1));
  return std::abs(0.5 * std::log(variance1 / variance0)) + std::abs(mean1 - mean0) / spread;
}

double brightness_change(const Array& frame0, const Array& frame1) {
  check_frames(frame0, frame1);
  const Moments a = moments(frame0), b = moments(frame1);
  return brightness_change(a.mean, a.variance, b.mean, b.variance);
}

FlowParams params_for_pair(const Array& frame0, const Array& frame1, const FlowParams& params) {
  FlowParams p = params;
  if (p.texture > 0 && p.texture_threshold > 0 && brightness_change(frame0, frame1) <= p.texture_threshold)
    p.texture = 0;
  return p;
}

}  // namespace weft::flow
