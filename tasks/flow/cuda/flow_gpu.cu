// CUDA entry point: input conversion, the device pyramid and the coarse-to-fine loop over scales
// and warps. Everything stays on the device on one stream; the host reads the stopping
// criterion back every FlowPolicy::check_every iterations only (and never when epsilon == 0).
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <cmath>

#include "../src/levels.hpp"
#include "device_flow.cuh"
#include "kernels.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/flow/flow.hpp"

namespace weft::flow {

bool have_cuda() noexcept { return true; }

namespace {
using gpu::DeviceBuffer;
using gpu::DevicePyramids;
using gpu::Level;
using gpu::StageClock;

// Runs the inner iterations of one warp; returns after the last or once the error is small.
template <class Step>
void iterate(const FlowParams& prm, const gpu::FlowPolicy& policy, float* d_err, float stop_sum, Step&& step,
             cudaStream_t s) {
  for (int n = 0; n < prm.iterations; ++n) {
    step(n);
    if (stop_sum > 0 && (n + 1) % policy.check_every == 0 && n + 1 < prm.iterations) {
      float h_err = 0;
      WEFT_CUDA_CHECK(cudaMemcpyAsync(&h_err, d_err + n, sizeof(float), cudaMemcpyDeviceToHost, s));
      WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
      if (h_err <= stop_sum) return;  // the next iterations would all be skipped on the device
    }
  }
}

template <class S>
void solve(DevicePyramids<S> pyr, const FlowParams& prm, float2* out, cudaStream_t s, StageClock& clock) {
  using P = gpu::Pair_t<S>;
  int device = 0, major = 9;
  WEFT_CUDA_CHECK(cudaGetDevice(&device));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  const gpu::FlowPolicy policy = gpu::policy_for(major * 10);
  const std::vector<Level>& lv = pyr.lv;
  const std::vector<DeviceBuffer<S>>&i0 = pyr.i0, &i1 = pyr.i1;
  const int levels = static_cast<int>(lv.size());
  const std::size_t n0 = lv[0].n();
  DeviceBuffer<float> tmp(prm.method == Method::tvl1 ? 1 : 5 * n0, s), fa(prm.method == Method::tvl1 ? 1 : n0, s);
  DeviceBuffer<float2> ua(n0, s), ub(n0, s);
  DeviceBuffer<S> rho_c(n0, s), js(prm.method == Method::tvl1 ? 1 : 5 * n0, s);
  DeviceBuffer<P> g1(n0, s), grad(n0, s), p1a(n0, s), p1b(n0, s), p2a(n0, s), p2b(n0, s);
  DeviceBuffer<float> err(prm.iterations, s);
  ua.zero(lv.back().n());
  const gpu::Gauss1D tensor_blur = gpu::gaussian_weights(prm.method == Method::clg ? prm.rho : 0.0);
  float2 *u = ua.get(), *u_next = ub.get();
  P *p1 = p1a.get(), *p1n = p1b.get(), *p2 = p2a.get(), *p2n = p2b.get();

  // TV-L1 without a stopping test (epsilon 0) runs its iterations in fused batches that end
  // where the median filter runs; with a stopping test, one iteration per launch.
  const bool fused = prm.method == Method::tvl1 && prm.epsilon == 0;
  for (int k = levels - 1; k >= 0; --k) {
    const int w = lv[k].w, h = lv[k].h;
    const std::size_t n = lv[k].n();
    clock.enter(&StageTimes::warp);
    gpu::launch_gradient_pairs<S>(i1[k].get(), g1.get(), w, h, s);
    if (!fused) {
      WEFT_CUDA_CHECK(cudaMemsetAsync(p1, 0, n * sizeof(P), s));
      WEFT_CUDA_CHECK(cudaMemsetAsync(p2, 0, n * sizeof(P), s));
    }
    const float stop_sum = static_cast<float>(prm.epsilon * prm.epsilon * double(n));
    for (int warp = 0; warp < prm.warps; ++warp) {
      clock.enter(&StageTimes::warp);
      if (warp == 0 && k < levels - 1) {  // the coarser level's flow, upsampled by the warp itself
        gpu::launch_warp<S>(i0[k].get(), i1[k].get(), g1.get(), u, lv[k + 1].w, lv[k + 1].h, u_next, grad.get(),
                            rho_c.get(), w, h, s);
        std::swap(u, u_next);
      } else {
        gpu::launch_warp<S>(i0[k].get(), i1[k].get(), g1.get(), nullptr, 0, 0, u, grad.get(), rho_c.get(), w, h, s);
      }
      if (!fused) err.zero(prm.iterations);
      // Median filter at the start of the warp and every median_interval iterations (skipped on
      // the device once the iteration has converged, as the CPU loop stops).
      auto median = [&](int it) {
        if (prm.median <= 1 || it % prm.median_interval != 0) return;
        clock.enter(&StageTimes::median);
        gpu::launch_median_flow(u, u_next, prm.median, fused ? nullptr : err.get(), it, stop_sum, w, h, s);
        std::swap(u, u_next);
        clock.enter(&StageTimes::iterations);
      };
      clock.enter(&StageTimes::iterations);
      if (fused) {
        const gpu::Tvl1Step c{static_cast<float>(prm.lambda * 255.0 * prm.theta), static_cast<float>(prm.theta),
                              static_cast<float>(prm.tau / prm.theta), stop_sum};
        const int batch = gpu::kFusedTvl1Sm90.steps;
        for (int it = 0; it < prm.iterations;) {
          median(it);
          int steps = std::min(batch, prm.iterations - it);
          if (prm.median > 1) steps = std::min(steps, prm.median_interval - it % prm.median_interval);
          // The last launch writes the result where the caller wants it (no copy afterwards).
          const bool last = k == 0 && warp == prm.warps - 1 && it + steps >= prm.iterations;
          if (last) u_next = out;
          gpu::launch_tvl1_fused<S>(c, u, u_next, p1, p2, p1n, p2n, grad.get(), rho_c.get(), steps, warp == 0 && it == 0,
                                    w, h, s);
          std::swap(u, u_next), std::swap(p1, p1n), std::swap(p2, p2n);
          it += steps;
        }
      } else if (prm.method == Method::tvl1) {
        const gpu::Tvl1Step c{static_cast<float>(prm.lambda * 255.0 * prm.theta), static_cast<float>(prm.theta),
                              static_cast<float>(prm.tau / prm.theta), stop_sum};
        iterate(prm, policy, err.get(), stop_sum, [&](int it) {
          median(it);
          gpu::launch_tvl1_iteration<S>(c, u, u_next, p1, p2, p1n, p2n, grad.get(), rho_c.get(), err.get(), it, w, h, s);
          std::swap(u, u_next), std::swap(p1, p1n), std::swap(p2, p2n);
        }, s);
      } else {
        gpu::launch_tensor<S>(grad.get(), rho_c.get(), tmp.get(), w, h, s);
        for (int c = 0; c < 5; ++c)
          gpu::launch_gaussian<float, S>(tensor_blur, tmp.get() + c * n, fa.get(), js.get() + c * n, w, h, s);
        const float a = static_cast<float>((prm.alpha / 255.0) * (prm.alpha / 255.0));
        iterate(prm, policy, err.get(), stop_sum, [&](int it) {
          median(it);
          gpu::launch_jacobi<S>(a, stop_sum, u, u_next, js.get(), err.get(), it, w, h, s);
          std::swap(u, u_next);
        }, s);
      }
    }
  }
  clock.enter(&StageTimes::upsample);
  if (u != out) WEFT_CUDA_CHECK(cudaMemcpyAsync(out, u, n0 * sizeof(float2), cudaMemcpyDeviceToDevice, s));
}

}  // namespace

Array compute_cuda(const Array& frame0, const Array& frame1, const FlowParams& params, void* stream) {
  return compute_cuda(frame0, frame1, params, stream, nullptr);
}

Array compute_cuda(const Array& frame0, const Array& frame1, const FlowParams& requested, void* stream,
                   StageTimes* times) {
  check_frames(frame0, frame1);
  validate(requested);
  // The texture rule (params_for_pair) is applied in convert_frames, on the GPU.
  const FlowParams& params = requested;
  auto s = static_cast<cudaStream_t>(stream);
  StageClock clock(times, s);
  clock.enter(&StageTimes::input);
  const int h = static_cast<int>(frame0.shape()[0]), w = static_cast<int>(frame0.shape()[1]);
  int device = frame0.memory().is_host() ? -1 : frame0.memory().device_index;
  if (device < 0) WEFT_CUDA_CHECK(cudaGetDevice(&device));
  Array out = Array::device(DType::f32, Shape(h, w, 2), device, s);
  auto run = [&](auto storage) {
    using S = decltype(storage);
    gpu::DeviceFrames<S> frames = gpu::convert_frames<S>(frame0, frame1, params, s);
    solve<S>(gpu::build_pyramids<S>(frames, w, h, params, s, clock), params, static_cast<float2*>(out.raw()), s, clock);
  };
  if (params.precision == Precision::fp16)
    run(__half{});
  else
    run(float{});
  clock.finish();
  return out;
}

namespace gpu {

namespace {

// Sums and sums of squares of two float arrays (out: 4 doubles, zeroed before).
__global__ void moments_kernel(const float* a, const float* b, long n, double* out) {
  double s[4] = {0, 0, 0, 0};
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x) {
    const double x = a[i], y = b[i];
    s[0] += x, s[1] += x * x, s[2] += y, s[3] += y * y;
  }
  for (int k = 0; k < 4; ++k) {
    double v = s[k];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) atomicAdd(&out[k], v);
  }
}

// params_for_pair's rule on the converted frames: the texture part only when the brightness
// changes between them (the measure ignores the joint scaling to [0, 1]). Measured here, so that
// frames on the GPU are not copied back: the flow waits for 32 bytes.
bool texture_for_pair(const float* f0, const float* f1, long n, const FlowParams& params, cudaStream_t s) {
  if (params.texture <= 0) return false;
  if (params.texture_threshold <= 0) return true;
  DeviceBuffer<double> sums(4, s);
  sums.zero(4);
  moments_kernel<<<264, 256, 0, s>>>(f0, f1, n, sums.get());
  WEFT_CUDA_CHECK(cudaGetLastError());
  double h[4];
  WEFT_CUDA_CHECK(cudaMemcpyAsync(h, sums.get(), sizeof h, cudaMemcpyDeviceToHost, s));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
  const double count = static_cast<double>(n), m0 = h[0] / count, m1 = h[2] / count;
  const double v0 = std::max(0.0, h[1] / count - m0 * m0), v1 = std::max(0.0, h[3] / count - m1 * m1);
  return brightness_change(m0, v0, m1, v1) > params.texture_threshold;
}

}  // namespace

// Input conversion (to float in [0, 1], normalised jointly for floating-point frames) and the
// texture part. Integer frames without texture part or pre-smoothing are stored at the finest
// level in S by the conversion itself.
template <class S>
DeviceFrames<S> convert_frames(const Array& frame0, const Array& frame1, const FlowParams& params, cudaStream_t s) {
  const int h = static_cast<int>(frame0.shape()[0]), w = static_cast<int>(frame0.shape()[1]);
  const long n = static_cast<long>(w) * h;
  const float scale0 = detail::intensity_scale(frame0.dtype()), scale1 = detail::intensity_scale(frame1.dtype());
  const bool direct = scale0 > 0 && scale1 > 0 && params.texture == 0 && params.presmooth == 0;
  DeviceFrames<S> frames{DeviceBuffer<float>(n, s), DeviceBuffer<float>(n, s), {}};
  for (auto [a, f] : {std::pair{&frame0, frames.f0.get()}, std::pair{&frame1, frames.f1.get()}}) {
    const void* src = a->raw();
    std::optional<DeviceBuffer<char>> staged;
    if (a->memory().is_host()) {
      staged.emplace(a->bytes(), s);
      WEFT_CUDA_CHECK(cudaMemcpyAsync(staged->get(), src, a->bytes(), cudaMemcpyHostToDevice, s));
      src = staged->get();
    }
    S* also = nullptr;
    if (direct) also = frames.level0.emplace_back(n, s).get();
    gpu::launch_to_float<S>(a->dtype(), src, f, also, n, a == &frame0 ? scale0 : scale1, s);
  }
  if (scale0 == 0) gpu::launch_normalise(frames.f0.get(), frames.f1.get(), n, s);
  if (texture_for_pair(frames.f0.get(), frames.f1.get(), n, params, s)) {
    DeviceBuffer<float> scratch(6 * static_cast<std::size_t>(n), s);
    gpu::launch_structure_texture(frames.f0.get(), frames.f1.get(), scratch.get(), w, h, static_cast<float>(params.texture), s);
  }
  return frames;
}

template <class S>
DevicePyramids<S> build_pyramids(DeviceFrames<S>& frames, int width, int height, const FlowParams& prm, cudaStream_t s,
                                 StageClock& clock) {
  float *f0 = frames.f0.get(), *f1 = frames.f1.get();
  std::vector<DeviceBuffer<S>>& level0 = frames.level0;
  const int levels = detail::level_count(width, height, prm);
  std::vector<Level> lv{{width, height}};
  for (int k = 1; k < levels; ++k) lv.push_back({detail::zoomed_size(lv.back().w, prm.zoom), detail::zoomed_size(lv.back().h, prm.zoom)});
  const std::size_t n0 = lv[0].n();

  // Pyramid: built in float, stored in S, once per call (both frames, every level).
  clock.enter(&StageTimes::pyramid);
  DeviceBuffer<float> tmp(n0, s), fa(n0, s), fb(n0, s);
  std::vector<DeviceBuffer<S>> i0, i1;
  const gpu::Gauss1D pre = gpu::gaussian_weights(prm.presmooth), same = gpu::gaussian_weights(0),
                     aa = gpu::gaussian_weights(detail::antialias_sigma(prm));
  for (float* frame : {f0, f1}) {
    auto& pyr = frame == f0 ? i0 : i1;
    float *level = fa.get(), *spare = fb.get();
    if (pre.radius > 0)
      gpu::launch_gaussian<float, float>(pre, frame, tmp.get(), level, width, height, s);
    else
      level = frame;  // read the converted frame directly
    for (int k = 0; k < levels; ++k) {
      if (k == 0) {  // level 0 stored in S (by the input conversion, or here); the coarser ones by the resize
        if (!level0.empty()) {
          pyr.push_back(std::move(level0[frame == f0 ? 0 : 1]));
        } else {
          pyr.emplace_back(lv[k].n(), s);
          gpu::launch_gaussian<float, S>(same, level, tmp.get(), pyr.back().get(), lv[k].w, lv[k].h, s);
        }
        continue;
      }
      pyr.emplace_back(lv[k].n(), s);
      const float* src = level;
      if (aa.radius > 0) {
        gpu::launch_gaussian<float, float>(aa, level, tmp.get(), spare, lv[k - 1].w, lv[k - 1].h, s);
        src = spare;
      }
      float* dst = src == fa.get() ? fb.get() : fa.get();
      gpu::launch_resize_both<S>(src, lv[k - 1].w, lv[k - 1].h, dst, pyr.back().get(), lv[k].w, lv[k].h, s);
      level = dst;
      spare = dst == fa.get() ? fb.get() : fa.get();
    }
  }
  return {std::move(lv), std::move(i0), std::move(i1)};
}

template DeviceFrames<float> convert_frames<float>(const Array&, const Array&, const FlowParams&, cudaStream_t);
template DeviceFrames<__half> convert_frames<__half>(const Array&, const Array&, const FlowParams&, cudaStream_t);
template DevicePyramids<float> build_pyramids<float>(DeviceFrames<float>&, int, int, const FlowParams&, cudaStream_t,
                                                     StageClock&);
template DevicePyramids<__half> build_pyramids<__half>(DeviceFrames<__half>&, int, int, const FlowParams&, cudaStream_t,
                                                       StageClock&);

}  // namespace gpu
}  // namespace weft::flow
