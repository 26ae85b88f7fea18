#pragma once
// Internal: live migration. A migratable task is expanded, when a run starts, into a router, one
// instance per candidate place and a merger:
//
//   producers -> router -> instance[0..n) -> merger -> consumers
//
// The router sends every token to the current instance. To move the task before token k it sends
// an end-of-epoch marker to the old instance after token k-1 and routes token k onwards to the new
// one. The old instance, on the marker, saves its state, stops, hands the state to the new
// instance (a message, local or over MPI) and forwards the marker to the merger; the new instance
// loads the state before its first token. The merger reads the old instance until the marker,
// then the new one. Channels are FIFO, so order is kept without a barrier.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "mapping/plan.hpp"
#include "transport/channel.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft::detail {

/// A migrated task's state: save()'s bytes and save_arrays()'s arrays (same rank), or the state
/// message of another rank (`wire`: migration/state_transfer.hpp; the arrays' data follows on MPI).
struct Handover {
  std::vector<std::byte> bytes;
  std::vector<Array> arrays;
  bool wire = false;
};

/// A mailbox of hand-overs, cancellable.
class Mailbox {
 public:
  void put(Handover state);
  /// Blocks until a hand-over arrived; false if cancelled first.
  bool take(Handover& state);
  void cancel();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Handover> messages_;
  bool cancelled_ = false;
};

/// A command for a router: move to a candidate, or stop / resume using one.
struct Command {
  enum Kind : std::int32_t { move = 0, drain = 1, undrain = 2 };
  Kind kind = move;
  std::int32_t instance = 0;
};

/// Run-time state of one migratable task on this rank.
class Migration {
 public:
  Migration(int id, const GroupPlan& plan, int router_rank);
  [[nodiscard]] int id() const noexcept { return id_; }
  [[nodiscard]] const std::string& task() const noexcept { return task_; }
  [[nodiscard]] const std::vector<Place>& places() const noexcept { return places_; }
  [[nodiscard]] int initial() const noexcept { return initial_; }
  [[nodiscard]] int router_rank() const noexcept { return router_rank_; }
  /// Index of `place` among the candidates, or -1.
  [[nodiscard]] int find(const Place& place) const;

  /// Router side: queue a command; the router applies what is queued before its next token.
  void command(Command c);
  /// Router side: the instance the next token goes to, given the current one (drained places are
  /// avoided: a drain moves the task to the nearest candidate still allowed).
  [[nodiscard]] int destination(int current);
  /// The router's current instance (read by the balancer and --write-mapping on the router's rank).
  [[nodiscard]] int current() const noexcept { return current_.load(); }
  [[nodiscard]] std::uint64_t moves() const noexcept { return moves_.load(); }

  /// State handed to candidate `instance` (deposited locally or by the message receiver).
  Mailbox& handover(int instance) { return *handovers_.at(instance); }
  void cancel();

 private:
  int id_;
  std::string task_;
  std::vector<Place> places_;
  int initial_;
  int router_rank_;
  std::mutex mutex_;
  std::deque<Command> commands_;
  std::vector<bool> drained_;
  std::atomic<int> current_;
  std::atomic<std::uint64_t> moves_{0};
  std::vector<std::unique_ptr<Mailbox>> handovers_;
};

/// Every migratable task of a run on this rank, and the way messages reach other ranks.
class Migrations {
 public:
  /// `post(rank, box, bytes)` sends a message to another rank (null on a single rank).
  using Post = std::function<void(int rank, int box, std::vector<std::byte> bytes)>;
  Migrations(const RunPlan& plan, int rank, Post post);
  [[nodiscard]] bool empty() const noexcept { return groups_.empty(); }
  [[nodiscard]] Migration& group(int id) { return *groups_.at(id); }
  [[nodiscard]] Migration* find(const std::string& task);
  [[nodiscard]] const std::vector<std::unique_ptr<Migration>>& groups() const noexcept { return groups_; }

  /// Sends a command to the task's router, wherever it runs. Throws ConfigError for a task that
  /// is not migratable or a place that is not one of its candidates.
  void migrate(const std::string& task, const Place& to);
  /// Moves every migratable task away from `place` and keeps them away (undo with `drained=false`).
  void drain(const Place& place, bool drained = true);
  /// The old instance's state goes to candidate `instance` of `group`.
  void hand_over(int group, int instance, Handover state);
  /// Called with the messages received from other ranks.
  void deliver(int box, std::vector<std::byte> bytes);
  void cancel();

 private:
  void send_command(Migration& m, Command c);
  int rank_;
  Post post_;
  std::vector<std::unique_ptr<Migration>> groups_;
};

/// The router's loop: `inputs` one per input port; `outputs[i * ports + p]` feeds port p of
/// candidate i. Returns when the stream ended or the run was cancelled.
void route_tokens(Migration& m, const std::vector<Channel*>& inputs, const std::vector<Channel*>& outputs);
/// The merger's loop: `inputs[i * ports + q]` comes from output q of candidate i; `outputs[q]`
/// lists the consumers of output q.
void merge_tokens(Migration& m, const std::vector<Channel*>& inputs, const std::vector<std::vector<Channel*>>& outputs);

}  // namespace weft::detail
