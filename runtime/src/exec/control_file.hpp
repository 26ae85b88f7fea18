#pragma once
// Internal: the job's side of the control file (weft/exec/control.hpp says the rules).
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/graph/place.hpp"

namespace weft::detail {

/// One command of the control file: "migrate TASK PLACE", "drain PLACE", "undrain PLACE".
struct ControlCommand {
  std::string verb;  ///< migrate, drain or undrain
  std::string task;  ///< migrate only
  Place place;
};
/// Parses one line (nullopt for a blank line or a '#' comment); ConfigError for anything else.
[[nodiscard]] std::optional<ControlCommand> parse_control_command(const std::string& line);

/// A control file this process created. One per path per process: every run of the process
/// (granulometry runs two graphs) follows the same file, removed when the process exits.
class ControlFile {
 public:
  /// The process's control file for `name` (control_file_path), created on first use. Throws
  /// ConfigError when the path holds a file this process did not create.
  [[nodiscard]] static std::shared_ptr<ControlFile> open(const std::string& name);
  ~ControlFile();
  ControlFile(const ControlFile&) = delete;
  ControlFile& operator=(const ControlFile&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// Skips what is in the file now: a run follows only the commands sent while it runs.
  void skip_to_end();
  /// Complete lines appended since the last call; an over-long line comes back empty of text
  /// but counted in `dropped`.
  [[nodiscard]] std::vector<std::string> new_lines(int& dropped);

 private:
  ControlFile(std::string path, int fd);
  std::string path_;
  int fd_ = -1;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  std::string partial_;
  bool skipping_ = false;  ///< inside an over-long line
};

}  // namespace weft::detail
