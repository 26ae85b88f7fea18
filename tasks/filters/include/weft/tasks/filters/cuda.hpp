#pragma once
/// CUDA filters on device arrays, enqueued on `stream` (no synchronisation). Same semantics and
/// argument checks as the host functions in filters.hpp; results are device arrays of the input's
/// GPU, allocated from its pool on `stream`. Only usable when WEFT_HAVE_CUDA.
#if !defined(WEFT_HAVE_CUDA)
#error "weft/tasks/filters/cuda.hpp needs WEFT_HAVE_CUDA (link weft_tasks_filters built with CUDA)"
#endif
#include <string>
#include <string_view>
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
/// floats) live on the device. `method` empty: the tuned policy's choice; else one of the names
/// listed by the *_methods functions (benchmarks and tests force each; same results).
void launch_median(const void* d_in, void* d_out, DType type, long long slices, long long ny, long long nx,
                   int size, bool volume, Border b, cudaStream_t stream, std::string_view method = {});
/// Median kernels that exist for this element type and size (e.g. "tile", "dpx4": rows per thread).
[[nodiscard]] std::vector<std::string> median_methods(DType type, int size, bool volume);
/// Convolution weights are given twice: `h_kernel` on the host (passed by value to the streaming
/// kernels) and the same values at `d_kernel` on the device (read by the tile kernels).
void launch_convolve(const void* d_in, void* d_out, DType type, long long slices, long long ny, long long nx,
                     const float* h_kernel, const float* d_kernel, int ksize, Border b, cudaStream_t stream,
                     std::string_view method = {});
/// `d_scratch` may be null when separable_needs_scratch(ksize, slices·ny·nx) is false and `method` is not "two_pass".
void launch_convolve_separable(const void* d_in, void* d_out, float* d_scratch, DType type, long long slices,
                               long long ny, long long nx, const float* h_row, const float* h_column,
                               const float* d_row, const float* d_column, int ksize, Border b, cudaStream_t stream,
                               std::string_view method = {});
/// Convolution kernels that exist for this size and element type ("tile", "blocked", "stream8",
/// "tensor1/2/4" for u8 and f16: strips per warp; "tensor" picks them by size, ...).
[[nodiscard]] std::vector<std::string> convolve_methods(int ksize, DType type = DType::f32);
/// Separable kernels that exist for this size ("two_pass", "fused8", ...).
[[nodiscard]] std::vector<std::string> separable_methods(int ksize);
/// Whether the policy's separable method for this size and number of pixels uses the fp32 scratch image.
[[nodiscard]] bool separable_needs_scratch(int ksize, long long pixels);

}  // namespace weft::filters::gpu
