#pragma once
/// Middlebury optical flow files (.flo): tag 202021.25 ("PIEH"), int32 width, int32 height,
/// then (u, v) float pairs row-major, all little-endian.
#include <string>

#include "weft/data/array.hpp"

namespace weft::io {

/// Reads a .flo file into an f32 array of shape (H, W, 2). Throws IoError naming the file and the fault.
[[nodiscard]] Array read_flo(const std::string& path);

/// Writes an f32 (H, W, 2) array (ConfigError otherwise), through a temporary name renamed when complete.
void write_flo(const std::string& path, const Array& flow);

}  // namespace weft::io
