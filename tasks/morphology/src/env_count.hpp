#pragma once
// Counts that an environment variable may set (WEFT_READ_THREADS, WEFT_SLAB_READ_AHEAD).
#include <cstdlib>
#include <optional>
#include <string>

#include "weft/util/error.hpp"

namespace weft::morphology::detail {

/// The whole number from lo to hi that the environment variable `name` holds, nullopt when it is
/// unset or empty; ConfigError "NAME: expected a number of UNIT from lo to hi, got 'value'" else.
inline std::optional<int> count_from_env(const char* name, int lo, int hi, const char* unit) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi)
    throw ConfigError(std::string(name) + ": expected a number of " + unit + " from " + std::to_string(lo) + " to " +
                      std::to_string(hi) + ", got '" + v + "'");
  return static_cast<int>(n);
}

}  // namespace weft::morphology::detail
