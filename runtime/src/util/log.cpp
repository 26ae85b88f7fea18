#include "weft/util/log.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "weft/util/error.hpp"
#include "weft/util/settings.hpp"

namespace weft {
namespace {
std::mutex g_mutex;
int g_rank = 0;
// The level before any set_log_level(): WEFT_LOG_LEVEL if set (a command's --log-level overrides it).
spdlog::level::level_enum initial_level() {
  const std::string& env = settings().log_level;
  if (env.empty()) return spdlog::level::info;
  auto parsed = spdlog::level::from_str(env);
  return parsed == spdlog::level::off && env != "off" ? spdlog::level::info : parsed;  // the program refuses it
}
spdlog::level::level_enum g_level = initial_level();

// Every line says when, in seconds since the process started (the ranks of a job start within
// moments of each other, so lines of several ranks can be read side by side), and which rank.
const std::chrono::steady_clock::time_point g_start = std::chrono::steady_clock::now();

class SinceStart final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
    char text[32];
    const int n = std::snprintf(text, sizeof text, "%9.3fs", t);
    dest.append(text, text + n);
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return spdlog::details::make_unique<SinceStart>();
  }
};

void set_format(spdlog::logger& log) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<SinceStart>('*').set_pattern("[%* rank " + std::to_string(g_rank) + "] [%n] %^%l%$: %v");
  log.set_formatter(std::move(formatter));
}
}  // namespace

std::shared_ptr<spdlog::logger> logger(const std::string& area) {
  std::lock_guard lock(g_mutex);
  std::string name = "weft." + area;
  if (auto existing = spdlog::get(name)) return existing;
  auto log = spdlog::stderr_color_mt(name);
  set_format(*log);
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
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { set_format(*l); });
}

}  // namespace weft
