// Large convolution kernels through cuFFT, in double precision (fp32 transforms of a 4096² image
// would miss the 1e-6 bound relative to Σ|k·x| that the direct kernels keep). Each slice: the
// image is padded by r on every side with the border mode (pad(p, q) = in(border(p − r),
// border(q − r))) into a py × px grid (py ≥ ny + 2r, sizes 2^a 3^b 5^c 7^d), the kernel is
// scattered flipped (g(−i, −j) = k[i][j]: the correlation as a circular convolution, which cannot
// wrap since py ≥ ny + 2r), both go through D2Z, their product through Z2D, and out(y, x) is the
// result at (y, x) divided by py·px. Plans are cached per (device, stream, py, px); buffers come
// from the GPU's pool on the stream. The policy decides from which size this path is taken.
#include <cufft.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "filters_gpu.cuh"
#include "weft/data/array.hpp"

namespace weft::filters {
namespace device {

template <class T>
__global__ void fft_pad_kernel(const T* __restrict__ src, double* __restrict__ pad, Extent e, long long z, int r,
                               long long py, long long px, int border) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= py * px) return;
  const long long p = i / px, q = i - (i / px) * px;
  double v = 0.0;
  if (p < e.ny + 2 * r && q < e.nx + 2 * r) {
    const long long yi = border_index(p - r, e.ny, border);
    const long long xi = border_index(q - r, e.nx, border);
    if (yi >= 0 && xi >= 0) v = to_float(src[(z * e.ny + yi) * e.nx + xi]);
  }
  pad[i] = v;
}

/// g[(−i) mod py][(−j) mod px] = k[i − r][j − r] for the ksize² weights (g zeroed before).
__global__ void fft_scatter_kernel(const float* __restrict__ weights, double* __restrict__ g, int ksize,
                                   long long py, long long px) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= ksize * ksize) return;
  const int r = ksize / 2;
  const long long i = t / ksize - r, j = t % ksize - r;
  const long long u = (-i % py + py) % py, v = (-j % px + px) % px;
  g[u * px + v] = weights[t];
}

__global__ void fft_multiply_kernel(cufftDoubleComplex* __restrict__ a, const cufftDoubleComplex* __restrict__ b,
                                    long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const cufftDoubleComplex x = a[i], y = b[i];
  a[i] = {x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x};
}

template <class T>
__global__ void fft_crop_kernel(const double* __restrict__ full, T* __restrict__ dst, Extent e, long long z,
                                long long px, double scale) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= e.ny * e.nx) return;
  const long long y = i / e.nx, x = i - (i / e.nx) * e.nx;
  dst[z * e.ny * e.nx + i] = from_float<T>(static_cast<float>(full[y * px + x] * scale));
}

}  // namespace device

namespace {

void check_fft(cufftResult r, const char* call) {
  if (r != CUFFT_SUCCESS)
    throw CudaError(std::string("convolve (cuFFT): ") + call + " failed with cufftResult " + std::to_string(r),
                    static_cast<int>(r));
}

/// Smallest 2^a 3^b 5^c 7^d ≥ n (cuFFT's fast sizes).
long long fft_size(long long n) {
  for (long long m = n;; ++m) {
    long long v = m;
    for (long long f : {2, 3, 5, 7})
      while (v % f == 0) v /= f;
    if (v == 1) return m;
  }
}

/// D2Z and Z2D plans of one (device, stream, py, px), kept for the process; at most kMaxPlans
/// entries (the oldest destroyed after the device is idle).
struct Plans {
  cufftHandle forward = 0, inverse = 0;
};
constexpr std::size_t kMaxPlans = 8;

Plans plans_for(int device, cudaStream_t stream, long long py, long long px) {
  static std::mutex mutex;
  static std::map<std::tuple<int, cudaStream_t, long long, long long>, Plans> cache;
  const std::lock_guard lock(mutex);
  const auto key = std::make_tuple(device, stream, py, px);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxPlans) {
    WEFT_CUDA_CHECK(cudaDeviceSynchronize());  // no transform may be in flight on a destroyed plan
    for (auto& [k, p] : cache) {
      cufftDestroy(p.forward);
      cufftDestroy(p.inverse);
    }
    cache.clear();
  }
  Plans p;
  check_fft(cufftPlan2d(&p.forward, static_cast<int>(py), static_cast<int>(px), CUFFT_D2Z), "cufftPlan2d(D2Z)");
  check_fft(cufftPlan2d(&p.inverse, static_cast<int>(py), static_cast<int>(px), CUFFT_Z2D), "cufftPlan2d(Z2D)");
  return cache[key] = p;
}

unsigned blocks_for(long long n) { return static_cast<unsigned>((n + 255) / 256); }

}  // namespace

namespace device {

template <class T>
void launch_convolve_fft(const T* src, T* dst, Extent e, const float* d_kernel, int ksize, int border,
                         cudaStream_t stream) {
  const int r = ksize / 2;
  // At least 8 per axis: cuFFT's 2D plans want both extents above 1 (tiny images, size 1).
  const long long py = fft_size(std::max(e.ny + 2 * r, 8LL)), px = fft_size(std::max(e.nx + 2 * r, 8LL));
  const long long spectrum = py * (px / 2 + 1);
  int gpu = 0;
  WEFT_CUDA_CHECK(cudaGetDevice(&gpu));
  const Plans plans = plans_for(gpu, stream, py, px);
  check_fft(cufftSetStream(plans.forward, stream), "cufftSetStream");
  check_fft(cufftSetStream(plans.inverse, stream), "cufftSetStream");
  const Array pad = Array::device(DType::f64, Shape(py, px), gpu, stream);  // also the inverse's output
  const Array g = Array::device(DType::f64, Shape(py, px), gpu, stream);
  const Array image_spectrum = Array::device(DType::f64, Shape(2 * spectrum), gpu, stream);
  const Array kernel_spectrum = Array::device(DType::f64, Shape(2 * spectrum), gpu, stream);
  double* d_pad = pad.data<double>();
  double* d_g = g.data<double>();
  auto* d_image = static_cast<cufftDoubleComplex*>(image_spectrum.raw());
  auto* d_spectrum = static_cast<cufftDoubleComplex*>(kernel_spectrum.raw());

  WEFT_CUDA_CHECK(cudaMemsetAsync(d_g, 0, sizeof(double) * py * px, stream));
  fft_scatter_kernel<<<blocks_for(ksize * ksize), 256, 0, stream>>>(d_kernel, d_g, ksize, py, px);
  check_launch("fft_scatter_kernel", stream);
  check_fft(cufftExecD2Z(plans.forward, d_g, d_spectrum), "cufftExecD2Z(kernel)");
  for (long long z = 0; z < e.slices; ++z) {
    fft_pad_kernel<<<blocks_for(py * px), 256, 0, stream>>>(src, d_pad, e, z, r, py, px, border);
    check_launch("fft_pad_kernel", stream);
    check_fft(cufftExecD2Z(plans.forward, d_pad, d_image), "cufftExecD2Z(image)");
    fft_multiply_kernel<<<blocks_for(spectrum), 256, 0, stream>>>(d_image, d_spectrum, spectrum);
    check_launch("fft_multiply_kernel", stream);
    check_fft(cufftExecZ2D(plans.inverse, d_image, d_pad), "cufftExecZ2D");
    fft_crop_kernel<<<blocks_for(e.ny * e.nx), 256, 0, stream>>>(d_pad, dst, e, z, px, 1.0 / (double(py) * px));
    check_launch("fft_crop_kernel", stream);
  }
}  // the buffers return to the pool ordered on `stream`, after the transforms

template void launch_convolve_fft<std::uint8_t>(const std::uint8_t*, std::uint8_t*, Extent, const float*, int, int,
                                                cudaStream_t);
template void launch_convolve_fft<std::uint16_t>(const std::uint16_t*, std::uint16_t*, Extent, const float*, int,
                                                 int, cudaStream_t);
template void launch_convolve_fft<Half>(const Half*, Half*, Extent, const float*, int, int, cudaStream_t);
template void launch_convolve_fft<float>(const float*, float*, Extent, const float*, int, int, cudaStream_t);

}  // namespace device
}  // namespace weft::filters
