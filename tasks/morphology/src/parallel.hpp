#pragma once
// The CPU path's parallel loop: weft::parallel_for with the runtime's default grain.
#include "weft/util/parallel_for.hpp"

namespace weft::morphology::detail {
using weft::parallel_for;
using weft::worker_count_hint;
}  // namespace weft::morphology::detail
