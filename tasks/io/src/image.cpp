// Format detection and conversion of decoded images to grey or RGB arrays.
#include <cstdio>
#include <string>

#include "decoded_image.hpp"
#include "file_commit.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

detail::DecodedImage decode(const std::string& path) {
  unsigned char head[8] = {};
  std::size_t n = 0;
  {
    detail::InputFile in(path);
    n = std::fread(head, 1, sizeof head, in.get());
  }
  if (detail::looks_like_png(head, n)) return detail::decode_png(path);
  if (detail::looks_like_pgm(head, n)) return detail::decode_pgm(path);
  throw IoError("cannot read image " + path + ": not a PNG or PGM (P5/P2) file");
}

// round(0.299 R + 0.587 G + 0.114 B) in integers (exact for 8- and 16-bit samples).
std::uint32_t luminance(std::uint32_t r, std::uint32_t g, std::uint32_t b) {
  return (299 * r + 587 * g + 114 * b + 500) / 1000;
}

template <class T> void to_grey(const detail::DecodedImage& image, T* out) {
  const std::size_t n = static_cast<std::size_t>(image.height) * image.width;
  const std::uint16_t* s = image.samples.data();
  if (image.channels == 1) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(s[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(luminance(s[3 * i], s[3 * i + 1], s[3 * i + 2]));
  }
}

}  // namespace

ImageInfo image_info(const std::string& path) {
  unsigned char head[8] = {};
  std::size_t n = 0;
  {
    detail::InputFile in(path);
    n = std::fread(head, 1, sizeof head, in.get());
  }
  if (detail::looks_like_png(head, n)) {
    const detail::PngHeader h = detail::read_png_header(path);
    return {h.height, h.width, h.channels, h.bit_depth == 16};
  }
  if (detail::looks_like_pgm(head, n)) {
    detail::InputFile in(path);
    const detail::PgmHeader h = detail::read_pgm_header(in.get(), path);
    return {h.height, h.width, 1, h.maxval > 255};
  }
  throw IoError("cannot read image " + path + ": not a PNG or PGM (P5/P2) file");
}

Array read_image(const std::string& path) {
  const detail::DecodedImage image = decode(path);
  const Shape shape(image.height, image.width);
  if (image.sixteen_bit) {
    Array out = Array::host(DType::u16, shape);
    to_grey(image, out.data<std::uint16_t>());
    return out;
  }
  Array out = Array::host(DType::u8, shape);
  to_grey(image, out.data<std::uint8_t>());
  return out;
}

Array read_image_rgb(const std::string& path) {
  const detail::DecodedImage image = decode(path);
  Array out = Array::host(DType::u8, Shape(image.height, image.width, 3));
  std::uint8_t* rgb = out.data<std::uint8_t>();
  const std::size_t n = static_cast<std::size_t>(image.height) * image.width;
  const std::uint32_t maxval = image.maxval;
  auto to8 = [&](std::uint32_t v) {
    return static_cast<std::uint8_t>(image.sixteen_bit ? (v * 255 + maxval / 2) / maxval : v);
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) {
      rgb[3 * i + c] = to8(image.samples[image.channels == 1 ? i : 3 * i + c]);
    }
  }
  return out;
}

}  // namespace weft::io
