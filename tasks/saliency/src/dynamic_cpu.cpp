// CPU dynamic pathway and fusion in float with sums in double, in row-major order, so results do
// not depend on where or when a stage runs (the graph tests compare mappings bit for bit).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

void check_plane(const Array& a, const char* stage, const char* what) {
  if (a.dtype() != DType::f32 || a.shape().ndim() != 2)
    throw ConfigError(std::string(stage) + ": expected f32 [H, W] " + what + ", got " +
                      std::string(dtype_name(a.dtype())) + " " + a.shape().str());
}
void check_theta(const Array& theta, const char* stage) {
  if (theta.dtype() != DType::f64 || theta.size() != kAffineParams)
    throw ConfigError(std::string(stage) + ": expected f64 [6] affine parameters, got " + theta.shape().str());
}
void check_scale(int k, const char* stage) {
  if (k != 1 && k != 2 && k != 4 && k != 8)
    throw ConfigError(std::string(stage) + ": working resolution divisor must be 1, 2, 4 or 8, got " + std::to_string(k));
}

template <class T> void box_average(const T* src, std::int64_t width, int k, float scale, std::int64_t h,
                                    std::int64_t w, std::int64_t rows, std::int64_t cols, float* dst) {
  const float norm = scale / static_cast<float>(k * k);
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      float s = 0.0f;
      for (int dy = 0; dy < k; ++dy)
        for (int dx = 0; dx < k; ++dx)  // frames smaller than 2K repeat their last row/column
          s += static_cast<float>(src[std::min(y * k + dy, rows - 1) * width + std::min(x * k + dx, cols - 1)]);
      dst[y * w + x] = s * norm;
    }
}

/// 2 × 2 box average (floor sizes).
std::vector<float> half_size(const std::vector<float>& src, std::int64_t h, std::int64_t w) {
  const std::int64_t hh = h / 2, hw = w / 2;
  std::vector<float> dst(static_cast<std::size_t>(hh * hw));
  for (std::int64_t y = 0; y < hh; ++y)
    for (std::int64_t x = 0; x < hw; ++x)
      dst[y * hw + x] = 0.25f * (src[2 * y * w + 2 * x] + src[2 * y * w + 2 * x + 1] + src[(2 * y + 1) * w + 2 * x] +
                                 src[(2 * y + 1) * w + 2 * x + 1]);
  return dst;
}

}  // namespace

Array motion_frame_cpu(const Array& frame, int k) {
  check_scale(k, "motion input");
  if (frame.shape().ndim() != 2) throw ConfigError("motion input: expected a 2D frame, got " + frame.shape().str());
  const std::int64_t rows = frame.shape()[0], cols = frame.shape()[1];
  const std::int64_t h = working_extent(rows, k), w = working_extent(cols, k);
  Array out = Array::host(DType::f32, Shape(h, w));
  float* dst = out.data<float>();
  switch (frame.dtype()) {
    case DType::u8: box_average(frame.data<std::uint8_t>(), cols, k, 1.0f / 255.0f, h, w, rows, cols, dst); break;
    case DType::u16: box_average(frame.data<std::uint16_t>(), cols, k, 1.0f / 65535.0f, h, w, rows, cols, dst); break;
    case DType::f32: box_average(frame.data<float>(), cols, k, 1.0f, h, w, rows, cols, dst); break;
    default:
      throw ConfigError("motion input: frames must be u8, u16 or f32, got " + std::string(dtype_name(frame.dtype())));
  }
  return out;
}

Array dominant_motion_cpu(const Array& cur, const Array& prev, const MotionParams& params) {
  check_plane(cur, "dominant motion", "frame");
  check_plane(prev, "dominant motion", "frame");
  if (cur.shape() != prev.shape())
    throw ConfigError("dominant motion: frames " + cur.shape().str() + " and " + prev.shape().str() + " differ");
  const std::int64_t h0 = cur.shape()[0], w0 = cur.shape()[1];
  std::vector<std::vector<float>> c{std::vector<float>(cur.data<float>(), cur.data<float>() + cur.size())};
  std::vector<std::vector<float>> p{std::vector<float>(prev.data<float>(), prev.data<float>() + prev.size())};
  std::vector<std::int64_t> hs{h0}, ws{w0};
  while (static_cast<int>(c.size()) < params.levels && hs.back() / 2 >= kMinLevelSide && ws.back() / 2 >= kMinLevelSide) {
    c.push_back(half_size(c.back(), hs.back(), ws.back()));
    p.push_back(half_size(p.back(), hs.back(), ws.back()));
    hs.push_back(hs.back() / 2);
    ws.push_back(ws.back() / 2);
  }
  Array out = Array::host(DType::f64, Shape(kAffineParams));
  double* theta = out.data<double>();
  std::fill(theta, theta + kAffineParams, 0.0);
  double sigma = 0.0;  // first step: least squares
  for (int level = static_cast<int>(c.size()) - 1; level >= 0; --level) {
    const std::int64_t h = hs[level], w = ws[level];
    const AffineFrame frame = affine_frame(h0, w0, level);
    for (int it = 0; it < params.iterations; ++it) {
      double sums[kAffineSums] = {};
      unsigned hist[kResidualBins + 1] = {};
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x) {
          float r, j[kAffineParams];
          if (!affine_terms(c[level].data(), p[level].data(), h, w, theta, frame, y, x, r, j)) continue;
          ++hist[residual_bin(r)];
          accumulate_affine(sums, j, r, tukey_weight(r, static_cast<float>(sigma)));
        }
      double step[kAffineParams];
      if (solve_affine_step(sums, step))
        for (int i = 0; i < kAffineParams; ++i) theta[i] += step[i];
      sigma = sigma_from_histogram(hist);
    }
  }
  return out;
}

Array compensate_cpu(const Array& cur, const Array& prev, const Array& theta) {
  check_plane(cur, "compensate", "frame");
  check_plane(prev, "compensate", "frame");
  check_theta(theta, "compensate");
  if (cur.shape() != prev.shape())
    throw ConfigError("compensate: frames " + cur.shape().str() + " and " + prev.shape().str() + " differ");
  const std::int64_t h = prev.shape()[0], w = prev.shape()[1];
  const AffineFrame frame = affine_frame(h, w, 0);
  Array out = Array::host(DType::f32, Shape(h, w));
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x)
      out.data<float>()[y * w + x] =
          compensated(cur.data<float>(), prev.data<float>(), h, w, theta.data<double>(), frame, y, x);
  return out;
}

Array temporal_median_cpu(const std::vector<Array>& flows) {
  if (flows.empty() || flows.size() > static_cast<std::size_t>(kMaxMedianFrames))
    throw ConfigError("temporal median: expected 1 to 9 flows, got " + std::to_string(flows.size()));
  const Shape& s = flows[0].shape();
  for (const Array& f : flows)
    if (f.dtype() != DType::f32 || f.shape().ndim() != 3 || f.shape()[2] != 2 || f.shape() != s)
      throw ConfigError("temporal median: expected f32 [H, W, 2] flows of one shape, got " + f.shape().str());
  const std::int64_t n = s[0] * s[1];
  Array out = Array::host(DType::f32, Shape(s[0], s[1]));
  const int count = static_cast<int>(flows.size());
  for (std::int64_t i = 0; i < n; ++i) {
    float v[kMaxMedianFrames];
    for (int k = 0; k < count; ++k) {
      const float* f = flows[k].data<float>() + 2 * i;
      v[k] = std::sqrt(f[0] * f[0] + f[1] * f[1]);
    }
    out.data<float>()[i] = small_median(v, count);
  }
  return out;
}

namespace {
MapNorm working_map_norm(const float* m, std::int64_t h, std::int64_t w) {
  // Like the static maps (interactions_cpu): min, max, and m̄ the mean of the 32 × 32 tile maxima
  // other than the largest.
  const std::int64_t ty = (h + kStatTile - 1) / kStatTile, tx = (w + kStatTile - 1) / kStatTile;
  double lo = std::numeric_limits<double>::max(), hi = -lo, sum = 0.0;
  for (std::int64_t t = 0; t < ty * tx; ++t) {
    const std::int64_t y0 = (t / tx) * kStatTile, x0 = (t % tx) * kStatTile;
    float tlo = std::numeric_limits<float>::max(), thi = -tlo;
    for (std::int64_t y = y0; y < std::min(h, y0 + kStatTile); ++y)
      for (std::int64_t x = x0; x < std::min(w, x0 + kStatTile); ++x) {
        tlo = std::min(tlo, m[y * w + x]);
        thi = std::max(thi, m[y * w + x]);
      }
    lo = std::min(lo, static_cast<double>(tlo));
    hi = std::max(hi, static_cast<double>(thi));
    sum += thi;
  }
  const double mean = ty * tx > 1 ? (sum - hi) / static_cast<double>(ty * tx - 1) : lo;
  return map_norm(lo, hi, mean);
}
}  // namespace

Array dynamic_map_cpu(const Array& median, std::int64_t height, std::int64_t width, int k) {
  check_plane(median, "dynamic map", "median motion");
  check_scale(k, "dynamic map");
  const std::int64_t h = median.shape()[0], w = median.shape()[1];
  const MapNorm norm = working_map_norm(median.data<float>(), h, w);
  Array out = Array::host(DType::f32, Shape(height, width));
  for (std::int64_t y = 0; y < height; ++y)
    for (std::int64_t x = 0; x < width; ++x)
      out.data<float>()[y * width + x] = normalized_contribution(upsampled(median.data<float>(), h, w, k, y, x), norm);
  return out;
}

Array fusion_cpu(const Array& static_map, const Array& dynamic_map) {
  check_plane(static_map, "fusion", "static map");
  check_plane(dynamic_map, "fusion", "dynamic map");
  const std::int64_t h = dynamic_map.shape()[0], w = dynamic_map.shape()[1], ws = static_map.shape()[1];
  if (static_map.shape()[0] != h || ws < w)
    throw ConfigError("fusion: static map " + static_map.shape().str() + " does not cover the dynamic map " +
                      dynamic_map.shape().str());
  const float* s = static_map.data<float>();
  const float* d = dynamic_map.data<float>();
  float alpha = 0.0f;
  double s1 = 0, s2 = 0, s3 = 0;
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      alpha = std::max(alpha, s[y * ws + x]);
      const double v = d[y * w + x];
      s1 += v;
      s2 += v * v;
      s3 += v * v * v;
    }
  const auto beta = static_cast<float>(skewness_weight(static_cast<double>(h * w), s1, s2, s3));
  Array out = Array::host(DType::f32, Shape(h, w));
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) out.data<float>()[y * w + x] = fuse(s[y * ws + x], d[y * w + x], alpha, beta);
  return out;
}

Array residual_flow_cpu(const Array& cur, const Array& prev, const MotionParams& params) {
  const Array theta = dominant_motion_cpu(cur, prev, params);
  return flow::compute(cur, compensate_cpu(cur, prev, theta), params.flow);
}

}  // namespace weft::saliency
