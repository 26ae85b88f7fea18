#pragma once
/// Middlebury colour coding of a flow field and the end-point error (.flo files: weft/tasks/io/flo.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "weft/data/array.hpp"

namespace weft::flow {

/// Middlebury colour wheel coding, RGB 8-bit [H*W*3]; `max_motion` <= 0: the largest magnitude.
[[nodiscard]] std::vector<std::uint8_t> flow_to_color(const Array& flow, double max_motion = 0);

/// A flow's colour coding with its key, as `weft flow --png` writes it.
struct FlowPicture {
  std::int64_t rows = 0, cols = 0;  ///< the flow's rows and the key's strip below them; cols >= the flow's
  std::vector<std::uint8_t> rgb;    ///< RGB 8-bit [rows*cols*3]
  double max_motion = 0;            ///< the magnitude (pixels) of the wheel's rim and of the field's full colours
  std::int64_t wheel_row = 0, wheel_col = 0, wheel_radius = 0;  ///< the key's colour wheel
};

/// flow_to_color's image, unchanged in rows [0, H) and columns [0, W) (a pixel of the picture is
/// the pixel of the flow), over a white strip below it that holds the key: the colour wheel,
/// whose pixel at (dx, dy) from its centre has the colour of the flow (dx, dy) * max_motion /
/// radius (the rim: max_motion), and max_motion written beside it in pixels ("3.52px").
[[nodiscard]] FlowPicture flow_picture(const Array& flow, double max_motion = 0);

/// Average end-point error over pixels where the ground truth is known (|component| < 1e9).
[[nodiscard]] double endpoint_error(const Array& flow, const Array& truth);

}  // namespace weft::flow
