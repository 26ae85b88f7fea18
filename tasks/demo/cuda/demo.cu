// CUDA implementations of the demo tasks (layers: launcher → kernel → per-element math).
#include "weft/cuda.hpp"
#include "weft/tasks/demo/demo.hpp"

namespace weft::tasks {
namespace {

__global__ void affine_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n, float a, float b) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = fmaf(a, x[i], b);
}

__global__ void add_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    z[i] = x[i] + y[i];
}

__global__ void empty_kernel() {}

unsigned grid_for(std::int64_t n) {
  std::int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace

namespace cuda {

void affine(const float* x, float* y, std::int64_t n, float a, float b, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  affine_kernel<<<grid_for(n), 256, 0, s>>>(x, y, n, a, b);
  check_launch("affine_kernel", s);
}

void add(const float* x, const float* y, float* z, std::int64_t n, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  add_kernel<<<grid_for(n), 256, 0, s>>>(x, y, z, n);
  check_launch("add_kernel", s);
}

void empty(void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  empty_kernel<<<1, 32, 0, s>>>();
  check_launch("empty_kernel", s);
}

}  // namespace cuda
}  // namespace weft::tasks
