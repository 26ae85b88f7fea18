#include "weft/util/output.hpp"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "weft/util/error.hpp"

namespace weft {
namespace {

namespace fs = std::filesystem;

// Stages open in this process, removed by the signal thread when the process is stopped.
std::mutex g_stages_mutex;
std::set<std::string>& open_stages() {
  static std::set<std::string> stages;
  return stages;
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string name = host;
  for (char& c : name)
    if (c == '/' || c == '.') c = '_';  // the stage's name is split on dots
  return name.empty() ? "host" : name;
}

/// ".NAME.weft-tmp.HOST.": the start of every stage of `destination` made on this host.
std::string stage_prefix(const fs::path& destination) {
  return "." + destination.filename().string() + ".weft-tmp." + host_name() + ".";
}

/// The folder that holds the stage: the destination's parent for a file; for a folder, the
/// nearest existing ancestor (the stage is renamed to the destination when that does not exist).
fs::path nearest_existing(fs::path p) {
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) {
    const fs::path parent = p.parent_path();
    if (parent == p) break;
    p = parent;
  }
  return p.empty() ? fs::path(".") : p;
}

fs::path without_trailing_slash(const std::string& text) {
  fs::path p(text);
  if (p.has_filename()) return p;
  return p.parent_path();
}

bool writable_folder(const fs::path& folder) { return ::access(folder.c_str(), W_OK | X_OK) == 0; }

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

}  // namespace

void check_output(const std::string& destination, OutputKind kind, const std::string& option) {
  if (destination.empty()) throw ConfigError(option + ": empty path");
  const fs::path dest = without_trailing_slash(destination);
  std::error_code ec;
  const fs::file_status status = fs::status(dest, ec);
  const bool exists = fs::exists(status);
  if (exists && kind == OutputKind::folder && !fs::is_directory(status))
    throw ConfigError(option + " " + destination + ": exists and is not a folder");
  if (exists && kind == OutputKind::file && fs::is_directory(status))
    throw ConfigError(option + " " + destination + ": is a folder, expected a file name");
  if (exists && kind == OutputKind::file && !fs::is_regular_file(status))
    throw ConfigError(option + " " + destination + ": exists and is not a regular file");
  if (exists && kind == OutputKind::folder && !writable_folder(dest))
    throw ConfigError(option + " " + destination + ": the folder is not writable");
  if (kind == OutputKind::file) {
    const fs::path parent = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
    const fs::file_status p = fs::status(parent, ec);
    if (!fs::exists(p)) throw ConfigError(option + " " + destination + ": the folder " + parent.string() + " does not exist");
    if (!fs::is_directory(p)) throw ConfigError(option + " " + destination + ": " + parent.string() + " is not a folder");
    if (!writable_folder(parent))
      throw ConfigError(option + " " + destination + ": the folder " + parent.string() + " is not writable");
    return;
  }
  if (!exists) {
    const fs::path ancestor = nearest_existing(dest);
    if (!fs::is_directory(ancestor, ec))
      throw ConfigError(option + " " + destination + ": " + ancestor.string() + " is not a folder");
    if (!writable_folder(ancestor))
      throw ConfigError(option + " " + destination + ": cannot create it, " + ancestor.string() + " is not writable");
  }
}

OutputStage::OutputStage(std::string destination, OutputKind kind, std::string option)
    : destination_(without_trailing_slash(destination).string()), kind_(kind), option_(std::move(option)) {
  check_output(destination, kind, option_);
  remove_stale_stages(destination_);
  const fs::path dest(destination_);
  const fs::path holder = kind_ == OutputKind::file ? (dest.has_parent_path() ? dest.parent_path() : fs::path("."))
                                                    : nearest_existing(dest);
  std::string pattern = (holder / (stage_prefix(dest) + std::to_string(::getpid()) + ".XXXXXX")).string();
  // mkdtemp: a new folder of mode 0700 under a name nobody else chose, never through a symlink.
  std::lock_guard lock(g_stages_mutex);
  if (::mkdtemp(pattern.data()) == nullptr)
    throw IoError(option_ + " " + destination_ + ": cannot create a private folder in " + holder.string() + ": " +
                  std::strerror(errno));
  stage_ = pattern;
  open_stages().insert(stage_);
}

OutputStage::~OutputStage() {
  if (stage_.empty()) return;
  std::lock_guard lock(g_stages_mutex);
  remove_tree(stage_);
  open_stages().erase(stage_);
}

std::string OutputStage::path(const std::string& name) const {
  if (stage_.empty()) throw Error(option_ + ": the output " + destination_ + " was already committed");
  const fs::path base(stage_);
  if (kind_ == OutputKind::file) return (base / fs::path(destination_).filename()).string();
  if (name.empty() || name.find('/') != std::string::npos)
    throw Error("OutputStage::path: a folder output's file needs a plain name, got '" + name + "'");
  return (base / name).string();
}

void OutputStage::commit() {
  if (stage_.empty()) return;
  const fs::path dest(destination_);
  std::error_code ec;
  const auto fail = [&](const std::string& what) {
    throw IoError(option_ + " " + destination_ + ": " + what + ": " + (ec ? ec.message() : std::strerror(errno)));
  };
  if (kind_ == OutputKind::file) {
    const std::string written = path();
    if (!fs::exists(written, ec)) throw Error(option_ + ": nothing was written for " + destination_);
    if (std::rename(written.c_str(), destination_.c_str()) != 0) fail("cannot move the result into place");
  } else if (!fs::exists(dest, ec)) {
    if (dest.has_parent_path()) fs::create_directories(dest.parent_path(), ec);
    if (ec) fail("cannot create " + dest.parent_path().string());
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(stage_.c_str(), 0777 & ~mask);  // the private folder becomes the user's output folder
    if (std::rename(stage_.c_str(), destination_.c_str()) != 0) fail("cannot move the results into place");
    std::lock_guard lock(g_stages_mutex);
    open_stages().erase(stage_);
    stage_.clear();
    return;
  } else {
    for (const auto& entry : fs::directory_iterator(stage_, ec)) {
      const fs::path to = dest / entry.path().filename();
      if (std::rename(entry.path().c_str(), to.c_str()) != 0) fail("cannot move " + to.filename().string() + " into place");
    }
    if (ec) fail("cannot list " + stage_);
  }
  std::lock_guard lock(g_stages_mutex);
  remove_tree(stage_);
  open_stages().erase(stage_);
  stage_.clear();
}

void remove_stale_stages(const std::string& destination) {
  const fs::path dest = without_trailing_slash(destination);
  const std::string prefix = stage_prefix(dest);
  for (const fs::path& holder : {dest.has_parent_path() ? dest.parent_path() : fs::path("."), nearest_existing(dest)}) {
    DIR* dir = ::opendir(holder.c_str());
    if (!dir) continue;
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0) continue;
      const std::string rest = name.substr(prefix.size());  // PID.XXXXXX
      const auto dot = rest.find('.');
      if (dot == std::string::npos) continue;
      char* end = nullptr;
      const long pid = std::strtol(rest.c_str(), &end, 10);
      if (end != rest.c_str() + dot || pid <= 0) continue;
      if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
      struct stat st {};
      const fs::path stale = holder / name;
      if (::lstat(stale.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
      remove_tree(stale.string());
    }
    ::closedir(dir);
  }
}

void remove_stages_on_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
    if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return;
    std::thread([set] {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) return;
      std::size_t removed = 0;
      {
        std::lock_guard lock(g_stages_mutex);
        for (const std::string& stage : open_stages()) remove_tree(stage);
        removed = open_stages().size();
        open_stages().clear();
      }
      // Under mpirun this is also how a rank learns that another was lost: the launcher ends the rest.
      std::fprintf(stderr, "weft: stopped by %s%s\n", sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP",
                   removed ? "; unfinished outputs removed, earlier results kept" : "");
      std::fflush(stderr);
      ::signal(sig, SIG_DFL);
      pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
      ::raise(sig);
      std::_Exit(128 + sig);
    }).detach();
  });
}

}  // namespace weft
