#pragma once
// The decomposition of a split flow (see split_cpu.hpp): strip boundaries per pyramid level, the
// rows each strip holds, and what a strip needs from its partition. Shared by the CPU and CUDA
// strips.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "weft/graph/partition.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow::detail {

// Rows of the neighbours a strip holds: the median filter's radius (5x5), the widest stencil
// along y (the iterations need 1 row, the upsampling 1 above and 2 below). The partition's halo;
// a method may hold more rows on its levels (strip_halo).
inline constexpr int kStripHalo = 2;

// Rows of the neighbours a strip of `method` holds on every level: kStripHalo, and for CLG the
// radius of the structure tensor's Gaussian too (its smoothing of a strip's rows reads the tensor
// that far, and the tensor needs the flow there). Both solvers' radius: ceil(3 rho) (the CUDA
// one caps it at 15).
inline int strip_halo(Method method, double rho) {
  if (method != Method::clg || rho <= 0) return kStripHalo;
  return std::max(kStripHalo, std::max(1, static_cast<int>(std::ceil(3 * rho))));
}

// What a strip needs from its partition.
class StripLinks {
 public:
  virtual ~StripLinks() = default;
  /// Exchanges the halo rows of `a`, laid out over one level's strips as `layout`.
  virtual void exchange(const Array& a, const Slab& layout) = 0;
  /// The sum of `x` over every strip, added in part order (the same double on every strip).
  virtual double sum(double x) = 0;
};

// Strip boundaries of a level of `h` rows, the finest having `h0`: parts + 1 rows.
struct LevelStrips {
  std::vector<std::int64_t> first;
  bool split = false;  // every strip holds `halo` rows or more
};
inline LevelStrips level_strips(std::int64_t h0, std::int64_t h, int parts, int halo = kStripHalo) {
  LevelStrips s;
  for (int j = 0; j <= parts; ++j) s.first.push_back(partition_first_row(h0, parts, j) * h / h0);
  s.split = parts > 1;
  for (int j = 0; j < parts; ++j) s.split = s.split && s.first[j + 1] - s.first[j] >= halo;
  return s;
}

// The rows of level `h` (the finest has h0) that strip `part` of `parts` owns and holds: a split
// level's strip with `halo` rows of each neighbour, or the whole level.
struct StripRows {
  bool split = false;
  Slab layout;
};
inline StripRows strip_rows(std::int64_t h0, int h, int part, int parts, int halo = kStripHalo) {
  const LevelStrips s = level_strips(h0, h, parts, halo);
  if (!s.split) return {false, Slab{0, 1, 0, h, 0, 0, h}};
  return {true, Slab{part, parts, s.first[part], s.first[part + 1] - s.first[part], part > 0 ? halo : 0,
                     part + 1 < parts ? halo : 0, h}};
}

// StripLinks::sum through halo exchanges: each round every strip passes what it knows of the
// parts' values to both neighbours, so after parts - 1 rounds every strip holds every value and
// adds them in part order. `rows` is [layout.total_rows(), 2 * parts] doubles ((known, value) per
// part) laid out per `layout` (one row per part, one halo row per neighbour); `exchange()`
// exchanges it.
inline double gathered_sum(double x, const Slab& layout, double* rows, const std::function<void()>& exchange) {
  const int parts = layout.parts, part = layout.part;
  std::vector<double> value(static_cast<std::size_t>(parts), 0.0), known(static_cast<std::size_t>(parts), 0.0);
  value[part] = x;
  known[part] = 1;
  const std::int64_t width = 2 * static_cast<std::int64_t>(parts);
  for (int round = 0; round + 1 < parts; ++round) {
    double* own = rows + layout.halo_before * width;
    for (int j = 0; j < parts; ++j) own[2 * j] = known[j], own[2 * j + 1] = value[j];
    exchange();
    for (std::int64_t r = 0; r < layout.total_rows(); ++r)
      for (int j = 0; j < parts; ++j)
        if (r != layout.halo_before && rows[r * width + 2 * j] != 0 && known[j] == 0)
          known[j] = 1, value[j] = rows[r * width + 2 * j + 1];
  }
  double total = 0;
  for (double v : value) total += v;
  return total;
}
// The layout of those rows for strip `part` of `parts`.
inline Slab sum_layout(int part, int parts) {
  return Slab{part, parts, part, 1, part > 0 ? 1 : 0, part + 1 < parts ? 1 : 0, parts};
}

}  // namespace weft::flow::detail
