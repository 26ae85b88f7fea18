// CPU filters against the independent references (reference.cpp).
// Tolerances: medians exact; f32 convolution |out − ref| ≤ 1e-6 · Σ|k·x| (relative to the sum of
// the magnitudes of the products, which is |ref| itself for non-negative kernels and data);
// u8/u16 within rounding (|out − saturate(ref)| ≤ 0.5 + that bound); f16 additionally within half
// an f16 ulp (2^-11 · |ref|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference.hpp"
#include "tolerance.hpp"
#include "weft/tasks/filters/filters.hpp"
#include "weft/util/error.hpp"

namespace weft::filters {
namespace {

using test::get;

const Border kBorders[] = {Border::clamp, Border::mirror, Border::zero};
const Shape kImages[] = {Shape(1, 1), Shape(2, 3), Shape(1, 17), Shape(37, 29), Shape(33, 64)};

std::string describe(const Array& a, int size, Border b) {
  return std::string(dtype_name(a.dtype())) + " " + a.shape().str() + " size " + std::to_string(size) + " " +
         std::string(border_name(b));
}

TEST(Median, Matches2DReferenceExactly) {
  std::uint32_t seed = 1;
  for (DType t : {DType::u8, DType::u16, DType::f32})
    for (const Shape& s : kImages)
      for (int size : {3, 5, 7, 9})
        for (Border b : kBorders) {
          const Array in = test::random_array(t, s, t == DType::u8 ? 8.0 : 1000.0, seed++);  // u8: many ties
          const Array out = median(in, size, b);
          const std::vector<double> ref = test::median_reference(in, size, b);
          ASSERT_EQ(out.shape(), in.shape());
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(get(out, i), ref[i]) << describe(in, size, b) << " at " << i;
        }
}

TEST(Median, Matches3DReferenceExactly) {
  std::uint32_t seed = 100;
  for (DType t : {DType::u8, DType::u16, DType::f32})
    for (const Shape& s : {Shape(1, 1, 1), Shape(3, 2, 5), Shape(9, 11, 13)})
      for (int size : {3, 5})
        for (Border b : kBorders) {
          const Array in = test::random_array(t, s, 300.0, seed++);
          const Array out = median(in, size, b);
          const std::vector<double> ref = test::median_reference(in, size, b);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(get(out, i), ref[i]) << describe(in, size, b) << " at " << i;
        }
}

TEST(Median, RejectsBadArguments) {
  const Array img = test::random_array(DType::u8, Shape(8, 8), 10, 1);
  EXPECT_THROW((void)median(img, 4, Border::clamp), ConfigError);
  EXPECT_THROW((void)median(img, 11, Border::clamp), ConfigError);
  EXPECT_THROW((void)median(test::random_array(DType::u8, Shape(4, 4, 4), 10, 1), 7), ConfigError);
  EXPECT_THROW((void)median(test::random_array(DType::f16, Shape(4, 4), 10, 1), 3), ConfigError);
  EXPECT_THROW((void)median(test::random_array(DType::u8, Shape(16), 10, 1), 3), ConfigError);
}

std::vector<float> random_kernel(int ksize, bool signed_values, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(signed_values ? -1.0f : 0.0f, 1.0f);
  std::vector<float> k(static_cast<std::size_t>(ksize) * ksize);
  float sum = 0;
  for (float& v : k) sum += std::abs(v = u(rng));
  for (float& v : k) v /= sum;  // keeps integer outputs in range
  return k;
}

TEST(Convolve, MatchesDoubleReferenceForEveryTypeSizeAndBorder) {
  std::uint32_t seed = 7;
  for (DType t : {DType::f32, DType::u8, DType::u16, DType::f16})
    for (const Shape& s : {Shape(1, 1), Shape(2, 3), Shape(37, 29), Shape(70, 67)})
      for (int size : {1, 3, 5, 7, 15, 63})
        for (Border b : kBorders) {
          if (size == 63 && s[0] < 70 && b != Border::mirror) continue;  // large kernel: one image is enough
          const Array in = test::random_array(t, s, t == DType::u8 ? 256.0 : 1000.0, seed);
          const std::vector<float> k = random_kernel(size, t == DType::f32 && seed % 2 == 0, seed);
          ++seed;
          const Array out = convolve(in, k, size, b);
          std::vector<double> l1;
          const std::vector<double> ref =
              test::convolve_reference(in, std::vector<double>(k.begin(), k.end()), size, b, &l1);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                << describe(in, size, b) << " at " << i << ": " << get(out, i) << " vs " << ref[i];
        }
}

TEST(Convolve, ThreeDimensionalArraysAreFilteredSliceBySlice) {
  const Array in = test::random_array(DType::f32, Shape(3, 9, 10), 10.0, 3);
  const std::vector<float> k = random_kernel(5, true, 3);
  const Array out = convolve(in, k, 5, Border::mirror);
  std::vector<double> l1;
  const std::vector<double> ref = test::convolve_reference(in, {k.begin(), k.end()}, 5, Border::mirror, &l1);
  for (std::int64_t i = 0; i < in.size(); ++i) ASSERT_TRUE(test::within_tolerance(DType::f32, get(out, i), ref[i], l1[i]));
}

TEST(Convolve, SeparableMatchesTheOuterProduct) {
  std::uint32_t seed = 11;
  for (DType t : {DType::f32, DType::u8, DType::f16})
    for (int size : {1, 3, 7, 31})
      for (Border b : kBorders) {
        std::mt19937 rng(seed++);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        std::vector<float> row(size), col(size);
        float sr = 0, sc = 0;
        for (float& v : row) sr += v = u(rng);
        for (float& v : col) sc += v = u(rng);
        for (float& v : row) v /= sr;
        for (float& v : col) v /= sc;
        std::vector<double> full(static_cast<std::size_t>(size) * size);
        for (int i = 0; i < size; ++i)
          for (int j = 0; j < size; ++j) full[i * size + j] = static_cast<double>(col[i]) * row[j];
        const Array in = test::random_array(t, Shape(41, 35), 200.0, seed);
        const Array out = convolve_separable(in, row, col, b);
        std::vector<double> l1;
        const std::vector<double> ref = test::convolve_reference(in, full, size, b, &l1);
        for (std::int64_t i = 0; i < in.size(); ++i)
          ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
              << describe(in, size, b) << " at " << i << ": " << get(out, i) << " vs " << ref[i];
      }
}

TEST(Convolve, RejectsBadArguments) {
  const Array img = test::random_array(DType::f32, Shape(8, 8), 1, 1);
  EXPECT_THROW((void)convolve(img, std::vector<float>(16, 0.f), 4), ConfigError);
  EXPECT_THROW((void)convolve(img, std::vector<float>(65 * 65, 0.f), 65), ConfigError);
  EXPECT_THROW((void)convolve(img, std::vector<float>(8, 0.f), 3), ConfigError);
  EXPECT_THROW((void)convolve(test::random_array(DType::f32, Shape(8), 1, 1), std::vector<float>(9, 0.f), 3),
               ConfigError);
  EXPECT_THROW((void)parse_border("wrap"), ConfigError);
}

TEST(Gaussian, KernelIsNormalisedSymmetricAndSizedFromSigma) {
  const std::vector<float> k = gaussian_kernel(2.0);
  ASSERT_EQ(k.size(), 13u);
  double sum = 0;
  for (std::size_t i = 0; i < k.size(); ++i) {
    sum += k[i];
    EXPECT_FLOAT_EQ(k[i], k[k.size() - 1 - i]);
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(gaussian_kernel(50.0).size(), 63u);
  EXPECT_THROW((void)gaussian_kernel(0.0), ConfigError);
  EXPECT_THROW((void)gaussian_kernel(1.0, 4), ConfigError);
}

TEST(Gaussian, BlurKeepsConstantsAndMatchesTheReference) {
  Array flat = Array::host(DType::u16, Shape(20, 23));
  for (std::int64_t i = 0; i < flat.size(); ++i) flat.data<std::uint16_t>()[i] = 777;
  const Array blurred = gaussian_blur(flat, 1.5);
  for (std::int64_t i = 0; i < flat.size(); ++i) ASSERT_EQ(blurred.data<std::uint16_t>()[i], 777);

  const Array in = test::random_array(DType::f32, Shape(31, 27), 1.0, 5);
  const std::vector<float> k = gaussian_kernel(1.2);
  std::vector<double> full(k.size() * k.size());
  for (std::size_t i = 0; i < k.size(); ++i)
    for (std::size_t j = 0; j < k.size(); ++j) full[i * k.size() + j] = static_cast<double>(k[i]) * k[j];
  std::vector<double> l1;
  const std::vector<double> ref =
      test::convolve_reference(in, full, static_cast<int>(k.size()), Border::mirror, &l1);
  const Array out = gaussian_blur(in, 1.2, Border::mirror);
  for (std::int64_t i = 0; i < in.size(); ++i) ASSERT_TRUE(test::within_tolerance(DType::f32, get(out, i), ref[i], l1[i]));
}

TEST(Gaussian, PyramidHalvesEachLevelFromTheBlurredImage) {
  const Array in = test::random_array(DType::u8, Shape(37, 20), 256.0, 9);
  const std::vector<Array> levels = gaussian_pyramid(in, 7, 1.0);
  ASSERT_EQ(levels.size(), 7u);
  const std::int64_t expect[7][2] = {{37, 20}, {19, 10}, {10, 5}, {5, 3}, {3, 2}, {2, 1}, {1, 1}};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(levels[i].shape(), Shape(expect[i][0], expect[i][1])) << "level " << i;
  const Array blurred = gaussian_blur(in, 1.0);
  for (std::int64_t y = 0; y < 19; ++y)
    for (std::int64_t x = 0; x < 10; ++x)
      ASSERT_EQ(levels[1].data<std::uint8_t>()[y * 10 + x], blurred.data<std::uint8_t>()[(2 * y) * 20 + 2 * x]);
}

}  // namespace
}  // namespace weft::filters
