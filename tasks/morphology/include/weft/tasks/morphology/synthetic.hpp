#pragma once
/// Synthetic volumes for the sample file, the tests and the benchmark.
#include <cstdint>

#include "weft/data/array.hpp"

namespace weft::morphology {

/// u8 0/1 volume of overlapping Euclidean balls with radii uniform in [min_radius, max_radius],
/// centres uniform in the volume, as many as make the expected foreground fraction `fill`.
/// Deterministic for a given seed (independent of the number of threads).
[[nodiscard]] Array overlapping_balls(Shape shape, int min_radius, int max_radius, double fill, std::uint32_t seed);

}  // namespace weft::morphology
