#include "common/job_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "weft/cluster/environment.hpp"
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

std::vector<std::int64_t> parse_extents(const std::string& text, const std::string& option, int count) {
  std::vector<std::int64_t> dims;
  std::size_t at = 0;
  const auto bad = [&] {
    return ConfigError(option + ": expected " + std::to_string(count) + " positive extents like 64x64x64, got '" + text +
                       "'");
  };
  while (at <= text.size()) {
    std::size_t end = text.find('x', at);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(at, end - at);
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos) throw bad();
    const long long v = std::stoll(part);
    if (v < 1) throw bad();
    dims.push_back(v);
    at = end + 1;
  }
  if (static_cast<int>(dims.size()) != count) throw bad();
  std::vector<std::int64_t> factors = dims;
  factors.push_back(8);  // room for the widest element type
  (void)checked_product(factors, option + " " + text);
  return dims;
}

void check_raw_file(const std::string& path, const std::vector<std::int64_t>& extents, std::size_t element_size,
                    const std::string& layout) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ConfigError("--input: cannot read RAW file '" + path + "': no such file");
  if (!S_ISREG(st.st_mode)) throw ConfigError("--input " + path + ": not a regular file");
  std::vector<std::int64_t> factors = extents;
  factors.push_back(static_cast<std::int64_t>(element_size));
  const std::int64_t want = checked_product(factors, layout);
  if (static_cast<std::int64_t>(st.st_size) != want)
    throw ConfigError("--input " + path + ": file has " + std::to_string(st.st_size) + " bytes, " + layout + " needs " +
                      std::to_string(want));
}

void check_host_memory(double bytes, const std::string& what) {
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (have > 0 && bytes > have) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": needs %.1f GB of memory, this machine has %.1f GB", bytes / 1e9, have / 1e9);
    throw ConfigError(what + buf);
  }
}

void check_gpu_memory(double bytes, const std::string& what) {
  const Environment* env = Environment::current();
  const Cluster cluster = env ? env->cluster() : Cluster{{local_devices(0)}};
  double smallest = 0;
  for (const RankInfo& r : cluster.ranks)
    for (const GpuInfo& g : r.gpus)
      if (smallest == 0 || static_cast<double>(g.memory_bytes) < smallest) smallest = static_cast<double>(g.memory_bytes);
  if (smallest > 0 && bytes > smallest) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": needs %.1f GB on a GPU, the smallest GPU of the job has %.1f GB (--devices cpu "
                  "runs on the host)", bytes / 1e9, smallest / 1e9);
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
