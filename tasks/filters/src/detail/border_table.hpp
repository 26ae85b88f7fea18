#pragma once
// Precomputed border mapping of one axis: index(p) for p in [-radius, n + radius).
#include <cstdint>
#include <vector>

#include "element.hpp"

namespace weft::filters::detail {

class BorderTable {
 public:
  BorderTable(std::int64_t n, int radius, int border) : radius_(radius), table_(n + 2 * radius) {
    for (std::int64_t p = -radius; p < n + radius; ++p) table_[p + radius] = device::border_index(p, n, border);
  }
  /// Mapped index of position p (−1: outside with a zero border).
  [[nodiscard]] std::int64_t operator()(std::int64_t p) const { return table_[p + radius_]; }

 private:
  int radius_;
  std::vector<std::int64_t> table_;
};

}  // namespace weft::filters::detail
