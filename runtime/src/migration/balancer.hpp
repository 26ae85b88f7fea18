#pragma once
// Internal: the load balancer's model (--balance greedy|refine). Each period rank 0 receives, from
// every rank, cumulative counters of every actor (tokens, busy time, bytes fetched) and each
// router's current candidate. From them it keeps, per (task, place), the time a token costs there
// (an exponential average of what was measured while the task ran there), and per place the sum
// over the tasks it runs now: the most loaded place bounds the pipeline's iteration time. A move
// is predicted from those costs (an unmeasured place: the lowest cost the task ever had on a place
// of the same kind, times that place's slowdown: how much slower than their best the tasks
// measured there ran; never to a kind of place where it was not measured), the cost of its edges when it changes rank (bytes per
// token over an assumed link bandwidth) and the cost of moving its state, amortised over a few
// periods. Hysteresis: a task that moved waits `kCooldown` periods, and moving it back to the
// place it left soon after needs twice the threshold. Each move is measured afterwards (executor.cpp,
// run_balancer): the moved task's tokens per second before and after, on its ranks' own clocks.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "migration/migration.hpp"

namespace weft::detail {

/// Cumulative counters of one actor (vertex of the run plan).
struct ActorSample {
  std::int32_t vertex = 0;
  std::uint64_t tokens = 0;
  double busy_seconds = 0;   ///< CPU task: time in run(); GPU task: GPU time of its firings
  std::uint64_t bytes_in = 0;
  std::uint64_t state_bytes = 0;  ///< last state handed over from here
  double at = 0;  ///< when the counters were read: seconds since the run started on their rank
};
/// What one rank reports each period.
struct RankReport {
  std::vector<ActorSample> actors;
  std::vector<std::pair<std::int32_t, std::int32_t>> current;  ///< (group, candidate) of local routers
  [[nodiscard]] std::vector<std::byte> encode() const;
  [[nodiscard]] static RankReport decode(const std::vector<std::byte>& bytes);
};

/// A move the model proposes.
struct Move {
  int group = 0;
  int to = 0;  ///< candidate index
  double predicted_gain = 0;
  std::string reason;
};

class BalanceModel {
 public:
  static constexpr int kCooldown = 2;               ///< periods a moved task stays put
  static constexpr double kLinkBytesPerSecond = 10e9;  ///< assumed for tokens crossing ranks
  static constexpr double kStateBytesPerSecond = 5e9;  ///< assumed for state hand-over
  static constexpr double kMoveLatency = 2e-3;       ///< seconds, per move
  static constexpr double kHorizonPeriods = 5;       ///< a move's cost is amortised over this

  BalanceModel(const RunPlan& plan, std::string mode, double threshold, double period);
  /// Feeds one period's reports (cumulative counters from every rank, merged) and returns the
  /// moves to make now. `now`: seconds since the run started.
  [[nodiscard]] std::vector<Move> step(const std::vector<ActorSample>& actors,
                                       const std::map<int, int>& current, double now);
  /// The estimated iteration time (seconds per token at the most loaded place) of the last step.
  [[nodiscard]] double iteration_seconds() const noexcept { return iteration_; }
  /// Tokens per second through the migratable tasks in the last period (measured).
  [[nodiscard]] double throughput() const noexcept { return throughput_; }
  /// What the last step saw, for the debug log: per place its load, per migratable task its cost
  /// where it runs and where it could run (measured, or ~ predicted; ? unknown), in ms per token.
  /// Built only when asked (the debug log): the step keeps its loads and current places.
  [[nodiscard]] std::string view() const;

 private:
  struct Cost {
    double seconds = 0;  ///< per token
    bool measured = false;
  };
  [[nodiscard]] double cost_at(int group, int candidate) const;
  [[nodiscard]] double best_of(int vertex) const;          // lowest one-period cost of its task
  [[nodiscard]] double slowdown(const Place& place) const;  // >= 1
  const RunPlan& plan_;
  std::string mode_;
  double threshold_, period_;
  std::map<int, ActorSample> last_;  // previous counters per vertex
  std::map<int, Cost> cost_;         // per vertex (a plain task, or an instance = task at a place)
  std::map<int, double> best_seen_;  // per vertex: lowest cost of one period
  std::map<int, double> bytes_per_token_;
  std::map<int, std::uint64_t> state_bytes_;  // per group
  std::map<int, int> cooldown_;               // per group: periods left
  std::map<int, std::pair<int, int>> left_;   // per group: (candidate it left, periods ago)
  double iteration_ = 0, throughput_ = 0;
  std::map<Place, double> last_load_;  // of the last step, for view()
  std::map<int, int> last_current_;
  double last_now_ = 0;
};

}  // namespace weft::detail
