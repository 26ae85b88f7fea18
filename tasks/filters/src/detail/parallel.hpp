#pragma once
// The CPU filters' parallel loop: weft::parallel_for over rows, at least 8 rows per worker.
#include <utility>

#include "weft/util/parallel_for.hpp"

namespace weft::filters::detail {

template <class Body>  // Body(std::int64_t begin, std::int64_t end, int worker)
void parallel_for(std::int64_t count, Body&& body) {
  weft::parallel_for(count, std::forward<Body>(body), 8);
}
using weft::worker_count_hint;

}  // namespace weft::filters::detail
