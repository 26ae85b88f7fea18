// Host entry points: input checks, intensity normalisation and the CPU solvers.
#include <algorithm>
#include <limits>
#include <string>

#include "solvers_cpu.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/util/error.hpp"

namespace weft::flow {

void check_frames(const Array& f0, const Array& f1) {
  for (const Array* a : {&f0, &f1}) {
    if (a->empty() || a->shape().ndim() != 2)
      throw ConfigError("flow: each frame must be a 2D grey image [H,W], got shape " + (a->empty() ? std::string("empty") : a->shape().str()));
    const DType t = a->dtype();
    if (t != DType::u8 && t != DType::u16 && t != DType::f32 && t != DType::f64)
      throw ConfigError("flow: frame dtype " + std::string(dtype_name(t)) + " is not supported (u8, u16, f32, f64)");
  }
  if (!(f0.shape() == f1.shape()))
    throw ConfigError("flow: frames have different sizes: " + f0.shape().str() + " and " + f1.shape().str());
  if (f0.shape()[0] < 2 || f0.shape()[1] < 2)
    throw ConfigError("flow: frames of " + f0.shape().str() + " pixels are too small (at least 2x2)");
}

namespace {

template <class T> detail::Plane<T> to_plane(const Array& a) {
  const Array h = a.memory().is_host() ? a : a.to_host();
  detail::Plane<T> p(static_cast<int>(h.shape()[1]), static_cast<int>(h.shape()[0]));
  auto copy = [&](auto* src) { std::transform(src, src + p.size(), p.v.begin(), [](auto x) { return static_cast<T>(x); }); };
  switch (h.dtype()) {
    case DType::u8: copy(h.data<std::uint8_t>()); break;
    case DType::u16: copy(h.data<std::uint16_t>()); break;
    case DType::f32: copy(h.data<float>()); break;
    default: copy(h.data<double>()); break;
  }
  return p;
}

// Integer frames: scaled by their dtype's range. Floating-point frames: joint min/max
// normalisation to [0, 1] (a constant pair maps to zeros; NaN-free).
template <class T> void normalise(detail::Plane<T>& a, detail::Plane<T>& b, DType type) {
  if (const float scale = detail::intensity_scale(type); scale > 0) {
    for (auto* p : {&a, &b})
      for (auto& x : p->v) x *= T(scale);
    return;
  }
  const auto [a0, a1] = std::minmax_element(a.v.begin(), a.v.end());
  const auto [b0, b1] = std::minmax_element(b.v.begin(), b.v.end());
  const T lo = std::min(*a0, *b0), range = std::max(*a1, *b1) - lo;
  const T scale = range > 0 ? T(1) / range : T(0);
  for (auto* p : {&a, &b})
    for (auto& x : p->v) x = (x - lo) * scale;
}

template <class T> Array run(const Array& f0, const Array& f1, const FlowParams& params, bool parallel) {
  check_frames(f0, f1);
  validate(params);
  auto i0 = to_plane<T>(f0), i1 = to_plane<T>(f1);
  normalise(i0, i1, f0.dtype());
  const detail::Flow<T> f = detail::solve(std::move(i0), std::move(i1), params, parallel);
  Array out = Array::host(DType::f32, Shape(f.u.h, f.u.w, 2));
  float* o = out.data<float>();
  for (std::int64_t i = 0; i < f.u.size(); ++i) {
    o[2 * i] = static_cast<float>(f.u.v[i]);
    o[2 * i + 1] = static_cast<float>(f.v.v[i]);
  }
  return out;
}

}  // namespace

Array compute(const Array& f0, const Array& f1, const FlowParams& params) { return run<float>(f0, f1, params, true); }

Array compute_reference(const Array& f0, const Array& f1, const FlowParams& params) {
  return run<double>(f0, f1, params, false);
}

}  // namespace weft::flow
