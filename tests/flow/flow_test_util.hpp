#pragma once
// Synthetic frames and helpers shared by the CPU and GPU flow tests.
#include <cmath>
#include <filesystem>
#include <string>

#include "weft/data/array.hpp"

namespace weft::flow::test {

// A smooth textured pattern, translated by (dx, dy): frame(x, y) = pattern(x - dx, y - dy), so the
// flow from the untranslated frame to this one is (dx, dy) everywhere.
inline Array pattern(int w, int h, double dx = 0, double dy = 0) {
  Array a = Array::host(DType::f64, Shape(h, w));
  double* p = a.data<double>();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double X = x - dx, Y = y - dy;
      p[y * w + x] = 128 + 50 * std::sin(0.31 * X + 0.13 * Y) + 40 * std::cos(0.23 * Y - 0.17 * X) +
                     20 * std::sin(0.05 * X * 0.7 + 0.09 * Y);
    }
  return a;
}

inline Array constant(int w, int h, double value) {
  Array a = Array::host(DType::f64, Shape(h, w));
  for (int i = 0; i < w * h; ++i) a.data<double>()[i] = value;
  return a;
}

// Mean and max of |a - b| over the flow components, and the largest |b|.
struct Diff {
  double mean = 0, max = 0, scale = 0;
};
inline Diff diff(const Array& a, const Array& b) {
  Diff d;
  const float *pa = a.data<float>(), *pb = b.data<float>();
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(double(pa[i]) - pb[i]);
    d.mean += e, d.max = std::max(d.max, e), d.scale = std::max(d.scale, std::fabs(double(pb[i])));
  }
  d.mean /= double(a.size());
  return d;
}

// Mean flow over the interior (a margin of `m` pixels dropped).
inline void mean_interior(const Array& f, int m, double& u, double& v, bool& finite) {
  const int h = int(f.shape()[0]), w = int(f.shape()[1]);
  const float* p = f.data<float>();
  u = v = 0;
  finite = true;
  int n = 0;
  for (int y = m; y < h - m; ++y)
    for (int x = m; x < w - m; ++x, ++n) u += p[2 * (y * w + x)], v += p[2 * (y * w + x) + 1];
  for (std::int64_t i = 0; i < f.size(); ++i) finite = finite && std::isfinite(p[i]);
  u /= n, v /= n;
}

inline std::string shared_flow_data() { return std::string(WEFT_SHARED_DATA) + "/flow"; }
inline bool have_shared_data() { return std::filesystem::exists(shared_flow_data() + "/middlebury/RubberWhale/frame10.png"); }

struct Pair {
  const char* name;
  const char* frame0;
  const char* frame1;
  const char* truth;
};
inline constexpr Pair kPairs[] = {
    {"RubberWhale", "middlebury/RubberWhale/frame10.png", "middlebury/RubberWhale/frame11.png", "middlebury/RubberWhale/flow10.flo"},
    {"Hydrangea", "middlebury/Hydrangea/frame10.png", "middlebury/Hydrangea/frame11.png", "middlebury/Hydrangea/flow10.flo"},
    {"SintelEasy", "sintel/easy/frame_0002.png", "sintel/easy/frame_0003.png", "sintel/easy/gt/frame_0002.flo"},
};

}  // namespace weft::flow::test
