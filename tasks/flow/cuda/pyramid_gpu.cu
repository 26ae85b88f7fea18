// Pyramid, gradient, warp and median kernels of the flow methods (launchers, kernels, per-pixel
// math from src/flow_math.hpp shared with the CPU path).
#include <cmath>
#include <cstdint>

#include <thrust/execution_policy.h>
#include <thrust/extrema.h>

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
const dim3 kBlock(kTileW, kTileH);
__device__ __forceinline__ bool pixel(int w, int h, int& x, int& y) {
  x = blockIdx.x * blockDim.x + threadIdx.x;
  y = blockIdx.y * blockDim.y + threadIdx.y;
  return x < w && y < h;
}
// pixel() over rows [y_first, y_end) of the level (a row window; grid2(w, y_end - y_first)).
__device__ __forceinline__ bool pixel_rows(int w, int y_first, int y_end, int& x, int& y) {
  x = blockIdx.x * blockDim.x + threadIdx.x;
  y = y_first + blockIdx.y * blockDim.y + threadIdx.y;
  return x < w && y < y_end;
}

// also: the same values stored in S as well (the finest pyramid level), or null.
template <class T, class S> __global__ void to_float_kernel(const T* in, float* out, S* also, long n, float scale) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = scale > 0 ? ld(in[i]) * scale : ld(in[i]);
  out[i] = v;
  if (also) also[i] = st<S>(v);
}
__global__ void normalise_kernel(float* a, float* b, long n, const float* lo_a, const float* hi_a, const float* lo_b,
                                 const float* hi_b) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float lo = fminf(*lo_a, *lo_b), range = fmaxf(*hi_a, *hi_b) - lo;
  const float scale = range > 0 ? 1.f / range : 0.f;
  a[i] = (a[i] - lo) * scale;
  b[i] = (b[i] - lo) * scale;
}
template <class In, class Out> __global__ void convert_kernel(const In* in, Out* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = st<Out>(ld(in[i]));
}
template <class In> __global__ void blur_rows_kernel(Gauss1D g, const In* in, float* out, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  float s = 0;
  for (int i = -g.radius; i <= g.radius; ++i) s += g.w[i + g.radius] * ld(in[long(y) * w + device::clamp_index(x + i, w)]);
  out[long(y) * w + x] = s;
}
template <class Out> __global__ void blur_cols_kernel(Gauss1D g, const float* in, Out* out, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  float s = 0;
  for (int i = -g.radius; i <= g.radius; ++i) s += g.w[i + g.radius] * in[long(device::clamp_index(y + i, h)) * w + x];
  out[long(y) * w + x] = st<Out>(s);
}
// Resize to the next level kept in float (to build the one after) and stored in S.
template <class S> __global__ void resize_both_kernel(const float* in, int wi, int hi, float* out, S* out_s, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const float sx = float(wi) / w, sy = float(hi) / h;
  const float v = device::bilinear<float>(in, wi, hi, (x + 0.5f) * sx - 0.5f, (y + 0.5f) * sy - 0.5f);
  out[long(y) * w + x] = v;
  out_s[long(y) * w + x] = st<S>(v);
}
// The flow of the next coarser level (wi x hi) at pixel (x, y) of this one, bilinear with
// replicated borders, its vectors scaled by the size ratio.
__device__ __forceinline__ float2 upsampled_flow(const float2* in, int wi, int hi, int w, int h, int x, int y) {
  const float sx = float(wi) / w, sy = float(hi) / h;
  const float* f = reinterpret_cast<const float*>(in);
  const float xs = (x + 0.5f) * sx - 0.5f, ys = (y + 0.5f) * sy - 0.5f;
  return make_float2(device::bilinear<float>(f, wi, hi, xs, ys, 2, 0) / sx,
                     device::bilinear<float>(f, wi, hi, xs, ys, 2, 1) / sy);
}
// Structure-texture decomposition of both frames (blockIdx.z: frame), as structure_texture in
// src/image_ops.hpp: per dual step one pass for u = f + theta div p, one for p; then the texture.
struct RofFrames {
  float* f[2];
  float *u[2], *pa[2], *pb[2];
};
__global__ void rof_primal_kernel(RofFrames r, float theta, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const int k = blockIdx.z;
  const long i = long(y) * w + x;
  r.u[k][i] = device::rof_primal<float>(r.f[k][i], device::divergence<float>(r.pa[k], r.pb[k], w, h, x, y), theta);
}
__global__ void rof_dual_kernel(RofFrames r, float taut, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const int k = blockIdx.z;
  const long i = long(y) * w + x;
  float ux, uy;
  device::forward_gradient<float>(r.u[k], w, h, x, y, ux, uy);
  device::tvl1_dual<float>(r.pa[k][i], r.pb[k][i], ux, uy, taut);
}
__global__ void texture_kernel(RofFrames r, float theta, float alpha, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const int k = blockIdx.z;
  const long i = long(y) * w + x;
  const float f = r.f[k][i];
  const float structure = device::rof_primal<float>(f, device::divergence<float>(r.pa[k], r.pb[k], w, h, x, y), theta);
  r.f[k][i] = device::texture_part<float>(f, structure, alpha);
}

// 5-point derivatives (device::derivative5) of a frame at pixel (x, y), replicated borders (as
// src/image_ops.hpp); the interior without clamps, offsets from the pixel.
template <class S> __device__ __forceinline__ float2 gradient_at(const S* img, int w, int h, int x, int y) {
  using device::clamp_index;
  const S* in = img + long(y) * w + x;
  if (x >= 2 && x + 2 < w && y >= 2 && y + 2 < h)
    return make_float2(device::derivative5(ld(in[-2]), ld(in[-1]), ld(in[1]), ld(in[2])),
                       device::derivative5(ld(in[-2 * w]), ld(in[-w]), ld(in[w]), ld(in[2 * w])));
  auto at_x = [&](int d) { return ld(in[clamp_index(x + d, w) - x]); };
  auto at_y = [&](int d) { return ld(in[long(clamp_index(y + d, h) - y) * w]); };
  return make_float2(device::derivative5(at_x(-2), at_x(-1), at_x(1), at_x(2)),
                     device::derivative5(at_y(-2), at_y(-1), at_y(1), at_y(2)));
}

// Frame 1's gradient of a level as (x, y) pairs, sampled by the warp at its bicubic taps.
template <class S> __global__ void gradient_pairs_kernel(const S* in, Pair_t<S>* g, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const float2 d = gradient_at(in, w, h, x, y);
  g[long(y) * w + x] = st2<Pair_t<S>>(d.x, d.y);
}

// Weighted sums of gradient pairs: float2 in fp32; half2 arithmetic in fp16 (the pairs are
// half already, and the data term's gradient is stored as half).
__device__ __forceinline__ float2 pair_sum(const float (&w)[4], const float2 (&g)[4]) {
  return make_float2(device::cubic_sum(w, g[0].x, g[1].x, g[2].x, g[3].x),
                     device::cubic_sum(w, g[0].y, g[1].y, g[2].y, g[3].y));
}
__device__ __forceinline__ __half2 pair_sum(const float (&w)[4], const __half2 (&g)[4]) {
  __half2 acc = __hmul2(__float2half2_rn(w[0]), g[0]);
#pragma unroll
  for (int t = 1; t < 4; ++t) acc = __hfma2(__float2half2_rn(w[t]), g[t], acc);
  return acc;
}

// Layer 3, one pixel: frame 1 and its gradient pairs sampled bicubically at x + flow (one set of
// weights for both samples, replicated borders as device::bicubic), frame 0's gradient at x
// (computed here, in float), the data term's gradient and constant. Interior: every tap inside.
template <class S, bool Border>
__device__ void warp_pixel(const S* i0, const S* i1, const Pair_t<S>* g1, float2 f, Pair_t<S>* grad, S* rho_c,
                           int w, int h, int x, int y, int ix, int iy) {
  using P = Pair_t<S>;
  using device::clamp_index;
  float wx[4], wy[4];
  device::cubic_weights(x + f.x - float(ix), wx);
  device::cubic_weights(y + f.y - float(iy), wy);
  float vr[4];
  P gr[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const long r = long(Border ? clamp_index(iy - 1 + j, h) : iy - 1 + j) * w;
    float v[4];
    P g[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const long k = r + (Border ? clamp_index(ix - 1 + t, w) : ix - 1 + t);
      v[t] = ld(i1[k]);
      g[t] = g1[k];
    }
    vr[j] = device::cubic_sum(wx, v[0], v[1], v[2], v[3]);
    gr[j] = pair_sum(wx, g);
  }
  const long i = long(y) * w + x;
  const float2 g1w = ld2(pair_sum(wy, gr)), g0i = gradient_at(i0, w, h, x, y);
  const float iw = device::cubic_sum(wy, vr[0], vr[1], vr[2], vr[3]);
  const float gx = device::warped_gradient<float>(g1w.x, g0i.x), gy = device::warped_gradient<float>(g1w.y, g0i.y);
  grad[i] = st2<P>(gx, gy);
  rho_c[i] = st<S>(iw - gx * f.x - gy * f.y - ld(i0[i]));
}
// Out of line: the interior path, which nearly every pixel takes, stays short.
template <class S>
__device__ __noinline__ void warp_pixel_border(const S* i0, const S* i1, const Pair_t<S>* g1, float2 f,
                                               Pair_t<S>* grad, S* rho_c, int w, int h, int x, int y, int ix, int iy) {
  warp_pixel<S, true>(i0, i1, g1, f, grad, rho_c, w, h, x, y, ix, iy);
}

// coarse (wc x hc), when not null: the first warp of a level, whose flow is the coarser level's
// upsampled here (and written to `flow`) instead of by a pass of its own.
template <class S>
__global__ void __launch_bounds__(kTileW* kTileH, 6)
    warp_kernel(const S* i0, const S* i1, const Pair_t<S>* g1, const float2* coarse, int wc, int hc, float2* flow,
                Pair_t<S>* grad, S* rho_c, int w, int h, int y_first, int y_end) {
  int x, y;
  if (!pixel_rows(w, y_first, y_end, x, y)) return;
  float2 f;
  if (coarse)
    flow[long(y) * w + x] = f = upsampled_flow(coarse, wc, hc, w, h, x, y);
  else
    f = flow[long(y) * w + x];
  const int ix = static_cast<int>(floorf(x + f.x)), iy = static_cast<int>(floorf(y + f.y));
  if (ix >= 1 && ix + 2 < w && iy >= 1 && iy + 2 < h)
    warp_pixel<S, false>(i0, i1, g1, f, grad, rho_c, w, h, x, y, ix, iy);
  else
    warp_pixel_border(i0, i1, g1, f, grad, rho_c, w, h, x, y, ix, iy);
}
__global__ void median_flow_kernel(const float2* in, float2* out, int size, const float* err, int it, float stop, int w,
                                   int h, int y_first, int y_end) {
  int x, y;
  if (!pixel_rows(w, y_first, y_end, x, y)) return;
  if (err && it > 0 && err[it - 1] <= stop) {
    out[long(y) * w + x] = in[long(y) * w + x];
    return;
  }
  const int r = size / 2;
  float a[25], b[25];
  int n = 0;
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      const float2 v = in[long(device::clamp_index(y + dy, h)) * w + device::clamp_index(x + dx, w)];
      a[n] = v.x, b[n] = v.y, ++n;
    }
  out[long(y) * w + x] = make_float2(device::median_of(a, n), device::median_of(b, n));
}
}  // namespace

Gauss1D gaussian_weights(double sigma) {
  Gauss1D g;
  g.radius = sigma > 0 ? std::min(15, std::max(1, static_cast<int>(std::ceil(3 * sigma)))) : 0;
  double sum = 0;
  for (int i = -g.radius; i <= g.radius; ++i) sum += g.w[i + g.radius] = static_cast<float>(std::exp(-0.5 * i * i / (sigma * sigma)));
  for (int i = 0; i <= 2 * g.radius; ++i) g.w[i] = static_cast<float>(g.w[i] / sum);
  if (g.radius == 0) g.w[0] = 1;
  return g;
}

// u8 frames, 4 pixels per thread (one 4-byte load, 16-byte stores).
template <class S> __global__ void u8_to_float4_kernel(const uchar4* in, float4* out, S* also, long n4, float scale) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  const uchar4 c = in[i];
  const float4 v = make_float4(c.x * scale, c.y * scale, c.z * scale, c.w * scale);
  out[i] = v;
  if (also) {
    S* a = also + 4 * i;
    a[0] = st<S>(v.x), a[1] = st<S>(v.y), a[2] = st<S>(v.z), a[3] = st<S>(v.w);
  }
}

template <class S>
void launch_to_float(DType type, const void* in, float* out, S* also, long n, float scale, cudaStream_t s) {
  const int b = 256;
  if (type == DType::u8 && scale > 0 && n % 4 == 0 && reinterpret_cast<std::uintptr_t>(in) % 4 == 0) {
    const long n4 = n / 4;
    u8_to_float4_kernel<<<static_cast<unsigned>((n4 + b - 1) / b), b, 0, s>>>(
        static_cast<const uchar4*>(in), reinterpret_cast<float4*>(out), also, n4, scale);
    check_launch("flow.u8_to_float4_kernel", s);
    return;
  }
  const unsigned g = static_cast<unsigned>((n + b - 1) / b);
  switch (type) {
    case DType::u8: to_float_kernel<<<g, b, 0, s>>>(static_cast<const unsigned char*>(in), out, also, n, scale); break;
    case DType::u16: to_float_kernel<<<g, b, 0, s>>>(static_cast<const unsigned short*>(in), out, also, n, scale); break;
    case DType::f32: to_float_kernel<<<g, b, 0, s>>>(static_cast<const float*>(in), out, also, n, scale); break;
    default: to_float_kernel<<<g, b, 0, s>>>(static_cast<const double*>(in), out, also, n, scale); break;
  }
  check_launch("flow.to_float_kernel", s);
}

void launch_normalise(float* a, float* b, long n, cudaStream_t s) {
  const auto pa = thrust::minmax_element(thrust::cuda::par.on(s), a, a + n);
  const auto pb = thrust::minmax_element(thrust::cuda::par.on(s), b, b + n);
  normalise_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(a, b, n, pa.first, pa.second, pb.first, pb.second);
  check_launch("flow.normalise_kernel", s);
}

void launch_structure_texture(float* f0, float* f1, float* scratch, int w, int h, float alpha, cudaStream_t s) {
  const long n = static_cast<long>(w) * h;
  RofFrames r{{f0, f1}, {scratch, scratch + n}, {scratch + 2 * n, scratch + 3 * n}, {scratch + 4 * n, scratch + 5 * n}};
  WEFT_CUDA_CHECK(cudaMemsetAsync(scratch + 2 * n, 0, 4 * n * sizeof(float), s));
  const float theta = static_cast<float>(device::kRofTheta), taut = static_cast<float>(device::kRofTau / device::kRofTheta);
  dim3 grid = grid2(w, h);
  grid.z = 2;
  for (int it = 0; it < device::kRofIterations; ++it) {
    rof_primal_kernel<<<grid, kBlock, 0, s>>>(r, theta, w, h);
    check_launch("flow.rof_primal_kernel", s);
    rof_dual_kernel<<<grid, kBlock, 0, s>>>(r, taut, w, h);
    check_launch("flow.rof_dual_kernel", s);
  }
  texture_kernel<<<grid, kBlock, 0, s>>>(r, theta, alpha, w, h);
  check_launch("flow.texture_kernel", s);
}

template <class In, class Out>
void launch_gaussian(const Gauss1D& g, const In* in, float* tmp, Out* out, int w, int h, cudaStream_t s) {
  if (g.radius == 0) {  // no blur: one conversion pass instead of two
    const long n = static_cast<long>(w) * h;
    convert_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(in, out, n);
    check_launch("flow.convert_kernel", s);
    return;
  }
  blur_rows_kernel<<<grid2(w, h), kBlock, 0, s>>>(g, in, tmp, w, h);
  check_launch("flow.blur_rows_kernel", s);
  blur_cols_kernel<<<grid2(w, h), kBlock, 0, s>>>(g, tmp, out, w, h);
  check_launch("flow.blur_cols_kernel", s);
}

template <class S>
void launch_resize_both(const float* in, int wi, int hi, float* out, S* out_s, int w, int h, cudaStream_t s) {
  resize_both_kernel<<<grid2(w, h), kBlock, 0, s>>>(in, wi, hi, out, out_s, w, h);
  check_launch("flow.resize_both_kernel", s);
}

template <class S> void launch_gradient_pairs(const S* in, Pair_t<S>* g, int w, int h, cudaStream_t s) {
  gradient_pairs_kernel<<<grid2(w, h), kBlock, 0, s>>>(in, g, w, h);
  check_launch("flow.gradient_pairs_kernel", s);
}

template <class S>
void launch_warp(const S* i0, const S* i1, const Pair_t<S>* g1, const float2* coarse, int wc, int hc, float2* flow,
                 Pair_t<S>* grad, S* rho_c, int w, int h, cudaStream_t s, int y_first, int y_end) {
  if (y_end < 0) y_end = h;
  if (y_end <= y_first) return;
  warp_kernel<<<grid2(w, y_end - y_first), kBlock, 0, s>>>(i0, i1, g1, coarse, wc, hc, flow, grad, rho_c, w, h, y_first,
                                                           y_end);
  check_launch("flow.warp_kernel", s);
}

void launch_median_flow(const float2* in, float2* out, int size, const float* err, int n, float stop, int w, int h,
                        cudaStream_t s, int y_first, int y_end) {
  if (y_end < 0) y_end = h;
  if (y_end <= y_first) return;
  median_flow_kernel<<<grid2(w, y_end - y_first), kBlock, 0, s>>>(in, out, size, err, n, stop, w, h, y_first, y_end);
  check_launch("flow.median_flow_kernel", s);
}

#define WEFT_FLOW_INSTANTIATE(S)                                                                                   \
  template void launch_gaussian<float, S>(const Gauss1D&, const float*, float*, S*, int, int, cudaStream_t);      \
  template void launch_to_float<S>(DType, const void*, float*, S*, long, float, cudaStream_t);                    \
  template void launch_resize_both<S>(const float*, int, int, float*, S*, int, int, cudaStream_t);                \
  template void launch_gradient_pairs<S>(const S*, Pair_t<S>*, int, int, cudaStream_t);                           \
  template void launch_warp<S>(const S*, const S*, const Pair_t<S>*, const float2*, int, int, float2*, Pair_t<S>*, \
                               S*, int, int, cudaStream_t, int, int);
WEFT_FLOW_INSTANTIATE(float)
WEFT_FLOW_INSTANTIATE(__half)
#undef WEFT_FLOW_INSTANTIATE

}  // namespace weft::flow::gpu
