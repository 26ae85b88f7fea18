#pragma once
/// Errors: one hierarchy, each carrying the failing call, code, source location, task and place.
#include <exception>
#include "weft/util/source_location.hpp"
#include <stdexcept>
#include <string>

namespace weft {

/// Base of every error Weft throws. `what()` is one line meant for a user.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message,
                 SourceLocation where = SourceLocation::current());
  [[nodiscard]] const SourceLocation& where() const noexcept { return where_; }
  [[nodiscard]] const std::string& task() const noexcept { return task_; }
  [[nodiscard]] const std::string& place() const noexcept { return place_; }
  /// Attach the task and place in which the error happened (done by the executor).
  void set_context(std::string task, std::string place);
  [[nodiscard]] std::string describe() const;  ///< message with task, place and location
  /// The program's exit code for this error: 2 for bad input, options or output paths (the
  /// user can mend them), 1 for internal faults.
  [[nodiscard]] virtual int exit_code() const noexcept { return 1; }
  /// What a user reads: for bad input the message alone (it names the file, option and value),
  /// for internal faults describe().
  [[nodiscard]] std::string user_message() const { return exit_code() == 2 ? std::string(what()) : describe(); }

 private:
  SourceLocation where_;
  std::string task_;
  std::string place_;
};

/// Bad user input: options, mapping files, data files. The CLI exits with code 2.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message, SourceLocation where = SourceLocation::current())
      : Error(message, where) {}
  [[nodiscard]] int exit_code() const noexcept override { return 2; }
};
/// A file could not be read or written: an unreadable or corrupt input, an unusable output path.
/// The CLI exits with code 2, as for ConfigError.
class IoError : public Error {
 public:
  explicit IoError(const std::string& message, SourceLocation where = SourceLocation::current())
      : Error(message, where) {}
  [[nodiscard]] int exit_code() const noexcept override { return 2; }
};
/// A failed CUDA runtime call; code() is the cudaError_t value.
class CudaError : public Error {
 public:
  CudaError(const std::string& message, int code,
            SourceLocation where = SourceLocation::current())
      : Error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};
/// A failed NCCL call.
class NcclError : public Error {
 public:
  NcclError(const std::string& message, int code,
            SourceLocation where = SourceLocation::current())
      : Error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};
/// A failed MPI call (communicators use MPI_ERRORS_RETURN).
class MpiError : public Error {
 public:
  MpiError(const std::string& message, int code,
           SourceLocation where = SourceLocation::current())
      : Error(message, where), code_(code) {}
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};
/// A job stopped because another rank failed; carries that rank's message and exit code.
class RemoteError : public Error {
 public:
  explicit RemoteError(const std::string& message, int exit_code = 1,
                       SourceLocation where = SourceLocation::current())
      : Error(message, where), exit_code_(exit_code) {}
  [[nodiscard]] int exit_code() const noexcept override { return exit_code_; }

 private:
  int exit_code_;
};

/// A failure as it travels between ranks: "<exit code>:<message>". encode_failure describes any
/// exception (user_message() for weft errors); decode_failure reads it back (code 1 if unmarked).
[[nodiscard]] std::string encode_failure(std::exception_ptr error);
struct DecodedFailure {
  int exit_code = 1;
  std::string message;
};
[[nodiscard]] DecodedFailure decode_failure(const std::string& text);

}  // namespace weft
