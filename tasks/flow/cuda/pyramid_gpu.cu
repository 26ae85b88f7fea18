// Pyramid, gradient, warp and median kernels of the flow methods (launchers, kernels, per-pixel
// math from src/flow_math.hpp shared with the CPU path).
#include <cmath>

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

template <class T> __global__ void to_float_kernel(const T* in, float* out, long n, float scale) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = scale > 0 ? ld(in[i]) * scale : ld(in[i]);
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
template <class S> __global__ void resize_kernel(const S* in, int wi, int hi, S* out, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const float sx = float(wi) / w, sy = float(hi) / h;
  out[long(y) * w + x] = st<S>(device::bilinear<float>(in, wi, hi, (x + 0.5f) * sx - 0.5f, (y + 0.5f) * sy - 0.5f));
}
__global__ void resize_flow_kernel(const float2* in, int wi, int hi, float2* out, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const float sx = float(wi) / w, sy = float(hi) / h;
  const float* f = reinterpret_cast<const float*>(in);
  const float xs = (x + 0.5f) * sx - 0.5f, ys = (y + 0.5f) * sy - 0.5f;
  out[long(y) * w + x] = make_float2(device::bilinear<float>(f, wi, hi, xs, ys, 2, 0) / sx,
                                     device::bilinear<float>(f, wi, hi, xs, ys, 2, 1) / sy);
}
// Derivative of the frame along one axis at one pixel, in float: the 5-point stencil
// (device::derivative5) over the samples at indices m2, m1, p1, p2 (the warp computes gradients
// from the frames at each tap instead of reading gradient images).
template <class S> __device__ __forceinline__ float derivative(const S* img, long m2, long m1, long p1, long p2) {
  return device::derivative5<float>(ld(img[m2]), ld(img[m1]), ld(img[p1]), ld(img[p2]));
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
  const float* u = r.u[k];
  const float ux = x < w - 1 ? u[i + 1] - u[i] : 0.f, uy = y < h - 1 ? u[i + w] - u[i] : 0.f;
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

// Data term at pixel i from the tap rows (frame 1, its x and y gradients, each weighted along x):
// the rows weighted along y, frame 0's gradient at (x, y), the stores.
template <class S>
__device__ __forceinline__ void warp_finish(const S* i0, float2 f, const float (&wy)[4], const float (&vr)[4],
                                            const float (&xr)[4], const float (&yr)[4], Pair_t<S>* grad, S* rho_c,
                                            int w, int h, int x, int y) {
  using device::clamp_index;
  const long r0 = long(y) * w, i = r0 + x;
  const float g0x = derivative(i0, r0 + clamp_index(x - 2, w), r0 + clamp_index(x - 1, w), r0 + clamp_index(x + 1, w),
                               r0 + clamp_index(x + 2, w));
  auto row0 = [&](int d) { return long(clamp_index(y + d, h)) * w + x; };
  const float g0y = derivative(i0, row0(-2), row0(-1), row0(1), row0(2));
  const float iw = device::cubic_sum(wy, vr[0], vr[1], vr[2], vr[3]);
  const float gx = device::warped_gradient<float>(device::cubic_sum(wy, xr[0], xr[1], xr[2], xr[3]), g0x);
  const float gy = device::warped_gradient<float>(device::cubic_sum(wy, yr[0], yr[1], yr[2], yr[3]), g0y);
  grad[i] = st2<Pair_t<S>>(gx, gy);
  rho_c[i] = st<S>(iw - gx * f.x - gy * f.y - ld(i0[i]));
}

// Layer 3, one pixel: frame 1 and its gradient sampled bicubically at x + flow (one set of
// weights for the three samples; the gradient at each tap from frame 1's pixels around it), frame
// 0's gradient at x, the data term's gradient and constant. In fp32 the same values as sampling
// gradient images made by a 5-point derivative pass (src/image_ops.hpp); in fp16 the gradients
// are not rounded to half on the way (no gradient images, and conversions cost more than loads).
// Border: replicated, taps clamped and each tap's neighbours clamped again, as gradient images of
// the clamped frame would give; interior: every tap and its neighbours inside, no clamps.
template <class S, bool Border>
__device__ void warp_pixel(const S* i0, const S* i1, float2 f, Pair_t<S>* grad, S* rho_c, int w, int h, int x,
                           int y, int ix, int iy) {
  using device::clamp_index;
  float wx[4], wy[4];
  device::cubic_weights(x + f.x - float(ix), wx);
  device::cubic_weights(y + f.y - float(iy), wy);
  float vr[4], xr[4], yr[4];
  float win[8][8];  // rows iy - 3 .. iy + 4, columns ix - 3 .. ix + 4 (interior only)
  if constexpr (!Border) {
    const S* row = i1 + long(iy - 3) * w + (ix - 3);
#pragma unroll
    for (int r = 0; r < 8; ++r, row += w)
#pragma unroll
      for (int c = 0; c < 8; ++c)
        if ((r >= 2 && r <= 5) || (c >= 2 && c <= 5)) win[r][c] = ld(row[c]);
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float v[4], gxv[4], gyv[4];
    if constexpr (Border) {
      const int ty = clamp_index(iy - 1 + j, h);
      const long r = long(ty) * w, up = long(clamp_index(ty - 1, h)) * w, down = long(clamp_index(ty + 1, h)) * w;
      const long up2 = long(clamp_index(ty - 2, h)) * w, down2 = long(clamp_index(ty + 2, h)) * w;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int tx = clamp_index(ix - 1 + t, w);
        v[t] = ld(i1[r + tx]);
        gxv[t] = derivative(i1, r + clamp_index(tx - 2, w), r + clamp_index(tx - 1, w), r + clamp_index(tx + 1, w),
                            r + clamp_index(tx + 2, w));
        gyv[t] = derivative(i1, up2 + tx, up + tx, down + tx, down2 + tx);
      }
    } else {  // the 8 x 8 window around the taps (corners unused), each pixel loaded once
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        v[t] = win[j + 2][t + 2];
        gxv[t] = device::derivative5(win[j + 2][t], win[j + 2][t + 1], win[j + 2][t + 3], win[j + 2][t + 4]);
        gyv[t] = device::derivative5(win[j][t + 2], win[j + 1][t + 2], win[j + 3][t + 2], win[j + 4][t + 2]);
      }
    }
    vr[j] = device::cubic_sum(wx, v[0], v[1], v[2], v[3]);
    xr[j] = device::cubic_sum(wx, gxv[0], gxv[1], gxv[2], gxv[3]);
    yr[j] = device::cubic_sum(wx, gyv[0], gyv[1], gyv[2], gyv[3]);
  }
  warp_finish(i0, f, wy, vr, xr, yr, grad, rho_c, w, h, x, y);
}
// Out of line: the interior path, which nearly every pixel takes, stays short.
template <class S>
__device__ __noinline__ void warp_pixel_border(const S* i0, const S* i1, float2 f, Pair_t<S>* grad, S* rho_c, int w,
                                               int h, int x, int y, int ix, int iy) {
  warp_pixel<S, true>(i0, i1, f, grad, rho_c, w, h, x, y, ix, iy);
}

template <class S>
__global__ void warp_kernel(const S* i0, const S* i1, const float2* flow, Pair_t<S>* grad, S* rho_c, int w, int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
  const float2 f = flow[long(y) * w + x];
  const int ix = static_cast<int>(floorf(x + f.x)), iy = static_cast<int>(floorf(y + f.y));
  if (ix >= 3 && ix + 4 < w && iy >= 3 && iy + 4 < h)
    warp_pixel<S, false>(i0, i1, f, grad, rho_c, w, h, x, y, ix, iy);
  else
    warp_pixel_border(i0, i1, f, grad, rho_c, w, h, x, y, ix, iy);
}
__global__ void median_flow_kernel(const float2* in, float2* out, int size, const float* err, int it, float stop, int w,
                                   int h) {
  int x, y;
  if (!pixel(w, h, x, y)) return;
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

void launch_to_float(DType type, const void* in, float* out, long n, float scale, cudaStream_t s) {
  const int b = 256;
  const unsigned g = static_cast<unsigned>((n + b - 1) / b);
  switch (type) {
    case DType::u8: to_float_kernel<<<g, b, 0, s>>>(static_cast<const unsigned char*>(in), out, n, scale); break;
    case DType::u16: to_float_kernel<<<g, b, 0, s>>>(static_cast<const unsigned short*>(in), out, n, scale); break;
    case DType::f32: to_float_kernel<<<g, b, 0, s>>>(static_cast<const float*>(in), out, n, scale); break;
    default: to_float_kernel<<<g, b, 0, s>>>(static_cast<const double*>(in), out, n, scale); break;
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

template <class S> void launch_resize(const S* in, int wi, int hi, S* out, int w, int h, cudaStream_t s) {
  resize_kernel<<<grid2(w, h), kBlock, 0, s>>>(in, wi, hi, out, w, h);
  check_launch("flow.resize_kernel", s);
}

void launch_resize_flow(const float2* in, int wi, int hi, float2* out, int w, int h, cudaStream_t s) {
  resize_flow_kernel<<<grid2(w, h), kBlock, 0, s>>>(in, wi, hi, out, w, h);
  check_launch("flow.resize_flow_kernel", s);
}

template <class S>
void launch_warp(const S* i0, const S* i1, const float2* flow, Pair_t<S>* grad, S* rho_c, int w, int h, cudaStream_t s) {
  warp_kernel<<<grid2(w, h), kBlock, 0, s>>>(i0, i1, flow, grad, rho_c, w, h);
  check_launch("flow.warp_kernel", s);
}

void launch_median_flow(const float2* in, float2* out, int size, const float* err, int n, float stop, int w, int h,
                        cudaStream_t s) {
  median_flow_kernel<<<grid2(w, h), kBlock, 0, s>>>(in, out, size, err, n, stop, w, h);
  check_launch("flow.median_flow_kernel", s);
}

#define WEFT_FLOW_INSTANTIATE(S)                                                                                   \
  template void launch_gaussian<float, S>(const Gauss1D&, const float*, float*, S*, int, int, cudaStream_t);      \
  template void launch_resize<S>(const S*, int, int, S*, int, int, cudaStream_t);                                 \
  template void launch_warp<S>(const S*, const S*, const float2*, Pair_t<S>*, S*, int, int, cudaStream_t);
WEFT_FLOW_INSTANTIATE(float)
WEFT_FLOW_INSTANTIATE(__half)
#undef WEFT_FLOW_INSTANTIATE

}  // namespace weft::flow::gpu
