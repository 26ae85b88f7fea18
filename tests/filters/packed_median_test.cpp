// The packed u8/u16 3×3 and 5×5 median strips of the CUDA path (src/detail/packed_median.hpp),
// run here on the host over every strip of an image, exactly as the kernel's grid would, against
// the independent sort-based reference. Exact. Widths sweep the strip (16 u8 / 8 u16 pixels)
// −1/0/+1 and the ±2 halo of the 16-byte fast path; heights the row pairs/strips ±1.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../../tasks/filters/src/detail/interleaved_median.hpp"
#include "../../tasks/filters/src/detail/packed_median.hpp"
#include "reference.hpp"

namespace weft::filters {
namespace {

using test::get;

/// Every strip of `in` through `strip(src, dst, extent, border, z, y0, x0, aligned)`, as the grid would.
template <class T, int kPixels, int kRows, class Strip>
Array run_strips(const Array& in, Border b, bool aligned, Strip strip) {
  const bool planar3 = in.shape().ndim() == 3;
  const device::Extent e{planar3 ? in.shape()[0] : 1, in.shape()[planar3 ? 1 : 0], in.shape()[planar3 ? 2 : 1]};
  Array out = Array::host(in.dtype(), in.shape());
  for (long long z = 0; z < e.slices; ++z)
    for (long long y0 = 0; y0 < e.ny; y0 += kRows)
      for (long long x0 = 0; x0 < e.nx; x0 += kPixels)
        strip(in.data<T>(), out.data<T>(), e, static_cast<int>(b), z, y0, x0, aligned);
  return out;
}

/// Per-slice reference of a [slices, ny, nx] array filtered plane by plane.
std::vector<double> planar_reference(const Array& in, int size, Border b) {
  if (in.shape().ndim() == 2) return test::median_reference(in, size, b);
  const std::int64_t ny = in.shape()[1], nx = in.shape()[2];
  std::vector<double> all;
  for (std::int64_t z = 0; z < in.shape()[0]; ++z) {
    Array plane = Array::host(in.dtype(), Shape(ny, nx));
    const std::size_t bytes = plane.bytes();
    std::memcpy(plane.raw(), static_cast<const char*>(in.raw()) + z * bytes, bytes);
    const std::vector<double> r = test::median_reference(plane, size, b);
    all.insert(all.end(), r.begin(), r.end());
  }
  return all;
}

/// kInterleaved: the interleaved 3×3 strip (interleaved_median.hpp, fp16 keys if kHalfKeys), else
/// the packed K×K strip of packed_median.hpp; kAligned: median3_aligned_strip on the aligned
/// widths with a clamp or mirror border (the generic interleaved strip otherwise, as the launcher),
/// with kSums of its network computed by wrapping sums (FmaSums).
template <class T, int K, int kRows, bool kInterleaved = false, bool kHalfKeys = false, bool kAligned = false,
          int kSums = device::kNoSums>
void check_type(DType t, double range) {
  std::uint32_t seed = 7;
  constexpr int strip = device::Strip<T>::kPixels;
  std::vector<Shape> shapes;
  for (std::int64_t ny : {1, 2, 3, kRows - 1, kRows, kRows + 1, 2 * kRows + 3})
    for (std::int64_t nx : {1, 2, 3, strip - 1, strip, strip + 1, strip + 2, 2 * strip, 2 * strip + 3, 5 * strip})
      if (ny > 0) shapes.emplace_back(ny, nx);
  shapes.emplace_back(2, 9, 2 * strip);
  for (const Shape& s : shapes)
    for (Border b : {Border::clamp, Border::mirror, Border::zero})
      for (bool aligned : {false, true}) {
        const std::int64_t nx = s[s.ndim() - 1];
        if (aligned && (nx * static_cast<std::int64_t>(sizeof(T))) % 16 != 0) continue;
        const Array in = test::random_array(t, s, range, seed++);
        Array out;
        if constexpr (kAligned)
          out = aligned && b != Border::zero && s[s.ndim() - 2] >= 2
                    ? run_strips<T, strip, kRows>(in, b, true, device::median3_aligned_strip<T, kRows, kSums>)
                        : run_strips<T, strip, kRows>(in, b, false, device::median3_interleaved_strip<T, false, kRows>);
        else if constexpr (kInterleaved)
          out = run_strips<T, strip, kRows>(in, b, aligned, device::median3_interleaved_strip<T, kHalfKeys, kRows>);
        else
          out = run_strips<T, strip, kRows>(in, b, aligned, device::median_strip<T, K, kRows>);
        const std::vector<double> ref = planar_reference(in, K, b);
        for (std::int64_t i = 0; i < in.size(); ++i)
          ASSERT_EQ(get(out, i), ref[i]) << dtype_name(t) << " " << s.str() << " size " << K << " "
                                         << border_name(b) << (aligned ? " aligned" : "") << " at " << i;
      }
}

TEST(PackedMedian, ThreeByThreeU8IsExact) { check_type<std::uint8_t, 3, 4>(DType::u8, 256.0); }
TEST(PackedMedian, ThreeByThreeU16IsExact) { check_type<std::uint16_t, 3, 4>(DType::u16, 65536.0); }
TEST(PackedMedian, ThreeByThreeFewLevelsIsExact) { check_type<std::uint8_t, 3, 2>(DType::u8, 4.0); }  // ties
TEST(PackedMedian, FiveByFiveU8IsExact) { check_type<std::uint8_t, 5, 2>(DType::u8, 256.0); }
TEST(PackedMedian, FiveByFiveU16IsExact) { check_type<std::uint16_t, 5, 2>(DType::u16, 65536.0); }
TEST(PackedMedian, FiveByFiveFewLevelsIsExact) { check_type<std::uint16_t, 5, 3>(DType::u16, 3.0); }

// Interleaved 3×3 strips (pixels j, j + half of the strip per word): high-byte u8 keys, fp16 u8
// keys, u16 keys; odd row counts (a last unpaired row) and ties.
TEST(InterleavedMedian, U8KeysAreExact) { check_type<std::uint8_t, 3, 4, true>(DType::u8, 256.0); }
TEST(InterleavedMedian, U8HalfKeysAreExact) { check_type<std::uint8_t, 3, 2, true, true>(DType::u8, 256.0); }
TEST(InterleavedMedian, U16KeysAreExact) { check_type<std::uint16_t, 3, 8, true>(DType::u16, 65536.0); }
TEST(InterleavedMedian, OddRowCountsAndTiesAreExact) {
  check_type<std::uint8_t, 3, 1, true>(DType::u8, 4.0);
  check_type<std::uint8_t, 3, 3, true, true>(DType::u8, 3.0);
  check_type<std::uint16_t, 3, 5, true>(DType::u16, 4.0);
}

// Aligned strips (32-bit offsets, border per row and edge): 2..8 rows, u8 and u16, ties; every
// border on heights of 1, 2, 3 and around the row groups.
TEST(InterleavedMedian, AlignedStripsAreExact) {
  check_type<std::uint8_t, 3, 2, true, false, true>(DType::u8, 256.0);
  check_type<std::uint8_t, 3, 6, true, false, true>(DType::u8, 256.0);
  check_type<std::uint8_t, 3, 8, true, false, true>(DType::u8, 3.0);
  check_type<std::uint16_t, 3, 4, true, false, true>(DType::u16, 65536.0);
  check_type<std::uint16_t, 3, 6, true, false, true>(DType::u16, 4.0);
}

// The same strips with the medians (and the columns' middle values) as sums less max and min:
// full-range u8 and u16 keys, whose wrapping word sums carry between lanes, and ties.
TEST(InterleavedMedian, AlignedStripsBySumsAreExact) {
  constexpr int kMedians = device::kSumMedians, kColumns = device::kSumColumns;
  check_type<std::uint8_t, 3, 2, true, false, true, kMedians>(DType::u8, 256.0);
  check_type<std::uint8_t, 3, 8, true, false, true, kColumns>(DType::u8, 256.0);
  check_type<std::uint8_t, 3, 4, true, false, true, kColumns>(DType::u8, 3.0);
  check_type<std::uint16_t, 3, 4, true, false, true, kMedians>(DType::u16, 65536.0);
  check_type<std::uint16_t, 3, 8, true, false, true, kColumns>(DType::u16, 65536.0);
  check_type<std::uint16_t, 3, 2, true, false, true, kColumns>(DType::u16, 4.0);
}

}  // namespace
}  // namespace weft::filters
