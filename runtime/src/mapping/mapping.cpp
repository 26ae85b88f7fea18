#include "weft/mapping/mapping.hpp"

#include <algorithm>
#include <sstream>

#include "weft/util/error.hpp"

namespace weft {

Place Mapping::at(const std::string& task) const {
  auto it = places_.find(task);
  if (it == places_.end()) throw ConfigError("task '" + task + "' has no place in the mapping");
  return it->second;
}

std::string Mapping::to_yaml(int ranks) const {
  std::ostringstream out;
  out << "# effective mapping written by weft\nranks: " << ranks << "\nplaces:\n";
  for (const auto& [task, p] : places_)
    out << "  \"" << task << "\": {rank: " << p.rank << ", device: "
        << Place{p.kind, p.device, 0}.str() << "}\n";
  return out.str();
}

DeviceChoice parse_device_choice(const std::string& text) {
  if (text == "auto") return DeviceChoice::automatic;
  if (text == "cpu") return DeviceChoice::cpu;
  if (text == "gpu") return DeviceChoice::gpu;
  if (text == "all") return DeviceChoice::all;
  throw ConfigError("--devices: unknown value '" + text + "' (expected cpu, gpu, all or auto)");
}

std::optional<Place> ApiMapper::place(const Task& task, const Graph& graph, const Cluster&) const {
  return graph.requested_place(task);
}

std::vector<Place> spread_places(const Cluster& cluster, DeviceChoice choice) {
  const bool gpus = cluster.gpu_count() > 0;
  if (choice == DeviceChoice::gpu && !gpus) throw ConfigError("--devices gpu: no GPU was found on any rank");
  const bool use_gpus = choice != DeviceChoice::cpu && gpus;
  std::vector<Place> places;
  if (use_gpus) {
    auto key = [](const RankInfo& r, const GpuInfo& g) {
      return r.host + "/" + (g.uuid.empty() ? std::to_string(r.rank) + ":" + std::to_string(g.index) : g.uuid);
    };
    std::vector<int> load(cluster.ranks.size(), 0);
    std::vector<std::string> seen;
    for (const auto& r : cluster.ranks)
      for (const auto& g : r.gpus) {
        const std::string k = key(r, g);
        if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
        seen.push_back(k);
        int best = -1, best_device = 0;
        for (const auto& other : cluster.ranks)
          for (const auto& h : other.gpus)
            if (key(other, h) == k && (best < 0 || load[static_cast<std::size_t>(other.rank)] <
                                                       load[static_cast<std::size_t>(best)]))
              best = other.rank, best_device = h.index;
        ++load[static_cast<std::size_t>(best)];
        places.push_back(Place::cuda(best_device, best));
      }
    std::sort(places.begin(), places.end(),
              [](const Place& a, const Place& b) { return a.rank != b.rank ? a.rank < b.rank : a.device < b.device; });
  }
  for (const auto& r : cluster.ranks)
    if (!use_gpus || (choice == DeviceChoice::all && r.gpus.empty())) places.push_back(Place::host(r.rank));
  return places;
}

int automatic_farm_width(const Cluster& cluster, DeviceChoice choice, int per_gpu) {
  const bool use_gpus = choice != DeviceChoice::cpu && cluster.gpu_count() > 0;
  if (!use_gpus) return cluster.size() > 1 ? cluster.size() : 0;
  int gpu_places = 0;
  for (const Place& p : spread_places(cluster, choice)) gpu_places += p.is_gpu() ? 1 : 0;
  return std::max(1, per_gpu) * gpu_places;
}

std::optional<Place> AutoMapper::place(const Task& task, const Graph& graph, const Cluster& cluster) const {
  bool gpus = cluster.gpu_count() > 0 && !cluster.ranks.empty() && !cluster.ranks[0].gpus.empty();
  if (choice_ == DeviceChoice::gpu && cluster.gpu_count() == 0)
    throw ConfigError("--devices gpu: no GPU was found on any rank");
  bool use_gpu = choice_ != DeviceChoice::cpu && gpus && task.has_cuda();
  if (!task.has_cpu() && gpus) use_gpu = true;
  // Replicas of a farm (fed by a routing task) and slabs of a partition go round-robin over the
  // spread places (one per physical GPU, or the CPU of every rank); other tasks stay on rank 0.
  auto spread = [&](int replica) {
    if (use_gpu) {
      // A task with no CPU implementation goes to the GPUs even under DeviceChoice::cpu.
      std::vector<Place> all;
      for (const Place& p : spread_places(cluster, choice_ == DeviceChoice::cpu ? DeviceChoice::gpu : choice_))
        if (p.is_gpu()) all.push_back(p);
      if (all.empty()) throw ConfigError("task '" + task.name() + "' needs a GPU and none is usable");
      return all[static_cast<std::size_t>(replica) % all.size()];
    }
    return Place::host(replica % cluster.size());
  };
  auto in = graph.in_edges(task);
  if (!in.empty() && in.front().from->routes())
    return spread(in.front().from_port / static_cast<int>(task.inputs().size()));
  for (const Partition& p : graph.partitions())
    for (std::size_t i = 0; i < p.slabs.size(); ++i)
      if (p.slabs[i] == &task) return spread(static_cast<int>(i));
  return use_gpu ? Place::cuda(0, 0) : Place::host(0);
}

void check_place(const Task& task, Place p, const Cluster& cluster, const std::string& source, bool require_cuda) {
  std::string where = "mapping (" + source + "): task '" + task.name() + "' on " + p.str() + ": ";
  if (p.rank < 0 || p.rank >= cluster.size())
    throw ConfigError(where + "rank " + std::to_string(p.rank) + " does not exist (the job has " +
                      std::to_string(cluster.size()) + " rank" + (cluster.size() == 1 ? "" : "s") + ")");
  if (p.is_gpu()) {
    int n = static_cast<int>(cluster.ranks[p.rank].gpus.size());
    if (p.device >= n)
      throw ConfigError(where + "no such GPU (rank " + std::to_string(p.rank) + " has " + std::to_string(n) +
                        " GPU" + (n == 1 ? "" : "s") + ")");
    if (require_cuda && !task.has_cuda()) throw ConfigError(where + "the task has no CUDA implementation");
  } else if (!task.has_cpu()) {
    throw ConfigError(where + "the task has no CPU implementation");
  }
}

Mapping map_graph(const Graph& graph, const Cluster& cluster, const std::vector<const Mapper*>& mappers) {
  Mapping m;
  for (const auto& t : graph.tasks()) {
    bool placed = false;
    for (const Mapper* mapper : mappers) {
      if (auto p = mapper->place(*t, graph, cluster)) {
        check_place(*t, *p, cluster, mapper->name());
        m.set(t->name(), *p);
        placed = true;
        break;
      }
    }
    if (!placed) throw ConfigError("no mapper placed task '" + t->name() + "'");
  }
  return m;
}

int Cluster::gpu_count() const noexcept {
  int n = 0;
  for (const auto& r : ranks) n += static_cast<int>(r.gpus.size());
  return n;
}

}  // namespace weft
