#pragma once
// Synthetic frames for the saliency tests: textured frames and the pop-out field of bars.
#include <cmath>
#include <cstdint>

#include "weft/data/array.hpp"

namespace weft::saliency::test {

/// A u8 frame [h, w] with structure at every scale and orientation (sums of gratings and a blob),
/// varying with `seed`.
inline Array textured_frame(std::int64_t h, std::int64_t w, int seed = 0) {
  Array a = Array::host(DType::u8, Shape(h, w));
  auto* p = a.data<std::uint8_t>();
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      const double v = 0.5 + 0.15 * std::sin(0.9 * x + 0.3 * y + seed) + 0.1 * std::cos(0.21 * y - 0.05 * x * (seed + 1)) +
                       0.1 * std::sin(0.05 * (x + y) + 0.7 * seed) +
                       0.15 * std::exp(-((x - w / 3.0) * (x - w / 3.0) + (y - h / 2.0) * (y - h / 2.0)) / 40.0);
      p[y * w + x] = static_cast<std::uint8_t>(std::lround(std::fmin(1.0, std::fmax(0.0, v)) * 255.0));
    }
  return a;
}

/// Where the odd bar of popout_field lies: its centre.
struct BarCentre {
  std::int64_t y = 0, x = 0;
};

/// A grey [size, size] u8 field of identical vertical bars (length 9, width 2, spacing 16) with the
/// bar of cell (row, col) rotated to horizontal. Returns that bar's centre through `odd`.
inline Array popout_field(std::int64_t size, int row, int col, BarCentre& odd) {
  Array a = Array::host(DType::u8, Shape(size, size));
  auto* p = a.data<std::uint8_t>();
  for (std::int64_t i = 0; i < size * size; ++i) p[i] = 40;
  constexpr int kSpacing = 16, kHalfLength = 4;
  for (std::int64_t cy = kSpacing / 2; cy < size - kSpacing / 2 + 1; cy += kSpacing)
    for (std::int64_t cx = kSpacing / 2; cx < size - kSpacing / 2 + 1; cx += kSpacing) {
      const bool rotated = cy / kSpacing == row && cx / kSpacing == col;
      if (rotated) odd = {cy, cx};
      for (int t = -kHalfLength; t <= kHalfLength; ++t)
        for (int s = 0; s < 2; ++s) {
          const std::int64_t y = rotated ? cy + s : cy + t, x = rotated ? cx + t : cx + s;
          p[y * size + x] = 220;
        }
    }
  return a;
}

}  // namespace weft::saliency::test
