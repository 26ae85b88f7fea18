// Foreground selection: fixed threshold, non-zero, Otsu (histogram, between-class variance).
#include "weft/tasks/morphology/threshold.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "parallel.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology {
namespace {

template <class T, class Keep>
Array mask_where(const Array& volume, Keep keep) {
  Array out = Array::host(DType::u8, volume.shape());
  const T* v = volume.data<T>();
  std::uint8_t* o = out.data<std::uint8_t>();
  detail::parallel_for(volume.size(), [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t i = b; i < e; ++i) o[i] = keep(v[i]) ? 1 : 0;
  });
  return out;
}

[[noreturn]] void unsupported(const Array& volume, const char* what) {
  throw ConfigError(std::string(what) + ": unsupported dtype " + std::string(dtype_name(volume.dtype())) +
                    " (expected u8, u16 or f32)");
}

/// Index of the last bin of the background class maximising the between-class variance.
int otsu_bin(const std::vector<double>& hist) {
  double total = 0, weighted = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) {
    total += hist[i];
    weighted += static_cast<double>(i) * hist[i];
  }
  double w0 = 0, sum0 = 0, best = -1;
  int best_bin = 0;
  for (std::size_t i = 0; i + 1 < hist.size(); ++i) {
    w0 += hist[i];
    sum0 += static_cast<double>(i) * hist[i];
    const double w1 = total - w0;
    if (w0 <= 0 || w1 <= 0) continue;
    const double m0 = sum0 / w0, m1 = (weighted - sum0) / w1;
    const double between = w0 * w1 * (m0 - m1) * (m0 - m1);
    if (between > best) {
      best = between;
      best_bin = static_cast<int>(i);
    }
  }
  return best_bin;
}

}  // namespace

Array threshold_mask(const Array& volume, double threshold) {
  switch (volume.dtype()) {
    case DType::u8: return mask_where<std::uint8_t>(volume, [=](std::uint8_t v) { return v >= threshold; });
    case DType::u16: return mask_where<std::uint16_t>(volume, [=](std::uint16_t v) { return v >= threshold; });
    case DType::f32: return mask_where<float>(volume, [=](float v) { return v >= threshold; });
    default: unsupported(volume, "threshold");
  }
}

Array nonzero_mask(const Array& volume) {
  switch (volume.dtype()) {
    case DType::u8: return mask_where<std::uint8_t>(volume, [](std::uint8_t v) { return v != 0; });
    case DType::u16: return mask_where<std::uint16_t>(volume, [](std::uint16_t v) { return v != 0; });
    case DType::f32: return mask_where<float>(volume, [](float v) { return v != 0.0f; });
    default: unsupported(volume, "threshold");
  }
}

double otsu_threshold(const Array& volume) {
  const std::int64_t n = volume.size();
  if (n == 0) throw ConfigError("otsu threshold: empty volume");
  if (volume.dtype() == DType::u8 || volume.dtype() == DType::u16) {
    std::vector<double> hist(volume.dtype() == DType::u8 ? 256 : 65536, 0.0);
    if (volume.dtype() == DType::u8) {
      const auto* v = volume.data<std::uint8_t>();
      for (std::int64_t i = 0; i < n; ++i) hist[v[i]] += 1;
    } else {
      const auto* v = volume.data<std::uint16_t>();
      for (std::int64_t i = 0; i < n; ++i) hist[v[i]] += 1;
    }
    return otsu_bin(hist) + 1.0;
  }
  if (volume.dtype() != DType::f32) unsupported(volume, "otsu threshold");
  const float* v = volume.data<float>();
  const auto [lo_it, hi_it] = std::minmax_element(v, v + n);
  const double lo = *lo_it, hi = *hi_it;
  if (!(hi > lo)) return std::nextafter(hi, std::numeric_limits<double>::infinity());
  constexpr int kBins = 1024;
  std::vector<double> hist(kBins, 0.0);
  const double scale = kBins / (hi - lo);
  for (std::int64_t i = 0; i < n; ++i) hist[std::min(kBins - 1, static_cast<int>((v[i] - lo) * scale))] += 1;
  return lo + (otsu_bin(hist) + 1) / scale;
}

}  // namespace weft::morphology
