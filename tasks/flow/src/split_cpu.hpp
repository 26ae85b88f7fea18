#pragma once
// The flow of one frame pair computed in row strips (`weft flow --split`), CPU: TV-L1 (below),
// Horn–Schunck and CLG (coupled_strip, after it). Every strip holds
// both whole frames and builds both whole pyramids (the bicubic warp reads frame 1 anywhere);
// the unknowns (flow u, duals p) and the warp's per-pixel data are held per strip and level, with
// kStripHalo rows of each neighbour. The per-pixel arithmetic is the single-device solver's
// (solvers_cpu.hpp: the same device:: functions, in the same order), so the strips compute the
// same flow bit for bit; only the stopping test's sum is added in another order (below).
//
// Decomposition. Level 0's strips are the partition's slabs: part j owns rows [B_j, B_{j+1}),
// B_j = partition_first_row(H, parts, j). Level l (h_l rows) gives part j the rows
// [floor(B_j h_l / H), floor(B_{j+1} h_l / H)): the same fraction of the frame at every level,
// derived alike by every strip. A level whose thinnest strip has fewer than kStripHalo rows is
// computed whole by every strip (redundantly, no exchange), as are all coarser ones.
//
// One iteration of a split level (owned rows [r0, r1), u and p valid on every held row):
//   median (every median_interval iterations): owned rows, then an exchange;
//   thresholding and primal update on [r0, r1 + 1): row r1 (the next strip's first) is computed
//     here too, from the same inputs, because the dual step of row r1 - 1 needs the new u there;
//   the error of the owned rows, summed over every strip (StripLinks::sum);
//   dual update on [r0, r1), then one exchange of u and p (kStripHalo rows each side).
// Between levels each strip upsamples its owned rows (bilinear: rows [c0 - 1, c1 + 1] of the
// coarser strip [c0, c1), held since floor(B h_l / H) maps within one row to the coarser level's
// boundary; checked) and exchanges.
//
// The stopping test: the single-device loop sums the squared updates in double with an OpenMP
// reduction (an order that depends on the thread count); here each strip sums its rows and the
// strips' sums are added in part order, the same double on every strip. The two can differ in
// the last bits of a double; the test compares float(sum / n) with epsilon^2, which those bits
// change only when it lies within one float rounding of it.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "solvers_cpu.hpp"
#include "strips.hpp"
#include "weft/util/error.hpp"

namespace weft::flow::detail {

// The rows of one level a strip holds, and its state there: u1, u2 and, for TV-L1, p11, p12, p21,
// p22, one row of each per image row (so that one exchange carries them all).
template <class T> struct StripLevel {
  int fields = 6;
  int w = 0, h = 0;
  bool split = false;
  Slab layout;  // owned rows and halo rows (the whole level when not split)
  Array state;  // [held rows, fields, w]

  StripLevel(int width, int height, std::int64_t h0, int part, int parts, int field_count = 6, int halo = kStripHalo)
      : fields(field_count), w(width), h(height) {
    const StripRows rows = strip_rows(h0, height, part, parts, halo);
    split = rows.split;
    layout = rows.layout;
    state = Array::host(sizeof(T) == 4 ? DType::f32 : DType::f64, Shape(layout.total_rows(), fields, width));
    std::fill(state.data<T>(), state.data<T>() + state.size(), T(0));
  }
  [[nodiscard]] int first() const { return static_cast<int>(layout.first_row); }
  [[nodiscard]] int end() const { return static_cast<int>(layout.first_row + layout.rows); }
  [[nodiscard]] int held_first() const { return static_cast<int>(layout.first_row - layout.halo_before); }
  [[nodiscard]] int held_end() const { return end() + static_cast<int>(layout.halo_after); }
  // Element (field, global row y, x); rows of one field are fields * w apart.
  [[nodiscard]] T* at(int field, int y, int x) const {
    return state.data<T>() + (static_cast<long>(y - held_first()) * fields + field) * w + x;
  }
  [[nodiscard]] T get(int field, int y, int x) const { return *at(field, y, x); }
  void exchange(StripLinks& links) {
    if (split) links.exchange(state, layout);
  }
};

enum StripField { kU1, kU2, kP11, kP12, kP21, kP22 };

// Level start: the coarser level's flow upsampled (solve()'s resize: bilinear, scaled by the size
// ratio), or zero on the coarsest level; owned rows, then an exchange.
template <class T> void upsample_into(StripLevel<T>& fine, const StripLevel<T>* coarse, StripLinks& links, bool parallel) {
  if (!coarse) return;  // zeros
  const int w = fine.w, h = fine.h, cw = coarse->w, ch = coarse->h;
  if (cw == w && ch == h) {  // solve() keeps the flow when the sizes agree
    for (int y = fine.first(); y < fine.end(); ++y)
      for (int f : {kU1, kU2}) std::copy_n(coarse->at(f, y, 0), w, fine.at(f, y, 0));
  } else {
    // Rows of the coarser strip the bilinear taps reach (the decomposition's comment says why
    // they are held); clamped like the taps themselves.
    const auto reach = [&](int y) { return static_cast<int>(floor((y + T(0.5)) * (T(ch) / T(h)) - T(0.5))); };
    const int lo = std::clamp(reach(fine.first()), 0, ch - 1), hi = std::clamp(reach(fine.end() - 1) + 1, 0, ch - 1);
    if (fine.first() < fine.end() && (lo < coarse->held_first() || hi >= coarse->held_end()))
      throw Error("flow split: the upsampling of rows " + std::to_string(fine.first()) + ".." + std::to_string(fine.end()) +
                  " reaches coarser rows " + std::to_string(lo) + ".." + std::to_string(hi) + " outside the strip's " +
                  std::to_string(coarse->held_first()) + ".." + std::to_string(coarse->held_end()));
    const T scale_x = T(w) / T(cw), scale_y = T(h) / T(ch);  // solve(): u scaled by sx, v by sy
    const T sx = T(cw) / T(w), sy = T(ch) / T(h);              // resize()'s sampling steps
    const int first = fine.first(), end = fine.end();
#pragma omp parallel for if (parallel)
    for (int y = first; y < end; ++y)
      for (int x = 0; x < w; ++x)
        for (int f : {kU1, kU2}) {
          auto at = [&](int yy, int xx) { return coarse->get(f, yy, xx); };
          *fine.at(f, y, x) = (f == kU1 ? scale_x : scale_y) *
                              device::bilinear_of<T>(at, cw, ch, (x + T(0.5)) * sx - T(0.5), (y + T(0.5)) * sy - T(0.5));
        }
  }
  fine.exchange(links);
}

// median_filter() on the owned rows of both flow components (rows clamped to the level).
template <class T> void strip_median(StripLevel<T>& lv, int size, bool parallel) {
  const int r = size / 2, w = lv.w, h = lv.h, first = lv.first(), end = lv.end();
  std::vector<T> out(static_cast<std::size_t>(std::max(end - first, 0)) * w * 2);
#pragma omp parallel for if (parallel)
  for (int y = first; y < end; ++y)
    for (int f = 0; f < 2; ++f)
      for (int x = 0; x < w; ++x) {
        T buf[25] = {};
        int n = 0;
        for (int dy = -r; dy <= r; ++dy)
          for (int dx = -r; dx <= r; ++dx)
            buf[n++] = lv.get(f, device::clamp_index(y + dy, h), device::clamp_index(x + dx, w));
        out[(static_cast<std::size_t>(y - first) * 2 + f) * w + x] = device::median_of(buf, n);
      }
  for (int y = first; y < end; ++y)
    for (int f = 0; f < 2; ++f) std::copy_n(out.data() + (static_cast<std::size_t>(y - first) * 2 + f) * w, w, lv.at(f, y, 0));
}

// tvl1_level() on a strip of level `k` of the pyramids.
template <class T>
void tvl1_strip(const Plane<T>& i0, const Plane<T>& i1, StripLevel<T>& lv, StripLinks& links, const FlowParams& prm,
                bool parallel) {
  const int w = i0.w, h = i0.h;
  const Gradients<T> g = gradients(i0, i1, parallel);
  const T lt = T(prm.lambda * 255.0 * prm.theta), theta = T(prm.theta), taut = T(prm.tau / prm.theta);
  const T eps2 = T(prm.epsilon * prm.epsilon);
  const long stride = static_cast<long>(lv.fields) * w;
  const int first = lv.first(), end = lv.end(), held0 = lv.held_first();
  const int primal_end = lv.split && lv.layout.halo_after > 0 ? end + 1 : end;  // one row of the next strip
  const std::size_t rows = static_cast<std::size_t>(lv.held_end() - held0);
  std::vector<T> i1w(rows * w), ix(rows * w), iy(rows * w), rho_c(rows * w), v1(rows * w), v2(rows * w);
  auto idx = [&](int y, int x) { return static_cast<std::size_t>(y - held0) * w + x; };
  for (int warp_index = 0; warp_index < prm.warps; ++warp_index) {
#pragma omp parallel for if (parallel)
    for (int y = first; y < primal_end; ++y)
      for (int x = 0; x < w; ++x) {  // warp() then rho_c, as tvl1_level
        const T u1 = lv.get(kU1, y, x), u2 = lv.get(kU2, y, x);
        const T sx = T(x) + u1, sy = T(y) + u2;
        const std::size_t i = idx(y, x);
        i1w[i] = device::bicubic<T>(i1.v.data(), w, h, sx, sy);
        ix[i] = device::warped_gradient<T>(device::bicubic<T>(g.x1.v.data(), w, h, sx, sy), g.x0(y, x));
        iy[i] = device::warped_gradient<T>(device::bicubic<T>(g.y1.v.data(), w, h, sx, sy), g.y0(y, x));
        rho_c[i] = i1w[i] - ix[i] * u1 - iy[i] * u2 - i0(y, x);
      }
    T error = eps2 + 1;
    for (int n = 0; n < prm.iterations && error > eps2; ++n) {
      if (n % prm.median_interval == 0 && prm.median > 1) {
        strip_median(lv, prm.median, parallel);
        lv.exchange(links);
      }
      double err = 0;
#pragma omp parallel for if (parallel)
      for (int y = first; y < primal_end; ++y)
        for (int x = 0; x < w; ++x) {
          const std::size_t i = idx(y, x);
          device::tvl1_threshold<T>(lv.get(kU1, y, x), lv.get(kU2, y, x), ix[i], iy[i], rho_c[i], lt, v1[i], v2[i]);
        }
#pragma omp parallel for if (parallel) reduction(+ : err)
      for (int y = first; y < primal_end; ++y)
        for (int x = 0; x < w; ++x) {
          const std::size_t i = idx(y, x);
          const T nu = v1[i] + theta * device::divergence_at<T>(lv.at(kP11, y, x), lv.at(kP12, y, x), stride, w, h, x, y);
          const T nv = v2[i] + theta * device::divergence_at<T>(lv.at(kP21, y, x), lv.at(kP22, y, x), stride, w, h, x, y);
          T& u1 = *lv.at(kU1, y, x);
          T& u2 = *lv.at(kU2, y, x);
          if (y < end) err += double((nu - u1) * (nu - u1) + (nv - u2) * (nv - u2));
          u1 = nu;
          u2 = nv;
        }
      error = T((lv.split ? links.sum(err) : err) / double(i0.size()));
#pragma omp parallel for if (parallel)
      for (int y = first; y < end; ++y)
        for (int x = 0; x < w; ++x) {
          T ux, uy, vx, vy;
          device::forward_gradient_at<T>(lv.at(kU1, y, x), stride, w, h, x, y, ux, uy);
          device::forward_gradient_at<T>(lv.at(kU2, y, x), stride, w, h, x, y, vx, vy);
          device::tvl1_dual<T>(*lv.at(kP11, y, x), *lv.at(kP12, y, x), ux, uy, taut);
          device::tvl1_dual<T>(*lv.at(kP21, y, x), *lv.at(kP22, y, x), vx, vy, taut);
        }
      lv.exchange(links);
    }
  }
}

// coupled_level() (Horn–Schunck: rho 0; CLG) on a strip of level `k` of the pyramids. At each warp
// the strip computes the data term and structure tensor on every held row (the flow is valid
// there after the last exchange) and smooths it as one image of those rows: a held window's edge
// is the level's edge or `halo` >= the Gaussian's radius rows from the owned rows, so the owned
// rows' taps clamp where the whole level's do and give its values. A Jacobi step reads the
// neighbours' flow of the previous iteration (rows r0 - 1 and r1 held), writes the owned rows,
// then one exchange; the error's sum as in tvl1_strip.
template <class T>
void coupled_strip(const Plane<T>& i0, const Plane<T>& i1, StripLevel<T>& lv, StripLinks& links, const FlowParams& prm,
                   double rho, bool parallel) {
  const int w = i0.w, h = i0.h;
  const Gradients<T> g = gradients(i0, i1, parallel);
  const T a = T((prm.alpha / 255.0) * (prm.alpha / 255.0)), eps2 = T(prm.epsilon * prm.epsilon);
  const int first = lv.first(), end = lv.end(), held0 = lv.held_first(), rows = lv.held_end() - held0;
  std::vector<T> next(static_cast<std::size_t>(std::max(end - first, 0)) * w * 2);
  for (int warp_index = 0; warp_index < prm.warps; ++warp_index) {
    Plane<T> j11(w, rows), j12(w, rows), j22(w, rows), j13(w, rows), j23(w, rows);
#pragma omp parallel for if (parallel)
    for (int y = held0; y < held0 + rows; ++y)
      for (int x = 0; x < w; ++x) {  // warp() then the tensor, as coupled_level
        const T u = lv.get(kU1, y, x), v = lv.get(kU2, y, x);
        const T sx = T(x) + u, sy = T(y) + v;
        const T i1w = device::bicubic<T>(i1.v.data(), w, h, sx, sy);
        const T ix = device::warped_gradient<T>(device::bicubic<T>(g.x1.v.data(), w, h, sx, sy), g.x0(y, x));
        const T iy = device::warped_gradient<T>(device::bicubic<T>(g.y1.v.data(), w, h, sx, sy), g.y0(y, x));
        const T it = i1w - i0(y, x) - ix * u - iy * v;
        const int r = y - held0;
        j11(r, x) = ix * ix, j12(r, x) = ix * iy, j22(r, x) = iy * iy, j13(r, x) = ix * it, j23(r, x) = iy * it;
      }
    if (rho > 0) {
      j11 = gaussian(j11, rho, parallel), j12 = gaussian(j12, rho, parallel), j22 = gaussian(j22, rho, parallel);
      j13 = gaussian(j13, rho, parallel), j23 = gaussian(j23, rho, parallel);
    }
    T error = eps2 + 1;
    for (int n = 0; n < prm.iterations && error > eps2; ++n) {
      if (n % prm.median_interval == 0 && prm.median > 1) {
        strip_median(lv, prm.median, parallel);
        lv.exchange(links);
      }
      double err = 0;
#pragma omp parallel for if (parallel) reduction(+ : err)
      for (int y = first; y < end; ++y)
        for (int x = 0; x < w; ++x) {
          T su = 0, sv = 0, cnt = 0;
          const int nx[4] = {x - 1, x + 1, x, x}, ny[4] = {y, y, y - 1, y + 1};
          for (int k = 0; k < 4; ++k)
            if (nx[k] >= 0 && nx[k] < w && ny[k] >= 0 && ny[k] < h)
              su += lv.get(kU1, ny[k], nx[k]), sv += lv.get(kU2, ny[k], nx[k]), cnt += 1;
          const int r = y - held0;
          T nu, nv;
          device::coupled_jacobi<T>(cnt, a, su, sv, j11(r, x), j12(r, x), j22(r, x), j13(r, x), j23(r, x), nu, nv);
          const T u = lv.get(kU1, y, x), v = lv.get(kU2, y, x);
          err += double((nu - u) * (nu - u) + (nv - v) * (nv - v));
          const std::size_t o = (static_cast<std::size_t>(y - first) * w + x) * 2;
          next[o] = nu, next[o + 1] = nv;
        }
      for (int y = first; y < end; ++y)
        for (int x = 0; x < w; ++x) {
          const std::size_t o = (static_cast<std::size_t>(y - first) * w + x) * 2;
          *lv.at(kU1, y, x) = next[o], *lv.at(kU2, y, x) = next[o + 1];
        }
      lv.exchange(links);
      error = T((lv.split ? links.sum(err) : err) / double(i0.size()));
    }
  }
}

// solve() for the strip `part` of `parts`: the flow of the level-0 rows [first_row - halo_before,
// first_row + rows + halo_after) of the partition's slab `slab` (halo rows as exchanged last).
template <class T>
Flow<T> solve_strip(Plane<T> i0, Plane<T> i1, const FlowParams& prm, const Slab& slab, StripLinks& links, bool parallel) {
  const auto [p0, p1] = pyramids(std::move(i0), std::move(i1), prm, parallel);
  const int levels = static_cast<int>(p0.size());
  const std::int64_t h0 = p0[0].h;
  const bool tvl1 = prm.method == Method::tvl1;
  const int halo = strip_halo(prm.method, prm.rho);
  std::unique_ptr<StripLevel<T>> coarse;
  for (int s = levels - 1; s >= 0; --s) {
    auto lv = std::make_unique<StripLevel<T>>(p0[s].w, p0[s].h, h0, slab.part, slab.parts, tvl1 ? 6 : 2, halo);
    upsample_into(*lv, coarse.get(), links, parallel);
    if (tvl1)
      tvl1_strip(p0[s], p1[s], *lv, links, prm, parallel);
    else
      coupled_strip(p0[s], p1[s], *lv, links, prm, prm.method == Method::clg ? prm.rho : 0.0, parallel);
    coarse = std::move(lv);
  }
  // Level 0 is split like the partition when its strips have `halo` rows or more (the split
  // refuses slabs thinner than kStripHalo), else whole: either way it holds the slab's rows.
  const StripLevel<T>& lv = *coarse;
  const int y0 = static_cast<int>(slab.first_row - slab.halo_before), y1 = static_cast<int>(slab.first_row + slab.rows + slab.halo_after);
  if (y0 < lv.held_first() || y1 > lv.held_end())
    throw Error("flow split: level 0 of strip " + std::to_string(slab.part) + " holds rows " + std::to_string(lv.held_first()) +
                ".." + std::to_string(lv.held_end()) + ", its slab " + std::to_string(y0) + ".." + std::to_string(y1));
  Flow<T> f{Plane<T>(lv.w, y1 - y0), Plane<T>(lv.w, y1 - y0)};
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < lv.w; ++x) f.u(y - y0, x) = lv.get(kU1, y, x), f.v(y - y0, x) = lv.get(kU2, y, x);
  return f;
}

}  // namespace weft::flow::detail
