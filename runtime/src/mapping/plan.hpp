#pragma once
// Internal: the plan of a run, computed alike on every rank from the graph and the mapping. A
// migratable task is expanded into a router, one instance per candidate place and a merger
// (migration/migration.hpp runs them); every other task is one actor.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <string>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft::detail {

/// One actor of a run: a task, or the router, an instance or the merger of a migratable task.
struct Vertex {
  enum Role { plain, router, instance, merger };
  Task* task = nullptr;
  std::string name;  ///< unique in the run: the task's name, "T@place", "T/router", "T/merger"
  Place place;
  Role role = plain;
  int group = -1;     ///< migratable task index, for the roles other than plain
  int candidate = -1;  ///< candidate index, for instances
  [[nodiscard]] bool moves_data() const { return role == plain ? task->moves_data() : role == instance; }
};
/// An edge between two vertices' ports.
struct Link {
  int from = 0, from_port = 0, to = 0, to_port = 0;
};
struct GroupPlan {
  Task* task = nullptr;
  std::vector<Place> places;  ///< candidates
  int initial = 0;            ///< index of the mapped place in `places`
  int router = -1, merger = -1;
  std::vector<int> instances;  ///< vertex of each candidate
};
/// The actors and links of a run. Without migratable tasks: one vertex per task and one link per
/// edge, in the graph's order (so link ids equal edge ids). Every rank computes the same plan.
struct RunPlan {
  std::vector<Vertex> vertices;
  std::vector<Link> links;
  std::vector<GroupPlan> groups;
};
/// `patterns`: task-name globs made migratable (over every place of the mapping) in addition to
/// the tasks the graph declared. Throws ConfigError on a bad candidate.
[[nodiscard]] RunPlan plan_run(const Graph& graph, const Mapping& mapping, const std::vector<std::string>& patterns,
                               const Cluster& cluster);

}  // namespace weft::detail
