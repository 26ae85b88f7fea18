#pragma once
/// Internal: an image decoded from PNG or PGM before conversion to grey or RGB arrays.
#include <cstdint>
#include <string>
#include <vector>

namespace weft::io::detail {

struct DecodedImage {
  int height = 0;
  int width = 0;
  int channels = 1;             ///< 1 (grey) or 3 (RGB), alpha already dropped
  bool sixteen_bit = false;     ///< samples need 16 bits (u16 output)
  std::uint32_t maxval = 255;   ///< largest representable sample (PGM maxval, 255 or 65535 for PNG)
  std::vector<std::uint16_t> samples;  ///< height * width * channels, row-major, interleaved
};

/// True when the first bytes are a PNG signature.
[[nodiscard]] bool looks_like_png(const unsigned char* head, std::size_t n);
/// True when the first bytes are "P5" or "P2".
[[nodiscard]] bool looks_like_pgm(const unsigned char* head, std::size_t n);

[[nodiscard]] DecodedImage decode_png(const std::string& path);
[[nodiscard]] DecodedImage decode_pgm(const std::string& path);

}  // namespace weft::io::detail
