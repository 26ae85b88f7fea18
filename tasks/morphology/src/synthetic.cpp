#include "weft/tasks/morphology/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "parallel.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology {

Array overlapping_balls(Shape shape, int min_radius, int max_radius, double fill, std::uint32_t seed) {
  if (shape.ndim() != 3 || min_radius < 0 || max_radius < min_radius || fill <= 0 || fill >= 1)
    throw ConfigError("overlapping_balls: bad parameters (shape " + shape.str() + ", radii " +
                      std::to_string(min_radius) + ".." + std::to_string(max_radius) + ", fill " +
                      std::to_string(fill) + ")");
  const std::int64_t Z = shape[0], Y = shape[1], X = shape[2];
  double mean_volume = 0;
  for (int r = min_radius; r <= max_radius; ++r) mean_volume += 4.0 / 3.0 * M_PI * r * r * r + 1;
  mean_volume /= (max_radius - min_radius + 1);
  // Boolean model: covered fraction = 1 − exp(−count · mean volume / V).
  const auto count = static_cast<std::int64_t>(std::ceil(-std::log(1 - fill) * static_cast<double>(shape.size()) / mean_volume));
  struct Ball { std::int64_t z, y, x; int r; };
  std::vector<Ball> balls(static_cast<std::size_t>(count));
  std::mt19937_64 rng(seed);
  for (auto& b : balls) {
    b.r = min_radius + static_cast<int>(rng() % static_cast<std::uint64_t>(max_radius - min_radius + 1));
    b.z = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(Z));
    b.y = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(Y));
    b.x = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(X));
  }
  Array out = Array::host(DType::u8, shape);
  std::uint8_t* p = out.data<std::uint8_t>();
  std::memset(p, 0, out.bytes());
  // Each worker owns a range of z planes, so writes never race.
  detail::parallel_for(Z, [&](std::int64_t z0, std::int64_t z1, int) {
    for (const auto& b : balls) {
      const std::int64_t lo = std::max(z0, b.z - b.r), hi = std::min(z1 - 1, b.z + b.r);
      for (std::int64_t z = lo; z <= hi; ++z) {
        const std::int64_t dz2 = (z - b.z) * (z - b.z), r2 = std::int64_t{b.r} * b.r;
        for (std::int64_t y = std::max<std::int64_t>(0, b.y - b.r); y <= std::min(Y - 1, b.y + b.r); ++y) {
          const std::int64_t rest = r2 - dz2 - (y - b.y) * (y - b.y);
          if (rest < 0) continue;
          const auto half = static_cast<std::int64_t>(std::floor(std::sqrt(static_cast<double>(rest))));
          const std::int64_t x0 = std::max<std::int64_t>(0, b.x - half), x1 = std::min(X - 1, b.x + half);
          if (x1 >= x0) std::memset(p + (z * Y + y) * X + x0, 1, static_cast<std::size_t>(x1 - x0 + 1));
        }
      }
    }
  });
  return out;
}

}  // namespace weft::morphology
