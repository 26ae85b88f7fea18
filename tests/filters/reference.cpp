#include "reference.hpp"

#include <algorithm>
#include <cmath>

namespace weft::filters::test {
namespace {

/// Position p of an axis of n elements seen through border b; false: outside with a zero border.
bool fold(std::int64_t& p, std::int64_t n, Border b) {
  if (p >= 0 && p < n) return true;
  if (b == Border::zero) return false;
  if (b == Border::clamp) {
    p = std::clamp<std::int64_t>(p, 0, n - 1);
    return true;
  }
  if (n == 1) {
    p = 0;
    return true;
  }
  while (p < 0 || p >= n) {  // reflect about the edge pixels until inside
    if (p < 0) p = -p;
    if (p >= n) p = 2 * (n - 1) - p;
  }
  return true;
}

struct Dims3 {
  std::int64_t z, y, x;
};
Dims3 dims(const Shape& s) { return s.ndim() == 3 ? Dims3{s[0], s[1], s[2]} : Dims3{1, s[0], s[1]}; }

}  // namespace

double get(const Array& a, std::int64_t i) {
  switch (a.dtype()) {
    case DType::u8: return a.data<std::uint8_t>()[i];
    case DType::u16: return a.data<std::uint16_t>()[i];
    case DType::f16: return half_to_float(a.data<Half>()[i]);
    case DType::f32: return a.data<float>()[i];
    default: return 0;
  }
}

Array random_array(DType type, Shape shape, double range, std::uint32_t seed) {
  Array a = Array::host(type, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, range);
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double v = u(rng);
    switch (type) {
      case DType::u8: a.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v); break;
      case DType::u16: a.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(v); break;
      case DType::f16: a.data<Half>()[i] = float_to_half(static_cast<float>(v)); break;
      default: a.data<float>()[i] = static_cast<float>(v); break;
    }
  }
  return a;
}

std::vector<double> median_reference(const Array& in, int size, Border b) {
  const Dims3 d = dims(in.shape());
  const bool volume = in.shape().ndim() == 3;
  const int r = size / 2;
  std::vector<double> out(static_cast<std::size_t>(in.size()));
  std::vector<double> window;
  for (std::int64_t z = 0; z < d.z; ++z)
    for (std::int64_t y = 0; y < d.y; ++y)
      for (std::int64_t x = 0; x < d.x; ++x) {
        window.clear();
        for (int dz = volume ? -r : 0; dz <= (volume ? r : 0); ++dz)
          for (int dy = -r; dy <= r; ++dy)
            for (int dx = -r; dx <= r; ++dx) {
              std::int64_t zz = z + dz, yy = y + dy, xx = x + dx;
              const bool inside = fold(zz, d.z, b) && fold(yy, d.y, b) && fold(xx, d.x, b);
              window.push_back(inside ? get(in, (zz * d.y + yy) * d.x + xx) : 0.0);
            }
        std::sort(window.begin(), window.end());
        out[(z * d.y + y) * d.x + x] = window[window.size() / 2];
      }
  return out;
}

std::vector<double> convolve_reference(const Array& in, const std::vector<double>& kernel, int ksize, Border b,
                                       std::vector<double>* l1) {
  const Dims3 d = dims(in.shape());
  const int r = ksize / 2;
  std::vector<double> out(static_cast<std::size_t>(in.size()));
  if (l1) l1->assign(out.size(), 0.0);
  for (std::int64_t z = 0; z < d.z; ++z)
    for (std::int64_t y = 0; y < d.y; ++y)
      for (std::int64_t x = 0; x < d.x; ++x) {
        double acc = 0, abs_acc = 0;
        for (int i = 0; i < ksize; ++i)
          for (int j = 0; j < ksize; ++j) {
            std::int64_t yy = y + i - r, xx = x + j - r;
            if (!fold(yy, d.y, b) || !fold(xx, d.x, b)) continue;
            const double t = kernel[static_cast<std::size_t>(i) * ksize + j] * get(in, (z * d.y + yy) * d.x + xx);
            acc += t;
            abs_acc += std::abs(t);
          }
        out[(z * d.y + y) * d.x + x] = acc;
        if (l1) (*l1)[(z * d.y + y) * d.x + x] = abs_acc;
      }
  return out;
}

}  // namespace weft::filters::test
