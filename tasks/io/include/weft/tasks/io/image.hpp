#pragma once
/// Grey and colour images: PNG (libpng) and PGM (P5 binary, P2 text).
/// Reading failures (missing file, not an image, truncated data) throw weft::IoError naming the file;
/// arrays of the wrong type or rank passed to a writer throw weft::ConfigError.
/// Writers write a temporary file beside `path` (created exclusively, never through a symlink)
/// and rename it to `path` once complete.
#include <cstdint>
#include <string>

#include "weft/data/array.hpp"

namespace weft::io {

/// What a file's header says, checked against the file's size (IoError naming the file when its
/// pixels cannot all be there): read before anything is allocated for them.
struct ImageInfo {
  std::int64_t height = 0, width = 0;
  int channels = 1;          ///< 1 grey, 3 colour (alpha dropped, palettes expanded)
  bool sixteen_bit = false;  ///< read_image gives u16
};
[[nodiscard]] ImageInfo image_info(const std::string& path);

/// A 2D grey image [H,W]: u8 for 8-bit (and lower) files, u16 for 16-bit PNG or PGM maxval > 255.
/// Colour is converted to luminance round(0.299 R + 0.587 G + 0.114 B); alpha is dropped;
/// palettes are expanded. PGM values are returned as stored (not rescaled to the maxval).
[[nodiscard]] Array read_image(const std::string& path);

/// A colour image [H,W,3] u8 (RGB). Grey is replicated; 16-bit samples are scaled to 8 bits, rounded.
[[nodiscard]] Array read_image_rgb(const std::string& path);

/// Writes a 2D u8 or u16 grey array as an 8- or 16-bit grey PNG.
void write_png(const std::string& path, const Array& grey_u8_or_u16);

/// Writes `height`×`width` interleaved RGB bytes as an 8-bit RGB PNG.
void write_png_rgb(const std::string& path, const std::uint8_t* rgb, int height, int width);

/// Writes a 2D u8 (maxval 255) or u16 (maxval 65535, big-endian) grey array as a binary PGM (P5).
void write_pgm(const std::string& path, const Array& grey_u8_or_u16);

}  // namespace weft::io
