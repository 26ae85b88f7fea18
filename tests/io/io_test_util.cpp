#include "io_test_util.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace weft::io::test {

const std::filesystem::path& scratch() {
  // Never destroyed, so that the exit handler can still read it.
  static const auto* dir = [] {
    auto* d = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                        ("weft_io_test_" + std::to_string(::getpid())));
    std::filesystem::remove_all(*d);
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch(), ec);
    });
    return d;
  }();
  return *dir;
}

std::string scratch_file(const std::string& name) { return (scratch() / name).string(); }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void truncate_file(const std::string& path, std::uintmax_t bytes) { std::filesystem::resize_file(path, bytes); }

int leftover_temporaries() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(scratch())) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) ++n;
  }
  return n;
}

std::string shared_file(const std::string& relative) {
#ifdef WEFT_SHARED_DATA
  const std::filesystem::path p = std::filesystem::path(WEFT_SHARED_DATA) / relative;
  if (std::filesystem::is_regular_file(p)) return p.string();
#endif
  return {};
}

}  // namespace weft::io::test
