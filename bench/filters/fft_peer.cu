#include <cufft.h>

#include <stdexcept>
#include <string>

#include "peers.hpp"

namespace weft::filters::bench {
namespace {

void check_fft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) throw std::runtime_error(std::string("cuFFT: ") + what + " failed (" + std::to_string(r) + ")");
}

__global__ void multiply_kernel(cufftComplex* a, const cufftComplex* b, long long n, float scale) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const cufftComplex x = a[i], y = b[i];
  a[i] = {(x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale};
}

}  // namespace

double fft_convolve_ms(const float* d_in, float* d_out, int ny, int nx, int ksize, int reps, cudaStream_t stream) {
  const long long spectrum = static_cast<long long>(ny) * (nx / 2 + 1);
  cufftComplex* d_image = nullptr;
  cufftComplex* d_kernel = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&d_image, spectrum * sizeof(cufftComplex)));
  WEFT_CUDA_CHECK(cudaMalloc(&d_kernel, spectrum * sizeof(cufftComplex)));
  WEFT_CUDA_CHECK(cudaMemset(d_kernel, 0, spectrum * sizeof(cufftComplex)));  // spectrum content is irrelevant to time
  cufftHandle forward, inverse;
  check_fft(cufftPlan2d(&forward, ny, nx, CUFFT_R2C), "plan R2C");
  check_fft(cufftPlan2d(&inverse, ny, nx, CUFFT_C2R), "plan C2R");
  check_fft(cufftSetStream(forward, stream), "set stream");
  check_fft(cufftSetStream(inverse, stream), "set stream");
  (void)ksize;  // the FFT cost does not depend on the kernel size
  const float scale = 1.0f / (static_cast<float>(ny) * nx);
  const double ms = time_ms(reps, stream, [&] {
    check_fft(cufftExecR2C(forward, const_cast<float*>(d_in), d_image), "R2C");
    multiply_kernel<<<static_cast<unsigned>((spectrum + 255) / 256), 256, 0, stream>>>(d_image, d_kernel, spectrum,
                                                                                       scale);
    check_fft(cufftExecC2R(inverse, d_image, d_out), "C2R");
  });
  cufftDestroy(forward);
  cufftDestroy(inverse);
  WEFT_CUDA_CHECK(cudaFree(d_image));
  WEFT_CUDA_CHECK(cudaFree(d_kernel));
  return ms;
}

}  // namespace weft::filters::bench
