#include "exec/control_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "weft/exec/control.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

std::string errno_text() { return std::strerror(errno); }

/// A folder that exists (lstat: not a symlink), belongs to this user and lets nobody else in.
void check_private_folder(const std::string& folder) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) throw ConfigError("control folder " + folder + ": " + errno_text());
  if (!S_ISDIR(st.st_mode)) throw ConfigError("control folder " + folder + ": not a folder (a symlink?); refused");
  if (st.st_uid != ::geteuid()) throw ConfigError("control folder " + folder + ": belongs to another user; refused");
  if ((st.st_mode & 077) != 0)
    throw ConfigError("control folder " + folder + ": others may enter it (mode " +
                      std::to_string(st.st_mode & 0777) + " octal-decimal); refused, it must be 0700");
}

/// The header the job writes first: whose file it is, so that a stale one can be recognised.
std::string header_line() {
  return "# weft control file of pid " + std::to_string(::getpid()) + " on " + host_name() + "\n";
}

/// Whether `path` is a control file that a process of this user on this host left behind when it
/// died: a regular file of ours whose header names a process that no longer exists.
bool stale_control_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1)
    return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  const std::string text(buf, static_cast<std::size_t>(n));
  const std::string lead = "# weft control file of pid ";
  if (text.rfind(lead, 0) != 0) return false;
  char* end = nullptr;
  const long pid = std::strtol(text.c_str() + lead.size(), &end, 10);
  const std::string rest = end ? std::string(end) : "";
  if (pid <= 0 || rest.rfind(" on " + host_name() + "\n", 0) != 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void check_command(const std::string& command) {
  if (command.empty()) throw ConfigError("weft ctl: empty command");
  if (command.size() > kMaxControlCommand)
    throw ConfigError("weft ctl: command longer than " + std::to_string(kMaxControlCommand) + " characters");
  for (unsigned char c : command)
    if (c < 0x20 || c > 0x7e) throw ConfigError("weft ctl: command '" + escaped(command) + "' holds a control or non-ASCII character");
}

}  // namespace

std::string escaped(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c <= 0x7e && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string private_control_folder() {
  std::string base;
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && *run) {
    struct stat st {};
    if (::lstat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0)
      base = std::string(run) + "/weft";
  }
  if (base.empty()) base = "/tmp/weft-" + std::to_string(::geteuid());
  if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST)
    throw ConfigError("control folder " + base + ": cannot create it: " + errno_text());
  check_private_folder(base);
  return base;
}

std::string control_file_path(const std::string& name) {
  if (name.empty()) throw ConfigError("--ctl: empty name");
  if (name.find('/') != std::string::npos) return name;
  if (name == "." || name == ".." || name.size() > 200)
    throw ConfigError("--ctl " + escaped(name) + ": not a usable name (use a plain word, or a path with '/')");
  for (unsigned char c : name)
    if (c < 0x21 || c > 0x7e) throw ConfigError("--ctl " + escaped(name) + ": not a usable name");
  return private_control_folder() + "/" + name + ".ctl";
}

void send_control_command(const std::string& name, const std::string& command) {
  check_command(command);
  const std::string path = control_file_path(name);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw ConfigError("weft ctl: control file " + path + ": " + errno_text() + " (is the job running with --ctl " +
                      name + "?)");
  if (S_ISLNK(st.st_mode)) throw ConfigError("weft ctl: control file " + path + " is a symlink; refused");
  if (!S_ISREG(st.st_mode)) throw ConfigError("weft ctl: control file " + path + " is not a regular file; refused");
  if (st.st_uid != ::geteuid()) throw ConfigError("weft ctl: control file " + path + " belongs to another user; refused");
  if ((st.st_mode & 022) != 0)
    throw ConfigError("weft ctl: control file " + path + " may be written by others; refused");
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw ConfigError("weft ctl: control file " + path + ": " + errno_text());
  struct stat opened {};
  if (::fstat(fd, &opened) != 0 || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev) {
    ::close(fd);
    throw ConfigError("weft ctl: control file " + path + " changed while it was opened; refused");
  }
  const std::string line = command + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());  // one write: O_APPEND keeps lines whole
  const int failed = n != static_cast<ssize_t>(line.size()) ? errno : 0;
  ::close(fd);
  if (failed || n < 0) throw IoError("weft ctl: cannot write the control file " + path + ": " + std::strerror(failed));
}

void claim_control_file(const std::string& name) { (void)detail::ControlFile::open(name); }

namespace detail {

std::optional<ControlCommand> parse_control_command(const std::string& line) {
  if (line.size() > kMaxControlCommand)
    throw ConfigError("longer than " + std::to_string(kMaxControlCommand) + " characters");
  std::istringstream words(line);
  std::string verb, a, b, extra;
  words >> verb >> a >> b >> extra;
  if (verb.empty() || verb[0] == '#') return std::nullopt;
  if (!extra.empty()) throw ConfigError("too many words");
  if (verb == "migrate" && !b.empty()) return ControlCommand{verb, a, Place::parse(b)};
  if ((verb == "drain" || verb == "undrain") && !a.empty() && b.empty()) return ControlCommand{verb, "", Place::parse(a)};
  throw ConfigError("unknown command (expected: migrate TASK PLACE, drain PLACE, undrain PLACE)");
}

std::shared_ptr<ControlFile> ControlFile::open(const std::string& name) {
  // Files live as long as the process: a static registry, destroyed (files removed) at exit.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<ControlFile>> files;
  const std::string path = control_file_path(name);
  std::lock_guard lock(mutex);
  if (auto it = files.find(path); it != files.end()) return it->second;
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      std::shared_ptr<ControlFile> file(new ControlFile(path, fd));
      const std::string header = header_line();
      if (::write(fd, header.data(), header.size()) != static_cast<ssize_t>(header.size()))
        throw IoError("--ctl " + path + ": cannot write: " + errno_text());
      files[path] = file;
      return file;
    }
    if (errno != EEXIST) throw ConfigError("--ctl " + path + ": cannot create the control file: " + errno_text());
    if (attempt == 0 && stale_control_file(path) && ::unlink(path.c_str()) == 0) continue;
    throw ConfigError("--ctl " + path +
                      ": the file exists and this job did not create it (another job's control file, or not a "
                      "control file); refused, nothing was changed");
  }
}

ControlFile::ControlFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    device_ = st.st_dev;
    inode_ = st.st_ino;
  }
}

ControlFile::~ControlFile() {
  // Removed only if the path still names the file this process made.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) ::unlink(path_.c_str());
  if (fd_ >= 0) ::close(fd_);
}

void ControlFile::skip_to_end() {
  struct stat st {};
  if (::fstat(fd_, &st) == 0) offset_ = st.st_size;
  partial_.clear();
  skipping_ = false;
}

std::vector<std::string> ControlFile::new_lines(int& dropped) {
  std::vector<std::string> lines;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::pread(fd_, buf, sizeof buf, offset_);
    if (n <= 0) break;
    offset_ += n;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        if (skipping_) ++dropped;
        else lines.push_back(partial_);
        partial_.clear();
        skipping_ = false;
      } else if (!skipping_) {
        partial_ += buf[i];
        if (partial_.size() > kMaxControlCommand) {
          partial_.clear();
          skipping_ = true;
        }
      }
    }
  }
  return lines;
}

}  // namespace detail
}  // namespace weft
