#pragma once
/// Internal: an image decoded from PNG or PGM before conversion to grey or RGB arrays.
#include <cstdint>
#include <cstdio>
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

/// A PGM header, checked against the file's size (IoError when the pixels cannot all be there).
struct PgmHeader {
  bool binary = true;  ///< P5; false: P2 (text)
  long width = 0, height = 0, maxval = 0;
};
[[nodiscard]] PgmHeader read_pgm_header(std::FILE* file, const std::string& path);

/// A PNG's size and samples after the reader's transformations (grey or RGB, 8 or 16 bits),
/// checked against the file's size: IoError when even the best compression could not hold them.
struct PngHeader {
  int height = 0, width = 0, channels = 1, bit_depth = 8;
};
[[nodiscard]] PngHeader read_png_header(const std::string& path);

}  // namespace weft::io::detail
