#include "file_commit.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <random>

#include <cerrno>
#include <cstring>
#include <string>

#include "weft/util/error.hpp"

namespace weft::io::detail {

std::string temporary_path(const std::string& path) {
  static std::atomic<unsigned> made{0};
  std::random_device random;
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%u-%08x", static_cast<long>(::getpid()), made.fetch_add(1),
                random());
  return path + suffix;
}

PendingFile::PendingFile(std::string final_path)
    : final_path_(std::move(final_path)), temp_path_(temporary_path(final_path_)) {
  // O_EXCL | O_NOFOLLOW: a name someone planted (a symlink to another file) is never written through.
  const int fd = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd >= 0) file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw IoError("cannot create " + temp_path_ + " (for " + final_path_ + "): " + reason);
  }
}

PendingFile::~PendingFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

void PendingFile::write(const void* data, std::size_t bytes) {
  if (bytes != 0 && std::fwrite(data, 1, bytes, file_) != bytes) {
    throw IoError("cannot write " + temp_path_ + " (for " + final_path_ + "): " + std::strerror(errno));
  }
}

void PendingFile::commit() {
  const int failed = std::fclose(file_);
  file_ = nullptr;
  if (failed != 0) {
    std::remove(temp_path_.c_str());
    throw IoError("cannot finish writing " + final_path_ + ": " + std::strerror(errno));
  }
  rename_into_place(temp_path_, final_path_);
}

void rename_into_place(const std::string& temp, const std::string& final_path) {
  if (std::rename(temp.c_str(), final_path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    throw IoError("cannot rename " + temp + " to " + final_path + ": " + reason);
  }
}

InputFile::InputFile(const std::string& path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) throw IoError("cannot open " + path + ": " + std::strerror(errno));
}

InputFile::~InputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

}  // namespace weft::io::detail
