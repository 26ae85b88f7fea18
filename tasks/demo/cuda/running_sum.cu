// CUDA side of RunningSum: the per-token kernel and the state's copies to and from the host.
#include "weft/cuda.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/tasks/demo/running_sum.hpp"

namespace weft::tasks {
namespace {

__global__ void running_sum_kernel(const float* __restrict__ x, float* __restrict__ sum, float* __restrict__ y,
                                   std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = sum[i] = __fadd_rn(sum[i], x[i]);  // no contraction: the CPU path adds the same way
}

unsigned grid_for(std::int64_t n) {
  std::int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace

namespace cuda {

void running_sum(const float* x, float* sum, float* y, std::int64_t n, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  running_sum_kernel<<<grid_for(n), 256, 0, s>>>(x, sum, y, n);
  check_launch("running_sum_kernel", s);
}

void state_to_host(void* host, const void* device, std::size_t bytes) {
  if (!bytes) return;
  WEFT_CUDA_CHECK(cudaDeviceSynchronize());  // the task's stream (not ordered with this call) is done
  WEFT_CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
}

void state_to_device(void* device, const void* host, std::size_t bytes) {
  if (!bytes) return;
  WEFT_CUDA_CHECK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  // From pageable memory the call may return before the DMA landed; the task's stream does not
  // order after the legacy stream, so wait here (once per migration, not per token).
  WEFT_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace cuda
}  // namespace weft::tasks
