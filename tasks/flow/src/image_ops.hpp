#pragma once
// CPU image operations of the flow pyramid (templated on the scalar: double reference, float fast
// path). Loops are OpenMP-parallel when `parallel` is true.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "flow_math.hpp"
#include "levels.hpp"

namespace weft::flow::detail {

template <class T> struct Plane {
  int w = 0, h = 0;
  std::vector<T> v;
  Plane() = default;
  Plane(int width, int height, T fill = T(0)) : w(width), h(height), v(static_cast<std::size_t>(width) * height, fill) {}
  T& operator()(int y, int x) { return v[static_cast<std::size_t>(y) * w + x]; }
  T operator()(int y, int x) const { return v[static_cast<std::size_t>(y) * w + x]; }
  [[nodiscard]] std::int64_t size() const { return static_cast<std::int64_t>(w) * h; }
};

// Separable Gaussian blur, radius ceil(3 sigma), replicated borders.
template <class T> Plane<T> gaussian(const Plane<T>& in, double sigma, bool parallel) {
  if (sigma <= 0) return in;
  const int r = std::max(1, static_cast<int>(std::ceil(3 * sigma)));
  std::vector<T> k(2 * r + 1);
  T sum = 0;
  for (int i = -r; i <= r; ++i) sum += k[i + r] = static_cast<T>(std::exp(-0.5 * i * i / (sigma * sigma)));
  for (auto& x : k) x /= sum;
  Plane<T> tmp(in.w, in.h), out(in.w, in.h);
#pragma omp parallel for if (parallel)
  for (int y = 0; y < in.h; ++y)
    for (int x = 0; x < in.w; ++x) {
      T s = 0;
      for (int i = -r; i <= r; ++i) s += k[i + r] * in(y, device::clamp_index(x + i, in.w));
      tmp(y, x) = s;
    }
#pragma omp parallel for if (parallel)
  for (int y = 0; y < in.h; ++y)
    for (int x = 0; x < in.w; ++x) {
      T s = 0;
      for (int i = -r; i <= r; ++i) s += k[i + r] * tmp(device::clamp_index(y + i, in.h), x);
      out(y, x) = s;
    }
  return out;
}

// Bilinear resampling to (w, h); pixel centres are aligned (x_src = (x + .5) * w_in / w - .5).
template <class T> Plane<T> resize(const Plane<T>& in, int w, int h, T scale, bool parallel) {
  Plane<T> out(w, h);
  const T sx = T(in.w) / T(w), sy = T(in.h) / T(h);
#pragma omp parallel for if (parallel)
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      out(y, x) = scale * device::bilinear<T>(in.v.data(), in.w, in.h, (x + T(0.5)) * sx - T(0.5), (y + T(0.5)) * sy - T(0.5));
  return out;
}

// Downsampling by params.zoom after the anti-aliasing blur of antialias_sigma (none by default).
template <class T> Plane<T> zoom_out(const Plane<T>& in, const FlowParams& prm, bool parallel) {
  return resize(gaussian(in, antialias_sigma(prm), parallel), zoomed_size(in.w, prm.zoom), zoomed_size(in.h, prm.zoom),
                T(1), parallel);
}

// 5-point derivatives (device::derivative5) with replicated borders.
template <class T> void gradient(const Plane<T>& in, Plane<T>& gx, Plane<T>& gy, bool parallel) {
  gx = Plane<T>(in.w, in.h);
  gy = Plane<T>(in.w, in.h);
#pragma omp parallel for if (parallel)
  for (int y = 0; y < in.h; ++y)
    for (int x = 0; x < in.w; ++x) {
      auto at_x = [&](int d) { return in(y, device::clamp_index(x + d, in.w)); };
      auto at_y = [&](int d) { return in(device::clamp_index(y + d, in.h), x); };
      gx(y, x) = device::derivative5<T>(at_x(-2), at_x(-1), at_x(1), at_x(2));
      gy(y, x) = device::derivative5<T>(at_y(-2), at_y(-1), at_y(1), at_y(2));
    }
}

// Texture part of a frame (device::texture_part): f - alpha * ROF(f), kRofIterations dual steps.
template <class T> Plane<T> structure_texture(const Plane<T>& f, double alpha, bool parallel) {
  const int w = f.w, h = f.h;
  Plane<T> u(w, h), pa(w, h), pb(w, h), out(w, h);
  const T theta = T(device::kRofTheta), taut = T(device::kRofTau / device::kRofTheta);
  for (int it = 0; it < device::kRofIterations; ++it) {
#pragma omp parallel for if (parallel)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        u(y, x) = device::rof_primal<T>(f(y, x), device::divergence<T>(pa.v.data(), pb.v.data(), w, h, x, y), theta);
#pragma omp parallel for if (parallel)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        T ux, uy;
        device::forward_gradient<T>(u.v.data(), w, h, x, y, ux, uy);
        device::tvl1_dual<T>(pa(y, x), pb(y, x), ux, uy, taut);
      }
  }
#pragma omp parallel for if (parallel)
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const T structure = device::rof_primal<T>(f(y, x), device::divergence<T>(pa.v.data(), pb.v.data(), w, h, x, y), theta);
      out(y, x) = device::texture_part<T>(f(y, x), structure, T(alpha));
    }
  return out;
}

// Square median filter of side `size` (odd, <= 5), replicated borders.
template <class T> void median_filter(Plane<T>& p, int size, bool parallel) {
  if (size <= 1) return;
  const int r = size / 2;
  Plane<T> out(p.w, p.h);
#pragma omp parallel for if (parallel)
  for (int y = 0; y < p.h; ++y)
    for (int x = 0; x < p.w; ++x) {
      T buf[25] = {};
      int n = 0;
      for (int dy = -r; dy <= r; ++dy)
        for (int dx = -r; dx <= r; ++dx) buf[n++] = p(device::clamp_index(y + dy, p.h), device::clamp_index(x + dx, p.w));
      out(y, x) = device::median_of(buf, n);
    }
  p = std::move(out);
}

}  // namespace weft::flow::detail
