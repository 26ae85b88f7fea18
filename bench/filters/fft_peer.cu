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

FftConvolver::~FftConvolver() {
  if (forward_) cufftDestroy(forward_);
  if (inverse_) cufftDestroy(inverse_);
  cudaFree(d_image_);
  cudaFree(d_kernel_);
}

void FftConvolver::run(const float* d_in, float* d_out, int ny, int nx, cudaStream_t stream) {
  const long long spectrum = static_cast<long long>(ny) * (nx / 2 + 1);
  if (ny != ny_ || nx != nx_) {
    if (ny_ != 0) throw std::runtime_error("FftConvolver: one image size per object");
    WEFT_CUDA_CHECK(cudaMalloc(&d_image_, spectrum * sizeof(cufftComplex)));
    WEFT_CUDA_CHECK(cudaMalloc(&d_kernel_, spectrum * sizeof(cufftComplex)));
    WEFT_CUDA_CHECK(cudaMemset(d_kernel_, 0, spectrum * sizeof(cufftComplex)));  // content irrelevant to time
    check_fft(cufftPlan2d(&forward_, ny, nx, CUFFT_R2C), "plan R2C");
    check_fft(cufftPlan2d(&inverse_, ny, nx, CUFFT_C2R), "plan C2R");
    ny_ = ny, nx_ = nx;
  }
  check_fft(cufftSetStream(forward_, stream), "set stream");
  check_fft(cufftSetStream(inverse_, stream), "set stream");
  const float scale = 1.0f / (static_cast<float>(ny) * nx);
  check_fft(cufftExecR2C(forward_, const_cast<float*>(d_in), d_image_), "R2C");
  multiply_kernel<<<static_cast<unsigned>((spectrum + 255) / 256), 256, 0, stream>>>(d_image_, d_kernel_, spectrum,
                                                                                     scale);
  WEFT_CUDA_CHECK(cudaGetLastError());
  check_fft(cufftExecC2R(inverse_, d_image_, d_out), "C2R");
}

}  // namespace weft::filters::bench
