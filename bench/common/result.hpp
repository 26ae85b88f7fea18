#pragma once
/// Writes a benchmark's record, bench/results/NAME.json:
/// {"benchmark", "device", "commit", "date", "command", "metrics": {...},
///  "targets": {"<target>": {"value", "goal", "met"}}}
/// The folder is $WEFT_RESULTS_DIR if set, else <source>/bench/results. The commit is $WEFT_COMMIT
/// if set, else `git rev-parse HEAD` in the source tree, else "unknown".
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace weft::bench {

class Result {
 public:
  Result(std::string name, int argc, char** argv);
  /// Any JSON value under "metrics" (numbers, tables as arrays of objects).
  void metric(const std::string& key, nlohmann::json value);
  /// One target: `higher_is_better` decides met = value >= goal (else value <= goal).
  void target(const std::string& name, double value, double goal, bool higher_is_better);
  /// Device description, e.g. "NVIDIA H100 80GB HBM3 x1"; found through nvidia-smi if not set.
  void set_device(std::string device);
  /// The device description (found through nvidia-smi on the first call if not set).
  [[nodiscard]] std::string device();
  /// Writes the file (temporary name, then rename) and returns its path.
  std::string write();
  [[nodiscard]] nlohmann::json& json() { return doc_; }

 private:
  std::string name_;
  nlohmann::json doc_;
};

/// Median of a list of timings.
double median(std::vector<double> v);

}  // namespace weft::bench
