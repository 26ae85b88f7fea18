// The key of a flow's colour coding: the colour wheel and the magnitude of its rim, drawn in a
// strip below the field. No font library: the label uses a 3x5 bitmap of the few glyphs it needs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "colour_wheel.hpp"
#include "weft/tasks/flow/colour.hpp"

namespace weft::flow {

namespace {

/// Glyphs 3 wide and 5 high, a row per string, '1' for ink.
const char* const* glyph(char c) {
  static const char* const digits[10][5] = {
      {"111", "101", "101", "101", "111"}, {"010", "110", "010", "010", "111"}, {"111", "001", "111", "100", "111"},
      {"111", "001", "111", "001", "111"}, {"101", "101", "111", "001", "001"}, {"111", "100", "111", "001", "111"},
      {"111", "100", "111", "101", "111"}, {"111", "001", "001", "001", "001"}, {"111", "101", "111", "101", "111"},
      {"111", "101", "111", "001", "111"}};
  static const char* const point[5] = {"000", "000", "000", "000", "100"};
  static const char* const p[5] = {"000", "110", "101", "110", "100"};
  static const char* const x[5] = {"000", "000", "101", "010", "101"};
  if (c >= '0' && c <= '9') return digits[c - '0'];
  if (c == '.') return point;
  if (c == 'p') return p;
  if (c == 'x') return x;
  return nullptr;
}

/// Glyph columns a character takes with the space after it: a point is narrow.
std::int64_t advance(char c) { return c == '.' ? 2 : 4; }

/// Three significant digits, no exponent: 0.0523, 3.52, 41.7, 250.
std::string magnitude_text(double v) {
  const int decimals = std::clamp(2 - static_cast<int>(std::floor(std::log10(v))), 0, 6);
  char text[64];
  std::snprintf(text, sizeof text, "%.*fpx", decimals, v);
  return text;
}

struct Canvas {
  std::int64_t rows, cols;
  std::vector<std::uint8_t>& rgb;
  void set(std::int64_t r, std::int64_t c, const std::uint8_t colour[3]) {
    if (r < 0 || r >= rows || c < 0 || c >= cols) return;
    std::copy_n(colour, 3, &rgb[static_cast<std::size_t>((r * cols + c) * 3)]);
  }
};

}  // namespace

FlowPicture flow_picture(const Array& flow, double max_motion) {
  const Array h = flow.memory().is_host() ? flow : flow.to_host();
  const std::vector<std::uint8_t> field = flow_to_color(h, max_motion);  // checks the flow
  const std::int64_t height = h.shape()[0], width = h.shape()[1];
  FlowPicture pic;
  pic.max_motion = detail::coding_scale(h, max_motion);
  // The wheel grows with the field, within bounds that keep it legible and the strip modest.
  const std::int64_t radius = std::clamp<std::int64_t>(std::min(height, width) / 8, 12, 64);
  const std::int64_t pad = std::max<std::int64_t>(3, radius / 4);
  const std::int64_t scale = std::max<std::int64_t>(2, radius / 8);  // pixels per glyph dot
  const std::string label = magnitude_text(pic.max_motion);
  std::int64_t label_width = 0;
  for (char ch : label) label_width += advance(ch) * scale;
  pic.wheel_radius = radius;
  pic.wheel_row = height + 1 + pad + radius;  // below a grey line that ends the field
  pic.wheel_col = pad + radius;
  pic.rows = height + 1 + 2 * (pad + radius) + 1;
  pic.cols = std::max(width, 2 * (pad + radius) + 1 + label_width);
  pic.rgb.assign(static_cast<std::size_t>(pic.rows * pic.cols * 3), 255);
  for (std::int64_t r = 0; r < height; ++r)
    std::copy_n(&field[static_cast<std::size_t>(r * width * 3)], width * 3,
                &pic.rgb[static_cast<std::size_t>(r * pic.cols * 3)]);
  Canvas canvas{pic.rows, pic.cols, pic.rgb};
  const std::uint8_t grey[3] = {128, 128, 128}, ink[3] = {0, 0, 0};
  for (std::int64_t c = 0; c < pic.cols; ++c) canvas.set(height, c, grey);
  for (std::int64_t dy = -radius - 1; dy <= radius + 1; ++dy)
    for (std::int64_t dx = -radius - 1; dx <= radius + 1; ++dx) {
      const double fu = static_cast<double>(dx) / radius, fv = static_cast<double>(dy) / radius;
      if (std::hypot(fu, fv) > 1) {  // a grey rim sets the wheel off from the white strip
        if (std::hypot(fu, fv) <= 1 + 1.5 / radius) canvas.set(pic.wheel_row + dy, pic.wheel_col + dx, grey);
        continue;
      }
      std::uint8_t colour[3];
      // The field's own arithmetic: a flow of (dx, dy) * max / radius, over max.
      detail::wheel_colour(static_cast<float>(fu * pic.max_motion) / pic.max_motion,
                           static_cast<float>(fv * pic.max_motion) / pic.max_motion, colour);
      canvas.set(pic.wheel_row + dy, pic.wheel_col + dx, colour);
    }
  const std::int64_t top = pic.wheel_row - 5 * scale / 2;
  std::int64_t left = pic.wheel_col + radius + pad;
  for (char ch : label) {
    if (const char* const* g = glyph(ch))
      for (int gy = 0; gy < 5; ++gy)
        for (int gx = 0; gx < 3; ++gx)
          if (g[gy][gx] == '1')
            for (std::int64_t sy = 0; sy < scale; ++sy)
              for (std::int64_t sx = 0; sx < scale; ++sx) canvas.set(top + gy * scale + sy, left + gx * scale + sx, ink);
    left += advance(ch) * scale;
  }
  return pic;
}

}  // namespace weft::flow
