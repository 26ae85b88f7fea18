// PNG and PGM: round trips, every PNG colour type, luminance, error cases, a real Middlebury frame.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io_test_util.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"

namespace {

using weft::Array;
using weft::DType;
using weft::Shape;
using namespace weft::io;
using namespace weft::io::test;

// Reference luminance, written independently of the library's integer formula.
int reference_luma(double r, double g, double b) { return static_cast<int>(std::floor((299.0 * r + 587.0 * g + 114.0 * b) / 1000.0 + 0.5)); }

// Writes a PNG of any colour type with libpng directly (16-bit samples given big-endian in `bytes`).
void write_raw_png(const std::string& path, int width, int height, int color_type, int depth,
                   const std::vector<unsigned char>& bytes, const std::vector<png_color>& palette = {}) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, depth, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  png_write_info(png, info);
  const std::size_t row = bytes.size() / height;
  for (int y = 0; y < height; ++y) png_write_row(png, bytes.data() + y * row);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

template <class T> Array ramp(DType dtype, int h, int w, int step) {
  Array a = Array::host(dtype, Shape(h, w));
  for (int i = 0; i < h * w; ++i) a.data<T>()[i] = static_cast<T>(i * step + 7);
  return a;
}

template <class T> void expect_equal(const Array& a, const Array& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  for (std::int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data<T>()[i], b.data<T>()[i]) << "at " << i;
}

TEST(Image, PngU8RoundTrip) {
  const Array a = ramp<std::uint8_t>(DType::u8, 13, 17, 3);
  write_png(scratch_file("u8.png"), a);
  expect_equal<std::uint8_t>(read_image(scratch_file("u8.png")), a);
  EXPECT_EQ(leftover_temporaries(), 0);
}

TEST(Image, PngU16RoundTrip) {
  const Array a = ramp<std::uint16_t>(DType::u16, 9, 31, 211);
  write_png(scratch_file("u16.png"), a);
  expect_equal<std::uint16_t>(read_image(scratch_file("u16.png")), a);
}

TEST(Image, PngRgbRoundTripAndLuminance) {
  const int h = 7, w = 11;
  std::vector<std::uint8_t> rgb(h * w * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(i * 37 + i / 3);
  write_png_rgb(scratch_file("rgb.png"), rgb.data(), h, w);
  const Array colour = read_image_rgb(scratch_file("rgb.png"));
  ASSERT_EQ(colour.shape(), Shape(h, w, 3));
  for (std::size_t i = 0; i < rgb.size(); ++i) ASSERT_EQ(colour.data<std::uint8_t>()[i], rgb[i]);
  const Array grey = read_image(scratch_file("rgb.png"));
  ASSERT_EQ(grey.dtype(), DType::u8);
  ASSERT_EQ(grey.shape(), Shape(h, w));
  for (int i = 0; i < h * w; ++i) {
    EXPECT_EQ(grey.data<std::uint8_t>()[i], reference_luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]));
  }
}

TEST(Image, PngColourTypes) {
  // grey + alpha, 8-bit: alpha dropped
  write_raw_png(scratch_file("ga.png"), 2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, {10, 255, 200, 0});
  Array ga = read_image(scratch_file("ga.png"));
  ASSERT_EQ(ga.shape(), Shape(1, 2));
  EXPECT_EQ(ga.data<std::uint8_t>()[0], 10);
  EXPECT_EQ(ga.data<std::uint8_t>()[1], 200);
  // RGBA, 16-bit big-endian samples: u16 luminance
  write_raw_png(scratch_file("rgba16.png"), 1, 1, PNG_COLOR_TYPE_RGB_ALPHA, 16,
                {0x12, 0x34, 0xab, 0xcd, 0xff, 0x00, 0x00, 0x01});
  Array rgba = read_image(scratch_file("rgba16.png"));
  ASSERT_EQ(rgba.dtype(), DType::u16);
  EXPECT_EQ(rgba.data<std::uint16_t>()[0], reference_luma(0x1234, 0xabcd, 0xff00));
  Array rgba8 = read_image_rgb(scratch_file("rgba16.png"));
  EXPECT_EQ(rgba8.data<std::uint8_t>()[0], static_cast<int>(std::lround(0x1234 * 255.0 / 65535.0)));
  // palette: expanded to RGB, then luminance
  const std::vector<png_color> palette{{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {30, 60, 90}};
  write_raw_png(scratch_file("pal.png"), 4, 1, PNG_COLOR_TYPE_PALETTE, 8, {0, 1, 2, 3}, palette);
  Array pal = read_image(scratch_file("pal.png"));
  ASSERT_EQ(pal.dtype(), DType::u8);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(pal.data<std::uint8_t>()[i], reference_luma(palette[i].red, palette[i].green, palette[i].blue));
  }
  // 1-bit grey: expanded to 0 / 255
  write_raw_png(scratch_file("bit.png"), 8, 1, PNG_COLOR_TYPE_GRAY, 1, {0b10100000});
  Array bit = read_image(scratch_file("bit.png"));
  ASSERT_EQ(bit.shape(), Shape(1, 8));
  EXPECT_EQ(bit.data<std::uint8_t>()[0], 255);
  EXPECT_EQ(bit.data<std::uint8_t>()[1], 0);
  EXPECT_EQ(bit.data<std::uint8_t>()[2], 255);
  EXPECT_EQ(bit.data<std::uint8_t>()[7], 0);
}

TEST(Image, PgmRoundTrip) {
  const Array a8 = ramp<std::uint8_t>(DType::u8, 5, 9, 5);
  write_pgm(scratch_file("a8.pgm"), a8);
  expect_equal<std::uint8_t>(read_image(scratch_file("a8.pgm")), a8);
  const Array a16 = ramp<std::uint16_t>(DType::u16, 6, 4, 2741);
  write_pgm(scratch_file("a16.pgm"), a16);
  expect_equal<std::uint16_t>(read_image(scratch_file("a16.pgm")), a16);
  const Array rgb = read_image_rgb(scratch_file("a8.pgm"));
  ASSERT_EQ(rgb.shape(), Shape(5, 9, 3));
  EXPECT_EQ(rgb.data<std::uint8_t>()[3 * 4 + 2], a8.data<std::uint8_t>()[4]);
}

TEST(Image, PgmTextAndComments) {
  write_text(scratch_file("p2.pgm"), "P2\n# a comment\n3 2\n# another\n1000\n0 1 2\n999 1000 500\n");
  const Array a = read_image(scratch_file("p2.pgm"));
  ASSERT_EQ(a.dtype(), DType::u16);
  ASSERT_EQ(a.shape(), Shape(2, 3));
  EXPECT_EQ(a.data<std::uint16_t>()[3], 999);
  EXPECT_EQ(a.data<std::uint16_t>()[5], 500);
  write_text(scratch_file("p5.pgm"), std::string("P5 2 1 # c\n255\n") + '\x05' + '\xfa');
  const Array b = read_image(scratch_file("p5.pgm"));
  ASSERT_EQ(b.dtype(), DType::u8);
  EXPECT_EQ(b.data<std::uint8_t>()[1], 0xfa);
}

TEST(Image, Errors) {
  EXPECT_THROW_WITH((void)read_image(scratch_file("missing.png")), weft::IoError, "missing.png");
  write_text(scratch_file("text.png"), "hello, not an image");
  EXPECT_THROW_WITH((void)read_image(scratch_file("text.png")), weft::IoError, "not a PNG or PGM");
  write_text(scratch_file("empty.png"), "");
  EXPECT_THROW_WITH((void)read_image(scratch_file("empty.png")), weft::IoError, "empty.png");

  write_png(scratch_file("cut.png"), ramp<std::uint8_t>(DType::u8, 64, 64, 1));
  truncate_file(scratch_file("cut.png"), 100);
  EXPECT_THROW_WITH((void)read_image(scratch_file("cut.png")), weft::IoError, "cut.png");
  write_pgm(scratch_file("cut.pgm"), ramp<std::uint8_t>(DType::u8, 8, 8, 1));
  truncate_file(scratch_file("cut.pgm"), 30);
  EXPECT_THROW_WITH((void)read_image(scratch_file("cut.pgm")), weft::IoError, "truncated");
  write_text(scratch_file("bad.pgm"), "P5\n0 4\n255\n");
  EXPECT_THROW_WITH((void)read_image(scratch_file("bad.pgm")), weft::IoError, "bad header");

  Array f = Array::host(DType::f32, Shape(2, 2));
  EXPECT_THROW_WITH(write_png(scratch_file("f.png"), f), weft::ConfigError, "f32");
  EXPECT_THROW_WITH(write_pgm(scratch_file("f.pgm"), Array()), weft::ConfigError, "empty");
  EXPECT_THROW_WITH(write_png(scratch_file("nodir/x.png"), ramp<std::uint8_t>(DType::u8, 2, 2, 1)), weft::IoError,
                    "nodir/x.png");
  EXPECT_EQ(leftover_temporaries(), 0);
}

TEST(Image, MiddleburyFrame) {
  const std::string path = shared_file("flow/middlebury/RubberWhale/frame10.png");
  if (path.empty()) GTEST_SKIP() << "shared data not found (WEFT_SHARED_DATA)";
  const Array grey = read_image(path);
  const Array rgb = read_image_rgb(path);
  ASSERT_EQ(grey.dtype(), DType::u8);
  ASSERT_EQ(grey.shape(), Shape(388, 584));
  ASSERT_EQ(rgb.shape(), Shape(388, 584, 3));
  const std::uint8_t* c = rgb.data<std::uint8_t>();
  double sum = 0;
  for (std::int64_t i = 0; i < grey.size(); ++i) {
    ASSERT_EQ(grey.data<std::uint8_t>()[i], reference_luma(c[3 * i], c[3 * i + 1], c[3 * i + 2]));
    sum += grey.data<std::uint8_t>()[i];
  }
  EXPECT_GT(sum / static_cast<double>(grey.size()), 10.0);  // a real picture, not black
}

}  // namespace
