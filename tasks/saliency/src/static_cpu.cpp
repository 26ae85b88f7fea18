// CPU static pathway in float with FFTW: Hann window + R2C, Gabor gains + C2R per map,
// interactions with per-map statistics, normalisation and sum. Sums are in double, in row-major
// order, so the result does not depend on where or when a stage runs.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <fftw3.h>

#include "weft/tasks/saliency/bank.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

/// FFTW's planner is not thread-safe; executing a plan on new arrays is. Plans live until exit.
struct PlanCache {
  std::mutex mutex;
  std::map<std::tuple<int, std::int64_t, std::int64_t>, fftwf_plan> plans;  // (direction, H, Wf)
};
PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

fftwf_plan plan_for(bool forward, std::int64_t h, std::int64_t wf) {
  PlanCache& cache = plan_cache();
  std::lock_guard lock(cache.mutex);
  auto& plan = cache.plans[{forward ? 1 : 0, h, wf}];
  if (plan) return plan;
  const std::int64_t wc = wf / 2 + 1;
  float* real = fftwf_alloc_real(static_cast<std::size_t>(h * wf));
  fftwf_complex* cplx = fftwf_alloc_complex(static_cast<std::size_t>(h * wc));
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  plan = forward ? fftwf_plan_dft_r2c_2d(static_cast<int>(h), static_cast<int>(wf), real, cplx, flags)
                 : fftwf_plan_dft_c2r_2d(static_cast<int>(h), static_cast<int>(wf), cplx, real, flags);
  fftwf_free(real);
  fftwf_free(cplx);
  if (!plan) throw Error("FFTW could not plan a " + std::to_string(h) + "x" + std::to_string(wf) + " transform");
  return plan;
}

template <class T> void window_rows(const T* src, float scale, std::int64_t h, std::int64_t w, std::int64_t wf,
                                    float* dst) {
  std::vector<float> wx(static_cast<std::size_t>(w));
  for (std::int64_t x = 0; x < w; ++x) wx[x] = hann(x, w) * scale;
  for (std::int64_t y = 0; y < h; ++y) {
    const float wy = hann(y, h);
    for (std::int64_t x = 0; x < w; ++x) dst[y * wf + x] = static_cast<float>(src[y * w + x]) * wx[x] * wy;
    for (std::int64_t x = w; x < wf; ++x) dst[y * wf + x] = 0.0f;
  }
}

void check_spectrum(const Array& spectrum, const char* stage) {
  if (spectrum.dtype() != DType::f32 || spectrum.shape().ndim() != 3 || spectrum.shape()[2] != 2)
    throw ConfigError(std::string(stage) + ": expected a f32 [H, W/2+1, 2] spectrum, got " +
                      std::string(dtype_name(spectrum.dtype())) + " " + spectrum.shape().str());
}

}  // namespace

Array retina_cpu(const Array& frame) {
  if (frame.shape().ndim() != 2) throw ConfigError("retina: expected a 2D frame, got " + frame.shape().str());
  const std::int64_t h = frame.shape()[0], w = frame.shape()[1], wf = fft_width(w), wc = wf / 2 + 1;
  std::vector<float> windowed(static_cast<std::size_t>(h * wf));
  switch (frame.dtype()) {
    case DType::u8: window_rows(frame.data<std::uint8_t>(), 1.0f / 255.0f, h, w, wf, windowed.data()); break;
    case DType::u16: window_rows(frame.data<std::uint16_t>(), 1.0f / 65535.0f, h, w, wf, windowed.data()); break;
    case DType::f32: window_rows(frame.data<float>(), 1.0f, h, w, wf, windowed.data()); break;
    default: throw ConfigError("retina: frames must be u8, u16 or f32, got " + std::string(dtype_name(frame.dtype())));
  }
  Array spectrum = Array::host(DType::f32, Shape(h, wc, 2));
  fftwf_execute_dft_r2c(plan_for(true, h, wf), windowed.data(), reinterpret_cast<fftwf_complex*>(spectrum.raw()));
  return spectrum;
}

Array gabor_cpu(const Array& spectrum, int first_orientation, int orientations) {
  check_spectrum(spectrum, "gabor");
  if (first_orientation < 0 || orientations < 1 || first_orientation + orientations > kOrientations)
    throw ConfigError("gabor: orientations " + std::to_string(first_orientation) + "+" + std::to_string(orientations) +
                      " outside 0.." + std::to_string(kOrientations - 1));
  const std::int64_t h = spectrum.shape()[0], wc = spectrum.shape()[1], wf = 2 * (wc - 1);
  const float scale = 1.0f / static_cast<float>(h * wf);
  const float* x = spectrum.data<float>();
  Array out = Array::host(DType::f32, Shape(orientations * kBands, h, wf));
  std::vector<float> filtered(static_cast<std::size_t>(h * wc * 2));
  const fftwf_plan plan = plan_for(false, h, wf);
  for (int i = 0; i < orientations; ++i) {
    for (int b = 0; b < kBands; ++b) {
      const int o = first_orientation + i;
      for (std::int64_t ky = 0; ky < h; ++ky) {
        const float fy = static_cast<float>(grid_frequency(ky, h));
        for (std::int64_t kx = 0; kx < wc; ++kx) {
          const std::int64_t k = ky * wc + kx;
          const float g = on_nyquist(ky, kx, h, wf) ? 0.0f
                                                    : gabor_gain(o, b, fy, static_cast<float>(kx) / static_cast<float>(wf)) * scale;
          filtered[2 * k] = x[2 * k] * g;
          filtered[2 * k + 1] = x[2 * k + 1] * g;
        }
      }
      float* dst = out.data<float>() + (i * kBands + b) * h * wf;
      fftwf_execute_dft_c2r(plan, reinterpret_cast<fftwf_complex*>(filtered.data()), dst);
    }
  }
  return out;
}

Interacted interactions_cpu(const std::vector<Array>& groups) {
  if (groups.empty()) throw ConfigError("interactions: no Gabor groups");
  const Shape& s0 = groups[0].shape();
  if (s0.ndim() != 3) throw ConfigError("interactions: expected [n, H, W] responses, got " + s0.str());
  const std::int64_t h = s0[1], w = s0[2], n = h * w;
  std::vector<const float*> source(kMaps);  // map m → its plane in some group
  int m = 0;
  for (const Array& g : groups) {
    if (g.dtype() != DType::f32 || g.shape().ndim() != 3 || g.shape()[1] != h || g.shape()[2] != w ||
        g.shape()[0] % kBands != 0)
      throw ConfigError("interactions: group responses " + g.shape().str() + " do not match " + s0.str());
    for (std::int64_t k = 0; k < g.shape()[0]; ++k, ++m)
      if (m < kMaps) source[m] = g.data<float>() + k * n;
  }
  if (m != kMaps) throw ConfigError("interactions: groups hold " + std::to_string(m) + " maps, expected 24");
  Interacted r{Array::host(DType::f32, Shape(kMaps, h, w)), Array::host(DType::f64, Shape(kMaps, 3))};
  float* maps = r.maps.data<float>();
  float e[kMaps];
  for (std::int64_t p = 0; p < n; ++p) {
    for (int k = 0; k < kMaps; ++k) e[k] = source[k][p] * source[k][p];
    for (int o = 0; o < kOrientations; ++o)
      for (int b = 0; b < kBands; ++b) maps[(o * kBands + b) * n + p] = interact(e, o, b);
  }
  // Statistics from the maxima of kStatTile × kStatTile tiles (the GPU's decomposition): min, max
  // and Itti's m̄, the mean of the tiles' maxima other than the global one.
  const std::int64_t ty = (h + kStatTile - 1) / kStatTile, tx = (w + kStatTile - 1) / kStatTile;
  double* st = r.stats.data<double>();
  std::vector<float> tile_lo(static_cast<std::size_t>(ty * tx)), tile_hi(tile_lo.size());
  for (int k = 0; k < kMaps; ++k) {
    const float* m = maps + k * n;
    for (std::int64_t t = 0; t < ty * tx; ++t) {
      const std::int64_t y0 = (t / tx) * kStatTile, x0 = (t % tx) * kStatTile;
      float lo = std::numeric_limits<float>::max(), hi = -lo;
      for (std::int64_t y = y0; y < std::min(h, y0 + kStatTile); ++y)
        for (std::int64_t x = x0; x < std::min(w, x0 + kStatTile); ++x) {
          lo = std::min(lo, m[y * w + x]);
          hi = std::max(hi, m[y * w + x]);
        }
      tile_lo[t] = lo;
      tile_hi[t] = hi;
    }
    st[3 * k] = st[3 * k + 1] = st[3 * k + 2] = 0.0;
    if (n == 0) continue;
    double lo = tile_lo[0], hi = tile_hi[0], sum = 0.0;
    for (std::int64_t t = 0; t < ty * tx; ++t) {
      lo = std::min(lo, static_cast<double>(tile_lo[t]));
      hi = std::max(hi, static_cast<double>(tile_hi[t]));
      sum += tile_hi[t];
    }
    st[3 * k] = lo;
    st[3 * k + 1] = hi;
    st[3 * k + 2] = ty * tx > 1 ? (sum - hi) / static_cast<double>(ty * tx - 1) : lo;
  }
  return r;
}

Array normalize_cpu(const Array& maps, const Array& stats) {
  if (maps.dtype() != DType::f32 || maps.shape().ndim() != 3 || maps.shape()[0] != kMaps)
    throw ConfigError("normalize: expected f32 [24, H, W] maps, got " + maps.shape().str());
  if (stats.dtype() != DType::f64 || stats.size() != 3 * kMaps)
    throw ConfigError("normalize: expected f64 [24, 3] statistics, got " + stats.shape().str());
  const std::int64_t h = maps.shape()[1], w = maps.shape()[2], n = h * w;
  MapNorm norm[kMaps];
  const double* st = stats.data<double>();
  for (int k = 0; k < kMaps; ++k) norm[k] = map_norm(st[3 * k], st[3 * k + 1], st[3 * k + 2]);
  Array out = Array::host(DType::f32, Shape(h, w));
  float* dst = out.data<float>();
  const float* src = maps.data<float>();
  for (std::int64_t p = 0; p < n; ++p) {
    float s = 0.0f;
    for (int k = 0; k < kMaps; ++k) s += normalized_contribution(src[k * n + p], norm[k]);
    dst[p] = s;
  }
  return out;
}

Array crop_width(const Array& map, std::int64_t width) {
  const std::int64_t h = map.shape()[0], wf = map.shape()[1];
  if (wf == width) return map;
  Array out = Array::host(DType::f32, Shape(h, width));
  for (std::int64_t y = 0; y < h; ++y)
    std::memcpy(out.data<float>() + y * width, map.data<float>() + y * wf, static_cast<std::size_t>(width) * 4);
  return out;
}

Array static_map_cpu(const Array& frame) {
  const Array spectrum = retina_cpu(frame);
  const Interacted i = interactions_cpu({gabor_cpu(spectrum, 0, kOrientations)});
  return crop_width(normalize_cpu(i.maps, i.stats), frame.shape()[1]);
}

}  // namespace weft::saliency
