#pragma once
// CPU solvers of the three methods on one pyramid level, and the coarse-to-fine driver.
// Templated on the scalar: double (reference, single-threaded) and float (fast path, OpenMP).
#include <utility>
#include <vector>

#include "image_ops.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow::detail {

template <class T> struct Flow {
  Plane<T> u, v;
};

// Gradients (5-point) of both frames of one level.
template <class T> struct Gradients {
  Plane<T> x0, y0, x1, y1;
};
template <class T> Gradients<T> gradients(const Plane<T>& i0, const Plane<T>& i1, bool parallel) {
  Gradients<T> g;
  gradient(i0, g.x0, g.y0, parallel);
  gradient(i1, g.x1, g.y1, parallel);
  return g;
}

// Frame 1 warped by the flow (bicubic, as IPOL and OpenCV) and the gradient of the linearised
// data term: the mean of frame 0's gradient and frame 1's gradient warped (device::warped_gradient).
template <class T> struct Warped {
  Plane<T> i1w, ix, iy;
};

template <class T> Warped<T> warp(const Plane<T>& i1, const Gradients<T>& g, const Flow<T>& f, bool parallel) {
  Warped<T> w{Plane<T>(i1.w, i1.h), Plane<T>(i1.w, i1.h), Plane<T>(i1.w, i1.h)};
#pragma omp parallel for if (parallel)
  for (int y = 0; y < i1.h; ++y)
    for (int x = 0; x < i1.w; ++x) {
      const T sx = T(x) + f.u(y, x), sy = T(y) + f.v(y, x);
      w.i1w(y, x) = device::bicubic<T>(i1.v.data(), i1.w, i1.h, sx, sy);
      w.ix(y, x) = device::warped_gradient<T>(device::bicubic<T>(g.x1.v.data(), i1.w, i1.h, sx, sy), g.x0(y, x));
      w.iy(y, x) = device::warped_gradient<T>(device::bicubic<T>(g.y1.v.data(), i1.w, i1.h, sx, sy), g.y0(y, x));
    }
  return w;
}

// Dual TV-L1 (Zach, Pock, Bischof; IPOL scheme of Sanchez, Meinhardt-Llopis, Facciolo) on one level.
template <class T>
void tvl1_level(const Plane<T>& i0, const Plane<T>& i1, Flow<T>& f, const FlowParams& prm, bool parallel) {
  const int w = i0.w, h = i0.h;
  const Gradients<T> g = gradients(i0, i1, parallel);
  Plane<T> p11(w, h), p12(w, h), p21(w, h), p22(w, h), rho_c(w, h), v1(w, h), v2(w, h);
  const T lt = T(prm.lambda * 255.0 * prm.theta), theta = T(prm.theta), taut = T(prm.tau / prm.theta);
  const T eps2 = T(prm.epsilon * prm.epsilon);
  auto div = [&](const Plane<T>& pa, const Plane<T>& pb, int y, int x) {
    return device::divergence<T>(pa.v.data(), pb.v.data(), w, h, x, y);
  };
  for (int warp_index = 0; warp_index < prm.warps; ++warp_index) {
    const Warped<T> wd = warp(i1, g, f, parallel);
#pragma omp parallel for if (parallel)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        rho_c(y, x) = wd.i1w(y, x) - wd.ix(y, x) * f.u(y, x) - wd.iy(y, x) * f.v(y, x) - i0(y, x);
    T error = eps2 + 1;
    for (int n = 0; n < prm.iterations && error > eps2; ++n) {
      if (n % prm.median_interval == 0) {
        median_filter(f.u, prm.median, parallel);
        median_filter(f.v, prm.median, parallel);
      }
      double err = 0;
#pragma omp parallel for if (parallel)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          device::tvl1_threshold<T>(f.u(y, x), f.v(y, x), wd.ix(y, x), wd.iy(y, x), rho_c(y, x), lt, v1(y, x), v2(y, x));
#pragma omp parallel for if (parallel) reduction(+ : err)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const T nu = v1(y, x) + theta * div(p11, p12, y, x);
          const T nv = v2(y, x) + theta * div(p21, p22, y, x);
          err += double((nu - f.u(y, x)) * (nu - f.u(y, x)) + (nv - f.v(y, x)) * (nv - f.v(y, x)));
          f.u(y, x) = nu;
          f.v(y, x) = nv;
        }
      error = T(err / double(i0.size()));
#pragma omp parallel for if (parallel)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          T ux, uy, vx, vy;
          device::forward_gradient<T>(f.u.v.data(), w, h, x, y, ux, uy);
          device::forward_gradient<T>(f.v.v.data(), w, h, x, y, vx, vy);
          device::tvl1_dual<T>(p11(y, x), p12(y, x), ux, uy, taut);
          device::tvl1_dual<T>(p21(y, x), p22(y, x), vx, vy, taut);
        }
    }
  }
}

// Horn–Schunck (rho = 0) and CLG (structure tensor smoothed at rho) on one level, with
// incremental warping: the data term is linearised around the flow at the start of each warp.
template <class T>
void coupled_level(const Plane<T>& i0, const Plane<T>& i1, Flow<T>& f, const FlowParams& prm, double rho, bool parallel) {
  const int w = i0.w, h = i0.h;
  const Gradients<T> g = gradients(i0, i1, parallel);
  const T a = T((prm.alpha / 255.0) * (prm.alpha / 255.0)), eps2 = T(prm.epsilon * prm.epsilon);
  Flow<T> next{Plane<T>(w, h), Plane<T>(w, h)};
  for (int warp_index = 0; warp_index < prm.warps; ++warp_index) {
    const Warped<T> wd = warp(i1, g, f, parallel);
    Plane<T> j11(w, h), j12(w, h), j22(w, h), j13(w, h), j23(w, h);
#pragma omp parallel for if (parallel)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const T ix = wd.ix(y, x), iy = wd.iy(y, x);
        const T it = wd.i1w(y, x) - i0(y, x) - ix * f.u(y, x) - iy * f.v(y, x);
        j11(y, x) = ix * ix, j12(y, x) = ix * iy, j22(y, x) = iy * iy, j13(y, x) = ix * it, j23(y, x) = iy * it;
      }
    if (rho > 0) {
      j11 = gaussian(j11, rho, parallel), j12 = gaussian(j12, rho, parallel), j22 = gaussian(j22, rho, parallel);
      j13 = gaussian(j13, rho, parallel), j23 = gaussian(j23, rho, parallel);
    }
    T error = eps2 + 1;
    for (int n = 0; n < prm.iterations && error > eps2; ++n) {
      if (n % prm.median_interval == 0) {
        median_filter(f.u, prm.median, parallel);
        median_filter(f.v, prm.median, parallel);
      }
      double err = 0;
#pragma omp parallel for if (parallel) reduction(+ : err)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          T su = 0, sv = 0, cnt = 0;
          const int nx[4] = {x - 1, x + 1, x, x}, ny[4] = {y, y, y - 1, y + 1};
          for (int k = 0; k < 4; ++k)
            if (nx[k] >= 0 && nx[k] < w && ny[k] >= 0 && ny[k] < h) su += f.u(ny[k], nx[k]), sv += f.v(ny[k], nx[k]), cnt += 1;
          T nu, nv;
          device::coupled_jacobi<T>(cnt, a, su, sv, j11(y, x), j12(y, x), j22(y, x), j13(y, x), j23(y, x), nu, nv);
          err += double((nu - f.u(y, x)) * (nu - f.u(y, x)) + (nv - f.v(y, x)) * (nv - f.v(y, x)));
          next.u(y, x) = nu, next.v(y, x) = nv;
        }
      std::swap(f.u, next.u);
      std::swap(f.v, next.v);
      error = T(err / double(i0.size()));
    }
  }
}

// Pyramids of both frames, finest level first. i0, i1 are already normalised to [0, 1]; with
// params.texture > 0 the pyramid is built from their texture parts (structure_texture).
template <class T> struct Pyramids {
  std::vector<Plane<T>> p0, p1;
};
template <class T> Pyramids<T> pyramids(Plane<T> i0, Plane<T> i1, const FlowParams& prm, bool parallel) {
  if (prm.texture > 0) {
    i0 = structure_texture(i0, prm.texture, parallel);
    i1 = structure_texture(i1, prm.texture, parallel);
  }
  const int levels = level_count(i0.w, i0.h, prm);
  Pyramids<T> p{{gaussian(i0, prm.presmooth, parallel)}, {gaussian(i1, prm.presmooth, parallel)}};
  for (int s = 1; s < levels; ++s) {
    p.p0.push_back(zoom_out(p.p0.back(), prm, parallel));
    p.p1.push_back(zoom_out(p.p1.back(), prm, parallel));
  }
  return p;
}

// Coarse-to-fine driver.
template <class T> Flow<T> solve(Plane<T> i0, Plane<T> i1, const FlowParams& prm, bool parallel) {
  const auto [p0, p1] = pyramids(std::move(i0), std::move(i1), prm, parallel);
  const int levels = static_cast<int>(p0.size());
  Flow<T> f{Plane<T>(p0.back().w, p0.back().h), Plane<T>(p0.back().w, p0.back().h)};
  for (int s = levels - 1; s >= 0; --s) {
    if (f.u.w != p0[s].w || f.u.h != p0[s].h) {
      const T sx = T(p0[s].w) / T(f.u.w), sy = T(p0[s].h) / T(f.u.h);
      f.u = resize(f.u, p0[s].w, p0[s].h, sx, parallel);
      f.v = resize(f.v, p0[s].w, p0[s].h, sy, parallel);
    }
    switch (prm.method) {
      case Method::tvl1: tvl1_level(p0[s], p1[s], f, prm, parallel); break;
      case Method::hs: coupled_level(p0[s], p1[s], f, prm, 0.0, parallel); break;
      case Method::clg: coupled_level(p0[s], p1[s], f, prm, prm.rho, parallel); break;
    }
  }
  return f;
}

}  // namespace weft::flow::detail
