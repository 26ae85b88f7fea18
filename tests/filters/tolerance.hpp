#pragma once
// The stated tolerances of the filter tests (see filters_test.cpp), shared with the GPU test.
#include <algorithm>
#include <cmath>

#include "weft/data/dtype.hpp"

namespace weft::filters::test {

/// fp32 accumulation bound, relative to Σ|k·x|.
inline constexpr double kFp32Relative = 1e-6;

[[nodiscard]] inline bool within_tolerance(DType t, double out, double ref, double l1) {
  const double accumulation = kFp32Relative * l1 + 1e-30;
  switch (t) {
    case DType::u8: return std::abs(out - std::clamp(ref, 0.0, 255.0)) <= 0.5 + accumulation;
    case DType::u16: return std::abs(out - std::clamp(ref, 0.0, 65535.0)) <= 0.5 + accumulation;
    case DType::f16: return std::abs(out - ref) <= std::ldexp(std::abs(ref), -11) + accumulation + 6e-8;
    default: return std::abs(out - ref) <= accumulation;
  }
}

}  // namespace weft::filters::test
