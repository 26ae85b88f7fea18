#pragma once
// Straightforward references written independently of tasks/filters: sort-based medians and
// double-precision convolution, pixel by pixel, with their own border rules.
#include <cstdint>
#include <random>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/filters/filters.hpp"

namespace weft::filters::test {

/// Reads element i of a u8/u16/f16/f32 array as double.
[[nodiscard]] double get(const Array& a, std::int64_t i);
/// Array of `type` and `shape` filled with uniform values in [0, range) (integers for u8/u16).
[[nodiscard]] Array random_array(DType type, Shape shape, double range, std::uint32_t seed);

/// Median of the size^d window (d = ndim) of every element, exact.
[[nodiscard]] std::vector<double> median_reference(const Array& in, int size, Border b);
/// Convolution (correlation) in double; `l1` receives Σ|k·x| per output (the error scale).
[[nodiscard]] std::vector<double> convolve_reference(const Array& in, const std::vector<double>& kernel, int ksize,
                                                     Border b, std::vector<double>* l1 = nullptr);

}  // namespace weft::filters::test
