#pragma once
/// Mapping: which place runs each task, kept apart from the graph. Sources, in order of
/// precedence: the API (Graph::place), a YAML mapping file, the automatic mapper.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/graph/graph.hpp"
#include "weft/graph/place.hpp"

namespace weft {

/// The effective placement of every task of a graph.
class Mapping {
 public:
  void set(const std::string& task, Place place) { places_[task] = place; }
  [[nodiscard]] Place at(const std::string& task) const;  ///< throws ConfigError if unmapped
  [[nodiscard]] bool contains(const std::string& task) const { return places_.count(task) != 0; }
  [[nodiscard]] const std::map<std::string, Place>& places() const noexcept { return places_; }
  /// YAML in the mapping-file schema (see mapping/README.md).
  [[nodiscard]] std::string to_yaml(int ranks) const;

 private:
  std::map<std::string, Place> places_;
};

/// Which devices the automatic mapper may use (--devices).
enum class DeviceChoice { automatic, cpu, gpu, all };
[[nodiscard]] DeviceChoice parse_device_choice(const std::string& text);

/// The places work is spread over (farm replicas, partition slabs): one per physical GPU, given to
/// the least loaded rank that sees it (ranks of one host may all see every GPU when mpirun sets no
/// CUDA_VISIBLE_DEVICES), ordered by rank then device; the CPU of every rank when no GPU is used
/// (`cpu`, or none found); with `all`, also the CPU of every rank without a GPU. Throws
/// ConfigError for `gpu` when no rank has one.
[[nodiscard]] std::vector<Place> spread_places(const Cluster& cluster, DeviceChoice choice);

/// The width the automatic mapper gives a farm of stateless per-item work whose width the user
/// left open: `per_gpu` replicas on each place of spread_places when GPUs are used (two by
/// default: one item's transfers and short kernels overlap another's), one per rank on CPUs, and
/// 0 (no farm: the staged graph) for the CPU of a single rank.
[[nodiscard]] int automatic_farm_width(const Cluster& cluster, DeviceChoice choice, int per_gpu = 2);

/// A source of placements. Returns nothing for a task it has no opinion on.
class Mapper {
 public:
  virtual ~Mapper() = default;
  [[nodiscard]] virtual std::optional<Place> place(const Task& task, const Graph& graph,
                                                   const Cluster& cluster) const = 0;
  [[nodiscard]] virtual std::string name() const = 0;
};

/// Placements requested with Graph::place.
class ApiMapper final : public Mapper {
 public:
  std::optional<Place> place(const Task& task, const Graph& graph, const Cluster&) const override;
  std::string name() const override { return "api"; }
};

/// Placements from a YAML mapping file: task names or glob patterns → {rank, device}.
class FileMapper final : public Mapper {
 public:
  explicit FileMapper(std::string path);  ///< parses now; throws ConfigError (file and line)
  std::optional<Place> place(const Task& task, const Graph& graph, const Cluster&) const override;
  std::string name() const override { return "file " + path_; }
  /// Checks the file against a graph and a cluster: every pattern matches a task (unless
  /// `every_rule_used` is false: a preliminary graph of a job the file was written for), every
  /// place exists, every task placed on a GPU has a CUDA implementation (unless `require_cuda`
  /// is false: `weft mapping check` in a build without CUDA, where no task has one, checks the
  /// rest of a GPU mapping). Throws ConfigError.
  void check(const Graph& graph, const Cluster& cluster, bool every_rule_used = true,
             bool require_cuda = true) const;
  [[nodiscard]] int ranks() const noexcept { return ranks_; }

 private:
  struct Rule {
    std::string pattern;
    Place place;
    int line = 0;
  };
  void parse();
  std::string path_;
  int ranks_ = 0;
  std::vector<Rule> rules_;
};

/// The default: replicas of a farm (the tasks fed by a routing task) and slabs of a partition go
/// round-robin over spread_places; every other task runs on the first GPU of rank 0 when it has
/// a CUDA implementation and GPUs are used, else on the CPU of rank 0.
class AutoMapper final : public Mapper {
 public:
  explicit AutoMapper(DeviceChoice choice = DeviceChoice::automatic) : choice_(choice) {}
  std::optional<Place> place(const Task& task, const Graph& graph, const Cluster& cluster) const override;
  std::string name() const override { return "auto"; }

 private:
  DeviceChoice choice_;
};

/// Throws ConfigError (naming `source`, the task and the place) unless `place` exists in the
/// cluster and the task can run there: a CPU implementation for a CPU place, a CUDA one for a GPU
/// place (not checked when `require_cuda` is false).
void check_place(const Task& task, Place place, const Cluster& cluster, const std::string& source,
                 bool require_cuda = true);

/// Asks each mapper in turn (first answer wins) for every task, then validates the result:
/// every place exists in the cluster and every task can run there. Throws ConfigError.
[[nodiscard]] Mapping map_graph(const Graph& graph, const Cluster& cluster,
                                const std::vector<const Mapper*>& mappers);

}  // namespace weft
