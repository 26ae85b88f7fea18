#pragma once
/// Every WEFT_* environment variable the runtime and the tasks read, in one place: its name, its
/// default, what it changes and when to set it (`weft --help-env` prints the table, and
/// docs/configuration.md is the same). Each is read here and nowhere else.
#include <optional>
#include <string>
#include <vector>

namespace weft {

/// One documented variable.
struct SettingInfo {
  const char* name;
  const char* fallback;  ///< the value when unset
  const char* meaning;   ///< what it changes
  const char* when;      ///< when to set it
};
/// The table, in the order docs/configuration.md gives it.
[[nodiscard]] const std::vector<SettingInfo>& setting_infos();

/// The values, read from the environment the first time settings() is called.
struct Settings {
  std::string log_level;            ///< WEFT_LOG_LEVEL ("" when unset)
  double progress_interval = 5;     ///< WEFT_PROGRESS_INTERVAL, seconds
  double liveness_timeout = 60;     ///< WEFT_LIVENESS_TIMEOUT, seconds (0: off)
  std::string control_file;         ///< WEFT_CTL
  std::string trace_file;           ///< WEFT_TRACE
  bool keep_binding = false;        ///< WEFT_KEEP_BINDING=1
  bool peer_ipc = true;             ///< WEFT_PEER_IPC (0: off)
  bool nccl = true;                 ///< WEFT_NCCL (0: off)
  bool state_ipc = true;            ///< WEFT_STATE_IPC (0: off)
  std::optional<int> read_threads;  ///< WEFT_READ_THREADS
  std::optional<int> slab_read_ahead;  ///< WEFT_SLAB_READ_AHEAD
  bool host_turns = true;           ///< WEFT_HOST_TURNS (0: off)
  bool halo_handover = false;       ///< WEFT_HALO_HANDOVER=1
  bool debug_sync = false;          ///< WEFT_DEBUG_SYNC=1
  bool debug_remote = false;        ///< WEFT_DEBUG_REMOTE (set)
  bool hide_gpus = false;           ///< WEFT_HIDE_GPUS=1
  bool chained_launch = true;       ///< WEFT_CHAINED_LAUNCH (0: off)
  bool roll_alternate = true;       ///< WEFT_ROLL_ALTERNATE (0: off)
  std::string flow_fused_layout;    ///< WEFT_FLOW_FUSED_LAYOUT
  std::string commit;               ///< WEFT_COMMIT
  bool separate_hosts = false;      ///< WEFT_SEPARATE_HOSTS=1
  /// The first variable whose value is not one it takes, as "NAME: why" ("" when all are good):
  /// programs refuse to start with it (exit 2); libraries use the default meanwhile.
  std::string problem;
};
[[nodiscard]] const Settings& settings();

/// Reads the environment again (tests that change a variable between runs).
void reload_settings();

/// The table as text, for `weft --help-env`.
[[nodiscard]] std::string settings_help();

}  // namespace weft
