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

/// What one thread did, written by it alone (its own cache line: a firing costs no shared write).
struct alignas(64) ThreadActivity {
  std::atomic<int> firing{0};              ///< firings in progress on this thread (0 or 1)
  std::atomic<std::uint64_t> progress{0};  ///< firings ended and messages completed, ever
};
/// This thread's counters, registered on first use and kept (with what they counted) after it ends.
[[nodiscard]] ThreadActivity& thread_activity();

/// What this process is doing, read by its watch thread: the sums over its threads.
struct Activity {
  int runs = 0;
  int firing = 0;
  std::uint64_t progress = 0;
};
[[nodiscard]] Activity activity();
/// Runs started and not yet waited for (the executor counts them).
[[nodiscard]] std::atomic<int>& active_runs();

/// Counts a firing in progress for its lifetime (and progress when it ends).
class Firing {
 public:
  Firing() : mine_(thread_activity()) { mine_.firing.store(1, std::memory_order_relaxed); }
  ~Firing() {
    mine_.firing.store(0, std::memory_order_relaxed);
    mine_.progress.store(mine_.progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  Firing(const Firing&) = delete;
  Firing& operator=(const Firing&) = delete;

 private:
  ThreadActivity& mine_;
};

/// Counts one completed message (the progress thread).
inline void count_progress() {
  ThreadActivity& mine = thread_activity();
  mine.progress.store(mine.progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

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
