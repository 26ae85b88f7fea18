#pragma once
/// Foreground selection for the granulometry: fixed thresholds and Otsu's threshold.
#include "weft/data/array.hpp"

namespace weft::morphology {

/// u8 0/1 mask of `volume` (host, u8, u16 or f32): 1 where value ≥ threshold.
[[nodiscard]] Array threshold_mask(const Array& volume, double threshold);
/// u8 0/1 mask where the value is non-zero (the default for binary data).
[[nodiscard]] Array nonzero_mask(const Array& volume);
/// Otsu's threshold of a host u8, u16 or f32 array (256 bins for u8, 65536 for u16, 1024 for
/// f32 between its minimum and maximum); returns the smallest value counted as foreground.
[[nodiscard]] double otsu_threshold(const Array& volume);

}  // namespace weft::morphology
