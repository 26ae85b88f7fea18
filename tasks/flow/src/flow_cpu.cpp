// Host entry points: input checks, intensity normalisation and the CPU solvers.
#include <algorithm>
#include <limits>
#include <string>

#include "frames.hpp"
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

template <class T> Array run(const Array& f0, const Array& f1, const FlowParams& params, bool parallel) {
  check_frames(f0, f1);
  validate(params);
  auto [i0, i1] = detail::normalised_planes<T>(f0, f1);
  const detail::Flow<T> f = detail::solve(std::move(i0), std::move(i1), params_for_pair(f0, f1, params), parallel);
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
