// PGM (Netpbm grey): P5 binary (8-bit, or 16-bit big-endian when maxval > 255) and P2 text.
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "decoded_image.hpp"
#include "file_commit.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

constexpr long kMaxExtent = 1L << 20;

// Reads the next decimal token, skipping white space and '#' comments; -1 at end of file or junk.
long read_token(std::FILE* file) {
  int c = std::fgetc(file);
  for (;;) {
    while (c != EOF && std::isspace(c)) c = std::fgetc(file);
    if (c != '#') break;
    while (c != EOF && c != '\n') c = std::fgetc(file);
  }
  if (c == EOF || !std::isdigit(c)) return -1;
  long value = 0;
  while (c != EOF && std::isdigit(c)) {
    value = value * 10 + (c - '0');
    if (value > 1L << 40) return -1;
    c = std::fgetc(file);
  }
  if (c != EOF && !std::isspace(c)) return -1;  // the single white space after the header is consumed here
  return value;
}

}  // namespace

namespace detail {

bool looks_like_pgm(const unsigned char* head, std::size_t n) {
  return n >= 2 && head[0] == 'P' && (head[1] == '5' || head[1] == '2');
}

PgmHeader read_pgm_header(std::FILE* file, const std::string& path) {
  const int p = std::fgetc(file);
  const int kind = std::fgetc(file);
  if (p != 'P' || (kind != '5' && kind != '2')) throw IoError("cannot read PGM " + path + ": not a P5 or P2 file");
  PgmHeader h;
  h.binary = kind == '5';
  h.width = read_token(file);
  h.height = read_token(file);
  h.maxval = read_token(file);
  if (h.width <= 0 || h.height <= 0 || h.width > kMaxExtent || h.height > kMaxExtent) {
    throw IoError("cannot read PGM " + path + ": bad header (width " + std::to_string(h.width) + ", height " +
                  std::to_string(h.height) + ")");
  }
  if (h.maxval <= 0 || h.maxval > 65535) {
    throw IoError("cannot read PGM " + path + ": bad maxval " + std::to_string(h.maxval));
  }
  // The header's claim against the file's size, before anything is allocated for the pixels.
  const long at = std::ftell(file);
  std::fseek(file, 0, SEEK_END);
  const long end = std::ftell(file);
  std::fseek(file, at, SEEK_SET);
  const auto samples = static_cast<unsigned long long>(h.width) * static_cast<unsigned long long>(h.height);
  const unsigned long long left = end > at ? static_cast<unsigned long long>(end - at) : 0;
  const unsigned long long need = h.binary ? samples * (h.maxval > 255 ? 2 : 1) : samples * 2 - 1;
  if (left < need)
    throw IoError("cannot read PGM " + path + ": truncated or forged: the header says " + std::to_string(h.width) + "x" +
                  std::to_string(h.height) + " pixels, which need " + (h.binary ? "" : "at least ") +
                  std::to_string(need) + " bytes, but the file has " + std::to_string(left) + " after its header");
  return h;
}

DecodedImage decode_pgm(const std::string& path) {
  InputFile in(path);
  std::FILE* file = in.get();
  const PgmHeader header = read_pgm_header(file, path);
  const long width = header.width, height = header.height, maxval = header.maxval;
  const int kind = header.binary ? '5' : '2';
  DecodedImage image;
  image.height = static_cast<int>(height);
  image.width = static_cast<int>(width);
  image.channels = 1;
  image.sixteen_bit = maxval > 255;
  image.maxval = static_cast<std::uint32_t>(maxval);
  const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  image.samples.resize(n);
  if (kind == '2') {
    for (std::size_t i = 0; i < n; ++i) {
      const long v = read_token(file);
      if (v < 0) throw IoError("cannot read PGM " + path + ": truncated or bad value at sample " + std::to_string(i));
      image.samples[i] = static_cast<std::uint16_t>(v > 65535 ? 65535 : v);
    }
    return image;
  }
  const std::size_t bytes_per_sample = image.sixteen_bit ? 2 : 1;
  std::vector<unsigned char> bytes(n * bytes_per_sample);
  if (std::fread(bytes.data(), 1, bytes.size(), file) != bytes.size()) {
    throw IoError("cannot read PGM " + path + ": truncated (expected " + std::to_string(bytes.size()) +
                  " bytes of pixels)");
  }
  for (std::size_t i = 0; i < n; ++i) {
    image.samples[i] = image.sixteen_bit ? static_cast<std::uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1])
                                         : bytes[i];
  }
  return image;
}

}  // namespace detail

void write_pgm(const std::string& path, const Array& grey) {
  if (grey.empty() || grey.shape().ndim() != 2 || (grey.dtype() != DType::u8 && grey.dtype() != DType::u16)) {
    throw ConfigError("cannot write " + path + ": write_pgm takes a 2D u8 or u16 array, got " +
                      (grey.empty() ? std::string("an empty array")
                                    : std::string(dtype_name(grey.dtype())) + " " + grey.shape().str()));
  }
  const Array host = grey.memory().is_host() ? grey : grey.to_host();
  const bool sixteen = host.dtype() == DType::u16;
  const std::string header = "P5\n" + std::to_string(host.shape()[1]) + " " + std::to_string(host.shape()[0]) +
                             "\n" + (sixteen ? "65535" : "255") + "\n";
  detail::PendingFile out(path);
  out.write(header.data(), header.size());
  if (!sixteen) {
    out.write(host.raw(), host.bytes());
  } else {
    const std::uint16_t* v = host.data<std::uint16_t>();
    std::vector<unsigned char> big(host.bytes());
    for (std::int64_t i = 0; i < host.size(); ++i) {
      big[2 * i] = static_cast<unsigned char>(v[i] >> 8);
      big[2 * i + 1] = static_cast<unsigned char>(v[i] & 0xff);
    }
    out.write(big.data(), big.size());
  }
  out.commit();
}

}  // namespace weft::io
