#pragma once
/// A graph is a value: tasks and the edges between their ports, plus optional placements
/// requested through the API. Running it is the Executor's job.
///
///   weft::Graph g;
///   auto& src = g.add<Counter>(10000);
///   auto& sq = g.add<Square>();
///   g.connect(src.out, sq.in);
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/graph/partition.hpp"
#include "weft/graph/task.hpp"

namespace weft {

/// How a farm's scatter chooses the replica of each token.
enum class Dispatch {
  round_robin,   ///< token k to replica k mod n
  /// to the replica with the fewest tokens out (sent to it, result not yet back at the gather;
  /// ties: the next in turn), so a slower replica gets fewer. The choice travels to the gather
  /// on an extra edge; results still leave in order. Needs the scatter and the gather on one
  /// rank (they share the count of results back); elsewhere it degrades to round robin.
  least_loaded,
};
struct FarmOptions {
  Dispatch dispatch = Dispatch::round_robin;
};

/// A farm: `replicas` copies of one stateless task between a scatter (round robin, or least
/// loaded) and a gather (results leave in token order). Connect producers to in[p] and consumers
/// to out[q]; place the replicas with the mapping (e.g. "flow.*" over GPUs).
struct Farm {
  Task* scatter = nullptr;
  Task* gather = nullptr;
  std::vector<Task*> replicas;
  [[nodiscard]] std::pair<Task*, int> in(int port = 0) const { return {scatter, port}; }
  [[nodiscard]] std::pair<Task*, int> out(int port = 0) const { return {gather, port}; }
};

/// A task that may move between places while the graph runs (see Graph::migratable).
struct MigratableTask {
  const Task* task = nullptr;
  std::vector<Place> candidates;  ///< empty: the default (see Graph::migratable)
};

struct Edge {
  Task* from = nullptr;
  int from_port = 0;
  Task* to = nullptr;
  int to_port = 0;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Constructs a task in the graph and returns it; names must be unique.
  template <class T, class... Args> T& add(Args&&... args) {
    auto task = std::make_unique<T>(std::forward<Args>(args)...);
    T& ref = *task;
    add_task(std::move(task));
    return ref;
  }
  Task& add_task(std::unique_ptr<Task> task);

  /// Connects an output to an input of the same value type (checked at compile time).
  template <class T> void connect(Out<T> from, In<T> to) { connect_ports(from.task, from.index, to.task, to.index); }
  /// Connects an output to a farm's input (or a farm's output to an input); checked when called.
  template <class T> void connect(Out<T> from, std::pair<Task*, int> to) { connect_ports(from.task, from.index, to.first, to.second); }
  template <class T> void connect(std::pair<Task*, int> from, In<T> to) { connect_ports(from.first, from.second, to.task, to.index); }
  /// Connects ports given as (task, port index) pairs, for graphs built from parts whose types are
  /// only known when they run (a farm's ports, pipelines built by functions); checked when called.
  void connect(std::pair<Task*, int> from, std::pair<Task*, int> to) { connect_ports(from.first, from.second, to.first, to.second); }

  /// Adds a farm of `replicas` tasks made by make(i), named "<name>.<i>" by make itself, plus
  /// "<name>.scatter" and "<name>.gather". The replicas must be stateless.
  Farm add_farm(const std::string& name, int replicas, const std::function<std::unique_ptr<Task>(int)>& make,
                FarmOptions options = {});

  /// Adds a partition: a split "<name>.split", `parts` slab tasks made by make(i) (named by make,
  /// e.g. "<name>.<i>"), and a join "<name>.join" (see weft/graph/partition.hpp). Connect a
  /// producer of whole arrays to in() and out() to a consumer; place the slabs with the mapping.
  Partition add_partition(const std::string& name, int parts, const std::function<std::unique_ptr<SlabTask>(int)>& make,
                          PartitionOptions options = {});
  /// Adds a task "<name>" combining one value from each source (same type: array, int64, double,
  /// vector) elementwise into one; the sources may run on any ranks. Connect out() to a consumer.
  Reduce add_reduce(const std::string& name, const std::vector<std::pair<Task*, int>>& sources, ReduceOp op);
  [[nodiscard]] const std::vector<Partition>& partitions() const noexcept { return partitions_; }

  /// Connects by names ("task.port"); checked when called. Throws ConfigError.
  void connect(std::string_view from, std::string_view to);

  /// Requests a place for a task (the API mapping source; wins over files and the automatic mapper).
  void place(const Task& task, Place where);
  [[nodiscard]] std::optional<Place> requested_place(const Task& task) const;

  /// Lets a task move between `candidates` while the graph runs (RunHandle::migrate, `weft ctl`,
  /// --drain, --balance); empty: every place of the mapping where it can run, and every GPU of the
  /// job if it has a CUDA implementation. The task needs an
  /// input; a stateful one hands its state over with save()/load() at a token boundary.
  void migratable(const Task& task, std::vector<Place> candidates = {});
  [[nodiscard]] const std::vector<MigratableTask>& migratables() const noexcept { return migratables_; }

  [[nodiscard]] Task* find(std::string_view name) const;
  [[nodiscard]] Task& at(std::string_view name) const;  ///< throws ConfigError if absent
  [[nodiscard]] const std::vector<std::unique_ptr<Task>>& tasks() const noexcept { return tasks_; }
  [[nodiscard]] const std::vector<Edge>& edges() const noexcept { return edges_; }
  /// Edges leaving / entering a task, in port order.
  [[nodiscard]] std::vector<Edge> out_edges(const Task& task) const;
  [[nodiscard]] std::vector<Edge> in_edges(const Task& task) const;

  /// Every input connected exactly once, every output at least once, no cycle. Throws ConfigError.
  void validate() const;

 private:
  void connect_ports(Task* from, int from_port, Task* to, int to_port);
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<Edge> edges_;
  std::vector<std::pair<const Task*, Place>> placements_;
  std::vector<Partition> partitions_;
  std::vector<MigratableTask> migratables_;
};

}  // namespace weft
