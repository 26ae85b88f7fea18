#include "common/job_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "weft/exec/environment.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

/// FNV-1a, 64 bits: enough to tell files apart, not a cryptographic hash.
std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string text_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  return std::to_string(text.size()) + " bytes, hash " + hex(fnv1a(text.data(), text.size()));
}

}  // namespace

std::string file_fingerprint(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "unreadable";
  struct stat st {};
  ::fstat(fd, &st);
  const auto size = static_cast<std::int64_t>(st.st_size);
  std::uint64_t h = fnv1a(&size, sizeof size);
  constexpr int kPieces = 16;
  constexpr std::int64_t kPiece = 4096;
  char buf[kPiece];
  for (int i = 0; i < kPieces && size > 0; ++i) {
    const std::int64_t at = size <= kPiece ? 0 : (size - kPiece) * i / (kPieces - 1);
    const ssize_t n = ::pread(fd, buf, kPiece, static_cast<off_t>(at));
    if (n > 0) h = fnv1a(buf, static_cast<std::size_t>(n), h);
    if (size <= kPiece) break;
  }
  ::close(fd);
  return std::to_string(size) + " bytes, sample " + hex(h);
}

std::int64_t checked_product(const std::vector<std::int64_t>& factors, const std::string& what) {
  std::int64_t p = 1;
  for (std::int64_t f : factors) {
    if (f < 0 || (f > 0 && p > INT64_MAX / f)) throw ConfigError(what + ": too large (the product overflows 63 bits)");
    p *= f;
  }
  return p;
}

void check_host_memory(double bytes, const std::string& what) {
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (have > 0 && bytes > have) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": needs %.1f GB of memory, this machine has %.1f GB", bytes / 1e9, have / 1e9);
    throw ConfigError(what + buf);
  }
}

void check_job(int argc, char** argv, const CommonOptions& common, const std::function<JobFields()>& check) {
  const Environment* env = Environment::current();
  JobFields fields;
  const auto all = [&] {
    check_common(common);
    fields = check();
  };
  if (!env) {
    all();
    return;
  }
  env->check_everywhere(all);
  JobFields job;
  std::string line;
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
  job.emplace_back("the command line", line);
  if (!common.config.empty()) job.emplace_back("--config " + common.config, text_hash(common.config));
  if (!common.mapping.empty()) job.emplace_back("--mapping " + common.mapping, text_hash(common.mapping));
  job.insert(job.end(), fields.begin(), fields.end());
  env->agree_on(job);
}

}  // namespace weft::cli
