#pragma once
// Partition tests (CPU, GPU, multi-rank): a volume source, a smoothing stencil whose radius along
// the slowest axis equals the halo width, and its single-array reference. The per-element math is
// shared by the CPU loop, the CUDA kernel and the reference: only additions then one product, so
// every device rounds alike and slabs must match the whole array bit for bit.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "weft/weft.hpp"

#if defined(__CUDACC__)
#define WEFT_TEST_HD __host__ __device__
#else
#define WEFT_TEST_HD
#endif

namespace weft::test {

WEFT_TEST_HD inline std::int64_t clamp_index(std::int64_t i, std::int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/// New value at global row z, (y, x): the mean of the 2r+1 rows around z and of the four
/// neighbours in y and x, indices clamped to the whole array (`rows` rows of y_size x x_size).
/// `u` is the slab array, whose local row 0 is global row `row0`.
WEFT_TEST_HD inline float smooth_at(const float* u, std::int64_t row0, std::int64_t rows, std::int64_t y_size,
                                    std::int64_t x_size, std::int64_t z, std::int64_t y, std::int64_t x, int r) {
  auto at = [&](std::int64_t zz, std::int64_t yy, std::int64_t xx) {
    return u[((clamp_index(zz, rows) - row0) * y_size + clamp_index(yy, y_size)) * x_size + clamp_index(xx, x_size)];
  };
  float sum = 0.0f;
  for (int d = -r; d <= r; ++d) sum += at(z + d, y, x);
  sum += at(z, y - 1, x);
  sum += at(z, y + 1, x);
  sum += at(z, y, x - 1);
  sum += at(z, y, x + 1);
  return sum * (1.0f / static_cast<float>(2 * r + 5));
}

/// Rows per row of the slowest axis: (y, x) extents of an array of 2 or 3 dimensions.
inline std::pair<std::int64_t, std::int64_t> plane(const Shape& s) {
  return s.ndim() == 3 ? std::pair{s[1], s[2]} : std::pair{std::int64_t{1}, s[1]};
}

/// One step on the owned rows [begin, end) of a host slab.
inline void smooth_rows(const Array& u, Array& v, const Slab& s, int r, std::int64_t begin, std::int64_t end) {
  auto [ny, nx] = plane(u.shape());
  const float* in = u.data<float>();
  float* out = v.data<float>();
  const std::int64_t row0 = s.first_row - s.halo_before;
  for (std::int64_t i = begin; i < end; ++i)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x)
        out[((s.halo_before + i) * ny + y) * nx + x] = smooth_at(in, row0, s.global_rows, ny, nx, s.first_row + i, y, x, r);
}

/// The owned rows next to a neighbour, [0, lo) and [hi, rows): computed first, sent while [lo, hi) is.
inline std::pair<std::int64_t, std::int64_t> interior(const Slab& s, int r) {
  std::int64_t lo = std::min<std::int64_t>(s.halo_before ? r : 0, s.rows);
  std::int64_t hi = std::max(lo, s.rows - (s.halo_after ? r : 0));
  return {lo, hi};
}

/// The whole array after `iterations` steps (the reference).
inline std::vector<float> smooth_reference(const Array& whole, int r, int iterations) {
  Slab s{0, 1, 0, whole.shape()[0], 0, 0, whole.shape()[0]};
  Array u = whole.to_host(), v = Array::host(DType::f32, whole.shape());
  for (int it = 0; it < iterations; ++it) {
    smooth_rows(u, v, s, r, 0, s.rows);
    std::swap(u, v);
  }
  return {u.data<float>(), u.data<float>() + u.size()};
}

/// Value of element i of token k.
inline float volume_value(std::uint64_t k, std::int64_t i) {
  std::uint64_t h = (k + 1) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(i) * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  return static_cast<float>(h % 1000) / 1000.0f;
}
inline Array volume(std::uint64_t k, Shape shape) {
  Array a = Array::host(DType::f32, shape);
  for (std::int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = volume_value(k, i);
  return a;
}

/// Emits `count` f32 volumes of `shape`.
class VolumeSource final : public Task {
 public:
  VolumeSource(std::string name, std::uint64_t count, Shape shape)
      : Task(std::move(name)), count_(count), shape_(shape) {}
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    if (ctx.index() >= count_) return ctx.end_stream();
    ctx.put(out, volume(ctx.index(), shape_));
  }

 private:
  std::uint64_t count_;
  Shape shape_;
};

}  // namespace weft::test
