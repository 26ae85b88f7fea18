#pragma once
/// CUDA filters on device arrays, enqueued on `stream` (no synchronisation). Same semantics and
/// argument checks as the host functions in filters.hpp; results are device arrays of the input's
/// GPU, allocated from its pool on `stream`. Only usable when WEFT_HAVE_CUDA.
#if !defined(WEFT_HAVE_CUDA)
#error "weft/tasks/filters/cuda.hpp needs WEFT_HAVE_CUDA (link weft_tasks_filters built with CUDA)"
#endif
#include <vector>

#include <cuda_runtime.h>

#include "weft/tasks/filters/filters.hpp"

namespace weft::filters::gpu {

[[nodiscard]] Array median(const Array& d_in, int size, Border b, cudaStream_t stream);
[[nodiscard]] Array convolve(const Array& d_in, const std::vector<float>& kernel, int ksize, Border b,
                             cudaStream_t stream);
[[nodiscard]] Array convolve_separable(const Array& d_in, const std::vector<float>& row,
                                       const std::vector<float>& column, Border b, cudaStream_t stream);
[[nodiscard]] Array gaussian_blur(const Array& d_in, double sigma, Border b, cudaStream_t stream, int size = 0);
[[nodiscard]] std::vector<Array> gaussian_pyramid(const Array& d_in, int levels, double sigma, Border b,
                                                  cudaStream_t stream);

/// Raw launchers for benchmarks: `d_in`/`d_out` hold slices×ny×nx elements of `type`; weights
/// (`d_kernel`, ksize² floats; or `d_row`/`d_column`, ksize floats) and `d_scratch` (slices×ny×nx
/// floats) live on the device.
void launch_median(const void* d_in, void* d_out, DType type, long long slices, long long ny, long long nx,
                   int size, bool volume, Border b, cudaStream_t stream);
void launch_convolve(const void* d_in, void* d_out, DType type, long long slices, long long ny, long long nx,
                     const float* d_kernel, int ksize, Border b, cudaStream_t stream);
void launch_convolve_separable(const void* d_in, void* d_out, float* d_scratch, DType type, long long slices,
                               long long ny, long long nx, const float* d_row, const float* d_column, int ksize,
                               Border b, cudaStream_t stream);

}  // namespace weft::filters::gpu
