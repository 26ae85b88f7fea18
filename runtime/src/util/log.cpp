#include "weft/util/log.hpp"

#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "weft/util/error.hpp"

namespace weft {
namespace {
std::mutex g_mutex;
int g_rank = 0;
// The level before any set_log_level(): WEFT_LOG_LEVEL if set (a command's --log-level overrides it).
spdlog::level::level_enum initial_level() {
  const char* env = std::getenv("WEFT_LOG_LEVEL");
  if (!env || !*env) return spdlog::level::info;
  auto parsed = spdlog::level::from_str(env);
  return parsed == spdlog::level::off && std::string(env) != "off" ? spdlog::level::info : parsed;
}
spdlog::level::level_enum g_level = initial_level();

std::string pattern() { return "[rank " + std::to_string(g_rank) + "] [%n] %^%l%$: %v"; }
}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& area) {
  std::lock_guard lock(g_mutex);
  std::string name = "weft." + area;
  if (auto existing = spdlog::get(name)) return existing;
  auto log = spdlog::stderr_color_mt(name);
  log->set_pattern(pattern());
  log->set_level(g_level);
  return log;
}

void set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw ConfigError("unknown log level '" + level + "' (expected trace, debug, info, warn, error or off)");
  std::lock_guard lock(g_mutex);
  g_level = parsed;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { l->set_level(parsed); });
}

void set_log_rank(int rank) {
  std::lock_guard lock(g_mutex);
  g_rank = rank;
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { l->set_pattern(pattern()); });
}

}  // namespace weft
