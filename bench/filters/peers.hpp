#pragma once
// Peers of the filters benchmark, each returning the median kernel time in ms of `reps` runs on
// device buffers (nx × ny, row-major, no padding). NPP peers exist only with WEFT_HAVE_NPP.
#include <cstdint>

#include <cuda_runtime.h>

namespace weft::filters::bench {

/// cuFFT convolution of an f32 image with a precomputed kernel spectrum: R2C, pointwise product,
/// C2R (circular; the cost of the large-kernel FFT path, excluding padding).
double fft_convolve_ms(const float* d_in, float* d_out, int ny, int nx, int ksize, int reps, cudaStream_t stream);

#if defined(WEFT_HAVE_NPP)
/// nppiFilterMedian_8u_C1R on the interior (ny−2r) × (nx−2r) region (NPP reads the halo).
double npp_median_ms(const std::uint8_t* d_in, std::uint8_t* d_out, int ny, int nx, int size, int reps,
                     cudaStream_t stream);
/// nppiFilter_32f_C1R on the interior region.
double npp_convolve_ms(const float* d_in, float* d_out, int ny, int nx, const float* d_kernel, int ksize, int reps,
                       cudaStream_t stream);
#endif

/// Median time (ms) of `reps` runs of `body` on `stream`, after one warm-up run.
template <class Body> double time_ms(int reps, cudaStream_t stream, Body&& body);

}  // namespace weft::filters::bench

#include "timing.hpp"
