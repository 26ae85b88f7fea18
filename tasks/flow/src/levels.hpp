#pragma once
// Pyramid sizes and input scaling shared by the CPU solvers and the CUDA driver (no OpenMP here).
#include <algorithm>
#include <cmath>

#include "weft/data/dtype.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow::detail {

// Scale bringing integer intensities to [0, 1] (u8: 1/255, u16: 1/65535, like OpenCV's
// conversion); 0 for floating-point frames, which are normalised jointly by their min/max.
inline float intensity_scale(DType t) {
  return t == DType::u8 ? 1.f / 255.f : (t == DType::u16 ? 1.f / 65535.f : 0.f);
}

// Gaussian sigma applied before zooming out by `zoom`: params.antialias * sqrt(1/zoom^2 - 1)
// (IPOL: 0.6; 0, the default, blurs nothing, as OpenCV's pyramid).
inline double antialias_sigma(const FlowParams& prm) {
  return prm.antialias * std::sqrt(1.0 / (prm.zoom * prm.zoom) - 1.0);
}

// Size of the next (coarser) level: round(n * zoom).
inline int zoomed_size(int n, double zoom) { return std::max(1, static_cast<int>(n * zoom + 0.5)); }

// Number of pyramid levels actually used: stop before a level narrower than 16 pixels.
inline int level_count(int w, int h, const FlowParams& prm) {
  int n = 1;
  while (n < prm.scales) {
    const int nw = zoomed_size(w, prm.zoom), nh = zoomed_size(h, prm.zoom);
    if (nw < 16 || nh < 16) break;
    w = nw, h = nh, ++n;
  }
  return n;
}

}  // namespace weft::flow::detail
