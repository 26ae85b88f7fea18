#pragma once
/// Logging: one spdlog logger per area ("weft.exec", "weft.transport", ...), each line stamped with
/// the time since start and the rank.
#include <memory>
#include <string>

#include <spdlog/logger.h>

namespace weft {

/// The logger of an area, created on first use; its lines read
/// "[   12.345s rank R] [weft.area] level: text" (seconds since the process started).
[[nodiscard]] std::shared_ptr<spdlog::logger> logger(const std::string& area);
/// Sets the level of every Weft logger ("trace", "debug", "info", "warn", "error", "off").
void set_log_level(const std::string& level);
/// Sets the rank shown in every log line (done by Environment).
void set_log_rank(int rank);

}  // namespace weft
