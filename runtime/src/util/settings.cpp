#include "weft/util/settings.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace weft {
namespace {

const char* text_of(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

/// Reads the variables, noting the first bad value in `s.problem`.
Settings read() {
  Settings s;
  const auto note = [&s](const char* name, const std::string& why) {
    if (s.problem.empty()) s.problem = std::string(name) + ": " + why;
  };
  const auto flag = [&](const char* name, bool fallback) {
    const char* v = text_of(name);
    if (!v) return fallback;
    const std::string t = v;
    if (t == "1" || t == "on" || t == "yes") return true;
    if (t == "0" || t == "off" || t == "no") return false;
    note(name, "expected 0 or 1, got '" + t + "'");
    return fallback;
  };
  const auto seconds = [&](const char* name, double fallback) {
    const char* v = text_of(name);
    if (!v) return fallback;
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(x >= 0) || x > 1e9) {
      note(name, "expected a number of seconds >= 0, got '" + std::string(v) + "'");
      return fallback;
    }
    return x;
  };
  const auto count = [&](const char* name, int lo, int hi) -> std::optional<int> {
    const char* v = text_of(name);
    if (!v) return std::nullopt;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || x < lo || x > hi) {
      note(name, "expected a count from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                     std::string(v) + "'");
      return std::nullopt;
    }
    return static_cast<int>(x);
  };
  const auto text = [](const char* name) { return std::string(text_of(name) ? text_of(name) : ""); };
  s.log_level = text("WEFT_LOG_LEVEL");
  s.progress_interval = seconds("WEFT_PROGRESS_INTERVAL", 5);
  s.liveness_timeout = seconds("WEFT_LIVENESS_TIMEOUT", 60);
  s.control_file = text("WEFT_CTL");
  s.trace_file = text("WEFT_TRACE");
  s.keep_binding = flag("WEFT_KEEP_BINDING", false);
  s.peer_ipc = flag("WEFT_PEER_IPC", true);
  s.nccl = flag("WEFT_NCCL", true);
  s.state_ipc = flag("WEFT_STATE_IPC", true);
  s.read_threads = count("WEFT_READ_THREADS", 1, 4096);
  s.slab_read_ahead = count("WEFT_SLAB_READ_AHEAD", 1, 16);
  s.host_turns = flag("WEFT_HOST_TURNS", true);
  s.halo_handover = flag("WEFT_HALO_HANDOVER", false);
  s.debug_sync = flag("WEFT_DEBUG_SYNC", false);
  s.debug_remote = text_of("WEFT_DEBUG_REMOTE") != nullptr;
  s.hide_gpus = flag("WEFT_HIDE_GPUS", false);
  s.chained_launch = flag("WEFT_CHAINED_LAUNCH", true);
  s.roll_alternate = flag("WEFT_ROLL_ALTERNATE", true);
  s.flow_fused_layout = text("WEFT_FLOW_FUSED_LAYOUT");
  s.commit = text("WEFT_COMMIT");
  s.separate_hosts = flag("WEFT_SEPARATE_HOSTS", false);
  return s;
}

Settings& current() {
  static Settings s = read();
  return s;
}

}  // namespace

const std::vector<SettingInfo>& setting_infos() {
  static const std::vector<SettingInfo> table = {
      {"WEFT_LOG_LEVEL", "info", "level of the log lines: trace, debug, info, warn, error or off (--log-level overrides it)",
       "debug to see the mapping and the balancer's view"},
      {"WEFT_PROGRESS_INTERVAL", "5", "seconds between progress lines when stderr is not a terminal",
       "30 or more for long batch jobs; 0 for a line per step"},
      {"WEFT_LIVENESS_TIMEOUT", "60",
       "seconds without a beat from a rank, or without progress while every rank waits inside a run, before the "
       "job stops; 0: no watch",
       "longer on oversubscribed nodes; 0 under a debugger"},
      {"WEFT_CTL", "", "the control file a job follows and `weft ctl` writes, when --ctl is not given",
       "to command jobs without repeating --ctl"},
      {"WEFT_TRACE", "", "a trace of every run of a program ('%' in the name: the run's number)",
       "tracing a program that has no --trace"},
      {"WEFT_KEEP_BINDING", "0", "1: keep the launcher's CPU binding (a rank bound to fewer than 4 CPUs takes its share)",
       "when you bind ranks yourself"},
      {"WEFT_PEER_IPC", "1", "0: arrays between ranks of one host through pinned host memory and MPI, not CUDA IPC",
       "to compare, or where CUDA IPC is not allowed"},
      {"WEFT_NCCL", "1", "0: never NCCL between ranks (CUDA IPC or host memory instead)", "to compare, or to rule NCCL out"},
      {"WEFT_STATE_IPC", "1", "0: a migrating task's device state goes through the host between ranks of one host, not CUDA IPC",
       "to compare"},
      {"WEFT_READ_THREADS", "3/4 of the CPUs", "threads reading a volume's slabs (weft granulometry), 1 to 4096",
       "file systems that want more readers"},
      {"WEFT_SLAB_READ_AHEAD", "3", "chunks of 256 MiB each slab's reader keeps in flight, 1 to 16", "fast file systems"},
      {"WEFT_HOST_TURNS", "1", "0: the ranks of a host read their slabs at once, not in turns", "to compare"},
      {"WEFT_HALO_HANDOVER", "0", "1 on every rank: halos shared by ranks of a host read once, handed over in /dev/shm",
       "experiments (docs/granulometry.md)"},
      {"WEFT_DEBUG_SYNC", "0", "1: synchronise and check after every kernel launch", "to find a failing kernel"},
      {"WEFT_DEBUG_REMOTE", "", "set: print every message the progress thread posts and completes", "debugging links"},
      {"WEFT_HIDE_GPUS", "0", "1: the process sees no GPU", "the CPU paths of a CUDA build"},
      {"WEFT_CHAINED_LAUNCH", "1", "0: the filters' kernels launched the ordinary way, not chained", "to compare"},
      {"WEFT_ROLL_ALTERNATE", "1", "0: rolling convolution strips all downwards", "to compare"},
      {"WEFT_FLOW_FUSED_LAYOUT", "sm90", "thread layout of the fused TV-L1 kernel", "tuning"},
      {"WEFT_COMMIT", "", "the commit recorded where git cannot tell (a copied tree)", "on machines given a copy"},
      {"WEFT_SEPARATE_HOSTS", "0",
       "1: every rank behaves as if on a host of its own (host name + '#rank', no memory shared between ranks, no "
       "CUDA IPC), so that one machine runs the paths between hosts",
       "testing; CI runs the multi-rank tests so (with Open MPI's TCP transport)"},
  };
  return table;
}

const Settings& settings() { return current(); }

void reload_settings() { current() = read(); }

std::string settings_help() {
  std::string out = "Environment variables (docs/configuration.md):\n";
  for (const SettingInfo& s : setting_infos()) {
    char head[96];
    std::snprintf(head, sizeof head, "  %-24s default %s\n", s.name, *s.fallback ? s.fallback : "(unset)");
    out += head;
    out += std::string("      ") + s.meaning + "\n      when: " + s.when + "\n";
  }
  return out;
}

}  // namespace weft
