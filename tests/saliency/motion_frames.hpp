#pragma once
// Synthetic videos for the dynamic-pathway tests (a textured scene, a moving patch, a camera pan)
// and the dynamic/fused chain computed by direct calls to the CPU stages, frame by frame.
#include <cmath>
#include <cstdint>
#include <deque>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"

namespace weft::saliency::test {

/// Smooth texture with structure at several scales (grey level in [0.1, 0.9]).
inline double texture(double x, double y, int seed = 0) {
  return 0.5 + 0.15 * std::sin(0.45 * x + 0.2 * y + seed) + 0.12 * std::cos(0.17 * y - 0.31 * x) +
         0.08 * std::sin(0.07 * (x - y) + 0.3 * seed);
}

/// Frame t of a u8 video [h, w]: the texture seen by a camera panning by `pan` pixels per frame
/// (x and y), with a square patch of another texture, side `side`, moving by `patch_step` pixels
/// per frame from (y0, x0). Returns through `py`, `px` the patch's top-left corner at t.
inline Array moving_patch_frame(std::int64_t h, std::int64_t w, int t, double pan_x, double pan_y, double step_x,
                                double step_y, double y0, double x0, double side, double* py = nullptr,
                                double* px = nullptr) {
  Array a = Array::host(DType::u8, Shape(h, w));
  const double cy = y0 + step_y * t, cx = x0 + step_x * t;
  if (py) *py = cy;
  if (px) *px = cx;
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      double v = texture(x + pan_x * t, y + pan_y * t);
      if (y >= cy && y < cy + side && x >= cx && x < cx + side) v = texture(2.0 * (x - cx) + 7, 2.0 * (y - cy) + 3, 1);
      a.data<std::uint8_t>()[y * w + x] = static_cast<std::uint8_t>(std::lround(std::fmin(1.0, std::fmax(0.0, v)) * 255));
    }
  return a;
}

/// Maps of the dynamic and fused pathways for a sequence of frames, by direct calls (the order the
/// graph applies them).
struct ChainMaps {
  std::vector<Array> statics, dynamics, fused;
};
inline ChainMaps chain_cpu(const std::vector<Array>& frames, const MotionParams& p) {
  ChainMaps out;
  const std::int64_t h = frames[0].shape()[0], w = frames[0].shape()[1];
  const int k = motion_scale(p, w);
  Array last;
  std::deque<Array> flows;
  for (const Array& frame : frames) {
    const Array cur = motion_frame_cpu(frame, k);
    const Array prev = last.empty() ? cur : last;
    last = cur;
    flows.push_back(residual_flow_cpu(cur, prev, p));
    if (static_cast<int>(flows.size()) > p.median_frames) flows.pop_front();
    const Array md = dynamic_map_cpu(temporal_median_cpu({flows.begin(), flows.end()}), h, w, k);
    const Array ms = static_map_cpu(frame);
    out.fused.push_back(fusion_cpu(ms, md));
    out.statics.push_back(ms);
    out.dynamics.push_back(md);
  }
  return out;
}

}  // namespace weft::saliency::test
