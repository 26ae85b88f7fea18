#pragma once
/// Where an error was raised: std::source_location where the standard library has it; elsewhere
/// (clang 14 with libstdc++ 12, which builds the fuzzers) the same interface from the compiler
/// builtins that GCC and Clang both have.
#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
namespace weft {
using SourceLocation = std::source_location;
}  // namespace weft
#else
namespace weft {
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                                          unsigned line = __builtin_LINE()) noexcept {
    SourceLocation where;
    where.file_ = file;
    where.function_ = function;
    where.line_ = line;
    return where;
  }
  [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
  [[nodiscard]] constexpr const char* function_name() const noexcept { return function_; }
  [[nodiscard]] constexpr unsigned line() const noexcept { return line_; }
  [[nodiscard]] constexpr unsigned column() const noexcept { return 0; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  unsigned line_ = 0;
};
}  // namespace weft
#endif
