#include <cstdio>
#include <fstream>
#include <memory>

#include "common/cli.hpp"
#include "weft/exec/environment.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

namespace weft::cli {

weft::RunStats run_graph(weft::Graph& graph, const CommonOptions& common, int channel_capacity,
                         const std::vector<const weft::Mapper*>& defaults) {
  const Environment* env = Environment::current();
  Cluster local;
  if (!env) local.ranks.push_back(local_devices(0));
  const Cluster& cluster = env ? env->cluster() : local;
  int rank = env ? env->rank() : 0;

  if (common.overlap != "on" && common.overlap != "off")
    throw ConfigError("--overlap: expected on or off, got '" + common.overlap + "'");
  ApiMapper api;
  std::unique_ptr<FileMapper> file;
  AutoMapper automatic(parse_device_choice(common.devices));
  std::vector<const Mapper*> mappers{&api};
  if (!common.mapping.empty()) {
    file = std::make_unique<FileMapper>(common.mapping);
    file->check(graph, cluster);
    mappers.push_back(file.get());
  }
  mappers.insert(mappers.end(), defaults.begin(), defaults.end());
  mappers.push_back(&automatic);
  Mapping mapping = map_graph(graph, cluster, mappers);
  auto log = logger("app");
  for (const auto& [task, place] : mapping.places()) log->debug("{} -> {}", task, place.str());
  if (!common.write_mapping.empty() && rank == 0) {
    std::string tmp = common.write_mapping + ".tmp";
    {
      std::ofstream out(tmp);
      if (!out) throw IoError("--write-mapping: cannot write '" + common.write_mapping + "'");
      out << mapping.to_yaml(cluster.size());
    }
    std::rename(tmp.c_str(), common.write_mapping.c_str());
  }
  ExecutorOptions options;
  options.channel_capacity = channel_capacity;
  options.overlap = common.overlap == "on";
  options.trace_file = common.trace;
  Executor executor(options);
  RunHandle run = executor.run(graph, mapping);
  run.wait();
  return run.stats();
}

}  // namespace weft::cli
