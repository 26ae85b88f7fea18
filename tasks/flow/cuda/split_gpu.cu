// A strip of a split flow on a GPU (FlowStrip::run_slab_cuda): TV-L1 below; Horn–Schunck and CLG
// in coupled_level. The decomposition and the
// iteration's structure are the CPU strip's (src/split_cpu.hpp); the arithmetic is compute_cuda's
// with one iteration per launch (the path it takes when epsilon > 0): the same input conversion,
// texture part and pyramids (every strip builds both whole), and the same warp, median and
// iteration kernels run over the strip's rows (row windows, kernels.cuh). Flow and duals are
// weft Arrays of the strip's held rows, exchanged after each launch that changes them.
//
// Stopping test: compute_cuda's kernels skip an iteration once the previous one's error (float
// atomics over the image) is <= epsilon^2 n, and its host reads the error every check_every
// iterations to stop launching. Here each strip's error of iteration n is gathered on the device
// through the halo links (parts - 1 exchanges of a row per part, merged by one-thread kernels),
// and err[n] replaced by the strips' errors added in part order before iteration n + 1 reads it:
// the same rule without a host synchronisation per iteration, the same sum up to its float
// rounding order. With epsilon 0 there is no test, as in compute_cuda, which then runs its fused
// kernels instead: the split's iterations are the one-per-launch kernel's, equal to the fused
// ones up to rounding (tests/flow/flow_split_gpu_test.cu bounds the difference).
#include <memory>
#include <string>
#include <utility>

#include "../src/levels.hpp"
#include "../src/split_gpu.hpp"
#include "../src/strips.hpp"
#include "device_flow.cuh"
#include "kernels.cuh"
#include "weft/cuda.hpp"

namespace weft::flow::detail {
namespace {

using gpu::DeviceBuffer;
using gpu::Pair_t;

// The stopping test's gather (see above): kv holds (known, value) per part, rows the exchanged
// array ([1 + halo rows, 2 parts], sum_layout). One thread each: a few floats.
__global__ void error_gather_start_kernel(float* kv, float* rows, const float* err, int n, int part, int parts,
                                          int own_row) {
  for (int j = 0; j < parts; ++j) kv[2 * j] = 0.f, kv[2 * j + 1] = 0.f;
  kv[2 * part] = 1.f, kv[2 * part + 1] = err[n];
  for (int j = 0; j < 2 * parts; ++j) rows[own_row * 2 * parts + j] = kv[j];
}
__global__ void error_gather_round_kernel(float* kv, float* rows, int total_rows, int own_row, int parts, float* err,
                                          int n, bool last) {
  for (int r = 0; r < total_rows; ++r)
    for (int j = 0; j < parts && r != own_row; ++j)
      if (rows[r * 2 * parts + 2 * j] != 0.f && kv[2 * j] == 0.f) kv[2 * j] = 1.f, kv[2 * j + 1] = rows[r * 2 * parts + 2 * j + 1];
  if (last) {
    float total = 0.f;
    for (int j = 0; j < parts; ++j) total += kv[2 * j + 1];
    err[n] = total;
  } else {
    for (int j = 0; j < 2 * parts; ++j) rows[own_row * 2 * parts + j] = kv[j];
  }
}

// err[n] of this strip replaced by the sum over every strip (split levels only).
void gather_error(StripLinks& links, const Slab& slab, float* err, int n, Array& rows, float* kv, cudaStream_t s) {
  const Slab layout = sum_layout(slab.part, slab.parts);
  const int own = static_cast<int>(layout.halo_before), total = static_cast<int>(layout.total_rows());
  error_gather_start_kernel<<<1, 1, 0, s>>>(kv, static_cast<float*>(rows.raw()), err, n, slab.part, slab.parts, own);
  check_launch("flow.error_gather_start_kernel", s);
  for (int round = 0; round + 1 < slab.parts; ++round) {
    links.exchange(rows, layout);
    error_gather_round_kernel<<<1, 1, 0, s>>>(kv, static_cast<float*>(rows.raw()), total, own, slab.parts, err, n,
                                              round + 2 == slab.parts);
    check_launch("flow.error_gather_round_kernel", s);
  }
}

// The partition links of a strip on a GPU: halo exchanges of device arrays; the sum's rows go
// through a device array (halo exchanges are of arrays on the task's place).
class DeviceStripLinks final : public StripLinks {
 public:
  DeviceStripLinks(Halo& halo, Context& ctx)
      : halo_(halo), stream_(static_cast<cudaStream_t>(ctx.stream())),
        layout_(sum_layout(halo.slab().part, halo.slab().parts)),
        host_(Array::host(DType::f64, Shape(layout_.total_rows(), 2 * static_cast<std::int64_t>(layout_.parts)))),
        device_(ctx.alloc(DType::f64, host_.shape())) {}
  void exchange(const Array& a, const Slab& layout) override { halo_.exchange(a, layout); }
  double sum(double x) override {
    return gathered_sum(x, layout_, host_.data<double>(), [&] {
      WEFT_CUDA_CHECK(cudaMemcpyAsync(device_.raw(), host_.raw(), host_.bytes(), cudaMemcpyHostToDevice, stream_));
      halo_.exchange(device_, layout_);
      WEFT_CUDA_CHECK(cudaMemcpyAsync(host_.raw(), device_.raw(), host_.bytes(), cudaMemcpyDeviceToHost, stream_));
      WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    });
  }

 private:
  Halo& halo_;
  cudaStream_t stream_;
  Slab layout_;
  Array host_, device_;
};

// One level's state on the strip: flow and duals (ping-pong pairs) over the held rows.
template <class S> struct GpuStripLevel {
  using P = Pair_t<S>;
  int w, h;
  StripRows rows;
  Array u, u_next, p1, p1n, p2, p2n;  // [held rows, w, 2]: float2 flow, P duals
  DeviceBuffer<P> grad;
  DeviceBuffer<S> rho_c;

  // `duals`: TV-L1's p1, p2 (Horn–Schunck and CLG have none); `halo`: strip_halo().
  GpuStripLevel(int width, int height, std::int64_t h0, const Slab& slab, Context& ctx, cudaStream_t s, bool duals,
                int halo)
      : w(width), h(height), rows(strip_rows(h0, height, slab.part, slab.parts, halo)),
        grad(static_cast<std::size_t>(rows.layout.total_rows()) * width, s),
        rho_c(static_cast<std::size_t>(rows.layout.total_rows()) * width, s) {
    const Shape shape(rows.layout.total_rows(), width, 2);
    const DType dual_type = sizeof(S) == 4 ? DType::f32 : DType::f16;
    u = ctx.alloc(DType::f32, shape), u_next = ctx.alloc(DType::f32, shape);
    for (Array* a : {&u, &u_next}) WEFT_CUDA_CHECK(cudaMemsetAsync(a->raw(), 0, a->bytes(), s));
    if (!duals) return;
    p1 = ctx.alloc(dual_type, shape), p1n = ctx.alloc(dual_type, shape), p2 = ctx.alloc(dual_type, shape),
    p2n = ctx.alloc(dual_type, shape);
    for (Array* a : {&p1, &p2}) WEFT_CUDA_CHECK(cudaMemsetAsync(a->raw(), 0, a->bytes(), s));
  }
  [[nodiscard]] int held_rows() const { return static_cast<int>(rows.layout.total_rows()); }
  [[nodiscard]] int first() const { return static_cast<int>(rows.layout.first_row); }
  [[nodiscard]] int end() const { return static_cast<int>(rows.layout.first_row + rows.layout.rows); }
  [[nodiscard]] long held_first() const { return rows.layout.first_row - rows.layout.halo_before; }
  // The level's rows as in the whole image: pointer to global row 0 (see kernels.cuh's row windows).
  template <class T> [[nodiscard]] T* global(const Array& a) const { return static_cast<T*>(a.raw()) - held_first() * w; }
  template <class T> [[nodiscard]] T* global(const DeviceBuffer<T>& b) const { return b.get() - held_first() * w; }
  void exchange(StripLinks& links, const Array& a) const {
    if (rows.split) links.exchange(a, rows.layout);
  }
};

// Reads err[it] back every check_every iterations (as compute_cuda's host): true when the warp
// has stopped. Every strip reads the same gathered sum: the same decision.
inline bool warp_done(const float* err, int it, float stop_sum, int check_every, int iterations, cudaStream_t s) {
  if (stop_sum <= 0 || (it + 1) % check_every != 0 || it + 1 >= iterations) return false;
  float total = 0;
  WEFT_CUDA_CHECK(cudaMemcpyAsync(&total, err + it, sizeof(float), cudaMemcpyDeviceToHost, s));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
  return total <= stop_sum;
}

// Horn–Schunck and CLG on a strip (compute_cuda's arithmetic; the CPU strip's structure,
// src/split_cpu.hpp coupled_strip): each warp computes the data term and the tensor on every held
// row and smooths it as an image of those rows (the owned rows' Gaussian taps clamp where the whole
// level's do, halo >= its radius); then Jacobi steps on the owned rows, each followed by an
// exchange of the flow and the error's gather. compute_cuda passes the stopping threshold to
// these kernels even with epsilon 0 (an iteration after one of error 0 is skipped), so the error
// is gathered then too.
template <class S>
void coupled_level(const S* i0, const S* i1, Pair_t<S>* g1, GpuStripLevel<S>* coarse, GpuStripLevel<S>& lv,
                   const FlowParams& prm, StripLinks& links, const Slab& slab, DeviceBuffer<float>& err, float* kv,
                   Array& gather_rows, int check_every, cudaStream_t s) {
  const int w = lv.w, h = lv.h, first = lv.first(), end = lv.end(), held0 = static_cast<int>(lv.held_first());
  const int held = lv.held_rows();
  const std::size_t plane = static_cast<std::size_t>(held) * w;
  gpu::launch_gradient_pairs<S>(i1, g1, w, h, s);
  const float stop_sum = static_cast<float>(prm.epsilon * prm.epsilon * double(std::size_t(w) * h));
  const gpu::Gauss1D blur = gpu::gaussian_weights(prm.method == Method::clg ? prm.rho : 0.0);
  const float a = static_cast<float>((prm.alpha / 255.0) * (prm.alpha / 255.0));
  DeviceBuffer<float> tensor(5 * plane, s), scratch(plane, s);
  DeviceBuffer<S> js(5 * plane, s);
  for (int warp = 0; warp < prm.warps; ++warp) {
    if (warp == 0 && coarse) {  // the coarser level's flow upsampled (by the warp) on the owned rows
      gpu::launch_warp<S>(i0, i1, g1, coarse->template global<float2>(coarse->u), coarse->w, coarse->h,
                          lv.template global<float2>(lv.u_next), lv.global(lv.grad), lv.global(lv.rho_c), w, h, s,
                          first, end);
      std::swap(lv.u, lv.u_next);
      lv.exchange(links, lv.u);
    }
    gpu::launch_warp<S>(i0, i1, g1, nullptr, 0, 0, lv.template global<float2>(lv.u), lv.global(lv.grad),
                        lv.global(lv.rho_c), w, h, s, held0, held0 + held);
    gpu::launch_tensor<S>(lv.grad.get(), lv.rho_c.get(), tensor.get(), w, held, s);
    for (int c = 0; c < 5; ++c)
      gpu::launch_gaussian<float, S>(blur, tensor.get() + c * plane, scratch.get(), js.get() + c * plane, w, held, s);
    err.zero(prm.iterations);
    for (int it = 0; it < prm.iterations; ++it) {
      if (prm.median > 1 && it % prm.median_interval == 0) {
        gpu::launch_median_flow(lv.template global<float2>(lv.u), lv.template global<float2>(lv.u_next), prm.median,
                                err.get(), it, stop_sum, w, h, s, first, end);
        std::swap(lv.u, lv.u_next);
        lv.exchange(links, lv.u);
      }
      gpu::launch_jacobi<S>(a, stop_sum, lv.template global<float2>(lv.u), lv.template global<float2>(lv.u_next),
                            js.get() - static_cast<long>(held0) * w, err.get(), it, w, h, s, first, end,
                            static_cast<long>(plane));
      std::swap(lv.u, lv.u_next);
      lv.exchange(links, lv.u);
      if (lv.rows.split) gather_error(links, slab, err.get(), it, gather_rows, kv, s);
      if (warp_done(err.get(), it, stop_sum, check_every, prm.iterations, s)) break;
    }
  }
}

template <class S>
Array solve(const Array& frame0, const Array& frame1, const FlowParams& prm, Halo& halo, Context& ctx) {
  using P = Pair_t<S>;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const Slab& slab = halo.slab();
  DeviceStripLinks links(halo, ctx);
  const int height = static_cast<int>(frame0.shape()[0]), width = static_cast<int>(frame0.shape()[1]);
  gpu::StageClock clock(nullptr, s);
  gpu::DeviceFrames<S> frames = gpu::convert_frames<S>(frame0, frame1, prm, s);
  const gpu::DevicePyramids<S> pyr = gpu::build_pyramids<S>(frames, width, height, prm, s, clock);
  const int levels = static_cast<int>(pyr.lv.size());
  DeviceBuffer<P> g1(pyr.lv[0].n(), s);
  DeviceBuffer<float> err(prm.iterations, s), kv(2 * static_cast<std::size_t>(slab.parts), s);
  Array gather_rows = ctx.alloc(DType::f32, Shape(sum_layout(slab.part, slab.parts).total_rows(), 2 * std::int64_t{slab.parts}));
  const int check_every = gpu::policy_for(90).check_every;
  const bool tvl1 = prm.method == Method::tvl1;
  const int level_halo = strip_halo(prm.method, prm.rho);
  std::unique_ptr<GpuStripLevel<S>> coarse;
  for (int k = levels - 1; k >= 0; --k) {
    const int w = pyr.lv[k].w, h = pyr.lv[k].h;
    auto lv = std::make_unique<GpuStripLevel<S>>(w, h, height, slab, ctx, s, tvl1, level_halo);
    if (!tvl1) {
      coupled_level(pyr.i0[k].get(), pyr.i1[k].get(), g1.get(), coarse.get(), *lv, prm, links, slab, err, kv.get(),
                    gather_rows, check_every, s);
      coarse = std::move(lv);
      continue;
    }
    const int first = lv->first(), end = lv->end();
    // The warp data of row `end` (the next strip's first) too: the iteration computes its new flow.
    const int warp_end = lv->rows.split && lv->rows.layout.halo_after > 0 ? end + 1 : end;
    gpu::launch_gradient_pairs<S>(pyr.i1[k].get(), g1.get(), w, h, s);
    const float stop_sum = static_cast<float>(prm.epsilon * prm.epsilon * double(std::size_t(w) * h));
    // epsilon 0: no stopping test (compute_cuda's fused kernels have none), not even at error 0.
    const float stop = stop_sum > 0 ? stop_sum : -1.f;
    const gpu::Tvl1Step c{static_cast<float>(prm.lambda * 255.0 * prm.theta), static_cast<float>(prm.theta),
                          static_cast<float>(prm.tau / prm.theta), stop};
    for (int warp = 0; warp < prm.warps; ++warp) {
      if (warp == 0 && coarse) {  // the coarser level's flow, upsampled by the warp itself
        gpu::launch_warp<S>(pyr.i0[k].get(), pyr.i1[k].get(), g1.get(), coarse->template global<float2>(coarse->u),
                            coarse->w, coarse->h, lv->template global<float2>(lv->u_next), lv->global(lv->grad),
                            lv->global(lv->rho_c), w, h, s, first, warp_end);
        std::swap(lv->u, lv->u_next);
        lv->exchange(links, lv->u);
        coarse.reset();
      } else {
        gpu::launch_warp<S>(pyr.i0[k].get(), pyr.i1[k].get(), g1.get(), nullptr, 0, 0, lv->template global<float2>(lv->u),
                            lv->global(lv->grad), lv->global(lv->rho_c), w, h, s, first, warp_end);
      }
      if (stop_sum > 0) WEFT_CUDA_CHECK(cudaMemsetAsync(err.get(), 0, prm.iterations * sizeof(float), s));
      for (int it = 0; it < prm.iterations; ++it) {
        if (prm.median > 1 && it % prm.median_interval == 0) {
          gpu::launch_median_flow(lv->template global<float2>(lv->u), lv->template global<float2>(lv->u_next),
                                  prm.median, err.get(), it, stop, w, h, s, first, end);
          std::swap(lv->u, lv->u_next);
          lv->exchange(links, lv->u);
        }
        gpu::launch_tvl1_iteration<S>(c, lv->template global<float2>(lv->u), lv->template global<float2>(lv->u_next),
                                      lv->template global<P>(lv->p1), lv->template global<P>(lv->p2),
                                      lv->template global<P>(lv->p1n), lv->template global<P>(lv->p2n),
                                      lv->global(lv->grad), lv->global(lv->rho_c), err.get(), it, w, h, s, first, end);
        std::swap(lv->u, lv->u_next), std::swap(lv->p1, lv->p1n), std::swap(lv->p2, lv->p2n);
        for (const Array* a : {&lv->u, &lv->p1, &lv->p2}) lv->exchange(links, *a);
        if (stop_sum > 0 && lv->rows.split) gather_error(links, slab, err.get(), it, gather_rows, kv.get(), s);
        if (warp_done(err.get(), it, stop_sum, check_every, prm.iterations, s)) break;
      }
    }
    coarse = std::move(lv);
  }
  // Level 0 holds the partition's slab (more halo rows for CLG, or the whole frame when its strips
  // are thinner than the halo): the slab's rows of its flow.
  const Slab& held = coarse->rows.layout;
  const std::int64_t y0 = slab.first_row - slab.halo_before, y1 = slab.first_row + slab.rows + slab.halo_after;
  const std::int64_t h0 = held.first_row - held.halo_before;
  if (y0 < h0 || y1 > h0 + held.total_rows())
    throw Error("flow split: level 0 of strip " + std::to_string(slab.part) + " holds rows " + std::to_string(h0) + ".." +
                std::to_string(h0 + held.total_rows()) + ", its slab " + std::to_string(y0) + ".." + std::to_string(y1));
  if (y0 == h0 && y1 == h0 + held.total_rows()) return coarse->u;
  Array out = ctx.alloc(DType::f32, Shape(y1 - y0, width, 2));
  WEFT_CUDA_CHECK(cudaMemcpyAsync(out.raw(), static_cast<const float2*>(coarse->u.raw()) + (y0 - h0) * width,
                                  out.bytes(), cudaMemcpyDeviceToDevice, s));
  return out;
}

}  // namespace

Array solve_strip_cuda(const Array& frame0, const Array& frame1, const FlowParams& params, Halo& halo, Context& ctx) {
  return params.precision == Precision::fp16 ? solve<__half>(frame0, frame1, params, halo, ctx)
                                             : solve<float>(frame0, frame1, params, halo, ctx);
}

}  // namespace weft::flow::detail
