// CPU granulometry against the literal definition, on synthetic volumes, and on trivial input.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "brute_force.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

using morphology::Element;
constexpr Element kElements[] = {Element::octahedron, Element::cube, Element::ball};

TEST(Granulometry, OpeningMatchesDefinition) {
  // Odd, unequal dimensions; dense enough that openings up to size 6 keep something near borders.
  const Shape shapes[] = {Shape(13, 11, 9), Shape(7, 17, 5), Shape(1, 15, 21)};
  std::uint32_t seed = 1;
  for (const Shape& shape : shapes)
    for (double density : {0.6, 0.9, 0.97})
      for (Element e : kElements) {
        Array mask = test::random_mask(shape, density, seed++);
        for (int n = 0; n <= 6; ++n) {
          Array expected = test::brute_force_opening(mask, e, n);
          Array got = morphology::opening_cpu(mask, e, n);
          ASSERT_TRUE(test::same(expected, got)) << morphology::element_name(e) << " n=" << n << " shape "
                                                 << shape.str() << " density " << density;
        }
      }
}

TEST(Granulometry, CurveMatchesDefinition) {
  std::uint32_t seed = 100;
  for (Element e : kElements) {
    Array mask = test::random_mask(Shape(15, 13, 11), 0.95, seed++);
    morphology::GranulometryOptions options{e, 6, true, {}};
    auto result = morphology::granulometry_cpu(mask, options);
    ASSERT_EQ(result.remaining.size(), 7u);
    ASSERT_EQ(result.spectrum.size(), 7u);
    std::vector<std::int64_t> expected;
    std::vector<Array> openings;
    for (int n = 0; n <= 7; ++n) {
      openings.push_back(test::brute_force_opening(mask, e, n));
      expected.push_back(test::count_foreground(openings.back()));
    }
    for (int n = 0; n <= 6; ++n) {
      EXPECT_EQ(result.remaining[n], expected[n]) << morphology::element_name(e) << " n=" << n;
      EXPECT_EQ(result.spectrum[n], expected[n] - expected[n + 1]) << morphology::element_name(e) << " n=" << n;
    }
    // Size map: the largest n ≤ 6 whose opening keeps the voxel, −1 on background.
    const std::int32_t* s = result.size_map.data<std::int32_t>();
    const std::uint8_t* m = mask.data<std::uint8_t>();
    for (std::int64_t i = 0; i < mask.size(); ++i) {
      int want = m[i] ? 0 : -1;
      for (int n = 1; n <= 6; ++n)
        if (openings[n].data<std::uint8_t>()[i]) want = n;
      ASSERT_EQ(s[i], want) << morphology::element_name(e) << " voxel " << i;
    }
  }
}

// The size map in a narrower form: each voxel's n (or 2n + 1) in u8/u16/i32, the background the
// type's largest value (or −1), and forms too narrow for the sizes refused before any work.
TEST(Granulometry, SizeMapFormsHoldTheComputedValues) {
  using morphology::SizeMapForm;
  EXPECT_EQ(SizeMapForm::smallest(254, false).dtype, DType::u8);
  EXPECT_EQ(SizeMapForm::smallest(255, false).dtype, DType::u16);
  EXPECT_EQ(SizeMapForm::smallest(126, true).dtype, DType::u8);
  EXPECT_EQ(SizeMapForm::smallest(127, true).dtype, DType::u16);
  EXPECT_EQ(SizeMapForm::smallest(65534, false).dtype, DType::u16);
  EXPECT_EQ(SizeMapForm::smallest(65535, false).dtype, DType::i32);
  Array mask = test::random_mask(Shape(12, 14, 11), 0.93, 41);
  for (Element e : kElements) {
    const auto computed = morphology::granulometry_cpu(mask, {e, 5, true, {}});
    const std::int32_t* want = computed.size_map.data<std::int32_t>();
    for (const SizeMapForm form : {SizeMapForm{DType::u8, false}, SizeMapForm{DType::u8, true},
                                   SizeMapForm{DType::u16, true}, SizeMapForm{DType::i32, true}}) {
      morphology::GranulometryOptions options{e, 5, true, form};
      const auto result = morphology::granulometry_cpu(mask, options);
      ASSERT_EQ(result.size_map.dtype(), form.dtype);
      ASSERT_EQ(result.size_map.shape(), computed.size_map.shape());
      EXPECT_EQ(result.remaining, computed.remaining);
      for (std::int64_t i = 0; i < mask.size(); ++i) {
        const std::int64_t expected = want[i] < 0 ? form.background() : form.value(want[i]);
        const std::int64_t got = form.dtype == DType::u8    ? result.size_map.data<std::uint8_t>()[i]
                                 : form.dtype == DType::u16 ? result.size_map.data<std::uint16_t>()[i]
                                                            : result.size_map.data<std::int32_t>()[i];
        ASSERT_EQ(got, expected) << morphology::element_name(e) << " " << dtype_name(form.dtype) << " voxel " << i;
      }
    }
  }
  // 2 × 127 + 1 = 255 is u8's background: refused.
  Array big = test::random_mask(Shape(3, 4, 5), 0.5, 3);
  EXPECT_THROW((void)morphology::granulometry_cpu(big, {Element::cube, 127, true, SizeMapForm{DType::u8, true}}),
               ConfigError);
}

TEST(Granulometry, DistanceTransformsAreExact) {
  Array mask = test::random_mask(Shape(9, 12, 10), 0.8, 7);
  const std::uint8_t* m = mask.data<std::uint8_t>();
  for (Element e : kElements) {
    Array d = morphology::distance_transform_cpu(mask, e, false);
    const std::int32_t* f = d.data<std::int32_t>();
    for (int z = 0; z < 9; ++z)
      for (int y = 0; y < 12; ++y)
        for (int x = 0; x < 10; ++x) {
          std::int64_t best = morphology::device::kInfinity;
          for (int z2 = 0; z2 < 9; ++z2)
            for (int y2 = 0; y2 < 12; ++y2)
              for (int x2 = 0; x2 < 10; ++x2) {
                if (m[(z2 * 12 + y2) * 10 + x2]) continue;
                const int dz = std::abs(z - z2), dy = std::abs(y - y2), dx = std::abs(x - x2);
                const std::int64_t v = e == Element::octahedron ? dz + dy + dx
                                       : e == Element::cube     ? std::max({dz, dy, dx})
                                                                : dz * dz + dy * dy + dx * dx;
                best = std::min(best, v);
              }
          ASSERT_EQ(f[(z * 12 + y) * 10 + x], best) << morphology::element_name(e);
        }
  }
}

/// Separated objects of known sizes: the spectrum is non-zero exactly at their sizes.
struct Placed { int z, y, x, r; };

Array draw(Shape shape, const std::vector<Placed>& objects, Element e) {
  Array a = Array::host(DType::u8, shape);
  a.zero();
  std::uint8_t* p = a.data<std::uint8_t>();
  for (const auto& o : objects)
    for (int z = -o.r; z <= o.r; ++z)
      for (int y = -o.r; y <= o.r; ++y)
        for (int x = -o.r; x <= o.r; ++x) {
          const bool in = e == Element::octahedron ? std::abs(z) + std::abs(y) + std::abs(x) <= o.r
                          : e == Element::cube     ? true
                                                   : z * z + y * y + x * x <= o.r * o.r;
          if (in) p[((o.z + z) * shape[1] + (o.y + y)) * shape[2] + (o.x + x)] = 1;
        }
  return a;
}

TEST(Granulometry, SpectrumPeaksAtObjectSizes) {
  const std::vector<Placed> objects = {{12, 12, 12, 3}, {12, 12, 40, 5}, {12, 40, 20, 5},
                                       {40, 20, 20, 8}, {40, 44, 44, 11}, {12, 44, 56, 2}};
  const Shape shape(60, 62, 71);
  for (Element e : kElements) {
    Array mask = draw(shape, objects, e);
    auto result = morphology::granulometry_cpu(mask, {e, -1, false, {}});
    ASSERT_EQ(result.remaining.size(), 13u) << morphology::element_name(e);  // n = 0 .. 12, last is 0
    EXPECT_EQ(result.remaining.back(), 0);
    std::vector<std::int64_t> volume(13, 0);
    for (const auto& o : objects) volume[o.r] += test::count_foreground(draw(shape, {o}, e));
    for (int n = 0; n <= 12; ++n) {
      if (e != Element::ball) {
        // nB ⊕ (r−n)B = rB for the octahedron and the cube: objects stay whole up to their size.
        EXPECT_EQ(result.spectrum[n], volume[n]) << morphology::element_name(e) << " n=" << n;
      } else {
        // A digital ball of radius r is eroded to its centre at r, to nothing at r + 1.
        if (volume[n] == 0 && n > 0) {
          std::int64_t larger = 0;
          for (int k = n; k <= 12; ++k) larger += volume[k];
          EXPECT_LE(result.remaining[n], larger) << "n=" << n;
        } else {
          EXPECT_GE(result.spectrum[n], volume[n]) << "n=" << n;
        }
      }
    }
  }
}

TEST(Granulometry, TrivialVolumes) {
  Array empty = Array::host(DType::u8, Shape(5, 6, 7));
  empty.zero();
  for (Element e : kElements) {
    auto r = morphology::granulometry_cpu(empty, {e, -1, false, {}});
    EXPECT_EQ(r.remaining, std::vector<std::int64_t>{0});
    EXPECT_EQ(r.spectrum, std::vector<std::int64_t>{0});
    r = morphology::granulometry_cpu(empty, {e, 3, false, {}});
    EXPECT_EQ(r.remaining, (std::vector<std::int64_t>{0, 0, 0, 0}));
  }
  Array full = Array::host(DType::u8, Shape(5, 6, 7));
  std::fill_n(full.data<std::uint8_t>(), full.size(), 1);
  for (Element e : kElements) {
    EXPECT_THROW((void)morphology::granulometry_cpu(full, {e, -1, false, {}}), ConfigError);
    auto r = morphology::granulometry_cpu(full, {e, 4, false, {}});
    EXPECT_EQ(r.remaining, (std::vector<std::int64_t>(5, 210)));
    EXPECT_EQ(r.spectrum, (std::vector<std::int64_t>(5, 0)));  // remaining(5) is 210 too
  }
  // A single voxel: gone at size 1.
  Array one = Array::host(DType::u8, Shape(3, 3, 3));
  one.zero();
  one.data<std::uint8_t>()[13] = 1;
  auto r = morphology::granulometry_cpu(one, {Element::ball, -1, false, {}});
  EXPECT_EQ(r.remaining, (std::vector<std::int64_t>{1, 0}));
  EXPECT_THROW((void)morphology::granulometry_cpu(Array::host(DType::u8, Shape(4, 4)), {}), ConfigError);
}

// The GPU runs the per-size passes on u16 values and u16 envelope stacks: the same line math must
// give the i32 results, saturated at 65535.
TEST(LineTransforms, NarrowTypesMatchInt32) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 300);
    std::vector<std::int32_t> wide(n);
    for (auto& v : wide) v = rng() % 4 == 0 ? static_cast<std::int32_t>(rng() % 3000) : morphology::device::kInfinity;
    std::vector<std::uint16_t> narrow(n);
    auto narrowed = [](std::int32_t v) { return static_cast<std::uint16_t>(std::min<std::int32_t>(v, 0xFFFF)); };
    for (int i = 0; i < n; ++i) narrow[i] = narrowed(wide[i]);
    std::vector<std::int32_t> w2 = wide, s32(3 * n);
    std::vector<std::uint16_t> n2 = narrow, s16(3 * n);
    morphology::device::envelope_line<morphology::device::Parabola>(w2.data(), 1, n, morphology::device::kInfinity,
                                                                   s32.data(), s32.data() + n, s32.data() + 2 * n, 1);
    morphology::device::envelope_line<morphology::device::Parabola>(n2.data(), 1, n, std::uint16_t{0xFFFF},
                                                                   s16.data(), s16.data() + n, s16.data() + 2 * n, 1);
    for (int i = 0; i < n; ++i) ASSERT_EQ(n2[i], narrowed(w2[i])) << "parabola n=" << n << " i=" << i;
    w2 = wide;
    n2 = narrow;
    morphology::device::cone_line(w2.data(), 1, n);
    morphology::device::cone_line(n2.data(), 1, n, std::uint16_t{0xFFFF});
    for (int i = 0; i < n; ++i) ASSERT_EQ(n2[i], narrowed(w2[i])) << "cone";
    const std::int64_t r = rng() % 40;
    w2 = wide;
    n2 = narrow;
    morphology::device::window_line(w2.data(), 1, n, morphology::device::kInfinity, r);
    morphology::device::window_line(n2.data(), 1, n, std::uint16_t{0xFFFF}, r);
    for (int i = 0; i < n; ++i) ASSERT_EQ(n2[i], narrowed(w2[i])) << "window";
  }
}

TEST(Threshold, OtsuSeparatesTwoLevels) {
  Array v = Array::host(DType::u16, Shape(4, 4, 4));
  auto* p = v.data<std::uint16_t>();
  for (int i = 0; i < 64; ++i) p[i] = i < 40 ? 100 + i % 3 : 900 + i % 5;
  const double t = morphology::otsu_threshold(v);
  EXPECT_GT(t, 102);
  EXPECT_LE(t, 900);
  EXPECT_EQ(test::count_foreground(morphology::threshold_mask(v, t)), 24);
  Array f = Array::host(DType::f32, Shape(2, 2, 2));
  for (int i = 0; i < 8; ++i) f.data<float>()[i] = i < 4 ? 0.1f : 0.7f;
  EXPECT_EQ(test::count_foreground(morphology::threshold_mask(f, morphology::otsu_threshold(f))), 4);
  Array bad = Array::host(DType::f16, Shape(2, 2, 2));  // no ValueType for halves
  EXPECT_THROW((void)morphology::nonzero_mask(bad), ConfigError);
}

/// A random volume of `type` with zeros, small and large values (and NaN for f32).
Array random_values(DType type, const Shape& shape, std::uint32_t seed) {
  Array v = Array::host(type, shape);
  std::mt19937 rng(seed);
  for (std::int64_t i = 0; i < v.size(); ++i) {
    const unsigned r = rng() % 300;
    if (type == DType::u8) v.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(r % 3 == 0 ? 0 : r % 256);
    if (type == DType::u16) v.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(r % 3 == 0 ? 0 : r * 200);
    if (type == DType::f32)
      v.data<float>()[i] = r % 3 == 0 ? 0.0f : (r == 7 ? std::numeric_limits<float>::quiet_NaN() : 0.5f * r - 20);
  }
  return v;
}

// Foreground bits are the u8 masks packed (odd planes whose bits end mid-byte, planes of several
// pieces), with the unused bits of each plane's last byte zero; unpacked, they are the masks.
TEST(Threshold, ForegroundBitsArePackedMasks) {
  std::uint32_t seed = 3;
  for (const Shape& shape : {Shape(3, 7, 5), Shape(2, 1, 1), Shape(4, 16, 16), Shape(2, 513, 517)})
    for (DType type : {DType::u8, DType::u16, DType::f32})
      for (const morphology::Foreground fg : {morphology::Foreground{}, morphology::Foreground(0.0),
                                              morphology::Foreground(-1.0), morphology::Foreground(100.0),
                                              morphology::Foreground(100.5), morphology::Foreground(255.5),
                                              morphology::Foreground(1e6)}) {
        const Array v = random_values(type, shape, seed++);
        const Array mask = fg ? morphology::threshold_mask(v, *fg) : morphology::nonzero_mask(v);
        const Array bits = morphology::foreground_bits(v, fg);
        const std::int64_t row = morphology::foreground_plane_bytes(shape[1], shape[2]), plane = shape[1] * shape[2];
        ASSERT_EQ(bits.shape(), Shape(shape[0], row));
        ASSERT_TRUE(morphology::is_foreground_bits(bits, shape[1], shape[2]));
        const std::string what = shape.str() + " " + std::string(dtype_name(type)) + " " +
                                 (fg ? std::to_string(*fg) : std::string("nonzero"));
        for (std::int64_t z = 0; z < shape[0]; ++z)
          for (std::int64_t i = 0; i < row * 8; ++i) {
            const int bit = (bits.data<std::uint8_t>()[z * row + i / 8] >> (i % 8)) & 1;
            ASSERT_EQ(bit, i < plane ? mask.data<std::uint8_t>()[z * plane + i] : 0) << what << " plane " << z << " voxel " << i;
          }
        const Array back = morphology::unpack_foreground(bits, shape[1], shape[2]);
        ASSERT_EQ(back.shape(), shape);
        ASSERT_EQ(std::memcmp(back.raw(), mask.raw(), mask.bytes()), 0) << what;
      }
}

/// Otsu's rule written out for the test: the last background bin maximising the between-class variance.
int otsu_bin_reference(const std::vector<double>& hist) {
  double total = 0, weighted = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) total += hist[i], weighted += static_cast<double>(i) * hist[i];
  double w0 = 0, sum0 = 0, best = -1;
  int bin = 0;
  for (std::size_t i = 0; i + 1 < hist.size(); ++i) {
    w0 += hist[i];
    sum0 += static_cast<double>(i) * hist[i];
    const double w1 = total - w0;
    if (w0 <= 0 || w1 <= 0) continue;
    const double d = sum0 / w0 - (weighted - sum0) / w1, between = w0 * w1 * d * d;
    if (between > best) best = between, bin = static_cast<int>(i);
  }
  return bin;
}

// On volumes large enough for every core, Otsu's threshold is the one-pass histogram's (u8, u16, f32).
TEST(Threshold, OtsuOnManyCoresMatchesOnePass) {
  const Shape shape(16, 128, 160);
  std::mt19937 rng(5);
  for (DType type : {DType::u8, DType::u16, DType::f32}) {
    Array v = Array::host(type, shape);
    for (std::int64_t i = 0; i < v.size(); ++i) {
      const double x = (rng() % 3 == 0 ? 60.0 : 170.0) + static_cast<double>(rng() % 40);
      if (type == DType::u8) v.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(x);
      if (type == DType::u16) v.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(x * 100);
      if (type == DType::f32) v.data<float>()[i] = static_cast<float>(x / 7.0);
    }
    double want = 0;
    if (type == DType::f32) {
      const float* p = v.data<float>();
      const auto [lo_it, hi_it] = std::minmax_element(p, p + v.size());
      const double lo = *lo_it, hi = *hi_it, scale = 1024 / (hi - lo);
      std::vector<double> hist(1024, 0.0);
      for (std::int64_t i = 0; i < v.size(); ++i) hist[std::min(1023, static_cast<int>((p[i] - lo) * scale))] += 1;
      want = lo + (otsu_bin_reference(hist) + 1) / scale;
    } else {
      std::vector<double> hist(type == DType::u8 ? 256 : 65536, 0.0);
      for (std::int64_t i = 0; i < v.size(); ++i)
        hist[type == DType::u8 ? v.data<std::uint8_t>()[i] : v.data<std::uint16_t>()[i]] += 1;
      want = otsu_bin_reference(hist) + 1.0;
    }
    EXPECT_EQ(morphology::otsu_threshold(v), want) << dtype_name(type);
  }
}

// Reading by pieces fetches every value once, from several threads, in pieces of whole bytes of bits.
TEST(Threshold, ForegroundBitsReadByPieces) {
  const Shape shape(3, 600, 501);  // 300600 voxels a plane: two pieces, the second ending mid-byte
  const Array v = random_values(DType::u16, shape, 11);
  std::atomic<std::int64_t> fetched{0};
  const auto* base = v.data<std::uint16_t>();
  const Array bits = morphology::read_foreground_bits(
      [&](std::int64_t voxel, std::int64_t voxels, void* to) {
        EXPECT_EQ(voxel % 8, 0);
        fetched += voxels;
        std::memcpy(to, base + voxel, static_cast<std::size_t>(voxels) * 2);
      },
      morphology::ValueType::u16, shape[0], shape[1], shape[2], 1000.0);
  EXPECT_EQ(fetched.load(), shape.size());
  const Array back = morphology::unpack_foreground(bits, shape[1], shape[2]);
  const Array mask = morphology::threshold_mask(v, 1000.0);
  EXPECT_EQ(std::memcmp(back.raw(), mask.raw(), mask.bytes()), 0);
  // Readers at once (as one rank's GPUs' readers): the shared threads serve each its own planes.
  std::vector<Array> got(4);
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&, r] {
      got[static_cast<std::size_t>(r)] = morphology::read_foreground_bits(
          [&, r](std::int64_t voxel, std::int64_t voxels, void* to) {
            std::memcpy(to, base + (voxel + r * shape[1] * shape[2]) % shape.size(), static_cast<std::size_t>(voxels) * 2);
          },
          morphology::ValueType::u16, 1, shape[1], shape[2], 1000.0);
    });
  for (auto& t : readers) t.join();
  const std::int64_t row = morphology::foreground_plane_bytes(shape[1], shape[2]);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(std::memcmp(got[static_cast<std::size_t>(r)].raw(), bits.data<std::uint8_t>() + r * row, static_cast<std::size_t>(row)), 0) << r;
  // A fetch that fails: its error, once, in the caller.
  EXPECT_THROW((void)morphology::read_foreground_bits([](std::int64_t, std::int64_t, void*) { throw IoError("no disk"); },
                                                      morphology::ValueType::u8, 4, 600, 501, std::nullopt),
               IoError);
  EXPECT_THROW((void)morphology::foreground_bits(Array::host(DType::f16, Shape(2, 2, 2)), {}), ConfigError);
  EXPECT_THROW((void)morphology::unpack_foreground(Array::host(DType::u8, Shape(2, 3)), 4, 4), ConfigError);
}

// By chunks (planes 16 wide in chunks 3 × 4 × 8, edge chunks padded, planes not on chunk rows):
// the same bits as from the volume, every chunk fetched once.
TEST(Threshold, ForegroundBitsReadByChunks) {
  const Shape shape(10, 7, 16);
  const morphology::ChunkGrid whole{3, 4, 8, 0, 4, 2, 2};
  for (DType type : {DType::u8, DType::u16, DType::f32}) {
    const Array v = random_values(type, shape, 21);
    const std::size_t size = dtype_size(type);
    // The chunks as a file would hold them: chunk k of the whole grid in C order, padding 0.
    std::vector<unsigned char> chunks(static_cast<std::size_t>(whole.rows * whole.per_y * whole.per_x * 3 * 4 * 8) * size, 0);
    for (std::int64_t z = 0; z < shape[0]; ++z)
      for (std::int64_t y = 0; y < shape[1]; ++y)
        for (std::int64_t x = 0; x < shape[2]; ++x) {
          const std::int64_t k = (z / 3 * 2 + y / 4) * 2 + x / 8, at = k * 96 + ((z % 3) * 4 + y % 4) * 8 + x % 8;
          std::memcpy(chunks.data() + at * size, static_cast<const unsigned char*>(v.raw()) + ((z * 7 + y) * 16 + x) * size, size);
        }
    for (auto [first, count] : {std::pair<std::int64_t, std::int64_t>{0, 10}, {4, 5}, {9, 1}}) {
      morphology::ChunkGrid grid = whole;
      grid.first_row = first / 3;
      grid.rows = (first + count - 1) / 3 - grid.first_row + 1;
      std::atomic<int> fetched{0};
      Array bits = Array::host(DType::u8, Shape(count, morphology::foreground_plane_bytes(7, 16)));
      morphology::read_foreground_bits_chunked(
          [&](std::int64_t k, void* to) {
            ++fetched;
            std::memcpy(to, chunks.data() + (grid.first_row * 4 + k) * 96 * size, 96 * size);
          },
          morphology::value_type_of(type), grid, first, count, 7, 16, 100.0, bits.data<std::uint8_t>());
      EXPECT_EQ(fetched.load(), grid.rows * 4);
      Array part = Array::host(type, Shape(count, 7, 16));
      std::memcpy(part.raw(), static_cast<const unsigned char*>(v.raw()) + first * 7 * 16 * size, part.bytes());
      const Array want = morphology::foreground_bits(part, 100.0);
      EXPECT_EQ(std::memcmp(bits.raw(), want.raw(), want.bytes()), 0) << dtype_name(type) << " planes " << first;
      // The values themselves, by chunks and by pieces.
      Array values = Array::host(type, Shape(count, 7, 16));
      morphology::read_values_chunked(
          [&](std::int64_t k, void* to) { std::memcpy(to, chunks.data() + (grid.first_row * 4 + k) * 96 * size, 96 * size); },
          morphology::value_type_of(type), grid, first, count, 7, 16, values.raw());
      EXPECT_EQ(std::memcmp(values.raw(), part.raw(), part.bytes()), 0) << dtype_name(type) << " values " << first;
      values.zero();
      morphology::read_values(
          [&](std::int64_t voxel, std::int64_t voxels, void* to) {
            std::memcpy(to, static_cast<const unsigned char*>(part.raw()) + voxel * size, static_cast<std::size_t>(voxels) * size);
          },
          morphology::value_type_of(type), count, 7, 16, values.raw());
      EXPECT_EQ(std::memcmp(values.raw(), part.raw(), part.bytes()), 0) << dtype_name(type) << " pieces " << first;
    }
  }
  std::vector<std::uint8_t> out(64);
  EXPECT_THROW(morphology::read_foreground_bits_chunked([](std::int64_t, void*) {}, morphology::ValueType::u8, {3, 4, 6, 0, 1, 2, 3}, 0,
                                                        1, 7, 16, {}, out.data()),
               ConfigError);
}

// Chunks 64 wide (row pieces of 64 voxels, the last chunk of a row 56 wide: every step of the u8
// packing, 32, 16 and 1 at a time), several chunk rows and columns, runs of chunks along x cut
// over the reading threads: the same bits as from the volume for every u8 rule (any non-zero,
// thresholds 1, 100, 255, and those that keep all or nothing), and for u16.
TEST(Threshold, ForegroundBitsReadByWideChunks) {
  const Shape shape(9, 5, 184);
  const std::int64_t cz = 4, cy = 3, cx = 64, per_y = 2, per_x = 3, rows = 3, chunk = cz * cy * cx;
  for (DType type : {DType::u8, DType::u16}) {
    const Array v = random_values(type, shape, 5);
    const std::size_t size = dtype_size(type);
    std::vector<unsigned char> chunks(static_cast<std::size_t>(rows * per_y * per_x * chunk) * size, 0);
    for (std::int64_t z = 0; z < shape[0]; ++z)
      for (std::int64_t y = 0; y < shape[1]; ++y)
        for (std::int64_t x = 0; x < shape[2]; ++x) {
          const std::int64_t k = (z / cz * per_y + y / cy) * per_x + x / cx;
          const std::int64_t at = k * chunk + ((z % cz) * cy + y % cy) * cx + x % cx;
          std::memcpy(chunks.data() + at * size,
                      static_cast<const unsigned char*>(v.raw()) + ((z * shape[1] + y) * shape[2] + x) * size, size);
        }
    const morphology::ChunkGrid grid{cz, cy, cx, 0, rows, per_y, per_x};
    for (const morphology::Foreground rule : {morphology::Foreground{}, morphology::Foreground{1.0},
                                              morphology::Foreground{100.0}, morphology::Foreground{255.0},
                                              morphology::Foreground{0.0}, morphology::Foreground{300.0}}) {
      std::atomic<int> fetched{0};
      std::vector<std::uint8_t> bits(static_cast<std::size_t>(shape[0] * morphology::foreground_plane_bytes(5, 184)), 0xA5);
      morphology::read_foreground_bits_chunked(
          [&](std::int64_t k, void* to) {
            ++fetched;
            std::memcpy(to, chunks.data() + k * chunk * static_cast<std::int64_t>(size), chunk * size);
          },
          morphology::value_type_of(type), grid, 0, shape[0], shape[1], shape[2], rule, bits.data());
      EXPECT_EQ(fetched.load(), rows * per_y * per_x);
      // Against the u8 masks, bit by bit (not against foreground_bits, which packs the same way).
      const Array mask = rule ? morphology::threshold_mask(v, *rule) : morphology::nonzero_mask(v);
      const std::int64_t plane = shape[1] * shape[2], row = morphology::foreground_plane_bytes(5, 184);
      int wrong = 0;
      for (std::int64_t z = 0; z < shape[0]; ++z)
        for (std::int64_t i = 0; i < plane; ++i)
          wrong += ((bits[static_cast<std::size_t>(z * row + i / 8)] >> (i % 8)) & 1) != mask.data<std::uint8_t>()[z * plane + i];
      EXPECT_EQ(wrong, 0) << dtype_name(type) << " threshold " << (rule ? *rule : -1.0);
    }
  }
}

/// A long read under ReadTurn(long_turn, long_order) keeps every reading thread busy; a short one
/// under ReadTurn(short_turn, short_order) arrives: the pool's threads, and the long call's own
/// thread, take its pieces at once and it ends long before the other.
void expect_served_first(std::int64_t long_turn, std::int64_t long_order, std::int64_t short_turn,
                         std::int64_t short_order) {
  std::atomic<bool> long_done{false};
  auto slow = [](std::int64_t, std::int64_t voxels, void* to) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::memset(to, 1, static_cast<std::size_t>(voxels));
  };
  const std::int64_t long_planes = 200 * static_cast<std::int64_t>(std::thread::hardware_concurrency());
  constexpr std::int64_t kPlane = 512 * 512;  // one piece of the readers per plane
  std::vector<std::uint8_t> long_out(static_cast<std::size_t>(long_planes * kPlane)), short_out(40 * kPlane);
  std::thread other([&] {
    const morphology::ReadTurn turn(long_turn, long_order);
    morphology::read_values(slow, morphology::ValueType::u8, long_planes, 512, 512, long_out.data());
    long_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::mutex mutex;
  std::vector<std::thread::id> readers;
  {
    const morphology::ReadTurn turn(short_turn, short_order);
    morphology::read_values(
        [&](std::int64_t v, std::int64_t n, void* to) {
          slow(v, n, to);
          const std::lock_guard lock(mutex);
          readers.push_back(std::this_thread::get_id());
        },
        morphology::ValueType::u8, 40, 512, 512, short_out.data());
  }
  EXPECT_FALSE(long_done.load());
  // The long call's own thread helped the short one too (a caller reads the lowest turn first).
  const std::thread::id long_caller = other.get_id();
  EXPECT_NE(std::find(readers.begin(), readers.end(), long_caller), readers.end());
  other.join();
  std::sort(readers.begin(), readers.end());
  EXPECT_EQ(readers.size(), 40u);
  EXPECT_GE(std::unique(readers.begin(), readers.end()) - readers.begin(), 2);
  EXPECT_TRUE(std::all_of(short_out.begin(), short_out.end(), [](std::uint8_t b) { return b == 1; }));
  EXPECT_TRUE(std::all_of(long_out.begin(), long_out.end(), [](std::uint8_t b) { return b == 1; }));
}

TEST(ReadTurns, TheReadingThreadsServeALowerTurnAsSoonAsItComes) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: the pool is the caller alone";
  expect_served_first(5, 0, 0, 0);
}

TEST(ReadTurns, WithinATurnALowerOrderIsServedFirstWhicheverCameFirst) {
  // A reader's next piece read ahead (order k + 1) must not hold back its current one (order k).
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: the pool is the caller alone";
  expect_served_first(2, 7, 2, 6);
}

TEST(ReadTurns, APassiveCallerReadsNothingItself) {
  // A source's reads started ahead wait for the reading threads (ReadTurn's `passive`).
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: the pool is the caller alone";
  std::mutex mutex;
  std::vector<std::thread::id> readers;
  std::vector<std::uint8_t> out(20 * 512 * 512);
  {
    const morphology::ReadTurn turn(0, 0, true);
    morphology::read_values(
        [&](std::int64_t, std::int64_t voxels, void* to) {
          std::memset(to, 1, static_cast<std::size_t>(voxels));
          const std::lock_guard lock(mutex);
          readers.push_back(std::this_thread::get_id());
        },
        morphology::ValueType::u8, 20, 512, 512, out.data());
  }
  EXPECT_EQ(readers.size(), 20u);
  EXPECT_EQ(std::find(readers.begin(), readers.end(), std::this_thread::get_id()), readers.end());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == 1; }));
}

TEST(ReadTurns, ACopyOnTheReadingThreadsCopiesEveryByteOnce) {
  // Pieces of 1 MiB and a last one shorter; nothing written past the end.
  const std::size_t bytes = (std::size_t{3} << 20) + 17;
  std::vector<std::uint8_t> from(bytes), to(bytes + 64, 0xAB);
  for (std::size_t i = 0; i < bytes; ++i) from[i] = static_cast<std::uint8_t>(i * 131 + (i >> 20));
  {
    const morphology::ReadTurn turn(3, 1);
    morphology::copy_on_read_threads(to.data(), from.data(), bytes);
  }
  EXPECT_TRUE(std::equal(from.begin(), from.end(), to.begin()));
  EXPECT_TRUE(std::all_of(to.begin() + static_cast<std::ptrdiff_t>(bytes), to.end(), [](std::uint8_t b) { return b == 0xAB; }));
  morphology::copy_on_read_threads(to.data(), from.data(), 0);  // nothing to copy
  EXPECT_EQ(to[0], from[0]);
}

}  // namespace
}  // namespace weft
