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
  // Device frames are read back once (a copy of two frames over the bus).
  const Array h = frame.memory().is_host() ? frame : frame.to_host();
  switch (h.dtype()) {
    case DType::u8: return moments(h.data<std::uint8_t>(), h.size());
    case DType::u16: return moments(h.data<std::uint16_t>(), h.size());
    case DType::f32: return moments(h.data<float>(), h.size());
    default: return moments(h.data<double>(), h.size());
  }
}

}  // namespace

double brightness_change(const Array& frame0, const Array& frame1) {
  check_frames(frame0, frame1);
  const Moments a = moments(frame0), b = moments(frame1);
  if (a.variance == 0 || b.variance == 0)
    return a.variance == b.variance ? 0.0 : std::numeric_limits<double>::infinity();
  // Both terms are unchanged by a joint affine rescaling of the intensities, so integer and
  // floating-point frames measure alike whatever their range.
  const double spread = std::sqrt(0.5 * (a.variance + b.variance));
  return std::abs(0.5 * std::log(b.variance / a.variance)) + std::abs(b.mean - a.mean) / spread;
}

FlowParams params_for_pair(const Array& frame0, const Array& frame1, const FlowParams& params) {
  FlowParams p = params;
  if (p.texture > 0 && p.texture_threshold > 0 && brightness_change(frame0, frame1) <= p.texture_threshold)
    p.texture = 0;
  return p;
}

}  // namespace weft::flow
