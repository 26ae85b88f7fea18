// Static saliency pathway on the CPU: each float stage against the double-precision reference
// (fed the same input, so errors do not accumulate across stages), the whole pathway, pop-out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "frames.hpp"
#include "reference.hpp"
#include "weft/tasks/saliency/bank.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

reference::Plane grey_of(const Array& frame) {
  reference::Plane g{frame.shape()[0], frame.shape()[1], {}};
  for (std::int64_t i = 0; i < frame.size(); ++i) g.v.push_back(frame.data<std::uint8_t>()[i] / 255.0);
  return g;
}
reference::Plane plane_of(const float* p, std::int64_t h, std::int64_t w) {
  return {h, w, std::vector<double>(p, p + h * w)};
}
/// max |a − b| / max |b| (b the reference).
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0 ? err / scale : err;
}

class StaticStages : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(StaticStages, MatchDoublePrecisionReference) {
  const auto [h, w] = GetParam();
  const Array frame = test::textured_frame(h, w, 3);
  // Retina: float R2C half spectrum vs the double full spectrum. Tolerance 1e-5 of the largest
  // coefficient (float FFT of ≤ 4k points).
  const Array spectrum = retina_cpu(frame);
  std::int64_t wf = 0;
  const auto full = reference::retina(grey_of(frame), wf);
  const std::int64_t wc = wf / 2 + 1;
  ASSERT_EQ(spectrum.shape(), Shape(h, wc, 2));
  std::vector<double> got, want;
  std::vector<std::complex<double>> half;
  for (std::int64_t ky = 0; ky < h; ++ky)
    for (std::int64_t kx = 0; kx < wc; ++kx) {
      const float* s = spectrum.data<float>() + 2 * (ky * wc + kx);
      got.insert(got.end(), {s[0], s[1]});
      want.insert(want.end(), {full[ky * wf + kx].real(), full[ky * wf + kx].imag()});
      half.emplace_back(s[0], s[1]);
    }
  EXPECT_LT(relative_error(got, want), 1e-5);

  // Gabor: all 24 responses (in two groups) from the float spectrum. Tolerance 1e-4 of each map's
  // largest response (float gains and inverse FFT against double).
  const Array g0 = gabor_cpu(spectrum, 0, 2), g1 = gabor_cpu(spectrum, 2, 4);
  ASSERT_EQ(g0.shape(), Shape(8, h, wf));
  ASSERT_EQ(g1.shape(), Shape(16, h, wf));
  std::vector<reference::Plane> responses;
  for (int m = 0; m < kMaps; ++m) {
    const float* p = m < 8 ? g0.data<float>() + m * h * wf : g1.data<float>() + (m - 8) * h * wf;
    responses.push_back(plane_of(p, h, wf));
    const auto ref = reference::gabor(half, h, wf, m / kBands, m % kBands);
    EXPECT_LT(relative_error(responses.back().v, ref.v), 1e-4) << "map " << m;
  }

  // Interactions and statistics from the float responses: 1e-5 relative.
  const Interacted inter = interactions_cpu({g0, g1});
  std::vector<double> ref_stats;
  const auto ref_maps = reference::interactions(responses, ref_stats);
  ASSERT_EQ(inter.maps.shape(), Shape(kMaps, h, wf));
  std::vector<reference::Plane> maps;
  for (int m = 0; m < kMaps; ++m) {
    maps.push_back(plane_of(inter.maps.data<float>() + m * h * wf, h, wf));
    EXPECT_LT(relative_error(maps.back().v, ref_maps[m].v), 1e-5) << "map " << m;
    for (int s = 0; s < 3; ++s)
      EXPECT_NEAR(inter.stats.data<double>()[3 * m + s], ref_stats[3 * m + s], 1e-5 * ref_stats[3 * m + 1]) << m;
  }

  // Normalisation from the float maps and statistics: 1e-5 of the map's maximum, except pixels
  // where a map value sits within float rounding of the threshold (at most 0.5 % of them).
  const Array salient = normalize_cpu(inter.maps, inter.stats);
  const auto ref_static = reference::normalize(maps, std::vector<double>(inter.stats.data<double>(),
                                                                         inter.stats.data<double>() + 3 * kMaps));
  const double top = *std::max_element(ref_static.v.begin(), ref_static.v.end());
  ASSERT_GT(top, 0);
  int off = 0;
  for (std::int64_t p = 0; p < h * wf; ++p) off += std::abs(salient.data<float>()[p] - ref_static.v[p]) > 1e-5 * top;
  EXPECT_LE(off, h * wf / 200) << off << " pixels differ";

  // The whole pathway is these stages, cropped to the frame's width.
  const Array whole = static_map_cpu(frame);
  ASSERT_EQ(whole.shape(), Shape(h, w));
  const Interacted one_group = interactions_cpu({gabor_cpu(spectrum, 0, 6)});
  const Array direct = normalize_cpu(one_group.maps, one_group.stats);
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      ASSERT_EQ(whole.data<float>()[y * w + x], direct.data<float>()[y * wf + x]) << y << "," << x;
}

INSTANTIATE_TEST_SUITE_P(Sizes, StaticStages,
                         ::testing::Values(std::pair{48, 64}, std::pair{33, 45}, std::pair{1, 8}, std::pair{40, 40}));

TEST(StaticPathway, GroupSplitDoesNotChangeTheResult) {
  const Array frame = test::textured_frame(32, 48, 1);
  const Array spectrum = retina_cpu(frame);
  const Interacted a = interactions_cpu({gabor_cpu(spectrum, 0, 6)});
  std::vector<Array> six;
  for (int o = 0; o < 6; ++o) six.push_back(gabor_cpu(spectrum, o, 1));
  const Interacted b = interactions_cpu(six);
  const Array sa = normalize_cpu(a.maps, a.stats), sb = normalize_cpu(b.maps, b.stats);
  for (std::int64_t i = 0; i < sa.size(); ++i) ASSERT_EQ(sa.data<float>()[i], sb.data<float>()[i]);
}

TEST(StaticPathway, OddBarPopsOut) {
  // The maximum of the static map lies on the rotated bar. The Hann window is part of the model
  // and damps the frame's outer part (a centre bias), so the odd bar is placed in the central
  // region, in cells around the centre.
  for (auto [row, col] : {std::pair{3, 4}, std::pair{4, 3}, std::pair{2, 3}, std::pair{3, 2}, std::pair{4, 5},
                          std::pair{5, 4}}) {
    test::BarCentre odd;
    const Array field = test::popout_field(128, row, col, odd);
    const Array map = static_map_cpu(field);
    const float* s = map.data<float>();
    const auto best = std::max_element(s, s + map.size()) - s;
    const std::int64_t y = best / 128, x = best % 128;
    EXPECT_LE(std::abs(y - odd.y), 6) << "odd bar at " << odd.y << "," << odd.x << ", maximum at " << y << "," << x;
    EXPECT_LE(std::abs(x - odd.x), 6) << "odd bar at " << odd.y << "," << odd.x << ", maximum at " << y << "," << x;
  }
}

TEST(StaticPathway, GreyLevelTypesAreScaledToOneRange) {
  // u8 v, u16 257·v and f32 v/255 are the same grey levels: the same map up to float rounding.
  const Array u8 = test::textured_frame(36, 44, 4);
  Array u16 = Array::host(DType::u16, u8.shape()), f32 = Array::host(DType::f32, u8.shape());
  for (std::int64_t i = 0; i < u8.size(); ++i) {
    u16.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(257 * u8.data<std::uint8_t>()[i]);
    f32.data<float>()[i] = static_cast<float>(u8.data<std::uint8_t>()[i] / 255.0);
  }
  const Array a = static_map_cpu(u8);
  const float* pa = a.data<float>();
  const float top = *std::max_element(pa, pa + a.size());
  for (const Array& other : {u16, f32}) {
    const Array b = static_map_cpu(other);
    int off = 0;
    for (std::int64_t i = 0; i < a.size(); ++i) off += std::abs(pa[i] - b.data<float>()[i]) > 1e-4f * top;
    EXPECT_LE(off, a.size() / 100) << dtype_name(other.dtype());
  }
}

TEST(StaticPathway, RejectsBadInput) {
  EXPECT_THROW((void)retina_cpu(Array::host(DType::f64, Shape(4, 4))), ConfigError);
  EXPECT_THROW((void)retina_cpu(Array::host(DType::u8, Shape(2, 4, 4))), ConfigError);
  EXPECT_THROW((void)gabor_cpu(Array::host(DType::f32, Shape(4, 3, 2)), 5, 2), ConfigError);
  EXPECT_THROW((void)interactions_cpu({Array::host(DType::f32, Shape(8, 4, 4))}), ConfigError);
}

}  // namespace
}  // namespace weft::saliency
