#include "brute_force.hpp"

#include <cstring>

namespace weft::test {

Array brute_force_opening(const Array& mask, morphology::Element element, int n) {
  const std::int64_t Z = mask.shape()[0], Y = mask.shape()[1], X = mask.shape()[2];
  struct Offset { int z, y, x; };
  std::vector<Offset> offsets;
  for (int z = -n; z <= n; ++z)
    for (int y = -n; y <= n; ++y)
      for (int x = -n; x <= n; ++x) {
        const int l1 = std::abs(z) + std::abs(y) + std::abs(x);
        const int l2 = z * z + y * y + x * x;
        const bool in = element == morphology::Element::octahedron ? l1 <= n
                        : element == morphology::Element::cube     ? true
                                                                   : l2 <= n * n;
        if (in) offsets.push_back({z, y, x});
      }
  const std::uint8_t* m = mask.data<std::uint8_t>();
  auto inside = [&](std::int64_t z, std::int64_t y, std::int64_t x) {
    return z >= 0 && z < Z && y >= 0 && y < Y && x >= 0 && x < X;
  };
  std::vector<std::uint8_t> eroded(static_cast<std::size_t>(Z * Y * X), 0);
  for (std::int64_t z = 0; z < Z; ++z)
    for (std::int64_t y = 0; y < Y; ++y)
      for (std::int64_t x = 0; x < X; ++x) {
        bool keep = true;
        for (const auto& d : offsets) {
          if (!inside(z + d.z, y + d.y, x + d.x)) continue;  // outside voxels are ignored
          if (!m[((z + d.z) * Y + (y + d.y)) * X + (x + d.x)]) { keep = false; break; }
        }
        eroded[(z * Y + y) * X + x] = keep ? 1 : 0;
      }
  Array out = Array::host(DType::u8, mask.shape());
  std::uint8_t* o = out.data<std::uint8_t>();
  for (std::int64_t z = 0; z < Z; ++z)
    for (std::int64_t y = 0; y < Y; ++y)
      for (std::int64_t x = 0; x < X; ++x) {
        bool hit = false;
        for (const auto& d : offsets) {
          if (!inside(z - d.z, y - d.y, x - d.x)) continue;
          if (eroded[((z - d.z) * Y + (y - d.y)) * X + (x - d.x)]) { hit = true; break; }
        }
        o[(z * Y + y) * X + x] = hit ? 1 : 0;
      }
  return out;
}

Array random_mask(Shape shape, double density, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution fg(density);
  Array a = Array::host(DType::u8, shape);
  std::uint8_t* p = a.data<std::uint8_t>();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = fg(rng) ? 1 : 0;
  return a;
}

std::int64_t count_foreground(const Array& mask) {
  const std::uint8_t* p = mask.data<std::uint8_t>();
  std::int64_t c = 0;
  for (std::int64_t i = 0; i < mask.size(); ++i) c += p[i] != 0;
  return c;
}

bool same(const Array& a, const Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

}  // namespace weft::test
