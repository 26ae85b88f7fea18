#pragma once
/// Errors: one hierarchy, each carrying the failing call, code, source location, task and place.
#include <source_location>
#include <stdexcept>
#include <string>

namespace weft {

/// Base of every error Weft throws. `what()` is one line meant for a user.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message,
                 std::source_location where = std::source_location::current());
  [[nodiscard]] const std::source_location& where() const noexcept { return where_; }
  [[nodiscard]] const std::string& task() const noexcept { return task_; }
  [[nodiscard]] const std::string& place() const noexcept { return place_; }
  /// Attach the task and place in which the error happened (done by the executor).
  void set_context(std::string task, std::string place);
  [[nodiscard]] std::string describe() const;  ///< message with task, place and location

 private:
  std::source_location where_;
  std::string task_;
  std::string place_;
};

/// Bad user input: options, mapping files, data files. The CLI exits with code 2.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message, std::source_location where = std::source_location::current())
      : Error(message, where) {}
};
/// A file could not be read or written.
class IoError : public Error {
 public:
  explicit IoError(const std::string& message, std::source_location where = std::source_location::current())
      : Error(message, where) {}
};
/// A failed CUDA runtime call; code() is the cudaError_t value.
class CudaError : public Error {
 public:
  CudaError(const std::string& message, int code,
            std::source_location where = std::source_location::current())
      : Error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};
/// A failed NCCL call.
class NcclError : public Error {
 public:
  NcclError(const std::string& message, int code,
            std::source_location where = std::source_location::current())
      : Error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};
/// A failed MPI call (communicators use MPI_ERRORS_RETURN).
class MpiError : public Error {
 public:
  MpiError(const std::string& message, int code,
           std::source_location where = std::source_location::current())
      : Error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};
/// A job stopped because another rank failed; carries that rank's message.
class RemoteError : public Error {
 public:
  explicit RemoteError(const std::string& message, std::source_location where = std::source_location::current())
      : Error(message, where) {}
};

}  // namespace weft
