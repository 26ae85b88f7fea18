#include "weft/util/log.hpp"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "weft/util/error.hpp"

namespace weft {
namespace {
std::mutex g_mutex;
int g_rank = 0;
spdlog::level::level_enum g_level = spdlog::level::info;

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
    throw ConfigError("unknown --log-level '" + level + "' (trace, debug, info, warn, error, off)");
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
