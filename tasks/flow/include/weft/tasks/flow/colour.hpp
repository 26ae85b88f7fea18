#pragma once
/// Middlebury colour coding of a flow field and the end-point error (.flo files: weft/tasks/io/flo.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "weft/data/array.hpp"

namespace weft::flow {

/// Middlebury colour wheel coding, RGB 8-bit [H*W*3]; `max_motion` <= 0: the largest magnitude.
[[nodiscard]] std::vector<std::uint8_t> flow_to_color(const Array& flow, double max_motion = 0);

/// Average end-point error over pixels where the ground truth is known (|component| < 1e9).
[[nodiscard]] double endpoint_error(const Array& flow, const Array& truth);

}  // namespace weft::flow
