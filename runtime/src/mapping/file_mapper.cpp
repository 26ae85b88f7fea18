// Mapping files (schema in mapping/README.md):
//   ranks: 2                       # optional: ranks the file was written for
//   places:
//     read:      {rank: 0, device: cpu}
//     "gabor.*": {rank: 0, device: gpu:0}
// Keys are task names or glob patterns (fnmatch); an exact name wins over patterns, and among
// patterns the first in the file wins.
#include <fnmatch.h>

#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "weft/mapping/mapping.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

bool is_pattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::string at_line(const std::string& path, const YAML::Node& node) {
  return path + ":" + std::to_string(node.Mark().line + 1);
}

/// A scalar's text, or ConfigError at its line: a sequence or map where a scalar belongs.
std::string scalar(const std::string& path, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar())
    throw ConfigError(at_line(path, node) + ": " + what + ": expected a single value, got a " +
                      (node.IsSequence() ? "list" : node.IsMap() ? "map" : "null"));
  return node.Scalar();
}

int integer(const std::string& path, const YAML::Node& node, const std::string& what) {
  const std::string text = scalar(path, node, what);
  try {
    return node.as<int>();
  } catch (const YAML::Exception&) {
    throw ConfigError(at_line(path, node) + ": " + what + ": expected an integer, got '" + text + "'");
  }
}

/// The keys of a map in file order; a key given twice is an error (YAML itself forbids it, and
/// yaml-cpp would keep both silently).
std::vector<std::pair<std::string, YAML::Node>> entries(const std::string& path, const YAML::Node& map,
                                                        const std::string& what) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string key = scalar(path, kv.first, what + " key");
    if (!seen.insert(key).second)
      throw ConfigError(at_line(path, kv.first) + ": " + what + ": key '" + key + "' is given twice");
    out.emplace_back(key, kv.second);
  }
  return out;
}

}  // namespace

FileMapper::FileMapper(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) throw ConfigError("mapping file '" + path_ + "' does not exist");
  if (!std::filesystem::is_regular_file(path_, ec)) throw ConfigError("mapping file '" + path_ + "' is not a regular file");
  try {
    parse();
  } catch (const YAML::Exception& e) {  // anything the checks below did not name
    throw ConfigError("mapping file " + path_ + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

void FileMapper::parse() {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path_);
  } catch (const YAML::ParserException& e) {
    throw ConfigError("mapping file " + path_ + ":" + std::to_string(e.mark.line + 1) +
                      ": malformed YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError("mapping file " + path_ + ": " + e.what());
  }
  if (!root.IsMap()) throw ConfigError("mapping file " + path_ + ": expected a map with 'places'");
  YAML::Node places;
  for (const auto& [key, value] : entries(path_, root, "mapping file")) {
    if (key == "ranks") {
      ranks_ = integer(path_, value, "field 'ranks'");
      if (ranks_ < 1) throw ConfigError(at_line(path_, value) + ": field 'ranks' must be at least 1");
    } else if (key == "places") {
      places = value;
    } else {
      throw ConfigError(at_line(path_, value) + ": unknown field '" + key + "' (expected ranks, places)");
    }
  }
  if (!places || !places.IsMap()) throw ConfigError("mapping file " + path_ + ": missing map 'places'");
  for (const auto& [pattern, v] : entries(path_, places, "places")) {
    Rule rule;
    rule.pattern = pattern;
    rule.line = v.Mark().line + 1;
    std::string where = path_ + ":" + std::to_string(rule.line) + ": places." + rule.pattern;
    int rank = 0;
    std::string device;
    if (v.IsScalar()) {  // shorthand: task: rank:1/gpu:0
      try {
        rule.place = Place::parse(v.Scalar());
      } catch (const ConfigError& e) {
        throw ConfigError(where + ": " + e.what());
      }
    } else if (v.IsMap()) {
      for (const auto& [field, value] : entries(path_, v, "places." + rule.pattern)) {
        if (field == "rank") {
          rank = integer(path_, value, "places." + rule.pattern + ".rank");
        } else if (field == "device") {
          device = scalar(path_, value, "places." + rule.pattern + ".device");
        } else {
          throw ConfigError(where + ": unknown field '" + field + "' (expected rank, device)");
        }
      }
      if (device.empty()) throw ConfigError(where + ": missing field 'device' (cpu or gpu:K)");
      try {
        rule.place = Place::parse(device, rank);
      } catch (const ConfigError& e) {
        throw ConfigError(where + ".device: " + e.what());
      }
      if (rank < 0) throw ConfigError(where + ".rank: must be non-negative, got " + std::to_string(rank));
    } else {
      throw ConfigError(where + ": expected {rank: R, device: cpu|gpu:K}");
    }
    rules_.push_back(rule);
  }
}

std::optional<Place> FileMapper::place(const Task& task, const Graph&, const Cluster&) const {
  for (const Rule& r : rules_)
    if (!is_pattern(r.pattern) && r.pattern == task.name()) return r.place;
  for (const Rule& r : rules_)
    if (is_pattern(r.pattern) && fnmatch(r.pattern.c_str(), task.name().c_str(), 0) == 0) return r.place;
  return std::nullopt;
}

void FileMapper::check(const Graph& graph, const Cluster& cluster, bool every_rule_used, bool require_cuda) const {
  for (const Rule& r : rules_) {
    if (!every_rule_used) break;
    bool any = false;
    for (const auto& t : graph.tasks())
      if (is_pattern(r.pattern) ? fnmatch(r.pattern.c_str(), t->name().c_str(), 0) == 0 : r.pattern == t->name())
        any = true;
    if (!any) {
      std::string names;
      for (const auto& t : graph.tasks()) names += (names.empty() ? "" : ", ") + t->name();
      throw ConfigError(path_ + ":" + std::to_string(r.line) + ": places." + r.pattern + ": " +
                        (is_pattern(r.pattern) ? "pattern matches no task" : "unknown task") +
                        " (tasks: " + names + ")");
    }
  }
  if (ranks_ > 0 && ranks_ != cluster.size())
    throw ConfigError(path_ + ": field 'ranks' is " + std::to_string(ranks_) + " but the job has " +
                      std::to_string(cluster.size()) + " rank" + (cluster.size() == 1 ? "" : "s"));
  // map_graph's checks on the tasks this file places (the others as if on rank 0's CPU).
  for (const auto& t : graph.tasks()) {
    auto p = place(*t, graph, cluster);
    check_place(*t, p ? *p : Place::host(0), cluster, name(), require_cuda);
  }
}

}  // namespace weft
