#pragma once
// Per-element math of the flow methods, shared by the CPU paths and the CUDA kernels (layer 4).
#include <cmath>

#if defined(__CUDACC__)
#define WEFT_FLOW_HD __host__ __device__ __forceinline__
#else
#define WEFT_FLOW_HD inline
#endif

namespace weft::flow::device {

WEFT_FLOW_HD int clamp_index(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// Cubic convolution (Keys) with a = -0.75, as OpenCV's INTER_CUBIC remap. IPOL's a = -0.5
// (Catmull-Rom) smooths the warped frame and gradients more: TV-L1 EPE on Hydrangea 0.199
// against 0.184 with -0.75 (measured with the CPU path, no anti-aliasing).
// The weights of the four taps at offsets -1, 0, 1, 2 for a sample at fraction t in [0, 1).
template <class T> WEFT_FLOW_HD void cubic_weights(T t, T (&w)[4]) {
  constexpr double a = -0.75;
  const T s = t + T(1), r = T(1) - t, q = T(2) - t;
  w[0] = ((T(a) * s - T(5 * a)) * s + T(8 * a)) * s - T(4 * a);
  w[1] = ((T(a + 2) * t - T(a + 3)) * t) * t + T(1);
  w[2] = ((T(a + 2) * r - T(a + 3)) * r) * r + T(1);
  w[3] = ((T(a) * q - T(5 * a)) * q + T(8 * a)) * q - T(4 * a);
}
template <class T> WEFT_FLOW_HD T cubic_sum(const T (&w)[4], T v0, T v1, T v2, T v3) {
  return w[0] * v0 + w[1] * v1 + w[2] * v2 + w[3] * v3;
}
template <class T> WEFT_FLOW_HD T cubic(T v0, T v1, T v2, T v3, T t) {
  T w[4];
  cubic_weights(t, w);
  return cubic_sum(w, v0, v1, v2, v3);
}

// Gradient of the linearised data term at a pixel: the mean of frame 1's gradient warped there
// and frame 0's gradient (Wedel et al. 2009): RubberWhale 0.1645 -> 0.1600 against the warped
// gradient alone.
template <class T> WEFT_FLOW_HD T warped_gradient(T warped_i1, T i0) { return T(0.5) * (warped_i1 + i0); }

// Derivative of the samples at offsets -2, -1, +1, +2 around a pixel: the 5-point central
// stencil [1 -8 0 8 -1] / 12 instead of centred differences (as Wedel et al. 2009). TV-L1 at the
// defaults, RubberWhale / Hydrangea / Sintel easy: 0.160 / 0.183 / 0.228 with centred
// differences, 0.149 / 0.176 / 0.226 with this stencil (CPU path, no texture part).
// A product by 1/12, not a division: a GPU warp that evaluated it at 34 points per pixel took
// 1.05 ms at 4K fp16 (seed setting, H100, printed by flow_bench) with the IEEE division, 0.37
// with the product.
template <class T> WEFT_FLOW_HD T derivative5(T m2, T m1, T p1, T p2) {
  return ((m2 - p2) + T(8) * (p1 - m1)) * (T(1) / T(12));
}

// Forward differences of u at (x, y), zero on the last column / row (the dual steps' gradient).
// `u` points at the pixel, rows `stride` elements apart; (x, y) and (w, h) place it in the image.
template <class T>
WEFT_FLOW_HD void forward_gradient_at(const T* u, long stride, int w, int h, int x, int y, T& ux, T& uy) {
  ux = x < w - 1 ? u[1] - u[0] : T(0);
  uy = y < h - 1 ? u[stride] - u[0] : T(0);
}
template <class T> WEFT_FLOW_HD void forward_gradient(const T* u, int w, int h, int x, int y, T& ux, T& uy) {
  forward_gradient_at(u + static_cast<long>(y) * w + x, w, w, h, x, y, ux, uy);
}

// Divergence of the dual field (pa, pb) at (x, y), backward differences with the boundary
// conditions of the TV-L1 and ROF dual schemes (p = 0 outside, last column/row not stored).
// The _at form: pa, pb point at the pixel, rows `stride` elements apart (strips of a split frame).
template <class T> WEFT_FLOW_HD T divergence_at(const T* pa, const T* pb, long stride, int w, int h, int x, int y) {
  const T dx = (x < w - 1 ? pa[0] : T(0)) - (x > 0 ? pa[-1] : T(0));
  const T dy = (y < h - 1 ? pb[0] : T(0)) - (y > 0 ? pb[-stride] : T(0));
  return dx + dy;
}
template <class T> WEFT_FLOW_HD T divergence(const T* pa, const T* pb, int w, int h, int x, int y) {
  const long i = static_cast<long>(y) * w + x;
  return divergence_at(pa + i, pb + i, w, w, h, x, y);
}

// Bicubic sample of img (row-major h x w) at (x, y) with replicated borders.
template <class T, class S> WEFT_FLOW_HD T bicubic(const S* img, int w, int h, T x, T y) {
  const int ix = static_cast<int>(floor(x)), iy = static_cast<int>(floor(y));
  const T tx = x - T(ix), ty = y - T(iy);
  T row[4];
  for (int j = 0; j < 4; ++j) {
    const S* r = img + static_cast<long>(clamp_index(iy - 1 + j, h)) * w;
    row[j] = cubic<T>(T(r[clamp_index(ix - 1, w)]), T(r[clamp_index(ix, w)]), T(r[clamp_index(ix + 1, w)]),
                      T(r[clamp_index(ix + 2, w)]), tx);
  }
  return cubic<T>(row[0], row[1], row[2], row[3], ty);
}

// Bilinear sample with replicated borders (pyramid resampling and flow upsampling); the _of form
// reads the image through at(row, column) (rows of a strip of a split frame).
template <class T, class At> WEFT_FLOW_HD T bilinear_of(const At& at, int w, int h, T x, T y) {
  const int ix = static_cast<int>(floor(x)), iy = static_cast<int>(floor(y));
  const T tx = x - T(ix), ty = y - T(iy);
  const int x0 = clamp_index(ix, w), x1 = clamp_index(ix + 1, w), y0 = clamp_index(iy, h), y1 = clamp_index(iy + 1, h);
  return (T(1) - ty) * ((T(1) - tx) * at(y0, x0) + tx * at(y0, x1)) + ty * ((T(1) - tx) * at(y1, x0) + tx * at(y1, x1));
}
template <class T, class S> WEFT_FLOW_HD T bilinear(const S* img, int w, int h, T x, T y, int stride = 1, int offset = 0) {
  return bilinear_of<T>([&](int yy, int xx) { return T(img[(static_cast<long>(yy) * w + xx) * stride + offset]); }, w, h, x, y);
}

// TV-L1 thresholding step (Zach-Pock-Bischof, IPOL eq. (15)): v from u given the linearised
// residual rho = rho_c + Ix*u1 + Iy*u2 and lt = lambda * theta.
template <class T> WEFT_FLOW_HD void tvl1_threshold(T u1, T u2, T ix, T iy, T rho_c, T lt, T& v1, T& v2) {
  const T grad = ix * ix + iy * iy;
  const T rho = rho_c + ix * u1 + iy * u2;
  T d1 = 0, d2 = 0;
  if (rho < -lt * grad) {
    d1 = lt * ix;
    d2 = lt * iy;
  } else if (rho > lt * grad) {
    d1 = -lt * ix;
    d2 = -lt * iy;
  } else if (grad > T(1e-10)) {
    const T f = -rho / grad;
    d1 = f * ix;
    d2 = f * iy;
  }
  v1 = u1 + d1;
  v2 = u2 + d2;
}

// Dual projection step: p <- (p + (tau/theta) grad u) / (1 + (tau/theta) |grad u|).
template <class T> WEFT_FLOW_HD void tvl1_dual(T& pa, T& pb, T gx, T gy, T taut) {
  const T ng = T(1) + taut * sqrt(gx * gx + gy * gy);
  pa = (pa + taut * gx) / ng;
  pb = (pb + taut * gy) / ng;
}

// Pointwise-coupled Jacobi update shared by HS and CLG: solves
//   (n a + j11) u + j12 v = a su - j13,   j12 u + (n a + j22) v = a sv - j23
// where su, sv are the sums of the n neighbours and a the smoothness weight.
template <class T> WEFT_FLOW_HD void coupled_jacobi(T n, T a, T su, T sv, T j11, T j12, T j22, T j13, T j23, T& u, T& v) {
  const T a11 = n * a + j11, a22 = n * a + j22;
  const T b1 = a * su - j13, b2 = a * sv - j23;
  const T det = a11 * a22 - j12 * j12;
  u = (a22 * b1 - j12 * b2) / det;
  v = (a11 * b2 - j12 * b1) / det;
}

// Structure-texture decomposition (Wedel et al. 2009): the structure part is the ROF denoising
// u = argmin TV(u) + |u - f|^2 / (2 theta) by Chambolle's dual projection (u = f + theta div p,
// then p <- (p + (tau/theta) grad u) / (1 + (tau/theta) |grad u|), tau 0.25), and the frame the
// flow sees is the texture f - alpha u. Intensities in [0, 1]. TV-L1 at the defaults with the
// 5-point derivatives, RubberWhale / Hydrangea / Sintel easy: 0.149 / 0.176 / 0.226 on the frames,
// 0.122 / 0.148 / 0.229 on their texture parts (alpha 0.95; Hydrangea with theta 0.1: 0.148,
// 0.2: 0.154; 50 dual steps: 0.150; CPU path).
inline constexpr double kRofTheta = 0.125;
inline constexpr double kRofTau = 0.25;
inline constexpr int kRofIterations = 100;
template <class T> WEFT_FLOW_HD T rof_primal(T f, T div_p, T theta) { return f + theta * div_p; }
template <class T> WEFT_FLOW_HD T texture_part(T f, T structure, T alpha) { return f - alpha * structure; }

// Median of n <= 25 values (insertion sort in registers).
template <class T> WEFT_FLOW_HD T median_of(T* v, int n) {
  for (int i = 1; i < n; ++i) {
    const T x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = x;
  }
  return n % 2 ? v[n / 2] : T(0.5) * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace weft::flow::device
