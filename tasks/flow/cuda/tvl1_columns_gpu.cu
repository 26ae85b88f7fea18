// Fused TV-L1 iterations with the state in registers ("columns" layouts): the region of a block
// is 64 pixels wide (each lane of a warp holds two adjacent columns) and NW * R rows tall (each
// warp holds R consecutive rows of it). A lane keeps its 2 x R pixels' flow, duals, gradient and
// constant residual in registers for every iteration of the launch; the left neighbour's duals
// and the right neighbour's flow come from the next lane by warp shuffles, the row above and
// below from the same lane's registers, and only the first and last row of each warp go through
// shared memory. Compared with the shared-memory kernel (tvl1_fused_gpu.cu) no pixel's state is
// re-read from shared memory in each phase, the halo of `steps` pixels costs 64 / 54 per axis
// instead of 42 / 32 x 26 / 16 (4 x 16, 2 x 32, 8 x 8; 64 / 54 x 32 / 22 for 4 x 8), and the blocks
// that touch no image edge run without masks. On an H100 (flow_bench --seed, 4K fp16, 10
// iterations on 3 levels) the iterations took 1.71 ms in the shared-memory kernel, 0.86 with
// 4 x 16, 0.79 with 2 x 32 and 0.78 with 4 x 8 (the policy's): 4 x 8 holds 8 pixels per lane in
// 128 registers, two blocks per SM. With the thresholding as a clamp (a branch per pixel before):
// 0.60 ms, 73 instructions per pixel and iteration, 80 % of the issue slots busy (ncu).
// The thresholding's 1 / |grad|^2 is computed once per launch, its three cases are one clamp,
// and the dual projection takes one reciprocal: results agree with the one-iteration kernel and the
// CPU reference to a few ulps (tests/flow/flow_gpu_test.cu, FusedVsReference).
#include <cstring>
#include <string>

#include "convert.cuh"
#include "kernels.cuh"
#include "weft/cuda.hpp"
#include "weft/util/error.hpp"

namespace weft::flow::gpu {
namespace {

constexpr int kHalo = kFusedTvl1Sm90.steps;
constexpr int kRegionW = 64;                      // two columns per lane
constexpr int kOutW = kRegionW - 2 * kHalo;       // output columns of a block
constexpr unsigned kFull = 0xffffffffu;

// Shuffles of the storage pairs (float2: two words; __half2: one).
__device__ __forceinline__ float2 shfl_up(float2 v) {
  return make_float2(__shfl_up_sync(kFull, v.x, 1), __shfl_up_sync(kFull, v.y, 1));
}
__device__ __forceinline__ float2 shfl_down(float2 v) {
  return make_float2(__shfl_down_sync(kFull, v.x, 1), __shfl_down_sync(kFull, v.y, 1));
}
__device__ __forceinline__ __half2 shfl_up(__half2 v) {
  unsigned b;
  std::memcpy(&b, &v, 4);
  b = __shfl_up_sync(kFull, b, 1);
  std::memcpy(&v, &b, 4);
  return v;
}

// sqrt and 1/x from the special-function unit (2 ulp): the projection's inputs are >= 0 and >= 1.
__device__ __forceinline__ float fast_sqrt(float x) {
  float r;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Dual projection p <- (p + taut g) / (1 + taut |g|) (layer 4), float or half2 arithmetic.
__device__ __forceinline__ float2 project(float2 p, float gx, float gy, float taut) {
  const float inv = __fdividef(1.f, 1.f + taut * fast_sqrt(gx * gx + gy * gy));
  return make_float2((p.x + taut * gx) * inv, (p.y + taut * gy) * inv);
}
__device__ __forceinline__ __half2 project(__half2 p, float gx, float gy, float taut) {
  const float inv = __fdividef(1.f, 1.f + taut * fast_sqrt(gx * gx + gy * gy));
  return __hmul2(__hfma2(__float2half2_rn(taut), __floats2half2_rn(gx, gy), p), __float2half2_rn(inv));
}

template <class S> struct ColumnsArgs {
  Tvl1Step c;
  const float2* u_in;
  float2* u_out;
  const Pair_t<S>*p1_in, *p2_in;
  Pair_t<S>*p1_out, *p2_out;
  const Pair_t<S>* grad;
  const S* rho_c;
  int steps, w, h;
  bool zero_duals;
};

// Layer 3: one block's region. Edge: some pixel of the region lies outside the image or on its
// first or last row or column, so the boundary rules (duals zero outside, forward differences
// zero on the last row and column) are applied per pixel; interior blocks skip them.
template <class S, int R, int NW, bool Edge>
__device__ void columns_tile(const ColumnsArgs<S>& a, int x0, int y0, Pair_t<S> (*sp1)[kRegionW],
                             Pair_t<S> (*sp2)[kRegionW], float2 (*su)[kRegionW]) {
  using P = Pair_t<S>;
  const int lane = static_cast<int>(threadIdx.x), wp = static_cast<int>(threadIdx.y);
  const int xl = x0 + 2 * lane, yt = y0 + wp * R;  // this lane's first column, this warp's first row
  const int w = a.w, h = a.h;
  const float lt = a.c.lt, theta = a.c.theta, taut = a.c.taut;

  float2 u[R][2];
  P p1[R][2], p2[R][2];
  float gx[R][2], gy[R][2], rc[R][2], ig[R][2];
  const P zero = device::st2<P>(0.f, 0.f);
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int x = xl + c, y = yt + r;
      float2 g = make_float2(0.f, 0.f);
      float rho = 0.f;
      u[r][c] = make_float2(0.f, 0.f);
      p1[r][c] = p2[r][c] = zero;
      if (!Edge || (x >= 0 && x < w && y >= 0 && y < h)) {
        const long i = static_cast<long>(y) * w + x;
        u[r][c] = a.u_in[i];
        if (!a.zero_duals) p1[r][c] = a.p1_in[i], p2[r][c] = a.p2_in[i];
        g = device::ld2(a.grad[i]);
        rho = device::ld(a.rho_c[i]);
      }
      const float n2 = g.x * g.x + g.y * g.y;
      gx[r][c] = g.x, gy[r][c] = g.y, rc[r][c] = rho;
      ig[r][c] = n2 > 1e-10f ? __fdividef(1.f, n2) : 0.f;
    }
  // Boundary flags of this lane's columns and this warp's rows (Edge only).
  const bool right_in[2] = {xl < w - 1, xl + 1 < w - 1}, left_in[2] = {xl > 0, xl + 1 > 0};
  const int up = wp > 0 ? wp - 1 : 0, down = wp < NW - 1 ? wp + 1 : NW - 1;

  for (int k = 0; k < a.steps; ++k) {
    sp1[wp][2 * lane] = p1[R - 1][0], sp1[wp][2 * lane + 1] = p1[R - 1][1];
    sp2[wp][2 * lane] = p2[R - 1][0], sp2[wp][2 * lane + 1] = p2[R - 1][1];
    __syncthreads();
    // Primal: thresholding, then u = v + theta div p (backward differences, p = 0 outside).
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const P l1 = shfl_up(p1[r][1]), l2 = shfl_up(p2[r][1]);
      const bool down_in = !Edge || yt + r < h - 1, up_in = !Edge || yt + r > 0;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float2 q1 = device::ld2(p1[r][c]), q2 = device::ld2(p2[r][c]);
        float2 q1l = device::ld2(c == 0 ? l1 : p1[r][0]), q2l = device::ld2(c == 0 ? l2 : p2[r][0]);
        float2 q1u = device::ld2(r > 0 ? p1[r - 1][c] : sp1[up][2 * lane + c]);
        float2 q2u = device::ld2(r > 0 ? p2[r - 1][c] : sp2[up][2 * lane + c]);
        float q1x = q1.x, q2x = q2.x, q1y = q1.y, q2y = q2.y;
        if (Edge) {
          if (!left_in[c]) q1l = q2l = make_float2(0.f, 0.f);
          if (!up_in) q1u = q2u = make_float2(0.f, 0.f);
          if (!right_in[c]) q1x = q2x = 0.f;
          if (!down_in) q1y = q2y = 0.f;
        }
        const float2 uc = u[r][c];
        const float rho = rc[r][c] + gx[r][c] * uc.x + gy[r][c] * uc.y;
        // The thresholding step as a clamp (branch-free; the three cases of tvl1_threshold):
        // -rho / |g|^2 beyond +-lambda theta is exactly where rho lies beyond -+lambda theta |g|^2.
        const float f = fminf(fmaxf(-rho * ig[r][c], -lt), lt);
        const float div1 = (q1x - q1l.x) + (q1y - q1u.y), div2 = (q2x - q2l.x) + (q2y - q2u.y);
        u[r][c] = make_float2(uc.x + f * gx[r][c] + theta * div1, uc.y + f * gy[r][c] + theta * div2);
      }
    }
    su[wp][2 * lane] = u[0][0], su[wp][2 * lane + 1] = u[0][1];
    __syncthreads();
    // Dual: forward differences of the new primal (zero on the last column / row), projection.
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float2 rn = shfl_down(u[r][0]);
      const bool down_in = !Edge || yt + r < h - 1;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float2 uc = u[r][c];
        float2 ur = c == 0 ? u[r][1] : rn;
        float2 ud = r < R - 1 ? u[r + 1][c] : su[down][2 * lane + c];
        if (Edge) {
          if (!right_in[c]) ur = uc;
          if (!down_in) ud = uc;
        }
        p1[r][c] = project(p1[r][c], ur.x - uc.x, ud.x - uc.x, taut);
        p2[r][c] = project(p2[r][c], ur.y - uc.y, ud.y - uc.y, taut);
      }
    }
  }
  // The centre: region rows and columns [kHalo, size - kHalo).
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int lx = 2 * lane + c, ly = wp * R + r, x = x0 + lx, y = y0 + ly;
      if (lx < kHalo || lx >= kRegionW - kHalo || ly < kHalo || ly >= NW * R - kHalo || x >= w || y >= h) continue;
      const long i = static_cast<long>(y) * w + x;
      a.u_out[i] = u[r][c];
      a.p1_out[i] = p1[r][c];
      a.p2_out[i] = p2[r][c];
    }
}

template <class S, int R, int NW>
__global__ void __launch_bounds__(32 * NW) tvl1_columns_kernel(ColumnsArgs<S> a) {
  __shared__ Pair_t<S> sp1[NW][kRegionW], sp2[NW][kRegionW];
  __shared__ float2 su[NW][kRegionW];
  constexpr int kOutH = NW * R - 2 * kHalo;
  const int x0 = static_cast<int>(blockIdx.x) * kOutW - kHalo, y0 = static_cast<int>(blockIdx.y) * kOutH - kHalo;
  if (x0 >= 1 && y0 >= 1 && x0 + kRegionW < a.w && y0 + NW * R < a.h)
    columns_tile<S, R, NW, false>(a, x0, y0, sp1, sp2, su);
  else
    columns_tile<S, R, NW, true>(a, x0, y0, sp1, sp2, su);
}

template <class S, int R, int NW> void launch_shape(const ColumnsArgs<S>& a, cudaStream_t s) {
  constexpr int kOutH = NW * R - 2 * kHalo;
  static_assert(kOutH > 0);
  const dim3 grid((a.w + kOutW - 1) / kOutW, (a.h + kOutH - 1) / kOutH);
  tvl1_columns_kernel<S, R, NW><<<grid, dim3(32, NW), 0, s>>>(a);
  check_launch("flow.tvl1_columns_kernel", s);
}
}  // namespace

template <class S>
void launch_tvl1_columns(FusedLayout layout, const Tvl1Step& c, const float2* u_in, float2* u_out,
                         const Pair_t<S>* p1_in, const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out,
                         const Pair_t<S>* grad, const S* rho_c, int steps, bool zero_duals, int w, int h,
                         cudaStream_t s) {
  if (steps < 1 || steps > kHalo) throw ConfigError("flow: fused TV-L1 launch of " + std::to_string(steps) + " steps");
  const ColumnsArgs<S> a{c, u_in, u_out, p1_in, p2_in, p1_out, p2_out, grad, rho_c, steps, w, h, zero_duals};
  switch (layout) {
    case FusedLayout::columns2x32: launch_shape<S, 2, 32>(a, s); break;
    case FusedLayout::columns4x8: launch_shape<S, 4, 8>(a, s); break;
    case FusedLayout::columns8x8: launch_shape<S, 8, 8>(a, s); break;
    default: launch_shape<S, 4, 16>(a, s); break;
  }
}

#define WEFT_FLOW_INSTANTIATE(S)                                                                                  \
  template void launch_tvl1_columns<S>(FusedLayout, const Tvl1Step&, const float2*, float2*, const Pair_t<S>*,    \
                                       const Pair_t<S>*, Pair_t<S>*, Pair_t<S>*, const Pair_t<S>*, const S*, int, \
                                       bool, int, int, cudaStream_t);
WEFT_FLOW_INSTANTIATE(float)
WEFT_FLOW_INSTANTIATE(__half)
#undef WEFT_FLOW_INSTANTIATE

}  // namespace weft::flow::gpu
