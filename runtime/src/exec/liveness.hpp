#pragma once
// Internal: how the ranks of a job know that every rank is alive and that the job moves.
//
// Each rank runs a watch thread (Environment starts it under mpirun with several ranks and
// MPI_THREAD_MULTIPLE) on a communicator of its own. Every period it sends rank 0 a beat with what
// this process is doing (Activity); rank 0 beats back to every rank. Then:
// - a rank that has not been heard from for the timeout (killed, stopped by SIGSTOP, its process
//   hung) makes the rank watching it stop the job, naming it;
// - when every rank is inside a run, none is firing a task and no rank's progress counter moved
//   for the timeout, the ranks wait for each other for good (a deadlock): rank 0 stops the job.
// A rank that ends normally says goodbye first, so that its silence is not taken for a failure.
// WEFT_LIVENESS_TIMEOUT sets the timeout in seconds (default 60; 0 turns the watch off).
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <atomic>
#include <cstdint>
#include <memory>

namespace weft::detail {

/// What this process is doing, read by its watch thread.
struct Activity {
  std::atomic<int> runs{0};                ///< runs started and not yet waited for
  std::atomic<int> firing{0};              ///< task firings in progress
  std::atomic<std::uint64_t> progress{0};  ///< firings ended and messages completed, ever
};
[[nodiscard]] Activity& activity();

/// Counts a firing in progress for its lifetime (and progress when it ends).
class Firing {
 public:
  Firing() { activity().firing.fetch_add(1, std::memory_order_relaxed); }
  ~Firing() {
    activity().firing.fetch_sub(1, std::memory_order_relaxed);
    activity().progress.fetch_add(1, std::memory_order_relaxed);
  }
  Firing(const Firing&) = delete;
  Firing& operator=(const Firing&) = delete;
};

/// The seconds of silence after which a rank is declared lost (WEFT_LIVENESS_TIMEOUT; 0: off).
[[nodiscard]] double liveness_timeout();

/// The watch thread of one rank (started by Environment, stopped before MPI is finalised).
class Watchdog {
 public:
  /// Collective over MPI_COMM_WORLD (it duplicates it). Starts nothing when the timeout is 0.
  Watchdog(int rank, int size, double timeout);
  /// Says goodbye (this rank ends normally) and joins the thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::detail
