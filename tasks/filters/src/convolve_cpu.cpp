// CPU convolution (a correlation, as documented): inputs converted to float one row at a time,
// products accumulated in fp32 like the CUDA kernels; 3D arrays are filtered slice by slice.
#include <cstdint>
#include <vector>

#include "detail/border_table.hpp"
#include "detail/element.hpp"
#include "detail/parallel.hpp"
#include "weft/tasks/filters/filters.hpp"

namespace weft::filters {
namespace {

struct Plane {
  std::int64_t slices, ny, nx;
};

Plane plane_of(const Shape& s) {
  if (s.ndim() == 3) return {s[0], s[1], s[2]};
  return {1, s[0], s[1]};
}

/// Float copy of slice-major image with `rx` columns of border on each side (zero border: 0).
template <class T>
std::vector<float> padded_rows(const T* src, const Plane& p, int rx, int border) {
  const std::int64_t w = p.nx + 2 * rx;
  std::vector<float> out(static_cast<std::size_t>(p.slices * p.ny * w));
  const detail::BorderTable tx(p.nx, rx, border);
  detail::parallel_for(p.slices * p.ny, [&](std::int64_t begin, std::int64_t end, int) {
    for (std::int64_t row = begin; row < end; ++row)
      for (std::int64_t x = -rx; x < p.nx + rx; ++x) {
        const std::int64_t xi = tx(x);
        out[row * w + x + rx] = xi < 0 ? 0.0f : device::to_float(src[row * p.nx + xi]);
      }
  });
  return out;
}

template <class T> void convolve_typed(const Array& in, Array& out, const std::vector<float>& k, int ksize, int border) {
  const int r = ksize / 2;
  const Plane p = plane_of(in.shape());
  const std::int64_t w = p.nx + 2 * r;
  const std::vector<float> pad = padded_rows(in.data<T>(), p, r, border);
  const detail::BorderTable ty(p.ny, r, border);
  T* dst = out.data<T>();
  detail::parallel_for(p.slices * p.ny, [&](std::int64_t begin, std::int64_t end, int) {
    // Two-level fp32 sums (one partial per kernel row, as the CUDA kernel does): the rounding
    // error grows with 2·ksize rather than ksize² terms, which keeps 63×63 within 1e-6.
    std::vector<float> acc(static_cast<std::size_t>(p.nx));
    std::vector<float> partial(static_cast<std::size_t>(p.nx));
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t z = row / p.ny;
      const std::int64_t y = row % p.ny;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int i = 0; i < ksize; ++i) {
        const std::int64_t yi = ty(y + i - r);
        if (yi < 0) continue;
        const float* line = pad.data() + (z * p.ny + yi) * w;
        std::fill(partial.begin(), partial.end(), 0.0f);
        for (int j = 0; j < ksize; ++j) {
          const float c = k[static_cast<std::size_t>(i) * ksize + j];
          for (std::int64_t x = 0; x < p.nx; ++x) partial[x] += c * line[x + j];
        }
        for (std::int64_t x = 0; x < p.nx; ++x) acc[x] += partial[x];
      }
      for (std::int64_t x = 0; x < p.nx; ++x) dst[row * p.nx + x] = device::from_float<T>(acc[x]);
    }
  });
}

template <class T>
void separable_typed(const Array& in, Array& out, const std::vector<float>& row_k, const std::vector<float>& col_k,
                     int border) {
  const int ksize = static_cast<int>(row_k.size());
  const int r = ksize / 2;
  const Plane p = plane_of(in.shape());
  const std::int64_t w = p.nx + 2 * r;
  const std::vector<float> pad = padded_rows(in.data<T>(), p, r, border);
  std::vector<float> rows(static_cast<std::size_t>(p.slices * p.ny * p.nx));
  detail::parallel_for(p.slices * p.ny, [&](std::int64_t begin, std::int64_t end, int) {
    for (std::int64_t row = begin; row < end; ++row)
      for (std::int64_t x = 0; x < p.nx; ++x) {
        float acc = 0.0f;
        for (int j = 0; j < ksize; ++j) acc += row_k[j] * pad[row * w + x + j];
        rows[row * p.nx + x] = acc;
      }
  });
  const detail::BorderTable ty(p.ny, r, border);
  T* dst = out.data<T>();
  detail::parallel_for(p.slices * p.ny, [&](std::int64_t begin, std::int64_t end, int) {
    std::vector<float> acc(static_cast<std::size_t>(p.nx));
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t z = row / p.ny;
      const std::int64_t y = row % p.ny;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int i = 0; i < ksize; ++i) {
        const std::int64_t yi = ty(y + i - r);
        if (yi < 0) continue;
        const float* line = rows.data() + (z * p.ny + yi) * p.nx;
        for (std::int64_t x = 0; x < p.nx; ++x) acc[x] += col_k[i] * line[x];
      }
      for (std::int64_t x = 0; x < p.nx; ++x) dst[row * p.nx + x] = device::from_float<T>(acc[x]);
    }
  });
}

template <class F> void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::u8: f(std::uint8_t{}); break;
    case DType::u16: f(std::uint16_t{}); break;
    case DType::f16: f(Half{}); break;
    default: f(float{}); break;
  }
}

}  // namespace

Array convolve(const Array& host_in, const std::vector<float>& kernel, int ksize, Border b) {
  check_convolve_args(host_in, kernel.size(), ksize, false);
  Array out = Array::host(host_in.dtype(), host_in.shape());
  if (host_in.size() == 0) return out;
  dispatch(host_in.dtype(), [&](auto tag) {
    convolve_typed<decltype(tag)>(host_in, out, kernel, ksize, static_cast<int>(b));
  });
  return out;
}

Array convolve_separable(const Array& host_in, const std::vector<float>& row, const std::vector<float>& column,
                         Border b) {
  check_convolve_args(host_in, column.size(), static_cast<int>(row.size()), true);
  Array out = Array::host(host_in.dtype(), host_in.shape());
  if (host_in.size() == 0) return out;
  dispatch(host_in.dtype(), [&](auto tag) {
    separable_typed<decltype(tag)>(host_in, out, row, column, static_cast<int>(b));
  });
  return out;
}

}  // namespace weft::filters
