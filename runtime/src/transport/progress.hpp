#pragma once
// Internal: the MPI progress engine of a run. Threads that move data between ranks (edges'
// senders and receivers, messages, halos, state transfers) submit non-blocking operations here
// and wait for them; one progress thread per rank posts and tests them, so that only one thread
// calls MPI during a run. It also listens for the error notice another rank broadcasts on the
// control tag, and turns it into a RemoteError for this rank.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "trace/trace.hpp"
#include "weft/util/settings.hpp"

namespace weft::detail {

/// MPI counts are int: larger buffers go in pieces of 1 GiB.
inline constexpr std::size_t kChunk = std::size_t(1) << 30;

/// One MPI operation handed to the progress thread.
struct MpiOp {
  bool send = true;
  void* buffer = nullptr;
  std::size_t bytes = 0;
  int peer = 0;
  int tag = 0;
  std::shared_ptr<void> keep;  // keeps the buffer alive until completion
  MPI_Request request = MPI_REQUEST_NULL;
  bool posted = false;
  bool control = false;  // error notices: given time to leave even after a cancellation
  std::atomic<bool> done{false};
};

struct MpiProgress {
  int rank = 0;
  int size = 1;
  int run = 0;  ///< the run's number, in every tag (cluster/tags.hpp)
  bool debug = settings().debug_remote;
  MPI_Comm comm = MPI_COMM_NULL;
  std::function<void(std::exception_ptr)> on_error;
  TraceRecorder* trace = nullptr;  // set before the progress thread starts

  std::mutex mutex;
  std::condition_variable changed;        // an operation completed, or the run was cancelled
  std::condition_variable submitted_one;  // wakes an idle progress thread
  std::deque<std::shared_ptr<MpiOp>> submitted;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> stop_progress{false};
  std::atomic<bool> remote_failure{false};  // another rank's error notice arrived
  char control_buffer[4096] = {};

  /// Queues an operation for the progress thread; `keep` owns the buffer until it completes.
  std::shared_ptr<MpiOp> submit(bool send, void* buffer, std::size_t bytes, int peer, int tag,
                                std::shared_ptr<void> keep = {});
  /// Waits for an operation; false if the run was cancelled first.
  bool wait(const std::shared_ptr<MpiOp>& op);
  /// Sends `bytes` in chunks, appending the operations to `ops`.
  void send_bytes(std::vector<std::shared_ptr<MpiOp>>& ops, void* data, std::size_t bytes, int peer, int tag,
                  std::shared_ptr<void> keep);
  /// Receives `bytes` in chunks and waits; false if cancelled. `keep` owns the buffer: a
  /// cancelled receiver thread leaves while the receive is posted.
  bool recv_bytes(void* data, std::size_t bytes, int peer, int tag, const std::shared_ptr<void>& keep);
  /// Reports a failure of this rank (stops the run).
  void fail_local(std::exception_ptr e) {
    if (on_error) on_error(e);
  }
  /// The progress thread's body: until stop_progress and nothing is left in flight.
  void loop();
};

}  // namespace weft::detail
