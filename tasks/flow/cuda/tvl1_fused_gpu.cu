// Several TV-L1 iterations per launch (temporal blocking). launch_tvl1_fused dispatches on the
// layout (kernels.cuh): the policy's register layouts live in tvl1_columns_gpu.cu; this file keeps
// the shared-memory kernel (layout `shared`: 1.71 ms for the 4K fp16 seed setting's iterations on
// an H100, against 0.60 for the policy's) for comparison.
// Shared-memory kernel: a block loads its tile plus a halo of
// FusedTvl1Policy::steps pixels (flow, duals, warped gradient, rho_c) into shared memory, runs up
// to `steps` iterations there, and writes back the centre only. Each iteration invalidates one
// more ring of the halo (the primal update reads the duals left and above, the dual update the
// primal right and below), so the centre is exact: the same arithmetic as the one-iteration
// kernel and the CPU reference, and no global traffic between the fused iterations.
// fp16: duals, gradient and rho_c are half/half2 in global and shared memory, and the dual
// projection runs in half2 arithmetic; the flow and the thresholding stay in float.
#include <cstdlib>
#include <string>

#include "../src/flow_math.hpp"
#include "convert.cuh"
#include "kernels.cuh"
#include "weft/cuda.hpp"
#include "weft/util/error.hpp"
#include "weft/util/settings.hpp"

namespace weft::flow::gpu {
using device::ld;
using device::ld2;
using device::st;
using device::st2;

namespace {
constexpr FusedTvl1Policy kFused = kFusedTvl1Sm90;
constexpr int kRegionW = kFused.tile_w + 2 * kFused.steps, kRegionH = kFused.tile_h + 2 * kFused.steps;
constexpr int kCells = kRegionW * kRegionH;
constexpr int kThreads = kFused.block_w * kFused.block_h;

// Shared storage of one tile and its halo.
template <class S> struct Tvl1Region {
  float2 u[kCells];
  Pair_t<S> p1[kCells], p2[kCells], grad[kCells];
  S rho_c[kCells];
};
static_assert(sizeof(Tvl1Region<float>) <= 48 * 1024, "static shared memory: keep the fp32 region under 48 KiB");

// Dual projection of one dual pair (layer 4): float, or half2 arithmetic for fp16 storage.
template <class P> __device__ __forceinline__ P project(P p, float gx, float gy, float taut);
template <> __device__ __forceinline__ float2 project<float2>(float2 p, float gx, float gy, float taut) {
  device::tvl1_dual<float>(p.x, p.y, gx, gy, taut);
  return p;
}
template <> __device__ __forceinline__ __half2 project<__half2>(__half2 p, float gx, float gy, float taut) {
  const float inv = 1.f / (1.f + taut * sqrtf(gx * gx + gy * gy));
  return __hmul2(__hfma2(__float2half2_rn(taut), __floats2half2_rn(gx, gy), p), __float2half2_rn(inv));
}

// Layer 3: `steps` iterations on the block's region, then the centre written out.
template <class S>
__device__ void tvl1_fused_tile(const Tvl1Step& c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in,
                                const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out,
                                const Pair_t<S>* grad, const S* rho_c, int steps, bool zero_duals, int w, int h,
                                Tvl1Region<S>& r) {
  using P = Pair_t<S>;
  const int x0 = static_cast<int>(blockIdx.x) * kFused.tile_w - kFused.steps;
  const int y0 = static_cast<int>(blockIdx.y) * kFused.tile_h - kFused.steps;
  const int tid = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  const P zero = st2<P>(0.f, 0.f);
  for (int i = tid; i < kCells; i += kThreads) {
    const int x = x0 + i % kRegionW, y = y0 + i / kRegionW;
    if (x >= 0 && x < w && y >= 0 && y < h) {
      const long g = static_cast<long>(y) * w + x;
      r.u[i] = u_in[g];
      r.p1[i] = zero_duals ? zero : p1_in[g];
      r.p2[i] = zero_duals ? zero : p2_in[g];
      r.grad[i] = grad[g];
      r.rho_c[i] = rho_c[g];
    } else {
      r.u[i] = make_float2(0.f, 0.f);
      r.p1[i] = r.p2[i] = r.grad[i] = zero;
      r.rho_c[i] = st<S>(0.f);
    }
  }
  __syncthreads();
  for (int k = 0; k < steps; ++k) {
    // Primal: thresholding, then u = v + theta div p (backward differences, p = 0 outside).
    for (int i = tid; i < kCells; i += kThreads) {
      const int lx = i % kRegionW, ly = i / kRegionW, x = x0 + lx, y = y0 + ly;
      if (x < 0 || x >= w || y < 0 || y >= h) continue;
      const float2 u = r.u[i], g = ld2(r.grad[i]);
      float v1, v2;
      device::tvl1_threshold<float>(u.x, u.y, g.x, g.y, ld(r.rho_c[i]), c.lt, v1, v2);
      const float2 p1 = ld2(r.p1[i]), p2 = ld2(r.p2[i]);
      const bool left = x > 0 && lx > 0, up = y > 0 && ly > 0;  // lx == 0: outer ring, value unused
      const float2 p1l = left ? ld2(r.p1[i - 1]) : make_float2(0.f, 0.f);
      const float2 p2l = left ? ld2(r.p2[i - 1]) : make_float2(0.f, 0.f);
      const float2 p1u = up ? ld2(r.p1[i - kRegionW]) : make_float2(0.f, 0.f);
      const float2 p2u = up ? ld2(r.p2[i - kRegionW]) : make_float2(0.f, 0.f);
      const float div1 = ((x < w - 1 ? p1.x : 0.f) - p1l.x) + ((y < h - 1 ? p1.y : 0.f) - p1u.y);
      const float div2 = ((x < w - 1 ? p2.x : 0.f) - p2l.x) + ((y < h - 1 ? p2.y : 0.f) - p2u.y);
      r.u[i] = make_float2(v1 + c.theta * div1, v2 + c.theta * div2);
    }
    __syncthreads();
    // Dual: forward differences of the new primal (zero on the last column / row), projection.
    for (int i = tid; i < kCells; i += kThreads) {
      const int lx = i % kRegionW, ly = i / kRegionW, x = x0 + lx, y = y0 + ly;
      if (x < 0 || x >= w || y < 0 || y >= h) continue;
      const float2 u = r.u[i];
      const float2 ur = x < w - 1 && lx < kRegionW - 1 ? r.u[i + 1] : u;
      const float2 ud = y < h - 1 && ly < kRegionH - 1 ? r.u[i + kRegionW] : u;
      r.p1[i] = project<P>(r.p1[i], ur.x - u.x, ud.x - u.x, c.taut);
      r.p2[i] = project<P>(r.p2[i], ur.y - u.y, ud.y - u.y, c.taut);
    }
    __syncthreads();
  }
  for (int i = tid; i < kFused.tile_w * kFused.tile_h; i += kThreads) {
    const int lx = kFused.steps + i % kFused.tile_w, ly = kFused.steps + i / kFused.tile_w;
    const int x = x0 + lx, y = y0 + ly;
    if (x >= w || y >= h) continue;
    const long g = static_cast<long>(y) * w + x;
    const int j = ly * kRegionW + lx;
    u_out[g] = r.u[j];
    p1_out[g] = r.p1[j];
    p2_out[g] = r.p2[j];
  }
}

template <class S>
__global__ void __launch_bounds__(kThreads)
    tvl1_fused_kernel(Tvl1Step c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in, const Pair_t<S>* p2_in,
                      Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad, const S* rho_c, int steps,
                      bool zero_duals, int w, int h) {
  __shared__ Tvl1Region<S> region;
  tvl1_fused_tile<S>(c, u_in, u_out, p1_in, p2_in, p1_out, p2_out, grad, rho_c, steps, zero_duals, w, h, region);
}
}  // namespace

FusedLayout fused_layout() {
  static const FusedLayout layout = [] {
    const std::string& name = settings().flow_fused_layout;
    if (name.empty()) return kFusedLayoutSm90;
    if (name == "shared") return FusedLayout::shared;
    if (name == "columns2x32") return FusedLayout::columns2x32;
    if (name == "columns4x16") return FusedLayout::columns4x16;
    if (name == "columns4x8") return FusedLayout::columns4x8;
    if (name == "columns8x8") return FusedLayout::columns8x8;
    throw ConfigError("WEFT_FLOW_FUSED_LAYOUT: '" + name + "' is not shared, columns2x32, columns4x16, columns4x8 or columns8x8");
  }();
  return layout;
}

template <class S>
void launch_tvl1_fused(const Tvl1Step& c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in,
                       const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad,
                       const S* rho_c, int steps, bool zero_duals, int w, int h, cudaStream_t s) {
  if (const FusedLayout layout = fused_layout(); layout != FusedLayout::shared) {
    launch_tvl1_columns<S>(layout, c, u_in, u_out, p1_in, p2_in, p1_out, p2_out, grad, rho_c, steps, zero_duals, w, h, s);
    return;
  }
  if (steps < 1 || steps > kFused.steps) throw ConfigError("flow: fused TV-L1 launch of " + std::to_string(steps) + " steps");
  const dim3 grid((w + kFused.tile_w - 1) / kFused.tile_w, (h + kFused.tile_h - 1) / kFused.tile_h);
  tvl1_fused_kernel<S><<<grid, dim3(kFused.block_w, kFused.block_h), 0, s>>>(c, u_in, u_out, p1_in, p2_in, p1_out,
                                                                             p2_out, grad, rho_c, steps, zero_duals, w, h);
  check_launch("flow.tvl1_fused_kernel", s);
}

#define WEFT_FLOW_INSTANTIATE(S)                                                                                   \
  template void launch_tvl1_fused<S>(const Tvl1Step&, const float2*, float2*, const Pair_t<S>*, const Pair_t<S>*, \
                                     Pair_t<S>*, Pair_t<S>*, const Pair_t<S>*, const S*, int, bool, int, int,     \
                                     cudaStream_t);
WEFT_FLOW_INSTANTIATE(float)
WEFT_FLOW_INSTANTIATE(__half)
#undef WEFT_FLOW_INSTANTIATE

}  // namespace weft::flow::gpu
