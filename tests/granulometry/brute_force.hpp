#pragma once
// The definition written out literally (no distance transforms), for small volumes.
#include <cstdint>
#include <random>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/morphology/element.hpp"

namespace weft::test {

/// Opening of a u8 mask by the element of size n, straight from the definition.
[[nodiscard]] Array brute_force_opening(const Array& mask, morphology::Element element, int n);
/// Random u8 0/1 mask of the given shape with P(foreground) = density.
[[nodiscard]] Array random_mask(Shape shape, double density, std::uint32_t seed);
[[nodiscard]] std::int64_t count_foreground(const Array& mask);
/// Whether two host arrays of equal dtype have equal shapes and bytes.
[[nodiscard]] bool same(const Array& a, const Array& b);

}  // namespace weft::test
