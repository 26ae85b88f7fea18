// The plan of a run: the graph's tasks expanded into actors (a migratable task becomes a router,
// one instance per candidate place and a merger) and the links between them. See plan.hpp.
#include "mapping/plan.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <set>
#include <string>

#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

// Migration mailboxes are numbered group * 256 + (0: commands, 1 + i: state of candidate i).
constexpr std::size_t kMaxCandidates = 255;

bool can_run(const Task& task, const Place& p) { return p.is_gpu() ? task.has_cuda() : task.has_cpu(); }

std::vector<Place> candidates_for(const Task& task, const MigratableTask* declared, const Mapping& mapping,
                                  const Cluster& cluster) {
  Place initial = mapping.at(task.name());
  std::vector<Place> places;
  if (declared && !declared->candidates.empty()) {
    for (const Place& p : declared->candidates) {
      std::string where = "migratable task '" + task.name() + "': candidate " + p.str() + ": ";
      if (p.rank < 0 || p.rank >= cluster.size()) throw ConfigError(where + "no such rank");
      if (p.is_gpu() && p.device >= static_cast<int>(cluster.ranks[p.rank].gpus.size()))
        throw ConfigError(where + "no such GPU");
      if (!can_run(task, p)) throw ConfigError(where + "the task cannot run there");
      places.push_back(p);
    }
  } else {  // every place of the mapping, and every GPU of the job
    for (const auto& [name, p] : mapping.places())
      if (can_run(task, p)) places.push_back(p);
    if (task.has_cuda())
      for (const auto& r : cluster.ranks)
        for (const auto& g : r.gpus) places.push_back(Place::cuda(g.index, r.rank));
  }
  places.push_back(initial);
  std::sort(places.begin(), places.end());
  places.erase(std::unique(places.begin(), places.end()), places.end());
  if (places.size() > kMaxCandidates) throw ConfigError("migratable task '" + task.name() + "': too many candidates");
  return places;
}

}  // namespace

RunPlan plan_run(const Graph& graph, const Mapping& mapping, const std::vector<std::string>& patterns,
                 const Cluster& cluster) {
  RunPlan plan;
  std::map<const Task*, int> group_of;
  auto declared = [&](const Task& t) -> const MigratableTask* {
    for (const auto& m : graph.migratables())
      if (m.task == &t) return &m;
    return nullptr;
  };
  auto matches = [&](const Task& t) {
    // By pattern, only tasks between others: sources cannot move, and sinks often hold files open.
    if (t.inputs().empty() || t.outputs().empty() || t.routes() || !t.moves_data()) return false;
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return fnmatch(p.c_str(), t.name().c_str(), 0) == 0; });
  };
  std::set<const Task*> moving;
  for (const auto& owned : graph.tasks())
    if (declared(*owned) || matches(*owned)) moving.insert(owned.get());
  std::map<const Task*, int> vertex_of;  // plain tasks
  for (const auto& owned : graph.tasks()) {
    Task& t = *owned;
    const MigratableTask* d = declared(t);
    if (!moving.count(&t)) {
      vertex_of[&t] = static_cast<int>(plan.vertices.size());
      plan.vertices.push_back({&t, t.name(), mapping.at(t.name())});
      continue;
    }
    int id = static_cast<int>(plan.groups.size());
    GroupPlan g;
    g.task = &t;
    g.places = candidates_for(t, d, mapping, cluster);
    g.initial = static_cast<int>(std::find(g.places.begin(), g.places.end(), mapping.at(t.name())) - g.places.begin());
    // Router and merger only forward values: they sit with the first producer and the first
    // consumer (where those were mapped), so that a token makes no detour while the task stays.
    // A migratable producer's merger already sits with this task's first place: the router too.
    const Task* producer = graph.in_edges(t).front().from;
    Place router_at = mapping.at(moving.count(producer) ? t.name() : producer->name());
    auto out = graph.out_edges(t);
    g.router = static_cast<int>(plan.vertices.size());
    plan.vertices.push_back({&t, t.name() + "/router", router_at, Vertex::router, id});
    for (std::size_t i = 0; i < g.places.size(); ++i) {
      g.instances.push_back(static_cast<int>(plan.vertices.size()));
      plan.vertices.push_back({&t, t.name() + "@" + g.places[i].str(), g.places[i], Vertex::instance, id, static_cast<int>(i)});
    }
    if (!t.outputs().empty()) {
      g.merger = static_cast<int>(plan.vertices.size());
      plan.vertices.push_back({&t, t.name() + "/merger", mapping.at(out.front().to->name()), Vertex::merger, id});
    }
    group_of[&t] = id;
    plan.groups.push_back(std::move(g));
  }
  for (const Edge& e : graph.edges()) {
    int from = group_of.count(e.from) ? plan.groups[group_of[e.from]].merger : vertex_of.at(e.from);
    int to = group_of.count(e.to) ? plan.groups[group_of[e.to]].router : vertex_of.at(e.to);
    plan.links.push_back({from, e.from_port, to, e.to_port});
  }
  for (const GroupPlan& g : plan.groups) {
    int nin = static_cast<int>(g.task->inputs().size()), nout = static_cast<int>(g.task->outputs().size());
    for (std::size_t i = 0; i < g.instances.size(); ++i) {
      int k = static_cast<int>(i);
      for (int p = 0; p < nin; ++p) plan.links.push_back({g.router, k * nin + p, g.instances[i], p});
      for (int q = 0; q < nout; ++q) plan.links.push_back({g.instances[i], q, g.merger, k * nout + q});
    }
  }
  return plan;
}

}  // namespace weft::detail
