#pragma once
/// Internal: files written under a temporary name and renamed into place when complete.
#include <cstdio>
#include <string>

namespace weft::io::detail {

/// "<path>.tmp-<pid>-<n>-<random>": a name no other writer picks; created exclusively (O_EXCL).
[[nodiscard]] std::string temporary_path(const std::string& path);

/// A stdio file being written at temporary_path(path); commit() closes and renames it, the
/// destructor of an uncommitted file closes and removes it.
class PendingFile {
 public:
  explicit PendingFile(std::string final_path);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  [[nodiscard]] std::FILE* get() const noexcept { return file_; }
  void write(const void* data, std::size_t bytes);
  void commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
};

/// Renames `temp` to `final_path`, throwing IoError (and removing `temp`) on failure.
void rename_into_place(const std::string& temp, const std::string& final_path);

/// An input file opened for binary reading; throws IoError "cannot open" naming the file and errno.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  [[nodiscard]] std::FILE* get() const noexcept { return file_; }

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace weft::io::detail
