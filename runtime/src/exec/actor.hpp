#pragma once
// Internal: the thread of one task of a run on this rank (a task, or a migratable task's
// instance). Its loop is pop → fetch → fire → push; what else a firing involves hangs off it as
// named steps: the hand-over at a migration marker, the serial lock of `--overlap off`, the GPU
// time the balancer reads, the trace, and the bound on firings queued on a GPU.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "exec/firing.hpp"

namespace weft::detail {

class Actor {
 public:
  Actor(RunHandle::State& run, Node& node);
  /// Runs the task until its inputs end or the run is cancelled; a failure stops the run.
  void drive() noexcept;

 private:
  enum class Inputs { ready, ended, moved, cancelled };
  void loop();
  /// Pops one token from each input the firing reads (`index` becomes theirs) and brings their
  /// arrays to the task's place (later, under the serial lock, with overlap off).
  Inputs pop_inputs(std::uint64_t firing, std::uint64_t& index);
  /// A migration marker on input `p`: the task moves away after its last firing here.
  Inputs move_away(Token marker, const std::vector<int>& ports, int p);
  void fire(std::uint64_t index);
  /// After a firing: the event its device outputs wait for (null if none), inputs released.
  std::shared_ptr<Event> settle();
  /// Back-pressure on the GPU: at most channel_capacity firings queued on the task's stream.
  void bound_queued_firings(const std::shared_ptr<Event>& ready);
  /// Pushes the firing's outputs to their consumers; false if the run was cancelled.
  bool push_outputs(std::uint64_t index, const std::shared_ptr<Event>& ready);
  void collect_gpu_time();
  void retire(bool all);
  void finish();

  RunHandle::State& run_;
  Node& node_;
  Task& task_;
  FiringContext ctx_;
  const bool gpu_;
  const bool forwards_;  // the task passes its inputs on: no copy, their events go on with them
  const bool serial_;    // --overlap off
  void* home_ = nullptr;  // the device's compute stream, where arrays are freed
  PendingCopies pending_;
  std::optional<StreamTimer> timer_;  // GPU time, for the load balancer only (two events per firing)
  std::deque<std::shared_ptr<Event>> outstanding_;  // completion of this task's queued firings
  bool used_device_arrays_ = false;  // this firing took arrays on its GPU: free them in order
  std::vector<Array> held_;
  std::vector<std::pair<int, Token>> deferred_;  // overlap off: inputs fetched under the lock
  std::uint64_t renumbered_ = 0;  // tokens sent so far by a task that renumbers()
};

}  // namespace weft::detail
