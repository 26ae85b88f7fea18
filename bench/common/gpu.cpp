#include "gpu.hpp"

#include <cstddef>
#include <vector>

#include "result.hpp"
#include "weft/cuda.hpp"

namespace weft::bench {

double device_copy_bandwidth(void* stream_handle) {
  auto stream = static_cast<cudaStream_t>(stream_handle);
  const std::size_t bytes = std::size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&a, bytes));
  WEFT_CUDA_CHECK(cudaMalloc(&b, bytes));
  WEFT_CUDA_CHECK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  WEFT_CUDA_CHECK(cudaEventCreate(&e0));
  WEFT_CUDA_CHECK(cudaEventCreate(&e1));
  WEFT_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < 5; ++r) {
    WEFT_CUDA_CHECK(cudaEventRecord(e0, stream));
    WEFT_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    WEFT_CUDA_CHECK(cudaEventRecord(e1, stream));
    WEFT_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    WEFT_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  WEFT_CUDA_CHECK(cudaFree(a));
  WEFT_CUDA_CHECK(cudaFree(b));
  return 2.0 * static_cast<double>(bytes) / (median(ms) * 1e-3);
}

}  // namespace weft::bench
