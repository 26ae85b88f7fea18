#include <algorithm>
#include <cmath>
#include <string>

#include "detail/element.hpp"
#include "weft/tasks/filters/filters.hpp"
#include "weft/util/error.hpp"

namespace weft::filters {

std::vector<float> gaussian_kernel(double sigma, int size) {
  if (!(sigma > 0.0) || !std::isfinite(sigma))
    throw ConfigError("--sigma: expected a positive number, got " + std::to_string(sigma));
  if (size == 0) size = std::min(63, 2 * static_cast<int>(std::ceil(3.0 * sigma)) + 1);
  if (size < 1 || size > 63 || size % 2 == 0)
    throw ConfigError("--size: Gaussian sizes are odd, 1 to 63 (0: automatic); got " + std::to_string(size));
  const int r = size / 2;
  std::vector<double> w(static_cast<std::size_t>(size));
  double sum = 0.0;
  for (int i = -r; i <= r; ++i) sum += w[i + r] = std::exp(-0.5 * i * i / (sigma * sigma));
  std::vector<float> k(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) k[i] = static_cast<float>(w[i] / sum);
  return k;
}

Array gaussian_blur(const Array& host_in, double sigma, Border b, int size) {
  const std::vector<float> k = gaussian_kernel(sigma, size);
  return convolve_separable(host_in, k, k, b);
}

namespace {
template <class T> Array subsample(const Array& in) {
  const std::int64_t ny = in.shape()[0], nx = in.shape()[1];
  const std::int64_t oy = (ny + 1) / 2, ox = (nx + 1) / 2;
  Array out = Array::host(in.dtype(), Shape(oy, ox));
  const T* s = in.data<T>();
  T* d = out.data<T>();
  for (std::int64_t y = 0; y < oy; ++y)
    for (std::int64_t x = 0; x < ox; ++x) d[y * ox + x] = s[2 * y * nx + 2 * x];
  return out;
}
}  // namespace

std::vector<Array> gaussian_pyramid(const Array& host_in, int levels, double sigma, Border b) {
  if (host_in.shape().ndim() != 2) throw ConfigError("gaussian_pyramid: expected a 2D array, got " + host_in.shape().str());
  if (levels < 1) throw ConfigError("--levels: expected at least 1, got " + std::to_string(levels));
  std::vector<Array> out{host_in};
  while (static_cast<int>(out.size()) < levels) {
    const Array blurred = gaussian_blur(out.back(), sigma, b);
    switch (blurred.dtype()) {
      case DType::u8: out.push_back(subsample<std::uint8_t>(blurred)); break;
      case DType::u16: out.push_back(subsample<std::uint16_t>(blurred)); break;
      case DType::f16: out.push_back(subsample<Half>(blurred)); break;
      default: out.push_back(subsample<float>(blurred)); break;
    }
  }
  return out;
}

}  // namespace weft::filters
