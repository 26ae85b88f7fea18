#pragma once
// Internal: a granulometry firing in phases (Context::phase), so that a trace shows where the
// time of its one long span goes: the distance to the background, then each opening size.
#include <optional>
#include <string>
#include <utility>

#include "weft/graph/task.hpp"
#include "weft/tasks/morphology/granulometry.hpp"

namespace weft::morphology::detail {

/// compute(options) (granulometry_cpu or _gpu) within the phases "distance to the background",
/// then "opening n" from the start of each size n to the start of the next (the last one until
/// every count is in).
template <class Compute>
GranulometryResult with_size_phases(Context& ctx, GranulometryOptions options, Compute&& compute) {
  std::optional<Context::Phase> phase;
  phase.emplace(ctx, "distance to the background");
  options.on_size_start = [&ctx, &phase, chained = std::move(options.on_size_start)](int n, int last) {
    if (chained) chained(n, last);
    phase.reset();
    phase.emplace(ctx, "opening " + std::to_string(n));
  };
  return std::forward<Compute>(compute)(options);
}

}  // namespace weft::morphology::detail
