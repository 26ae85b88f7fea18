#pragma once
// Internal: the Middlebury colour coding of one flow vector, shared by the coding of a field
// (flow_to_color) and its key (flow_picture), so that the key shows the very colours of the field.
#include <cstdint>

#include "weft/data/array.hpp"

namespace weft::flow::detail {

/// The colour of the flow (fu, fv) in units of the coding's scale: white at 0, the wheel's full
/// colour at magnitude 1, darker beyond.
void wheel_colour(double fu, double fv, std::uint8_t rgb[3]);

/// The magnitude a colour coding of a host flow [H,W,2] takes as 1: `max_motion` if positive,
/// else the largest known magnitude of the field (1 if none).
[[nodiscard]] double coding_scale(const Array& host_flow, double max_motion);

}  // namespace weft::flow::detail
