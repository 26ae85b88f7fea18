#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/cli.hpp"
#include "common/graph_view.hpp"
#include "weft/exec/control.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/transport/transports.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/output.hpp"
#include "weft/util/settings.hpp"

namespace weft::cli {

namespace {

/// The cluster the program runs on (one rank without a launcher).
const Cluster& job_cluster() {
  static const Cluster local{{local_devices(0)}};
  const Environment* env = Environment::current();
  return env ? env->cluster() : local;
}

int job_rank() {
  const Environment* env = Environment::current();
  return env ? env->rank() : 0;
}

/// A place named by an option must exist in the job: its rank, and its GPU on that rank.
Place existing_place(const std::string& text, const std::string& option, const Cluster& cluster) {
  Place p;
  try {
    p = Place::parse(text);
  } catch (const ConfigError& e) {
    throw ConfigError(option + ": " + e.what());
  }
  if (p.rank < 0 || p.rank >= cluster.size())
    throw ConfigError(option + " " + text + ": the job has " + std::to_string(cluster.size()) + " rank(s)");
  const auto& gpus = cluster.ranks[static_cast<std::size_t>(p.rank)].gpus;
  if (p.is_gpu() && (p.device < 0 || p.device >= static_cast<int>(gpus.size())))
    throw ConfigError(option + " " + text + ": rank " + std::to_string(p.rank) + " has " +
                      std::to_string(gpus.size()) + " GPU(s)");
  return p;
}

/// Set by `weft graph` (stop_after_graph): the option its errors name, empty for a real run.
std::string& graph_only_option() {
  static std::string option;
  return option;
}
std::string graph_option() { return graph_only_option().empty() ? "--write-graph" : graph_only_option(); }

/// Writes --write-graph on rank 0; an error there stops every rank alike.
void write_job_graph(const Graph& graph, const Mapping& mapping, const Cluster& cluster,
                     const std::vector<std::string>& migratable, const std::string& path) {
  const std::vector<Transport> transports = edge_transports(graph, mapping, cluster, migratable);
  const std::string title = "Weft graph: " + std::to_string(graph.tasks().size()) + " tasks on " +
                            std::to_string(cluster.size()) + (cluster.size() == 1 ? " rank" : " ranks");
  auto write = [&] {
    if (job_rank() == 0) write_graph(path, graph_dot(graph, mapping, cluster, transports, title), graph_option());
  };
  if (const Environment* env = Environment::current()) env->check_everywhere(write);
  else write();
}

std::string control_file_name(const CommonOptions& common) {
  if (!common.ctl.empty()) return common.ctl;
  return settings().control_file;
}

}  // namespace

void check_common(const CommonOptions& common) {
  const Cluster& cluster = job_cluster();
  (void)parse_device_choice(common.devices);
  if (common.overlap != "on" && common.overlap != "off")
    throw ConfigError("--overlap: expected on or off, got '" + common.overlap + "'");
  if (common.balance != "off" && common.balance != "greedy" && common.balance != "refine")
    throw ConfigError("--balance: expected off, greedy or refine, got '" + common.balance + "'");
  if (!(common.balance_period > 0))
    throw ConfigError("--balance-period: must be positive, got " + std::to_string(common.balance_period));
  if (!(common.balance_threshold >= 0))
    throw ConfigError("--balance-threshold: must be 0 or more, got " + std::to_string(common.balance_threshold));
  for (const auto& d : common.drain) (void)existing_place(d, "--drain", cluster);
  if (!common.mapping.empty()) {
    std::error_code ec;
    const auto status = std::filesystem::status(common.mapping, ec);
    if (!std::filesystem::exists(status)) throw ConfigError("--mapping: no such file '" + common.mapping + "'");
    if (!std::filesystem::is_regular_file(status))
      throw ConfigError("--mapping: '" + common.mapping + "' is not a regular file");
  }
  if (job_rank() == 0) {  // rank 0 writes these and follows the control file
    if (!common.trace.empty()) check_output(common.trace, OutputKind::file, "--trace");
    if (!common.write_mapping.empty()) check_output(common.write_mapping, OutputKind::file, "--write-mapping");
    if (!common.write_graph.empty()) check_graph_output(common.write_graph, graph_option());
    if (const std::string ctl = control_file_name(common); !ctl.empty()) claim_control_file(ctl);
  }
}

void stop_after_graph(std::string option) { graph_only_option() = std::move(option); }

weft::RunStats run_graph(weft::Graph& graph, const CommonOptions& common, int channel_capacity,
                         const std::vector<const weft::Mapper*>& defaults, bool preliminary) {
  const Cluster& cluster = job_cluster();
  const int rank = job_rank();
  check_common(common);
  ApiMapper api;
  std::unique_ptr<FileMapper> file;
  AutoMapper automatic(parse_device_choice(common.devices));
  std::vector<const Mapper*> mappers{&api};
  if (!common.mapping.empty()) {
    file = std::make_unique<FileMapper>(common.mapping);
    file->check(graph, cluster, !preliminary);
    mappers.push_back(file.get());
  }
  mappers.insert(mappers.end(), defaults.begin(), defaults.end());
  mappers.push_back(&automatic);
  Mapping mapping = map_graph(graph, cluster, mappers);
  auto log = logger("app");
  for (const auto& [task, place] : mapping.places()) log->debug("{} -> {}", task, place.str());
  ExecutorOptions options;
  options.channel_capacity = channel_capacity;
  options.overlap = common.overlap == "on";
  options.trace_file = common.trace;
  options.migratable = common.migratable;
  for (const auto& d : common.drain) options.drain.push_back(existing_place(d, "--drain", cluster));
  options.control_file = control_file_name(common);
  options.balance = common.balance;
  options.balance_period = common.balance_period;
  options.balance_threshold = common.balance_threshold;
  if (options.migratable.empty() && (!options.control_file.empty() || !options.drain.empty() || options.balance != "off"))
    options.migratable.push_back("*");
  if (!preliminary && !common.write_graph.empty()) {
    write_job_graph(graph, mapping, cluster, options.migratable, common.write_graph);
    if (!graph_only_option().empty()) throw GraphWritten{};
  }
  Executor executor(options);
  RunHandle run = executor.run(graph, mapping);
  run.wait();
  if (!common.write_mapping.empty() && rank == 0) {  // where the tasks ended, after migrations
    OutputStage stage(common.write_mapping, OutputKind::file, "--write-mapping");
    {
      std::ofstream out(stage.path());
      out << run.effective_mapping().to_yaml(cluster.size());
      if (!out.flush()) throw IoError("--write-mapping " + common.write_mapping + ": cannot write the mapping");
    }
    stage.commit();
  }
  return run.stats();
}

}  // namespace weft::cli
