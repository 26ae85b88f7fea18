#include "provenance.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"
#include "weft/util/version.hpp"

namespace weft::granulometry {

std::string VoxelSize::str() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", size);
  return unit.empty() ? std::string(buf) : std::string(buf) + " " + unit;
}

VoxelSize parse_voxel_size(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return ConfigError("--voxel-size: " + why + ", got '" + text + "' (e.g. 0.65um, 1.2mm, 5nm, or a plain number)");
  };
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || !(v > 0)) throw bad("expected a positive length");
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  // µ (micro sign) and μ (Greek mu) in UTF-8, and Å, written in ASCII so that every reader shows them.
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"\xC2\xB5", "u"}, {"\xCE\xBC", "u"},
                                 {"\xC3\x85", "angstrom"}, {"\xE2\x84\xAB", "angstrom"}})
    if (unit.starts_with(from)) unit = to + unit.substr(from.size());
  if (unit == "micron" || unit == "microns" || unit == "micrometer" || unit == "micrometre") unit = "um";
  if (unit.size() > 16) throw bad("a unit name of at most 16 letters");
  for (char c : unit)
    if (!std::isalpha(static_cast<unsigned char>(c))) throw bad("a number then a unit name of letters");
  VoxelSize out;
  out.size = v;
  out.unit = unit.empty() ? (v == 1 ? "voxel" : "") : unit;
  return out;
}

std::vector<std::pair<std::string, std::string>> Provenance::fields() const {
  return {{"program", program}, {"command", command}, {"date", date},
          {"devices", devices}, {"foreground", foreground}, {"hdf5", hdf5}};
}

std::string quoted_command(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i] ? argv[i] : "";
    bool safe = !a.empty();
    for (char c : a)
      safe = safe && (std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./:=,+@%^").find(c) != std::string::npos);
    if (!out.empty()) out += ' ';
    if (i == 0 || safe) {  // argv[0] is "weft granulometry": the program and its subcommand
      out += a;
      continue;
    }
    out += '\'';  // single quotes, each ' written '\''
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string describe_places(const std::vector<Place>& places, const Cluster& cluster) {
  std::string out;
  for (const Place& p : places) {
    const auto r = static_cast<std::size_t>(p.rank);
    const RankInfo* rank = r < cluster.ranks.size() ? &cluster.ranks[r] : nullptr;
    std::string what = p.str();
    if (p.is_gpu() && rank)
      for (const GpuInfo& g : rank->gpus)
        if (g.index == p.device) what += " (" + g.name + ")";
    if (!p.is_gpu() && rank) what += " (" + std::to_string(rank->cpu_cores) + " cores)";
    if (rank && !rank->host.empty()) what += " on " + rank->host;
    out += (out.empty() ? "" : "; ") + what;
  }
  return out;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace weft::granulometry
