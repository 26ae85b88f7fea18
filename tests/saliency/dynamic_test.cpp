// Dynamic pathway and fusion on the CPU: each float stage against a double-precision reference
// written here from the documented formulas (motion.hpp), the dominant motion recovered under a
// known affine motion (with and without an outlier patch), the moving patch found with a still
// camera and under a pan, and the fused map.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "motion_frames.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

using Plane = std::vector<double>;

// ---- double-precision reference ----

double at(const Plane& p, std::int64_t h, std::int64_t w, std::int64_t y, std::int64_t x) {
  return p[std::clamp<std::int64_t>(y, 0, h - 1) * w + std::clamp<std::int64_t>(x, 0, w - 1)];
}
double sample(const Plane& p, std::int64_t h, std::int64_t w, double y, double x) {
  x = std::clamp(x, 0.0, static_cast<double>(w - 1));
  y = std::clamp(y, 0.0, static_cast<double>(h - 1));
  const double fx = std::floor(x), fy = std::floor(y), ax = x - fx, ay = y - fy;
  const auto x0 = static_cast<std::int64_t>(fx), y0 = static_cast<std::int64_t>(fy);
  return (1 - ay) * ((1 - ax) * at(p, h, w, y0, x0) + ax * at(p, h, w, y0, x0 + 1)) +
         ay * ((1 - ax) * at(p, h, w, y0 + 1, x0) + ax * at(p, h, w, y0 + 1, x0 + 1));
}
Plane plane(const Array& a) {
  Plane p(static_cast<std::size_t>(a.size()));
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = a.data<float>()[i];
  return p;
}
/// θ by the documented algorithm, in double (pyramid, Gauss-Newton, Tukey IRLS, σ from the median
/// of |r| over the same histogram bins).
std::vector<double> reference_affine(const Plane& cur, const Plane& prev, std::int64_t h0, std::int64_t w0,
                                     const MotionParams& prm) {
  std::vector<Plane> c{cur}, q{prev};
  std::vector<std::int64_t> hs{h0}, ws{w0};
  while (static_cast<int>(c.size()) < prm.levels && hs.back() / 2 >= kMinLevelSide && ws.back() / 2 >= kMinLevelSide) {
    const std::int64_t h = hs.back(), w = ws.back();
    Plane a(static_cast<std::size_t>((h / 2) * (w / 2))), b(a.size());
    for (std::int64_t y = 0; y < h / 2; ++y)
      for (std::int64_t x = 0; x < w / 2; ++x)
        for (int d = 0; d < 4; ++d) {
          a[y * (w / 2) + x] += 0.25 * c.back()[(2 * y + d / 2) * w + 2 * x + d % 2];
          b[y * (w / 2) + x] += 0.25 * q.back()[(2 * y + d / 2) * w + 2 * x + d % 2];
        }
    c.push_back(a);
    q.push_back(b);
    hs.push_back(h / 2);
    ws.push_back(w / 2);
  }
  std::vector<double> t(6, 0.0);
  double sigma = 0;
  const double s = 0.5 * std::max(w0, h0), cx = 0.5 * (w0 - 1), cy = 0.5 * (h0 - 1);
  for (int l = static_cast<int>(c.size()) - 1; l >= 0; --l) {
    const std::int64_t h = hs[l], w = ws[l];
    const double step = std::pow(2.0, l);
    for (int it = 0; it < prm.iterations; ++it) {
      double A[6][7] = {};
      std::vector<double> hist(kResidualBins + 1, 0.0);
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x) {
          const double xh = ((x + 0.5) * step - 0.5 - cx) / s, yh = ((y + 0.5) * step - 0.5 - cy) / s;
          const double qx = x + (t[0] + t[1] * xh + t[2] * yh) / step, qy = y + (t[3] + t[4] * xh + t[5] * yh) / step;
          if (qx < 0 || qy < 0 || qx > w - 1 || qy > h - 1) continue;
          const double r = sample(q[l], h, w, qy, qx) - c[l][y * w + x];
          const double gx = 0.5 * (at(c[l], h, w, y, x + 1) - at(c[l], h, w, y, x - 1)) / step;
          const double gy = 0.5 * (at(c[l], h, w, y + 1, x) - at(c[l], h, w, y - 1, x)) / step;
          const double j[6] = {gx, gx * xh, gx * yh, gy, gy * xh, gy * yh};
          hist[std::min<int>(kResidualBins, static_cast<int>(std::abs(r) / kResidualBinWidth))] += 1;
          double wgt = 1;
          if (sigma > 0) {
            const double cc = kTukeyC * sigma;
            wgt = std::abs(r) < cc ? std::pow(1 - (r / cc) * (r / cc), 2) : 0.0;
          }
          for (int a = 0; a < 6; ++a) {
            for (int b = 0; b < 6; ++b) A[a][b] += wgt * j[a] * j[b];
            A[a][6] -= wgt * j[a] * r;
          }
        }
      for (int a = 0; a < 6; ++a)  // Gauss-Jordan, partial pivoting
        for (int p = a + 1; p < 6; ++p)
          if (std::abs(A[p][a]) > std::abs(A[a][a])) std::swap(A[p], A[a]);
      for (int a = 0; a < 6; ++a) {
        int p = a;
        for (int i = a + 1; i < 6; ++i)
          if (std::abs(A[i][a]) > std::abs(A[p][a])) p = i;
        std::swap(A[p], A[a]);
        for (int i = 0; i < 6; ++i)
          if (i != a) {
            const double m = A[i][a] / A[a][a];
            for (int j = a; j < 7; ++j) A[i][j] -= m * A[a][j];
          }
      }
      for (int a = 0; a < 6; ++a) t[a] += A[a][6] / A[a][a];
      double total = 0, below = 0, median = kResidualBins * kResidualBinWidth;
      for (double n : hist) total += n;
      for (int b = 0; b < kResidualBins; ++b) {
        if (below + hist[b] >= total / 2) {
          median = (b + (total / 2 - below) / hist[b]) * kResidualBinWidth;
          break;
        }
        below += hist[b];
      }
      sigma = std::max(kMinSigma, kMadToSigma * median);
    }
  }
  return t;
}

// A textured frame and the previous frame it came from under a known affine motion θ (level-0
// pixels): prev(p + d(p)) = cur(p), prev built by inverting p ↦ p + d(p) by fixed-point iteration.
struct AffinePair {
  Array cur, prev;
};
AffinePair affine_pair(std::int64_t h, std::int64_t w, const double* theta, bool patch) {
  AffinePair r{Array::host(DType::f32, Shape(h, w)), Array::host(DType::f32, Shape(h, w))};
  const double s = 0.5 * std::max(w, h), cx = 0.5 * (w - 1), cy = 0.5 * (h - 1);
  auto inside_patch = [&](double y, double x) { return patch && y > h * 0.3 && y < h * 0.55 && x > w * 0.3 && x < w * 0.55; };
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      r.cur.data<float>()[y * w + x] = static_cast<float>(inside_patch(y, x) ? test::texture(x + 3, y, 2) : test::texture(x, y));
      double px = x, py = y;  // solve p + d(p) = (x, y)
      for (int i = 0; i < 30; ++i) {
        const double xh = (px - cx) / s, yh = (py - cy) / s;
        px = x - (theta[0] + theta[1] * xh + theta[2] * yh);
        py = y - (theta[3] + theta[4] * xh + theta[5] * yh);
      }
      // The patch moves on its own: its pixels in prev are the texture shifted by 3 more.
      r.prev.data<float>()[y * w + x] = static_cast<float>(inside_patch(py, px) ? test::texture(px + 6, py, 2) : test::texture(px, py));
    }
  return r;
}

TEST(DominantMotion, RecoversAKnownAffineMotionAndMatchesTheReference) {
  constexpr std::int64_t kH = 72, kW = 96;
  const double theta[6] = {1.6, 0.8, -0.3, -0.9, 0.25, 0.5};
  const MotionParams prm;
  for (bool patch : {false, true}) {
    const AffinePair pair = affine_pair(kH, kW, theta, patch);
    const Array got = dominant_motion_cpu(pair.cur, pair.prev, prm);
    const std::vector<double> ref = reference_affine(plane(pair.cur), plane(pair.prev), kH, kW, prm);
    for (int i = 0; i < 6; ++i) {
      // Float path against the double reference: 1e-3 pixels.
      EXPECT_NEAR(got.data<double>()[i], ref[i], 1e-3) << "patch " << patch << " θ" << i;
      // Both recover the true motion to 0.05 pixels (the patch, 6 % of the frame, is an outlier).
      EXPECT_NEAR(ref[i], theta[i], 0.05) << "patch " << patch << " θ" << i;
    }
  }
}

TEST(DynamicStages, MatchDoublePrecisionReference) {
  // Working frame: k × k box averages of the grey levels.
  const Array frame = test::moving_patch_frame(37, 53, 2, 1.0, 0.5, 2.0, 1.0, 10, 12, 9);
  for (int k : {1, 2, 4}) {
    const Array small = motion_frame_cpu(frame, k);
    const std::int64_t h = std::max<std::int64_t>(2, 37 / k), w = std::max<std::int64_t>(2, 53 / k);
    ASSERT_EQ(small.shape(), Shape(h, w));
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x) {
        double s = 0;
        for (int dy = 0; dy < k; ++dy)
          for (int dx = 0; dx < k; ++dx) s += frame.data<std::uint8_t>()[(y * k + dy) * 53 + x * k + dx] / 255.0;
        EXPECT_NEAR(small.data<float>()[y * w + x], s / (k * k), 1e-6);
      }
  }
  // Compensation: bilinear warp by θ, 1e-5 (float coordinates of a 53-pixel frame).
  const Array cur = motion_frame_cpu(frame, 1);
  Array theta = Array::host(DType::f64, Shape(6));
  const double t[6] = {1.3, 0.2, -0.1, -0.7, 0.05, 0.3};
  std::copy_n(t, 6, theta.data<double>());
  const Array prev = motion_frame_cpu(test::moving_patch_frame(37, 53, 3, 1.0, 0.5, 2.0, 1.0, 10, 12, 9), 1);
  const Array comp = compensate_cpu(cur, prev, theta);
  const Plane p = plane(prev);
  for (std::int64_t y = 0; y < 37; ++y)
    for (std::int64_t x = 0; x < 53; ++x) {
      const double xh = (x - 26.0) / 26.5, yh = (y - 18.0) / 26.5;
      const double qy = y + t[3] + t[4] * xh + t[5] * yh, qx = x + t[0] + t[1] * xh + t[2] * yh;
      const bool inside = qx >= 0 && qy >= 0 && qx <= 52 && qy <= 36;
      if (std::abs(qx) < 1e-4 || std::abs(qy) < 1e-4 || std::abs(qx - 52) < 1e-4 || std::abs(qy - 36) < 1e-4) continue;
      const double want = inside ? sample(p, 37, 53, qy, qx) : cur.data<float>()[y * 53 + x];
      EXPECT_NEAR(comp.data<float>()[y * 53 + x], want, 1e-5);
    }
  // Temporal median of |flow| over 1..5 flows, exact up to float rounding of the magnitude.
  std::vector<Array> flows;
  for (int f = 0; f < 5; ++f) {
    Array fl = Array::host(DType::f32, Shape(4, 6, 2));
    for (std::int64_t i = 0; i < fl.size(); ++i) fl.data<float>()[i] = static_cast<float>(std::sin(1.7 * i + 2.3 * f));
    flows.push_back(fl);
    const Array med = temporal_median_cpu(flows);
    for (std::int64_t i = 0; i < 24; ++i) {
      std::vector<double> m;
      for (const Array& a : flows) m.push_back(std::hypot(a.data<float>()[2 * i], a.data<float>()[2 * i + 1]));
      std::sort(m.begin(), m.end());
      const double want = m.size() % 2 ? m[m.size() / 2] : 0.5 * (m[m.size() / 2 - 1] + m[m.size() / 2]);
      EXPECT_NEAR(med.data<float>()[i], want, 1e-6);
    }
  }
  // Dynamic map: min/max to [0, 1], Itti weight from the 32 × 32 tile maxima, threshold 0.2, upsampled.
  Array median = Array::host(DType::f32, Shape(40, 70));
  for (std::int64_t i = 0; i < median.size(); ++i)
    median.data<float>()[i] = static_cast<float>(0.2 + 0.1 * std::sin(0.3 * i) + (i % 70 > 50 && i / 70 > 20 ? 2.0 : 0.0));
  const Array md = dynamic_map_cpu(median, 80, 140, 2);
  ASSERT_EQ(md.shape(), Shape(80, 140));
  const Plane m = plane(median);
  double lo = 1e30, hi = -1e30, tile_max[6] = {-1e30, -1e30, -1e30, -1e30, -1e30, -1e30};
  for (std::int64_t y = 0; y < 40; ++y)
    for (std::int64_t x = 0; x < 70; ++x) {
      lo = std::min(lo, m[y * 70 + x]);
      hi = std::max(hi, m[y * 70 + x]);
      double& tm = tile_max[(y / 32) * 3 + x / 32];
      tm = std::max(tm, m[y * 70 + x]);
    }
  double sum = 0;
  for (double v : tile_max) sum += v;
  const double mbar = ((sum - hi) / 5 - lo) / (hi - lo), weight = (1 - mbar) * (1 - mbar);
  std::int64_t off = 0;
  for (std::int64_t y = 0; y < 80; ++y)
    for (std::int64_t x = 0; x < 140; ++x) {
      const double v = (sample(m, 40, 70, (y + 0.5) / 2 - 0.5, (x + 0.5) / 2 - 0.5) - lo) / (hi - lo);
      const double want = v >= kThreshold ? v * weight : 0.0;
      off += std::abs(md.data<float>()[y * 140 + x] - want) > 1e-5;
    }
  EXPECT_LE(off, 2) << "pixels beyond 1e-5 (a value within rounding of the threshold may fall either side)";
  // Fusion: α = max Ms, β = skewness of Md (≥ 0), Mf = αMs + βMd + αβMsMd; Ms wider than Md.
  Array ms = Array::host(DType::f32, Shape(20, 32)), dm = Array::host(DType::f32, Shape(20, 31));
  for (std::int64_t y = 0; y < 20; ++y)
    for (std::int64_t x = 0; x < 32; ++x) {
      ms.data<float>()[y * 32 + x] = static_cast<float>(1.5 + std::sin(0.4 * x + 0.2 * y) + (x == 31 ? 50.0 : 0.0));
      if (x < 31) dm.data<float>()[y * 31 + x] = (x > 25 && y > 15) ? 0.9f : static_cast<float>(0.05 * (x % 3));
    }
  const Array mf = fusion_cpu(ms, dm);
  ASSERT_EQ(mf.shape(), Shape(20, 31));
  double alpha = 0, s1 = 0, s2 = 0, s3 = 0;
  for (std::int64_t y = 0; y < 20; ++y)
    for (std::int64_t x = 0; x < 31; ++x) {
      alpha = std::max(alpha, static_cast<double>(ms.data<float>()[y * 32 + x]));  // column 31 (padding) excluded
      const double d = dm.data<float>()[y * 31 + x];
      s1 += d;
      s2 += d * d;
      s3 += d * d * d;
    }
  const double n = 620, mean = s1 / n, var = s2 / n - mean * mean;
  const double beta = (s3 / n - 3 * mean * s2 / n + 2 * mean * mean * mean) / std::pow(var, 1.5);
  ASSERT_GT(beta, 0.5);
  EXPECT_LT(alpha, 3.0);
  for (std::int64_t y = 0; y < 20; ++y)
    for (std::int64_t x = 0; x < 31; ++x) {
      const double a = ms.data<float>()[y * 32 + x], d = dm.data<float>()[y * 31 + x];
      EXPECT_NEAR(mf.data<float>()[y * 31 + x], alpha * a + beta * d + alpha * beta * a * d, 1e-4 * (1 + alpha * beta));
    }
  // A still dynamic map has no skewness: the fused map is α·Ms.
  Array flat = Array::host(DType::f32, Shape(20, 31));
  std::fill_n(flat.data<float>(), flat.size(), 0.0f);
  const Array still = fusion_cpu(ms, flat);
  EXPECT_FLOAT_EQ(still.data<float>()[5 * 31 + 7], static_cast<float>(alpha) * ms.data<float>()[5 * 32 + 7]);
}

/// Where the dynamic map of the last frame peaks, and whether that lies on the moving patch.
void expect_peak_on_patch(double pan_x, double pan_y) {
  constexpr std::int64_t kH = 64, kW = 80;
  constexpr double kSide = 12;
  std::vector<Array> frames;
  double py = 0, px = 0;
  for (int t = 0; t < 6; ++t) frames.push_back(test::moving_patch_frame(kH, kW, t, pan_x, pan_y, 1.5, 1.0, 18, 20, kSide, &py, &px));
  const test::ChainMaps maps = test::chain_cpu(frames, MotionParams{});
  const Array& md = maps.dynamics.back();
  const float* d = md.data<float>();
  const auto best = std::max_element(d, d + md.size()) - d;
  const double by = static_cast<double>(best / kW), bx = static_cast<double>(best % kW);
  // On the patch at the last frame, or where it was during the median's window (2 pixels of slack).
  EXPECT_GE(by, py - 5.0 - 2) << "pan " << pan_x << "," << pan_y;
  EXPECT_LE(by, py + kSide + 2) << "pan " << pan_x << "," << pan_y;
  EXPECT_GE(bx, px - 7.5 - 2) << "pan " << pan_x << "," << pan_y;
  EXPECT_LE(bx, px + kSide + 2) << "pan " << pan_x << "," << pan_y;
  EXPECT_GT(d[best], 0.0f);
  // The fused map of that frame adds the motion: β > 0, so it differs from α·Ms.
  const Array& ms = maps.statics.back();
  float alpha = 0;
  for (std::int64_t i = 0; i < ms.size(); ++i) alpha = std::max(alpha, ms.data<float>()[i]);
  EXPECT_GT(maps.fused.back().data<float>()[best], alpha * ms.data<float>()[best] * 1.0001f + 1e-6f);
}

TEST(DynamicPathway, MovingPatchWithAStillCamera) { expect_peak_on_patch(0.0, 0.0); }
TEST(DynamicPathway, MovingPatchUnderACameraPan) { expect_peak_on_patch(2.0, -1.0); }

TEST(DynamicPathway, StillSceneHasNoMotion) {
  std::vector<Array> frames(4, test::moving_patch_frame(40, 48, 0, 0, 0, 0, 0, 10, 10, 8));
  const test::ChainMaps maps = test::chain_cpu(frames, MotionParams{});
  for (const Array& md : maps.dynamics)
    for (std::int64_t i = 0; i < md.size(); ++i) ASSERT_EQ(md.data<float>()[i], 0.0f);
}

TEST(DynamicPathway, RejectsBadParameters) {
  MotionParams p;
  p.median_frames = 10;
  EXPECT_THROW(validate(p), ConfigError);
  p = MotionParams{};
  p.scale = 3;
  EXPECT_THROW(validate(p), ConfigError);
  EXPECT_THROW(motion_frame_cpu(Array::host(DType::f64, Shape(4, 4)), 1), ConfigError);
}

}  // namespace
}  // namespace weft::saliency
