#pragma once
/// Runs a graph: every edge a bounded channel, tokens in order, no global barrier.
///
///   weft::Executor executor;                 // options: channel capacity, overlap, trace
///   executor.run(graph, mapping).wait();     // wait() rethrows the first task error
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft {

struct ExecutorOptions {
  int channel_capacity = 4;  ///< tokens an edge holds (back-pressure beyond it)
  bool overlap = true;       ///< false: one transfer or computation at a time per rank, each waited for (for comparison)
  std::string trace_file;    ///< Chrome/Perfetto JSON timeline, empty: no trace
  bool trim_pools = true;    ///< give unused device pool memory back after the run (false: keep it
                             ///< for the next run, as benchmarks that warm the pools need)
  /// Task-name globs that may migrate (default candidates, see Graph::migratable), beside Graph::migratable.
  /// Patterns match only tasks with inputs and outputs (no source, no sink).
  std::vector<std::string> migratable;
  /// Places evacuated when the run starts (their migratable tasks move to the nearest candidate).
  std::vector<Place> drain;
  /// Rank 0 follows commands appended to this file (`weft ctl`); empty: none.
  std::string control_file;
  /// Load balancer over the migratable tasks: "off", "greedy" (at most one move per period) or
  /// "refine" (several moves per period, each off the most loaded place).
  std::string balance = "off";
  double balance_period = 1.0;     ///< seconds between two decisions
  double balance_threshold = 0.1;  ///< move when the predicted gain exceeds this share of the iteration time
};

/// One decision of the load balancer (logged, and kept in RunStats on rank 0).
struct BalanceDecision {
  double at_seconds = 0;          ///< since the run started
  std::string task;
  Place from, to;
  double predicted_gain = 0;      ///< predicted share of the iteration time saved (0.25: 25 % faster)
  double measured_gain = 0;       ///< 1 - (tokens/s of the task before) / (tokens/s after): two periods up
                                  ///< to the decision, five from the second after the move (NaN until then)
  std::string reason;
};

/// Per task measurements after (or during) a run.
struct TaskStats {
  std::string task;
  Place place;
  std::uint64_t tokens = 0;
  double busy_seconds = 0;      ///< time inside run()/run_cuda() (host side)
  std::uint64_t bytes_in = 0;   ///< bytes moved to this task's memory from elsewhere
  /// Seconds from the run's start on this rank to the start of the first firing and to the end of
  /// the last one (host side, as busy_seconds); -1 for a task that never fired here.
  double first_start = -1, last_end = -1;
};
struct RunStats {
  double seconds = 0;
  std::vector<TaskStats> tasks;
  std::uint64_t max_in_flight = 0;  ///< most tokens ever held by any one edge
  int nccl_edges = 0;               ///< cross-rank edges carried GPU to GPU by NCCL
  int peer_edges = 0;               ///< cross-rank edges of one host that hand GPU arrays over CUDA IPC
  std::uint64_t migrations = 0;     ///< moves made by the migratable tasks' routers on this rank
  std::vector<BalanceDecision> balance;  ///< the load balancer's moves (rank 0)
};

class RunHandle;

class Executor {
 public:
  explicit Executor(ExecutorOptions options = {});
  ~Executor();
  /// Starts the graph with the given mapping; returns at once.
  [[nodiscard]] RunHandle run(Graph& graph, const Mapping& mapping);
  [[nodiscard]] const ExecutorOptions& options() const noexcept { return options_; }

 private:
  ExecutorOptions options_;
};

/// A running graph. wait() blocks until every task has seen the end of stream and rethrows the
/// first error raised by any task (on any rank).
class RunHandle {
 public:
  RunHandle();
  ~RunHandle();
  RunHandle(RunHandle&&) noexcept;
  RunHandle& operator=(RunHandle&&) noexcept;
  void wait();
  [[nodiscard]] RunStats stats() const;
  /// Stops the run early (the tasks see the end of stream); wait() then returns.
  void cancel();
  /// Moves a migratable task to another of its candidate places while the graph runs, from any
  /// rank: it moves before the next token its router routes. Throws ConfigError.
  void migrate(const std::string& task, const Place& to);
  /// Moves every migratable task off `place` and keeps it off (`drained = false` allows it again).
  void drain(const Place& place, bool drained = true);
  /// Where every task runs: after wait(), where the migratable tasks ended (on every rank).
  [[nodiscard]] Mapping effective_mapping() const;

  struct State;  ///< defined inside the library

 private:
  friend class Executor;
  std::shared_ptr<State> state_;
};

}  // namespace weft
