#pragma once
// Internal: a computed size map (i32, n on the foreground, −1 on the background) turned into
// the form a caller asked for (SizeMapForm, granulometry.hpp).
#include "weft/data/array.hpp"
#include "weft/tasks/morphology/granulometry.hpp"

namespace weft::morphology::detail {

/// A host map in `form` (the computed one is released as soon as it is read).
[[nodiscard]] Array size_map_in_form(Array computed, const SizeMapForm& form);

}  // namespace weft::morphology::detail
