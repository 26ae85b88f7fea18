// CPU median: gathers each window (border tables per axis) and selects with the same forgetful
// selection the CUDA kernels use; rows are split across cores.
#include <cstdint>

#include "detail/border_table.hpp"
#include "detail/element.hpp"
#include "detail/parallel.hpp"
#include "weft/tasks/filters/filters.hpp"

namespace weft::filters {
namespace {

template <class T, int K, int D>  // D = 2 or 3 window dimensions
void median_typed(const Array& in, Array& out, int border) {
  constexpr int r = K / 2;
  constexpr int kN = D == 2 ? K * K : K * K * K;
  const Shape& s = in.shape();
  const std::int64_t nz = s.ndim() == 3 ? s[0] : 1;
  const std::int64_t ny = s.ndim() == 3 ? s[1] : s[0];
  const std::int64_t nx = s.ndim() == 3 ? s[2] : s[1];
  const detail::BorderTable tz(nz, D == 3 ? r : 0, border);
  const detail::BorderTable ty(ny, r, border);
  const detail::BorderTable tx(nx, r, border);
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  detail::parallel_for(nz * ny, [&](std::int64_t begin, std::int64_t end, int) {
    T v[kN];
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t z = row / ny;
      const std::int64_t y = row % ny;
      for (std::int64_t x = 0; x < nx; ++x) {
        int n = 0;
        for (int dz = (D == 3 ? -r : 0); dz <= (D == 3 ? r : 0); ++dz) {
          const std::int64_t zi = tz(z + dz);
          for (int dy = -r; dy <= r; ++dy) {
            const std::int64_t yi = ty(y + dy);
            const bool outside = zi < 0 || yi < 0;
            const T* line = outside ? nullptr : src + (zi * ny + yi) * nx;
            for (int dx = -r; dx <= r; ++dx) {
              const std::int64_t xi = tx(x + dx);
              v[n++] = (outside || xi < 0) ? T(0) : line[xi];
            }
          }
        }
        dst[(z * ny + y) * nx + x] = device::forgetful_median(v);
      }
    }
  });
}

template <class T> void median_sized(const Array& in, Array& out, int size, int border) {
  if (in.shape().ndim() == 2) {
    switch (size) {
      case 3: return median_typed<T, 3, 2>(in, out, border);
      case 5: return median_typed<T, 5, 2>(in, out, border);
      case 7: return median_typed<T, 7, 2>(in, out, border);
      default: return median_typed<T, 9, 2>(in, out, border);
    }
  }
  if (size == 3) return median_typed<T, 3, 3>(in, out, border);
  return median_typed<T, 5, 3>(in, out, border);
}

}  // namespace

Array median(const Array& host_in, int size, Border b) {
  check_median_args(host_in, size);
  Array out = Array::host(host_in.dtype(), host_in.shape());
  if (host_in.size() == 0) return out;
  const int border = static_cast<int>(b);
  switch (host_in.dtype()) {
    case DType::u8: median_sized<std::uint8_t>(host_in, out, size, border); break;
    case DType::u16: median_sized<std::uint16_t>(host_in, out, size, border); break;
    default: median_sized<float>(host_in, out, size, border); break;
  }
  return out;
}

}  // namespace weft::filters
