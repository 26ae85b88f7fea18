// CPU granulometry: separable exact distance transforms over the lines of each axis, one thread
// per range of lines (the per-line math is shared with the CUDA kernels: line_transforms.hpp).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "granulometry_driver.hpp"
#include "size_map_form.hpp"
#include "parallel.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology {
namespace {

using detail::parallel_for;
using device::kInfinity;

struct Dims {
  std::int64_t z, y, x;
  [[nodiscard]] std::int64_t voxels() const { return z * y * x; }
};

Dims dims_of(const Array& a, const char* what) {
  if (a.shape().ndim() != 3)
    throw ConfigError(std::string(what) + ": expected a 3D volume, got shape " + a.shape().str());
  return {a.shape()[0], a.shape()[1], a.shape()[2]};
}

/// Runs `line(first, stride, length)` on every line of `axis` (0 = z, 1 = y, 2 = x).
template <class Line>
void for_each_line(const Dims& d, int axis, Line&& line) {
  if (axis == 2) {
    parallel_for(d.z * d.y, [&](std::int64_t b, std::int64_t e, int w) {
      for (std::int64_t l = b; l < e; ++l) line(l * d.x, std::int64_t{1}, static_cast<int>(d.x), w);
    });
  } else if (axis == 1) {
    parallel_for(d.z * d.x, [&](std::int64_t b, std::int64_t e, int w) {
      for (std::int64_t l = b; l < e; ++l) line((l / d.x) * d.y * d.x + l % d.x, d.x, static_cast<int>(d.y), w);
    });
  } else {
    parallel_for(d.y * d.x, [&](std::int64_t b, std::int64_t e, int w) {
      for (std::int64_t l = b; l < e; ++l) line(l, d.y * d.x, static_cast<int>(d.z), w);
    });
  }
}

/// cone_line on `width` neighbouring lines at once: a block of `width` contiguous voxels in `count`
/// rows `stride` apart, swept both ways row by row (each line's distance to its nearest 0).
void sweep_lines(std::int32_t* at, std::int64_t width, std::int64_t count, std::int64_t stride) {
  auto from = [](std::int32_t prev) { return device::next_distance(prev, kInfinity); };
  for (std::int64_t k = 1; k < count; ++k)
    for (std::int64_t i = 0; i < width; ++i)
      at[k * stride + i] = std::min(at[k * stride + i], from(at[(k - 1) * stride + i]));
  for (std::int64_t k = count - 2; k >= 0; --k)
    for (std::int64_t i = 0; i < width; ++i)
      at[k * stride + i] = std::min(at[k * stride + i], from(at[(k + 1) * stride + i]));
}

/// The L1 pass (cone_line) along y (axis 1) or z (axis 0), swept row by row or plane by plane
/// over blocks of contiguous voxels instead of line by line at a stride (what the octahedra's
/// CPU openings spend most of their time in).
void cone_sweep(std::int32_t* f, const Dims& d, int axis) {
  const std::int64_t plane = d.y * d.x;
  if (axis == 1)
    parallel_for(d.z, [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t z = b; z < e; ++z) sweep_lines(f + z * plane, d.x, d.y, d.x);
    });
  else
    parallel_for(plane, [&](std::int64_t b, std::int64_t e, int) { sweep_lines(f + b, e - b, d.z, plane); });
}

/// In place: f holds 0 at seeds and kInfinity elsewhere; leaves the distance to the nearest seed.
void transform_in_place(std::int32_t* f, const Dims& d, Element element) {
  const int longest = static_cast<int>(std::max({d.z, d.y, d.x}));
  std::vector<std::vector<std::int32_t>> stacks(256);
  for_each_line(d, 2, [&](std::int64_t first, std::int64_t stride, int n, int) {
    device::cone_line(f + first, stride, n);
    if (element == Element::ball)
      for (int i = 0; i < n; ++i) {
        std::int32_t& v = f[first + i * stride];
        if (v < kInfinity) v = v * v;
      }
  });
  for (int axis = 1; axis >= 0; --axis) {
    if (element == Element::octahedron) {
      cone_sweep(f, d, axis);
      continue;
    }
    for_each_line(d, axis, [&](std::int64_t first, std::int64_t stride, int n, int w) {
      auto& s = stacks[w];
      if (s.size() < 3u * longest) s.resize(3u * longest);
      if (element == Element::ball)
        device::envelope_line<device::Parabola>(f + first, stride, n, kInfinity, s.data(), s.data() + longest,
                                                s.data() + 2 * longest, 1);
      else
        device::envelope_line<device::Chessboard>(f + first, stride, n, kInfinity, s.data(), s.data() + longest,
                                                  s.data() + 2 * longest, 1);
    });
  }
}

/// The cube opening of radius r on planes [c0, c0 + nz) of the box `dist` (d.z planes), z first
/// (as the CUDA path does on a slab's box): f (nz planes of d's Y × X) ← the distance along z to
/// the nearest voxel with dist > r, reading r planes past either end (saturated at kInfinity),
/// swept plane by plane over blocks of columns; then the y and x window passes on those planes
/// only, y swept row by row. f ≤ r exactly on the opening there. The former x, y, z order ran two
/// of its passes on the 2r halo planes of a slab too, and its y and z passes line by line (a
/// stride of a row or a plane per voxel): about 3× slower (printed by a probe on the development
/// machine, not kept).
void cube_opening_z_first(const std::int32_t* dist, std::int32_t* f, const Dims& d, std::int64_t c0, std::int64_t nz,
                          std::int64_t r) {
  const std::int64_t plane = d.y * d.x, from = std::max<std::int64_t>(0, c0 - r), to = std::min(d.z, c0 + nz + r);
  auto step = [](std::int32_t run) { return device::next_distance(run, kInfinity); };
  parallel_for(plane, [&](std::int64_t b, std::int64_t e, int) {  // columns [b, e) swept plane by plane
    std::vector<std::int32_t> run(static_cast<std::size_t>(e - b), kInfinity);
    for (std::int64_t z = from; z < c0 + nz; ++z)
      for (std::int64_t c = b; c < e; ++c) {
        std::int32_t& v = run[static_cast<std::size_t>(c - b)];
        v = dist[z * plane + c] > r ? 0 : step(v);
        if (z >= c0) f[(z - c0) * plane + c] = v;
      }
    std::fill(run.begin(), run.end(), kInfinity);
    for (std::int64_t z = to - 1; z >= c0; --z)
      for (std::int64_t c = b; c < e; ++c) {
        std::int32_t& v = run[static_cast<std::size_t>(c - b)];
        v = dist[z * plane + c] > r ? 0 : step(v);
        if (z < c0 + nz) f[(z - c0) * plane + c] = std::min(f[(z - c0) * plane + c], v);
      }
  });
  // y: window_line's recurrences on whole rows (0 where f <= r, else the distance to the nearest
  // such voxel of the column within the plane), a plane per iteration; x: line by line (contiguous).
  parallel_for(nz, [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t z = b; z < e; ++z) {
      std::int32_t* p = f + z * plane;
      for (std::int64_t i = 0; i < plane; ++i) p[i] = p[i] <= r ? 0 : kInfinity;
      sweep_lines(p, d.x, d.y, d.x);
    }
  });
  for_each_line(Dims{nz, d.y, d.x}, 2, [&](std::int64_t first, std::int64_t stride, int n, int) {
    device::window_line(f + first, stride, n, kInfinity, r);
  });
}

class CpuBackend {
 public:
  CpuBackend(const Array& mask, Element element, const GranulometryOptions& options = {})
      : mask_(mask), dims_(dims_of(mask, "granulometry")), element_(element),
        planes_(detail::Planes::of(dims_.z, options)), distance_(Array::host(DType::i32, mask.shape())) {
    if (mask.dtype() != DType::u8) throw ConfigError("granulometry: the mask must be u8, got " +
                                                     std::string(dtype_name(mask.dtype())));
  }

  std::int64_t count_foreground() {
    const std::uint8_t* m = mask_.data<std::uint8_t>() + plane_offset(planes_.first);
    return sum_over(planes_.count() * plane(), [&](std::int64_t i) { return m[i] != 0; });
  }

  std::int64_t distance_to_background() {
    const std::uint8_t* m = mask_.data<std::uint8_t>();
    std::int32_t* f = distance_.data<std::int32_t>();
    parallel_for(dims_.voxels(), [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i) f[i] = m[i] ? kInfinity : 0;
    });
    transform_in_place(f, dims_, element_);
    return max_over(f, dims_.voxels());
  }

  /// Max D over the counted planes (after distance_to_background).
  std::int64_t counted_max_distance() {
    return max_over(distance_.data<std::int32_t>() + plane_offset(planes_.first), planes_.count() * plane());
  }

  void init_size_map() {
    size_map_ = Array::host(DType::i32, Shape(planes_.count(), dims_.y, dims_.x));
    const std::uint8_t* m = mask_.data<std::uint8_t>() + plane_offset(planes_.first);
    std::int32_t* s = size_map_.data<std::int32_t>();
    parallel_for(size_map_.size(), [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i) s[i] = m[i] ? 0 : -1;
    });
  }

  /// The opening of size n on planes [from(n), to(n)) only (granulometry_driver.hpp says why).
  void opening_count(int n, std::int64_t r, bool update_size_map, std::int64_t* count) {
    const std::int64_t z0 = planes_.from(n);
    const Dims box{planes_.to(n) - z0, dims_.y, dims_.x};
    if (work_.empty()) work_ = Array::host(DType::i32, mask_.shape());
    const std::int32_t* dist = distance_.data<std::int32_t>() + plane_offset(z0);
    std::int32_t* f = work_.data<std::int32_t>();
    const std::int32_t* counted = f + plane_offset(planes_.first - z0);
    if (element_ == Element::cube) {  // z first, on the counted planes only (a slab's box is larger)
      cube_opening_z_first(dist, f, box, planes_.first - z0, planes_.count(), r);
      counted = f;
    } else {
      parallel_for(box.voxels(), [&](std::int64_t b, std::int64_t e, int) {
        for (std::int64_t i = b; i < e; ++i) f[i] = dist[i] > r ? 0 : kInfinity;
      });
      transform_in_place(f, box, element_);
    }
    std::int32_t* s = update_size_map ? size_map_.data<std::int32_t>() : nullptr;
    *count = sum_over(planes_.count() * plane(), [&](std::int64_t i) {
      const bool kept = counted[i] <= r;
      if (kept && s) s[i] = n;
      return kept;
    });
  }

  void flush() {}

  Array take_size_map(const SizeMapForm& form) {
    return form.as_computed() ? std::move(size_map_) : detail::size_map_in_form(std::move(size_map_), form);
  }

  /// Opening as a 0/1 mask (tests and opening_cpu; the whole mask counted).
  Array opening_mask(std::int64_t r) {
    distance_to_background();
    std::int64_t count = 0;
    opening_count(0, r, false, &count);
    Array out = Array::host(DType::u8, mask_.shape());
    const std::int32_t* f = work_.data<std::int32_t>();
    std::uint8_t* o = out.data<std::uint8_t>();
    for (std::int64_t i = 0; i < dims_.voxels(); ++i) o[i] = f[i] <= r ? 1 : 0;
    return out;
  }

  [[nodiscard]] Array distance() const { return distance_; }

 private:
  [[nodiscard]] std::int64_t plane() const { return dims_.y * dims_.x; }
  [[nodiscard]] std::int64_t plane_offset(std::int64_t z) const { return z * plane(); }

  static std::int64_t max_over(const std::int32_t* f, std::int64_t voxels) {
    std::vector<std::int32_t> maxima(256, 0);
    parallel_for(voxels, [&](std::int64_t b, std::int64_t e, int w) {
      std::int32_t best = 0;
      for (std::int64_t i = b; i < e; ++i) best = std::max(best, f[i]);
      maxima[w] = std::max(maxima[w], best);
    });
    return *std::max_element(maxima.begin(), maxima.end());
  }

  template <class Pred>
  static std::int64_t sum_over(std::int64_t voxels, Pred&& pred) {
    std::vector<std::int64_t> sums(256, 0);
    parallel_for(voxels, [&](std::int64_t b, std::int64_t e, int w) {
      std::int64_t c = 0;
      for (std::int64_t i = b; i < e; ++i) c += pred(i) ? 1 : 0;
      sums[w] += c;
    });
    std::int64_t total = 0;
    for (auto c : sums) total += c;
    return total;
  }

  Array mask_;
  Dims dims_;
  Element element_;
  detail::Planes planes_;
  Array distance_;
  Array work_;
  Array size_map_;
};

}  // namespace

GranulometryResult granulometry_cpu(const Array& mask, const GranulometryOptions& options) {
  CpuBackend backend(mask, options.element, options);
  return detail::run_granulometry(backend, options);
}

std::int64_t max_distance_cpu(const Array& mask, Element element, std::int64_t first_plane, std::int64_t end_plane) {
  GranulometryOptions counted;
  counted.max_size = 0;
  counted.first_plane = first_plane;
  counted.end_plane = end_plane;
  CpuBackend backend(mask, element, counted);
  if (backend.count_foreground() == 0) return 0;
  (void)backend.distance_to_background();
  return backend.counted_max_distance();
}

Array distance_transform_cpu(const Array& mask, Element element, bool seed_foreground) {
  const Dims d = dims_of(mask, "distance transform");
  Array out = Array::host(DType::i32, mask.shape());
  const std::uint8_t* m = mask.data<std::uint8_t>();
  std::int32_t* f = out.data<std::int32_t>();
  for (std::int64_t i = 0; i < d.voxels(); ++i) f[i] = ((m[i] != 0) == seed_foreground) ? 0 : kInfinity;
  transform_in_place(f, d, element);
  return out;
}

Array opening_cpu(const Array& mask, Element element, int n) {
  if (n < 0) throw ConfigError("opening: the size must be ≥ 0, got " + std::to_string(n));
  CpuBackend backend(mask, element);
  return backend.opening_mask(radius_limit(element, n));
}

}  // namespace weft::morphology
