// weft devices: the CPUs and GPUs of every rank.
#include <cstdio>

#include "common/cli.hpp"
#include "weft/cluster/environment.hpp"

namespace weft::cli {
namespace {

int devices_main(int argc, char** argv) {
  po::options_description desc("Options");
  desc.add_options()("help,h", "show this help")("json", po::bool_switch(), "print JSON instead of a table");
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, "usage: weft devices [--json]   (under mpirun: every rank's devices)")) return 0;
  const Environment* env = Environment::current();
  Cluster cluster = env ? env->cluster() : Cluster{{local_devices(0)}};
  if (env && env->rank() != 0) return 0;
  bool json = vm["json"].as<bool>();
  if (json) std::printf("[\n");
  for (std::size_t i = 0; i < cluster.ranks.size(); ++i) {
    const RankInfo& r = cluster.ranks[i];
    if (json) {
      std::printf("  {\"rank\": %d, \"host\": \"%s\", \"cpu_cores\": %d, \"memory_bytes\": %llu, \"gpus\": [", r.rank,
                  r.host.c_str(), r.cpu_cores, static_cast<unsigned long long>(r.memory_bytes));
      for (std::size_t g = 0; g < r.gpus.size(); ++g)
        std::printf("%s{\"index\": %d, \"name\": \"%s\", \"memory_bytes\": %llu, \"compute_capability\": \"%d.%d\"}",
                    g ? ", " : "", r.gpus[g].index, r.gpus[g].name.c_str(),
                    static_cast<unsigned long long>(r.gpus[g].memory_bytes), r.gpus[g].compute_major,
                    r.gpus[g].compute_minor);
      std::printf("]}%s\n", i + 1 < cluster.ranks.size() ? "," : "");
      continue;
    }
    std::printf("rank %d on %s\n  cpu       %d cores, %.1f GiB memory\n", r.rank, r.host.c_str(), r.cpu_cores,
                static_cast<double>(r.memory_bytes) / (1 << 30));
    for (const auto& g : r.gpus)
      std::printf("  gpu:%-5d %s, %.1f GiB, compute capability %d.%d, %d SMs\n", g.index, g.name.c_str(),
                  static_cast<double>(g.memory_bytes) / (1 << 30), g.compute_major, g.compute_minor, g.multiprocessors);
    if (r.gpus.empty()) std::printf("  (no GPU)\n");
  }
  if (json) std::printf("]\n");
  return 0;
}

const Registrar reg{{"devices", "list the CPUs and GPUs of every rank", &devices_main}};

}  // namespace
}  // namespace weft::cli
