// NPP peers (compiled only when the toolkit has NPP: WEFT_HAVE_NPP).
#include <nppi_filtering_functions.h>

#include <stdexcept>
#include <string>

#include "peers.hpp"

namespace weft::filters::bench {
namespace {

/// The stream context (device properties read once: this runs inside the timed loops).
NppStreamContext context(cudaStream_t stream) {
  NppStreamContext c{};
  static int device = -1;
  static cudaDeviceProp p{};
  if (device < 0) {
    WEFT_CUDA_CHECK(cudaGetDevice(&device));
    WEFT_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  }
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

void npp_median(const std::uint8_t* d_in, std::uint8_t* d_out, int ny, int nx, int size, cudaStream_t stream) {
  struct Scratch {  // grown on demand, kept for the benchmark's lifetime
    Npp8u* buffer = nullptr;
    Npp32u bytes = 0;
    ~Scratch() { cudaFree(buffer); }
  };
  static Scratch scratch;
  const NppStreamContext ctx = context(stream);
  const int r = size / 2;
  const NppiSize roi{nx - 2 * r, ny - 2 * r};
  const NppiSize mask{size, size};
  const NppiPoint anchor{r, r};
  Npp32u bytes = 0;
  check_npp(nppiFilterMedianGetBufferSize_8u_C1R_Ctx(roi, mask, &bytes, ctx), "median buffer size");
  if (bytes > scratch.bytes) {
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
    WEFT_CUDA_CHECK(cudaFree(scratch.buffer));
    scratch.buffer = nullptr;
    WEFT_CUDA_CHECK(cudaMalloc(&scratch.buffer, bytes));
    scratch.bytes = bytes;
  }
  const long long offset = static_cast<long long>(r) * nx + r;
  check_npp(nppiFilterMedian_8u_C1R_Ctx(d_in + offset, nx, d_out + offset, nx, roi, mask, anchor, scratch.buffer, ctx),
            "nppiFilterMedian_8u_C1R");
}

void npp_convolve(const float* d_in, float* d_out, int ny, int nx, const float* d_kernel, int ksize,
                  cudaStream_t stream) {
  const NppStreamContext ctx = context(stream);
  const int r = ksize / 2;
  const NppiSize roi{nx - 2 * r, ny - 2 * r};
  const long long offset = static_cast<long long>(r) * nx + r;
  const int step = nx * static_cast<int>(sizeof(float));
  check_npp(nppiFilter_32f_C1R_Ctx(d_in + offset, step, d_out + offset, step, roi, d_kernel, NppiSize{ksize, ksize},
                                   NppiPoint{r, r}, ctx),
            "nppiFilter_32f_C1R");
}

}  // namespace weft::filters::bench
