// Iteration kernels: the fused TV-L1 iteration (thresholding + divergence + primal update, then
// forward gradient + dual update, one launch per iteration over a shared-memory tile with a
// one-pixel recomputed halo) and the pointwise-coupled Jacobi step of HS and CLG.
#include "../src/flow_math.hpp"
#include "convert.cuh"
#include "kernels.cuh"
#include "weft/cuda.hpp"

namespace weft::flow::gpu {
using device::ld;
using device::ld2;
using device::st;
using device::st2;

namespace {
dim3 grid2(int w, int h) { return dim3((w + kTileW - 1) / kTileW, (h + kTileH - 1) / kTileH); }

// Adds a block's partial error to err (one atomic per warp).
__device__ __forceinline__ void add_error(float e, float* err) {
  for (int o = 16; o > 0; o >>= 1) e += __shfl_down_sync(0xffffffffu, e, o);
  if ((threadIdx.x & 31) == 0 && e != 0.f) atomicAdd(err, e);
}

// Whether iteration n is past the stopping point: the previous iteration's error (0 when it was
// itself skipped) is <= stop. Same rule as the CPU loop `while (error > eps^2)`.
__device__ __forceinline__ bool stopped(const float* err, int n, float stop) { return n > 0 && err[n - 1] <= stop; }

// Layer 3: one TV-L1 iteration on a tile. `un` holds the new primal on the tile plus one column
// to the right and one row below (needed by the forward gradient of the dual step).
template <class S>
__device__ void tvl1_tile(const Tvl1Step& c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in,
                          const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad,
                          const S* rho_c, float* err, int w, int h, int y_first, int y_end,
                          float2 (*un)[kTileW + 1]) {
  const int x0 = blockIdx.x * kTileW, y0 = y_first + blockIdx.y * kTileH;
  const int y_new = min(y_end + 1, h);  // rows whose new flow is computed: the window and the row after it
  const int tid = threadIdx.y * kTileW + threadIdx.x;
  float e = 0;
  for (int r = tid; r < (kTileW + 1) * (kTileH + 1); r += kTileW * kTileH) {
    const int lx = r % (kTileW + 1), ly = r / (kTileW + 1), x = x0 + lx, y = y0 + ly;
    if (x >= w || y >= y_new) continue;
    const long i = long(y) * w + x;
    const float2 u = u_in[i], g = ld2(grad[i]);
    float v1, v2;
    device::tvl1_threshold<float>(u.x, u.y, g.x, g.y, ld(rho_c[i]), c.lt, v1, v2);
    const float2 p1 = ld2(p1_in[i]), p2 = ld2(p2_in[i]);
    const float2 p1l = x > 0 ? ld2(p1_in[i - 1]) : make_float2(0.f, 0.f), p2l = x > 0 ? ld2(p2_in[i - 1]) : make_float2(0.f, 0.f);
    const float2 p1u = y > 0 ? ld2(p1_in[i - w]) : make_float2(0.f, 0.f), p2u = y > 0 ? ld2(p2_in[i - w]) : make_float2(0.f, 0.f);
    const float div1 = (x < w - 1 ? p1.x : 0.f) - p1l.x + (y < h - 1 ? p1.y : 0.f) - p1u.y;
    const float div2 = (x < w - 1 ? p2.x : 0.f) - p2l.x + (y < h - 1 ? p2.y : 0.f) - p2u.y;
    const float2 n = make_float2(v1 + c.theta * div1, v2 + c.theta * div2);
    un[ly][lx] = n;
    if (lx < kTileW && ly < kTileH && y < y_end) {
      u_out[i] = n;
      e += (n.x - u.x) * (n.x - u.x) + (n.y - u.y) * (n.y - u.y);
    }
  }
  __syncthreads();
  add_error(e, err);
  const int lx = threadIdx.x, ly = threadIdx.y, x = x0 + lx, y = y0 + ly;
  if (x >= w || y >= y_end) return;
  const long i = long(y) * w + x;
  const float2 u = un[ly][lx];
  const float2 ur = x < w - 1 ? un[ly][lx + 1] : u, ud = y < h - 1 ? un[ly + 1][lx] : u;
  float2 p1 = ld2(p1_in[i]), p2 = ld2(p2_in[i]);
  device::tvl1_dual<float>(p1.x, p1.y, ur.x - u.x, ud.x - u.x, c.taut);
  device::tvl1_dual<float>(p2.x, p2.y, ur.y - u.y, ud.y - u.y, c.taut);
  p1_out[i] = st2<Pair_t<S>>(p1.x, p1.y);
  p2_out[i] = st2<Pair_t<S>>(p2.x, p2.y);
}

template <class S>
__global__ void __launch_bounds__(kTileW* kTileH)
    tvl1_iteration_kernel(Tvl1Step c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in, const Pair_t<S>* p2_in,
                          Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad, const S* rho_c, float* err,
                          int n, int w, int h, int y_first, int y_end) {
  __shared__ float2 un[kTileH + 1][kTileW + 1];
  if (stopped(err, n, c.stop)) {  // carry the state through so the ping-pong stays consistent
    const int x = blockIdx.x * kTileW + threadIdx.x, y = y_first + blockIdx.y * kTileH + threadIdx.y;
    if (x < w && y < y_end) {
      const long i = long(y) * w + x;
      u_out[i] = u_in[i], p1_out[i] = p1_in[i], p2_out[i] = p2_in[i];
    }
    return;
  }
  tvl1_tile<S>(c, u_in, u_out, p1_in, p2_in, p1_out, p2_out, grad, rho_c, err + n, w, h, y_first, y_end, un);
}

template <class S>
__global__ void tensor_kernel(const Pair_t<S>* grad, const S* rho_c, float* j, int w, int h) {
  const int x = blockIdx.x * kTileW + threadIdx.x, y = blockIdx.y * kTileH + threadIdx.y;
  if (x >= w || y >= h) return;
  const long i = long(y) * w + x, n = long(w) * h;
  const float2 g = ld2(grad[i]);
  const float it = ld(rho_c[i]);
  j[i] = g.x * g.x, j[i + n] = g.x * g.y, j[i + 2 * n] = g.y * g.y, j[i + 3 * n] = g.x * it, j[i + 4 * n] = g.y * it;
}

// Rows [y_first, y_end); the tensor's planes are `np` elements apart (w h, or a strip's held rows).
template <class S>
__global__ void __launch_bounds__(kTileW* kTileH)
    jacobi_kernel(float a, float stop, const float2* u_in, float2* u_out, const S* j, long np, float* err, int n, int w,
                  int h, int y_first, int y_end) {
  const int x = blockIdx.x * kTileW + threadIdx.x, y = y_first + blockIdx.y * kTileH + threadIdx.y;
  const bool inside = x < w && y < y_end;
  const long i = long(y) * w + x;
  if (stopped(err, n, stop)) {
    if (inside) u_out[i] = u_in[i];
    return;
  }
  float e = 0;
  if (inside) {
    float su = 0, sv = 0, cnt = 0;
    if (x > 0) su += u_in[i - 1].x, sv += u_in[i - 1].y, cnt += 1;
    if (x < w - 1) su += u_in[i + 1].x, sv += u_in[i + 1].y, cnt += 1;
    if (y > 0) su += u_in[i - w].x, sv += u_in[i - w].y, cnt += 1;
    if (y < h - 1) su += u_in[i + w].x, sv += u_in[i + w].y, cnt += 1;
    float nu, nv;
    device::coupled_jacobi<float>(cnt, a, su, sv, ld(j[i]), ld(j[i + np]), ld(j[i + 2 * np]), ld(j[i + 3 * np]),
                                  ld(j[i + 4 * np]), nu, nv);
    const float2 u = u_in[i];
    e = (nu - u.x) * (nu - u.x) + (nv - u.y) * (nv - u.y);
    u_out[i] = make_float2(nu, nv);
  }
  add_error(e, err + n);
}
}  // namespace

template <class S>
void launch_tvl1_iteration(const Tvl1Step& c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in,
                           const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad,
                           const S* rho_c, float* err, int n, int w, int h, cudaStream_t s, int y_first, int y_end) {
  if (y_end < 0) y_end = h;
  if (y_end <= y_first) return;
  tvl1_iteration_kernel<S><<<grid2(w, y_end - y_first), dim3(kTileW, kTileH), 0, s>>>(
      c, u_in, u_out, p1_in, p2_in, p1_out, p2_out, grad, rho_c, err, n, w, h, y_first, y_end);
  check_launch("flow.tvl1_iteration_kernel", s);
}

template <class S> void launch_tensor(const Pair_t<S>* grad, const S* rho_c, float* j, int w, int h, cudaStream_t s) {
  tensor_kernel<S><<<grid2(w, h), dim3(kTileW, kTileH), 0, s>>>(grad, rho_c, j, w, h);
  check_launch("flow.tensor_kernel", s);
}

template <class S>
void launch_jacobi(float a, float stop, const float2* u_in, float2* u_out, const S* j, float* err, int n, int w, int h,
                   cudaStream_t s, int y_first, int y_end, long plane) {
  if (y_end < 0) y_end = h;
  if (plane < 0) plane = long(w) * h;
  if (y_end <= y_first) return;
  jacobi_kernel<S><<<grid2(w, y_end - y_first), dim3(kTileW, kTileH), 0, s>>>(a, stop, u_in, u_out, j, plane, err, n, w,
                                                                              h, y_first, y_end);
  check_launch("flow.jacobi_kernel", s);
}

#define WEFT_FLOW_INSTANTIATE(S)                                                                                       \
  template void launch_tvl1_iteration<S>(const Tvl1Step&, const float2*, float2*, const Pair_t<S>*, const Pair_t<S>*, \
                                         Pair_t<S>*, Pair_t<S>*, const Pair_t<S>*, const S*, float*, int, int, int,   \
                                         cudaStream_t, int, int);                                                      \
  template void launch_tensor<S>(const Pair_t<S>*, const S*, float*, int, int, cudaStream_t);                         \
  template void launch_jacobi<S>(float, float, const float2*, float2*, const S*, float*, int, int, int, cudaStream_t, \
                                  int, int, long);
WEFT_FLOW_INSTANTIATE(float)
WEFT_FLOW_INSTANTIATE(__half)
#undef WEFT_FLOW_INSTANTIATE

}  // namespace weft::flow::gpu
