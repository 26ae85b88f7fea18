#pragma once
// Test helpers: a scratch folder per test binary, file utilities, exception message checks.
#include <cstdint>
#include <filesystem>
#include <string>

namespace weft::io::test {

/// A fresh folder under the system temporary directory, removed at exit.
[[nodiscard]] const std::filesystem::path& scratch();
/// scratch() / name as a string.
[[nodiscard]] std::string scratch_file(const std::string& name);
void write_text(const std::string& path, const std::string& text);
/// Keeps only the first `bytes` bytes of a file.
void truncate_file(const std::string& path, std::uintmax_t bytes);
/// Files in scratch() whose names contain ".tmp-" (left-over temporaries).
[[nodiscard]] int leftover_temporaries();
/// The shared data folder (WEFT_SHARED_DATA) joined with `relative`, or "" when absent.
[[nodiscard]] std::string shared_file(const std::string& relative);

}  // namespace weft::io::test

/// Expects `statement` to throw `type` whose what() contains `fragment`.
#define EXPECT_THROW_WITH(statement, type, fragment)                                           \
  do {                                                                                         \
    try {                                                                                      \
      statement;                                                                               \
      ADD_FAILURE() << "expected " #type " from " #statement;                                  \
    } catch (const type& error) {                                                              \
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what(); \
    }                                                                                          \
  } while (false)
