#pragma once
// Internal: what names a TIFF input, shared by the reader and the build without libtiff.
#include <algorithm>
#include <cctype>
#include <string>

namespace weft::io::detail {

/// A name ending in .tif or .tiff, any case.
inline bool tiff_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.ends_with(".tif") || lower.ends_with(".tiff");
}

/// A pattern for glob(3).
inline bool has_pattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace weft::io::detail
