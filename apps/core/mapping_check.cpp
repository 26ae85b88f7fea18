// weft mapping check FILE --app NAME: validates a mapping file against an application's graph.
// In a build without CUDA (no task has a CUDA implementation there) a file that places tasks on
// GPUs is checked for everything else (task names, ranks, GPU indices, CPU places) and the
// output says what was not checked, so that a file written for a GPU cluster can be checked on a
// machine without CUDA.
#include <cstdio>
#include <iostream>
#include <string>

#include "common/cli.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

int mapping_main(int argc, char** argv) {
  std::string action, file, app;
  int ranks = 0;
  int gpus = -1;
  po::options_description desc("Options");
  desc.add_options()("help,h", "show this help")
      ("action", po::value(&action), "check")
      ("file", po::value(&file), "the mapping file (YAML)")
      ("app", po::value(&app)->default_value("demo"), "the application whose graph the file maps")
      ("ranks", po::value(&ranks)->default_value(0),
       "check against this many ranks with this machine's devices (default: the file's 'ranks', else the job's)")
      ("gpus", po::value(&gpus)->default_value(-1),
       "check as if every rank had this many GPUs (for a machine other than this one)");
  po::positional_options_description pos;
  pos.add("action", 1).add("file", 1);
  po::variables_map vm;
  std::string apps;
  for (const auto& g : app_graphs()) apps += (apps.empty() ? "" : ", ") + g.name;
  if (!parse(argc, argv, desc, vm, "usage: weft mapping check FILE --app NAME   (apps: " + apps + ")", &pos)) return 0;
  if (action != "check") throw ConfigError("weft mapping: unknown action '" + action + "' (expected: check)");
  if (file.empty()) throw ConfigError("weft mapping check: missing FILE");
  const AppGraph* graph_def = nullptr;
  for (const auto& g : app_graphs())
    if (g.name == app) graph_def = &g;
  if (!graph_def) throw ConfigError("--app: unknown application '" + app + "' (known: " + apps + ")");
  FileMapper mapper(file);
  const Environment* env = Environment::current();
  Cluster cluster = env ? env->cluster() : Cluster{{local_devices(0)}};
  int want = ranks ? ranks : mapper.ranks();
  if (want > 0 && want != cluster.size()) {  // same devices on every hypothetical rank
    RankInfo model = cluster.ranks.front();
    cluster.ranks.clear();
    for (int r = 0; r < want; ++r) {
      model.rank = r;
      cluster.ranks.push_back(model);
    }
  }
  if (gpus >= 0)
    for (auto& r : cluster.ranks) {
      r.gpus.clear();
      for (int g = 0; g < gpus; ++g) r.gpus.push_back({g, "hypothetical GPU", 0, 9, 0, 0, "gpu" + std::to_string(g)});
    }
#ifdef WEFT_HAVE_CUDA
  constexpr bool cuda_built = true;
#else
  constexpr bool cuda_built = false;
#endif
  Graph graph = graph_def->build();
  try {
    mapper.check(graph, cluster, true, cuda_built);
  } catch (const ConfigError& e) {  // a GPU this machine lacks: say how to check for another machine
    if (gpus < 0 && std::string(e.what()).find("no such GPU") != std::string::npos)
      throw ConfigError(std::string(e.what()) + "; --gpus N checks as if every rank had N GPUs");
    throw;
  }
  int on_gpus = 0;
  for (const auto& t : graph.tasks())
    if (auto p = mapper.place(*t, graph, cluster); p && p->is_gpu()) ++on_gpus;
  if (!env || env->rank() == 0) {
    std::printf("%s: valid for app '%s' on %d rank%s\n", file.c_str(), app.c_str(), cluster.size(),
                cluster.size() == 1 ? "" : "s");
    for (const auto& t : graph.tasks())
      if (auto p = mapper.place(*t, graph, cluster)) std::printf("  %-20s %s\n", t->name().c_str(), p->str().c_str());
      else std::printf("  %-20s (automatic)\n", t->name().c_str());
    if (!cuda_built && on_gpus > 0)
      std::printf("note: this weft was built without CUDA: task names, ranks and places were checked, but not "
                  "whether the %d task%s placed on GPUs ha%s a CUDA implementation (a build with CUDA checks that)\n",
                  on_gpus, on_gpus == 1 ? "" : "s", on_gpus == 1 ? "s" : "ve");
  }
  return 0;
}

const Registrar reg{{"mapping", "check a mapping file: weft mapping check FILE --app NAME", &mapping_main}};

}  // namespace
}  // namespace weft::cli
