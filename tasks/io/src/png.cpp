// PNG decoding and encoding with libpng. libpng reports errors by longjmp; the functions that
// call setjmp own no objects with destructors, so the jump skips nothing.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "decoded_image.hpp"
#include "file_commit.hpp"
#include "weft/data/array.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

struct PngErrorState {
  char message[256] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}
void on_png_warning(png_structp, png_const_charp) {}

struct PngLayout {
  png_uint_32 height = 0, width = 0;
  int channels = 0, bit_depth = 0;
};

// PNG data is deflated: zlib never packs more than 1032 bytes into one (its bound is 1032:1).
// A header whose pixels would need more than that from the file is a lie, refused before the
// rows are allocated.
constexpr double kMaxDeflateRatio = 1032.0;

long file_bytes(std::FILE* file) {
  const long at = std::ftell(file);
  std::fseek(file, 0, SEEK_END);
  const long end = std::ftell(file);
  std::fseek(file, at, SEEK_SET);
  return end;
}

// Header read and transformations set: palette -> RGB, low-bit grey -> 8 bits, alpha dropped,
// 16-bit samples in host (little-endian) order. Called inside the setjmp of its caller.
void read_header(png_structp png, png_infop info, std::FILE* file, PngLayout& layout) {
  png_init_io(png, file);
  png_set_user_limits(png, 1u << 20, 1u << 20);
  png_set_chunk_malloc_max(png, 64u << 20);  // ancillary chunks (text, ICC): no more than this
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((color_type & PNG_COLOR_MASK_ALPHA) != 0) png_set_strip_alpha(png);
  if (depth == 16) png_set_swap(png);
  png_read_update_info(png, info);
  layout.height = png_get_image_height(png, info);
  layout.width = png_get_image_width(png, info);
  layout.channels = png_get_channels(png, info);
  layout.bit_depth = png_get_bit_depth(png, info);
}

// Whether the file can hold the pixels its header announces (see kMaxDeflateRatio).
bool plausible(png_structp png, png_infop info, const PngLayout& layout, long bytes, PngErrorState& state) {
  const double raw = static_cast<double>(layout.height) *
                     (static_cast<double>(png_get_rowbytes(png, info)) + 1.0);
  if (raw <= kMaxDeflateRatio * static_cast<double>(bytes) + 4096) return true;
  std::snprintf(state.message, sizeof state.message,
                "the header says %ux%u pixels, more than a file of %ld bytes can hold (truncated or forged)",
                static_cast<unsigned>(layout.width), static_cast<unsigned>(layout.height), bytes);
  return false;
}

// Reads the header and, when `bytes` is given, all rows into it (`rows` pointing into it).
// Returns false with `state.message` set on a libpng error or an implausible header.
bool read_png(std::FILE* file, PngErrorState& state, PngLayout& layout, std::vector<unsigned char>* bytes = nullptr,
              std::vector<png_bytep>* rows = nullptr) {
  const long size = file_bytes(file);
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(state.message, sizeof state.message, "out of memory");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  read_header(png, info, file, layout);
  const bool ok = plausible(png, info, layout, size, state);
  if (ok && bytes) {
    const std::size_t row_bytes = png_get_rowbytes(png, info);
    bytes->resize(row_bytes * layout.height);
    rows->resize(layout.height);
    for (png_uint_32 y = 0; y < layout.height; ++y) (*rows)[y] = bytes->data() + y * row_bytes;
    png_read_image(png, rows->data());
    png_read_end(png, nullptr);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return ok;
}

// Writes rows of `channels` samples of `bit_depth` bits (16-bit rows in host order) to `file`.
bool write_png_rows(std::FILE* file, PngErrorState& state, int height, int width, int channels, int bit_depth,
                    png_bytep* rows) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &state, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(state.message, sizeof state.message, "out of memory");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), bit_depth,
               channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  if (bit_depth == 16) png_set_swap(png);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

void write_rows(const std::string& path, int height, int width, int channels, int bit_depth,
                const unsigned char* data) {
  if (height <= 0 || width <= 0) {
    throw ConfigError("cannot write " + path + ": empty image " + std::to_string(height) + "x" +
                      std::to_string(width));
  }
  const std::size_t row_bytes = static_cast<std::size_t>(width) * channels * (bit_depth / 8);
  std::vector<png_bytep> rows(static_cast<std::size_t>(height));
  for (int y = 0; y < height; ++y) rows[y] = const_cast<png_bytep>(data + y * row_bytes);
  detail::PendingFile out(path);
  PngErrorState state;
  if (!write_png_rows(out.get(), state, height, width, channels, bit_depth, rows.data())) {
    throw IoError("cannot write PNG " + path + ": " + state.message);
  }
  out.commit();
}

}  // namespace

namespace detail {

bool looks_like_png(const unsigned char* head, std::size_t n) {
  return n >= 8 && png_sig_cmp(const_cast<png_bytep>(head), 0, 8) == 0;
}

PngHeader read_png_header(const std::string& path) {
  InputFile in(path);
  PngErrorState state;
  PngLayout layout;
  if (!read_png(in.get(), state, layout)) throw IoError("cannot read PNG " + path + ": " + state.message);
  if (layout.channels != 1 && layout.channels != 3)
    throw IoError("cannot read PNG " + path + ": unexpected " + std::to_string(layout.channels) + " channels");
  return {static_cast<int>(layout.height), static_cast<int>(layout.width), layout.channels, layout.bit_depth};
}

DecodedImage decode_png(const std::string& path) {
  InputFile in(path);
  PngErrorState state;
  PngLayout layout;
  std::vector<unsigned char> bytes;
  std::vector<png_bytep> rows;
  if (!read_png(in.get(), state, layout, &bytes, &rows)) {
    throw IoError("cannot read PNG " + path + ": " + state.message);
  }
  DecodedImage image;
  image.height = static_cast<int>(layout.height);
  image.width = static_cast<int>(layout.width);
  image.channels = layout.channels;
  image.sixteen_bit = layout.bit_depth == 16;
  image.maxval = image.sixteen_bit ? 65535 : 255;
  if (image.channels != 1 && image.channels != 3) {
    throw IoError("cannot read PNG " + path + ": unexpected " + std::to_string(image.channels) + " channels");
  }
  const std::size_t n = static_cast<std::size_t>(image.height) * image.width * image.channels;
  image.samples.resize(n);
  if (image.sixteen_bit) {
    std::memcpy(image.samples.data(), bytes.data(), n * sizeof(std::uint16_t));
  } else {
    for (std::size_t i = 0; i < n; ++i) image.samples[i] = bytes[i];
  }
  return image;
}

}  // namespace detail

void write_png(const std::string& path, const Array& grey) {
  if (grey.empty() || grey.shape().ndim() != 2 || (grey.dtype() != DType::u8 && grey.dtype() != DType::u16)) {
    throw ConfigError("cannot write " + path + ": write_png takes a 2D u8 or u16 array, got " +
                      (grey.empty() ? std::string("an empty array")
                                    : std::string(dtype_name(grey.dtype())) + " " + grey.shape().str()));
  }
  const Array host = grey.memory().is_host() ? grey : grey.to_host();
  write_rows(path, static_cast<int>(host.shape()[0]), static_cast<int>(host.shape()[1]), 1,
             host.dtype() == DType::u8 ? 8 : 16, static_cast<const unsigned char*>(host.raw()));
}

void write_png_rgb(const std::string& path, const std::uint8_t* rgb, int height, int width) {
  if (rgb == nullptr) throw ConfigError("cannot write " + path + ": no RGB data");
  write_rows(path, height, width, 3, 8, rgb);
}

}  // namespace weft::io
