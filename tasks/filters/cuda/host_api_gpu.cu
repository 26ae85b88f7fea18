// Array-level CUDA entry points (weft/tasks/filters/cuda.hpp): checks, allocations from the
// GPU's pool on the stream, weights uploaded next to the data, then the raw launchers.
#include <cstdint>

#include "weft/cuda.hpp"
#include "weft/tasks/filters/cuda.hpp"

namespace weft::filters::gpu {
namespace {

struct Dims {
  long long slices, ny, nx;
};
Dims dims_of(const Shape& s) {
  if (s.ndim() == 3) return {s[0], s[1], s[2]};
  return {1, s[0], s[1]};
}

int device_of(const Array& a) {
  if (a.memory().is_host()) throw ConfigError("filters::gpu: the input array is on the host, not on a GPU");
  return a.memory().device_index;
}

/// Weights on the device (the copy from pageable memory is staged before cudaMemcpyAsync returns).
Array upload(const std::vector<float>& w, int device, cudaStream_t stream) {
  Array d = Array::device(DType::f32, Shape(static_cast<std::int64_t>(w.size())), device, stream);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(d.raw(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  return d;
}

__global__ void subsample_kernel(const unsigned char* src, unsigned char* dst, long long ny, long long nx,
                                 long long oy, long long ox, int elem) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= oy * ox) return;
  const long long y = i / ox, x = i - (i / ox) * ox;
  const unsigned char* s = src + ((2 * y) * nx + 2 * x) * elem;
  for (int b = 0; b < elem; ++b) dst[i * elem + b] = s[b];
}

}  // namespace

Array median(const Array& d_in, int size, Border b, cudaStream_t stream) {
  check_median_args(d_in, size);
  const int device = device_of(d_in);
  Array out = Array::device(d_in.dtype(), d_in.shape(), device, stream);
  const Dims d = dims_of(d_in.shape());
  launch_median(d_in.raw(), out.raw(), d_in.dtype(), d.slices, d.ny, d.nx, size, d_in.shape().ndim() == 3, b, stream);
  return out;
}

Array convolve(const Array& d_in, const std::vector<float>& kernel, int ksize, Border b, cudaStream_t stream) {
  check_convolve_args(d_in, kernel.size(), ksize, false);
  const int device = device_of(d_in);
  Array out = Array::device(d_in.dtype(), d_in.shape(), device, stream);
  const Array w = upload(kernel, device, stream);
  const Dims d = dims_of(d_in.shape());
  launch_convolve(d_in.raw(), out.raw(), d_in.dtype(), d.slices, d.ny, d.nx, kernel.data(), w.data<float>(), ksize, b,
                  stream);
  return out;  // `w` returns to the pool ordered on `stream`, after the kernel
}

Array convolve_separable(const Array& d_in, const std::vector<float>& row, const std::vector<float>& column,
                         Border b, cudaStream_t stream) {
  const int ksize = static_cast<int>(row.size());
  check_convolve_args(d_in, column.size(), ksize, true);
  const int device = device_of(d_in);
  Array out = Array::device(d_in.dtype(), d_in.shape(), device, stream);
  const bool two_pass = separable_needs_scratch(ksize);
  Array scratch;  // only for the two-pass kernels
  if (two_pass) scratch = Array::device(DType::f32, d_in.shape(), device, stream);
  const Array w_row = upload(row, device, stream);
  const Array w_col = upload(column, device, stream);
  const Dims d = dims_of(d_in.shape());
  launch_convolve_separable(d_in.raw(), out.raw(), two_pass ? scratch.data<float>() : nullptr, d_in.dtype(),
                            d.slices, d.ny, d.nx, row.data(), column.data(), w_row.data<float>(), w_col.data<float>(),
                            ksize, b, stream);
  return out;
}

Array gaussian_blur(const Array& d_in, double sigma, Border b, cudaStream_t stream, int size) {
  const std::vector<float> k = gaussian_kernel(sigma, size);
  return convolve_separable(d_in, k, k, b, stream);
}

std::vector<Array> gaussian_pyramid(const Array& d_in, int levels, double sigma, Border b, cudaStream_t stream) {
  if (d_in.shape().ndim() != 2) throw ConfigError("gaussian_pyramid: expected a 2D array, got " + d_in.shape().str());
  if (levels < 1) throw ConfigError("--levels: expected at least 1, got " + std::to_string(levels));
  const int device = device_of(d_in);
  std::vector<Array> out{d_in};
  while (static_cast<int>(out.size()) < levels) {
    const Array blurred = gaussian_blur(out.back(), sigma, b, stream);
    const long long ny = blurred.shape()[0], nx = blurred.shape()[1];
    const long long oy = (ny + 1) / 2, ox = (nx + 1) / 2;
    Array next = Array::device(blurred.dtype(), Shape(oy, ox), device, stream);
    const int elem = static_cast<int>(dtype_size(blurred.dtype()));
    subsample_kernel<<<static_cast<unsigned>((oy * ox + 255) / 256), 256, 0, stream>>>(
        static_cast<const unsigned char*>(blurred.raw()), static_cast<unsigned char*>(next.raw()), ny, nx, oy, ox,
        elem);
    check_launch("subsample_kernel", stream);
    out.push_back(std::move(next));
  }
  return out;
}

}  // namespace weft::filters::gpu
