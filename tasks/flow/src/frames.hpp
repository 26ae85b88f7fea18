#pragma once
// Both frames of a pair as planes of T with intensities in [0, 1] (the CPU solvers' input; the
// whole and the split solvers share it).
#include <algorithm>
#include <utility>

#include "image_ops.hpp"
#include "weft/data/array.hpp"

namespace weft::flow::detail {

template <class T> Plane<T> to_plane(const Array& a) {
  const Array h = a.memory().is_host() ? a : a.to_host();
  Plane<T> p(static_cast<int>(h.shape()[1]), static_cast<int>(h.shape()[0]));
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
template <class T> void normalise(Plane<T>& a, Plane<T>& b, DType type) {
  if (const float scale = intensity_scale(type); scale > 0) {
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

template <class T> std::pair<Plane<T>, Plane<T>> normalised_planes(const Array& f0, const Array& f1) {
  Plane<T> i0 = to_plane<T>(f0), i1 = to_plane<T>(f1);
  normalise(i0, i1, f0.dtype());
  return {std::move(i0), std::move(i1)};
}

}  // namespace weft::flow::detail
