// Every stored value type thresholded in its own precision: bits against a rule written out per
// type, and the values where a float on the way would change which voxels pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "weft/tasks/morphology/tasks.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/tasks/morphology/values.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

using morphology::Foreground;
using morphology::ValueType;

/// The foreground bits of `values` (host) as a vector of 0/1, through the library's packing.
template <class T>
std::vector<int> packed(const std::vector<T>& values, ValueType type, const Foreground& rule) {
  const auto n = static_cast<std::int64_t>(values.size());
  const Array bits = morphology::foreground_bits(values.data(), type, 1, 1, n, rule);
  std::vector<int> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back((bits.data<std::uint8_t>()[i / 8] >> (i % 8)) & 1);
  return out;
}

TEST(Values, NamesSizesAndTheRuleParse) {
  for (const char* name : {"bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"}) {
    const auto t = morphology::parse_value_type(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(morphology::value_type_name(*t), name);
  }
  EXPECT_FALSE(morphology::parse_value_type("f16").has_value());
  EXPECT_EQ(morphology::value_size(ValueType::i16), 2u);
  EXPECT_EQ(morphology::value_size(ValueType::u64), 8u);
  EXPECT_EQ(morphology::value_type_of(DType::i32), ValueType::i32);
  EXPECT_THROW((void)morphology::value_type_of(DType::f16), ConfigError);
  EXPECT_TRUE(morphology::exact_in_f32(ValueType::i16));
  EXPECT_FALSE(morphology::exact_in_f32(ValueType::i32));
  for (const char* bad : {"", "abc", "nan", "inf", "-inf", "1e400", "3x"})
    EXPECT_THROW((void)Foreground::parse(bad), ConfigError) << bad;
  EXPECT_EQ(Foreground::parse("9007199254740993").str(), "9007199254740993");  // not 9007199254740992
  EXPECT_EQ(Foreground::parse("-12").str(), "-12");
  EXPECT_EQ(Foreground::parse("2.5").str(), "2.5");
  EXPECT_THROW((void)morphology::ThresholdRule::parse("nan"), ConfigError);
  EXPECT_EQ(morphology::ThresholdRule::parse("18446744073709551615").foreground().str(), "18446744073709551615");
}

// Random values of every type against the rule written out in that type: x != 0, and x >= T
// for thresholds between, on and beyond the values (fractions: integers pass from the next one up).
TEST(Values, EveryTypeFollowsTheRule) {
  std::mt19937_64 rng(5);
  const auto check = [&](auto zero, ValueType type) {
    using T = decltype(zero);
    std::vector<T> v(1003);
    for (auto& x : v) {
      const std::uint64_t r = rng();
      if constexpr (std::is_floating_point_v<T>) x = r % 4 == 0 ? T{0} : static_cast<T>(static_cast<double>(r % 2001) / 8.0 - 100);
      else if (type == ValueType::b8) x = static_cast<T>(r % 2);
      else x = r % 4 == 0 ? T{0} : static_cast<T>(r);  // every bit pattern of T, negative ones too
    }
    for (const double t : {-1e30, -100.5, -3.0, 0.0, 0.5, 1.0, 7.25, 100.0, 1e30}) {
      const std::vector<int> got = packed(v, type, Foreground(t));
      for (std::size_t i = 0; i < v.size(); ++i) {
        // x >= t exactly: long double holds every value of these types and these thresholds.
        const int want = static_cast<long double>(v[i]) >= static_cast<long double>(t) ? 1 : 0;
        ASSERT_EQ(got[i], want) << morphology::value_type_name(type) << " " << +v[i] << " >= " << t;
      }
    }
    const std::vector<int> nonzero = packed(v, type, {});
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(nonzero[i], v[i] != T{0} ? 1 : 0);
  };
  check(std::uint8_t{}, ValueType::b8);
  check(std::int8_t{}, ValueType::i8);
  check(std::uint8_t{}, ValueType::u8);
  check(std::int16_t{}, ValueType::i16);
  check(std::uint16_t{}, ValueType::u16);
  check(std::int32_t{}, ValueType::i32);
  check(std::uint32_t{}, ValueType::u32);
  check(std::int64_t{}, ValueType::i64);
  check(std::uint64_t{}, ValueType::u64);
  check(float{}, ValueType::f32);
  check(double{}, ValueType::f64);
}

// The values where a conversion to float (or to double, for 64-bit integers) would change the
// answer: each is compared in its own type.
TEST(Values, NoRoundingChangesWhichVoxelsPass) {
  // i32 past 2^24: as floats, 16777216 and 16777217 are one number.
  const std::vector<std::int32_t> i32{16777216, 16777217, 16777218};
  EXPECT_EQ(packed(i32, ValueType::i32, Foreground::parse("16777217")), (std::vector<int>{0, 1, 1}));
  // u32 near its top: 4294967295 as a float is 4294967296.
  const std::vector<std::uint32_t> u32{4294967294u, 4294967295u};
  EXPECT_EQ(packed(u32, ValueType::u32, Foreground::parse("4294967295")), (std::vector<int>{0, 1}));
  // u64 past 2^53: an integer threshold is kept exactly, not rounded to a double.
  const std::uint64_t two53 = std::uint64_t{1} << 53;
  const std::vector<std::uint64_t> u64{two53, two53 + 1, two53 + 2, std::numeric_limits<std::uint64_t>::max()};
  EXPECT_EQ(packed(u64, ValueType::u64, Foreground::parse("9007199254740993")), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(packed(u64, ValueType::u64, Foreground::parse("18446744073709551615")), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(packed(u64, ValueType::u64, Foreground::parse("18446744073709551616")), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(packed(u64, ValueType::u64, Foreground::parse("-5")), (std::vector<int>{1, 1, 1, 1}));
  const std::vector<std::int64_t> i64{std::numeric_limits<std::int64_t>::min(), -1, 0,
                                      std::numeric_limits<std::int64_t>::max()};
  EXPECT_EQ(packed(i64, ValueType::i64, Foreground::parse("-9223372036854775808")), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(packed(i64, ValueType::i64, Foreground::parse("-9223372036854775807")), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(packed(i64, ValueType::i64, Foreground::parse("9223372036854775807")), (std::vector<int>{0, 0, 0, 1}));
  // f64 values a float cannot tell apart from 0.1.
  const std::vector<double> f64{std::nextafter(0.1, 0.0), 0.1, std::nextafter(0.1, 1.0), std::nan("")};
  EXPECT_EQ(packed(f64, ValueType::f64, Foreground(0.1)), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(packed(f64, ValueType::f64, {}), (std::vector<int>{1, 1, 1, 1}));  // NaN is not zero
  // Fractions against integers, negative ones too.
  const std::vector<std::int8_t> i8{-128, -2, -1, 0, 127};
  EXPECT_EQ(packed(i8, ValueType::i8, Foreground(-1.5)), (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(packed(i8, ValueType::i8, Foreground(127.5)), (std::vector<int>{0, 0, 0, 0, 0}));
  const std::vector<std::uint16_t> u16{2, 3};
  EXPECT_EQ(packed(u16, ValueType::u16, Foreground(2.5)), (std::vector<int>{0, 1}));
}

TEST(Values, OtsuOfEveryType) {
  // Two levels in i16 (CT-like, negative background): the threshold lies between them.
  std::vector<std::int16_t> ct(1000);
  for (std::size_t i = 0; i < ct.size(); ++i) ct[i] = static_cast<std::int16_t>(i < 600 ? -1000 + int(i % 7) : 1200 + int(i % 5));
  const double t = morphology::otsu_threshold(ct.data(), ValueType::i16, static_cast<std::int64_t>(ct.size()));
  EXPECT_GT(t, -994);
  EXPECT_LE(t, 1200);
  // u64 beyond 2^53 (1024 bins between the extremes, as doubles) and i8.
  std::vector<std::uint64_t> big(100);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = (std::uint64_t{1} << 60) + (i < 50 ? 0 : std::uint64_t{1} << 58);
  const double tb = morphology::otsu_threshold(big.data(), ValueType::u64, 100);
  EXPECT_GT(tb, static_cast<double>(std::uint64_t{1} << 60));
  EXPECT_LE(tb, static_cast<double>((std::uint64_t{1} << 60) + (std::uint64_t{1} << 58)));
  const std::vector<std::int8_t> small{-100, -100, -99, 50, 51, 52};
  const double ts = morphology::otsu_threshold(small.data(), ValueType::i8, 6);
  EXPECT_GT(ts, -99);
  EXPECT_LE(ts, 50);
  EXPECT_THROW((void)morphology::otsu_threshold(small.data(), ValueType::i8, 0), ConfigError);
  // Conversion for the median: exact types only.
  std::vector<float> f(6);
  morphology::values_to_f32(small.data(), ValueType::i8, 6, f.data());
  EXPECT_EQ(f[0], -100.0f);
  EXPECT_THROW(morphology::values_to_f32(big.data(), ValueType::u64, 100, f.data()), ConfigError);
}

}  // namespace
}  // namespace weft
