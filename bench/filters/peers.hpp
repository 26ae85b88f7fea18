#pragma once
// Peers of the filters benchmark, launched (not timed) here on device buffers (nx × ny,
// row-major, no padding): the benchmark times them as it times our kernels. NPP peers exist only
// with WEFT_HAVE_NPP.
#include <cstdint>

#include <cuda_runtime.h>
#include <cufft.h>

namespace weft::filters::bench {

/// cuFFT convolution of an f32 image with a precomputed kernel spectrum: R2C, pointwise product,
/// C2R (circular, fp32; the cost of a plain FFT convolution, excluding padding). Plans and
/// buffers are made on the first run and kept for the image size.
class FftConvolver {
 public:
  FftConvolver() = default;
  FftConvolver(const FftConvolver&) = delete;
  FftConvolver& operator=(const FftConvolver&) = delete;
  ~FftConvolver();
  void run(const float* d_in, float* d_out, int ny, int nx, cudaStream_t stream);

 private:
  int ny_ = 0, nx_ = 0;
  cufftHandle forward_ = 0, inverse_ = 0;
  cufftComplex* d_image_ = nullptr;
  cufftComplex* d_kernel_ = nullptr;
};

#if defined(WEFT_HAVE_NPP)
/// nppiFilterMedian_8u_C1R on the interior (ny−2r) × (nx−2r) region (NPP reads the halo); the
/// scratch buffer is cached per size.
void npp_median(const std::uint8_t* d_in, std::uint8_t* d_out, int ny, int nx, int size, cudaStream_t stream);
/// nppiFilter_32f_C1R on the interior region.
void npp_convolve(const float* d_in, float* d_out, int ny, int nx, const float* d_kernel, int ksize,
                  cudaStream_t stream);
#endif

/// Median time (ms) of `reps` runs of `body` on `stream`, after one warm-up run.
template <class Body> double time_ms(int reps, cudaStream_t stream, Body&& body);

}  // namespace weft::filters::bench

#include "timing.hpp"
