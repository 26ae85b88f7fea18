#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fftw3.h>

namespace weft::saliency::reference {
namespace {

using Complex = std::complex<double>;

void fft2(std::vector<Complex>& data, std::int64_t h, std::int64_t w, int sign) {
  auto* p = reinterpret_cast<fftw_complex*>(data.data());
  fftw_plan plan = fftw_plan_dft_2d(static_cast<int>(h), static_cast<int>(w), p, p, sign, FFTW_ESTIMATE);
  fftw_execute(plan);
  fftw_destroy_plan(plan);
}

double frequency(std::int64_t k, std::int64_t n) {
  return static_cast<double>(k <= n / 2 ? k : k - n) / static_cast<double>(n);
}

// Table of Marat et al. 2009 with this project's bandwidths: f_b = 0.25 / 2^b, one octave
// (σ_r = f_b (√2 − 1/√2) / (2 √(2 ln 2))) and 30° (σ_t = f_b tan 15° / √(2 ln 2)) at half amplitude.
double gabor_gain(int o, int b, double fy, double fx) {
  const double theta = o * std::numbers::pi / 6.0, f0 = 0.25 / std::pow(2.0, b);
  const double hwhm = std::sqrt(2.0 * std::log(2.0));
  const double sr = f0 * (std::sqrt(2.0) - 1.0 / std::sqrt(2.0)) / (2.0 * hwhm);
  const double st = f0 * std::tan(std::numbers::pi / 12.0) / hwhm;
  const double u = fx * std::cos(theta) + fy * std::sin(theta), v = -fx * std::sin(theta) + fy * std::cos(theta);
  auto g = [&](double uc) { return std::exp(-(u - uc) * (u - uc) / (2 * sr * sr) - v * v / (2 * st * st)); };
  return g(f0) + g(-f0);
}

double hann(std::int64_t i, std::int64_t n) {
  return n <= 1 ? 1.0 : 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(n - 1));
}

}  // namespace

std::vector<Complex> retina(const Plane& grey, std::int64_t& wf) {
  const std::int64_t h = grey.h, w = grey.w;
  wf = w + (w % 2);
  std::vector<Complex> data(static_cast<std::size_t>(h * wf), 0.0);
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) data[y * wf + x] = grey.v[y * w + x] * hann(x, w) * hann(y, h);
  fft2(data, h, wf, FFTW_FORWARD);
  return data;
}

Plane gabor(const std::vector<Complex>& half, std::int64_t h, std::int64_t wf, int o, int b) {
  const std::int64_t wc = wf / 2 + 1;
  std::vector<Complex> full(static_cast<std::size_t>(h * wf));
  for (std::int64_t ky = 0; ky < h; ++ky)
    for (std::int64_t kx = 0; kx < wf; ++kx) {
      // X(ky, kx) for kx > Wf/2 is conj X(−ky, −kx) of a real signal.
      const Complex x = kx < wc ? half[ky * wc + kx] : std::conj(half[((h - ky) % h) * wc + (wf - kx)]);
      const bool nyquist = 2 * kx == wf || (h % 2 == 0 && 2 * ky == h);
      full[ky * wf + kx] = nyquist ? 0.0 : x * gabor_gain(o, b, frequency(ky, h), frequency(kx, wf));
    }
  fft2(full, h, wf, FFTW_BACKWARD);
  Plane r{h, wf, std::vector<double>(static_cast<std::size_t>(h * wf))};
  for (std::int64_t i = 0; i < h * wf; ++i) r.v[i] = full[i].real() / static_cast<double>(h * wf);
  return r;
}

std::vector<Plane> interactions(const std::vector<Plane>& responses, std::vector<double>& stats) {
  const std::int64_t n = responses[0].h * responses[0].w;
  auto energy = [&](int o, int b, std::int64_t p) {
    const double r = responses[((o + 6) % 6) * 4 + b].v[p];
    return r * r;
  };
  std::vector<Plane> out;
  stats.clear();
  const std::int64_t h = responses[0].h, w = responses[0].w;
  for (int o = 0; o < 6; ++o)
    for (int b = 0; b < 4; ++b) {
      Plane m{h, w, std::vector<double>(static_cast<std::size_t>(n))};
      for (std::int64_t p = 0; p < n; ++p) {
        double v = energy(o, b, p) - 0.5 * (energy(o - 1, b, p) + energy(o + 1, b, p));
        if (b > 0) v += 0.5 * energy(o, b - 1, p);
        if (b < 3) v += 0.5 * energy(o, b + 1, p);
        m.v[p] = std::max(v, 0.0);
      }
      // Local maxima: the maxima of 32 × 32 tiles; m̄ is the mean of all but the largest.
      std::vector<double> tile_max;
      for (std::int64_t y0 = 0; y0 < h; y0 += 32)
        for (std::int64_t x0 = 0; x0 < w; x0 += 32) {
          double t = -1e300;
          for (std::int64_t y = y0; y < std::min(h, y0 + 32); ++y)
            for (std::int64_t x = x0; x < std::min(w, x0 + 32); ++x) t = std::max(t, m.v[y * w + x]);
          tile_max.push_back(t);
        }
      std::sort(tile_max.begin(), tile_max.end());
      const double lo = *std::min_element(m.v.begin(), m.v.end()), hi = tile_max.back();
      double others = 0;
      for (std::size_t t = 0; t + 1 < tile_max.size(); ++t) others += tile_max[t];
      stats.insert(stats.end(), {lo, hi, tile_max.size() > 1 ? others / static_cast<double>(tile_max.size() - 1) : lo});
      out.push_back(std::move(m));
    }
  return out;
}

Plane normalize(const std::vector<Plane>& maps, const std::vector<double>& stats) {
  Plane s{maps[0].h, maps[0].w, std::vector<double>(maps[0].v.size(), 0.0)};
  for (std::size_t k = 0; k < maps.size(); ++k) {
    const double lo = stats[3 * k], hi = stats[3 * k + 1], mean = stats[3 * k + 2];
    if (!(hi > lo)) continue;
    const double weight = std::pow(1.0 - (mean - lo) / (hi - lo), 2.0);
    for (std::size_t p = 0; p < s.v.size(); ++p) {
      const double x = (maps[k].v[p] - lo) / (hi - lo);
      if (x >= 0.2) s.v[p] += x * weight;
    }
  }
  return s;
}

}  // namespace weft::saliency::reference
