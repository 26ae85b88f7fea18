// NPP peers (compiled only when the toolkit has NPP: WEFT_HAVE_NPP).
#include <nppi_filtering_functions.h>

#include <stdexcept>
#include <string>

#include "peers.hpp"

namespace weft::filters::bench {
namespace {

NppStreamContext context(cudaStream_t stream) {
  NppStreamContext c{};
  int device = 0;
  WEFT_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  WEFT_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  c.hStream = stream;
  c.nCudaDeviceId = device;
  c.nMultiProcessorCount = p.multiProcessorCount;
  c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
  c.nSharedMemPerBlock = p.sharedMemPerBlock;
  c.nCudaDevAttrComputeCapabilityMajor = p.major;
  c.nCudaDevAttrComputeCapabilityMinor = p.minor;
  WEFT_CUDA_CHECK(cudaStreamGetFlags(stream, &c.nStreamFlags));
  return c;
}

void check_npp(NppStatus s, const char* what) {
  if (s != NPP_SUCCESS) throw std::runtime_error(std::string("NPP: ") + what + " failed (" + std::to_string(s) + ")");
}

}  // namespace

double npp_median_ms(const std::uint8_t* d_in, std::uint8_t* d_out, int ny, int nx, int size, int reps,
                     cudaStream_t stream) {
  const NppStreamContext ctx = context(stream);
  const int r = size / 2;
  const NppiSize roi{nx - 2 * r, ny - 2 * r};
  const NppiSize mask{size, size};
  const NppiPoint anchor{r, r};
  Npp32u bytes = 0;
  check_npp(nppiFilterMedianGetBufferSize_8u_C1R_Ctx(roi, mask, &bytes, ctx), "median buffer size");
  Npp8u* buffer = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&buffer, bytes));
  const long long offset = static_cast<long long>(r) * nx + r;
  const double ms = time_ms(reps, stream, [&] {
    check_npp(nppiFilterMedian_8u_C1R_Ctx(d_in + offset, nx, d_out + offset, nx, roi, mask, anchor, buffer, ctx),
              "nppiFilterMedian_8u_C1R");
  });
  WEFT_CUDA_CHECK(cudaFree(buffer));
  return ms;
}

double npp_convolve_ms(const float* d_in, float* d_out, int ny, int nx, const float* d_kernel, int ksize, int reps,
                       cudaStream_t stream) {
  const NppStreamContext ctx = context(stream);
  const int r = ksize / 2;
  const NppiSize roi{nx - 2 * r, ny - 2 * r};
  const long long offset = static_cast<long long>(r) * nx + r;
  const int step = nx * static_cast<int>(sizeof(float));
  return time_ms(reps, stream, [&] {
    check_npp(nppiFilter_32f_C1R_Ctx(d_in + offset, step, d_out + offset, step, roi, d_kernel, NppiSize{ksize, ksize},
                                     NppiPoint{r, r}, ctx),
              "nppiFilter_32f_C1R");
  });
}

}  // namespace weft::filters::bench
