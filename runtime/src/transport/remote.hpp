#pragma once
// Internal: edges that cross ranks. A sender thread per outgoing edge and a receiver thread per
// incoming edge do the blocking work (device→host staging, waiting for credit, pushing into the
// local channel); one progress thread is the only caller of MPI during a run. Flow control is by
// credits: a receiver grants `channel_capacity` tokens and returns one each time it delivered one,
// so back-pressure crosses ranks. An error on any rank is broadcast on a control tag and stops
// every rank.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <mpi.h>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/channel.hpp"
#include "transport/transports.hpp"
#include "trace/trace.hpp"

namespace weft::detail {

/// `--overlap off` (ExecutorOptions::overlap = false): on each rank one transfer or computation
/// at a time. A task firing holds this lock from fetching its inputs to the end of its work
/// (released before it waits to push its outputs); a sender holds it while it stages and sends
/// one token and waits for the transfer to complete (not while it waits for credit). Receivers
/// do not take it: what they wait for is the peer's sender, which holds the peer's lock.
std::mutex& serial_mutex();
/// Takes serial_mutex() for this thread (overlap off); a SerialPause lets it go meanwhile.
class SerialLock {
 public:
  explicit SerialLock(bool take);
  ~SerialLock();
  SerialLock(const SerialLock&) = delete;
  SerialLock& operator=(const SerialLock&) = delete;
  void release();  ///< before waiting to push outputs
 private:
  std::unique_lock<std::mutex> lock_;
};
/// While a task waits for another task of its rank (a halo from a neighbouring slab, a handed
/// over state), the serial lock it holds is released, or that task could never run.
class SerialPause {
 public:
  SerialPause();
  ~SerialPause();
  SerialPause(const SerialPause&) = delete;
  SerialPause& operator=(const SerialPause&) = delete;
 private:
  std::unique_lock<std::mutex>* paused_ = nullptr;
};

/// What the links of a run take from the executor's options.
struct LinkOptions {
  int channel_capacity = 4;  ///< tokens a receiver grants before the sender waits (credits)
  bool overlap = true;       ///< false: transfers take the serial lock (SerialLock)
};

class RemoteLinks {
 public:
  RemoteLinks(int rank, const LinkOptions& options);
  ~RemoteLinks();
  RemoteLinks(const RemoteLinks&) = delete;
  RemoteLinks& operator=(const RemoteLinks&) = delete;

  /// Tokens popped from `source` are sent to rank `to` (`link`: the link's number, the same on
  /// every rank); device arrays go GPU to GPU through NCCL (`how.nccl`) or CUDA IPC (`how.peer`),
  /// else through pinned host buffers; headers and other values always over MPI.
  void add_sender(int link, Channel* source, int to, const EdgeTransport& how);
  /// Tokens received from rank `from` are pushed into `sink`.
  void add_receiver(int link, Channel* sink, int from, const EdgeTransport& how);
  /// Messages beside the edges (migration commands and state): one receiver thread per peer calls
  /// `deliver(box, bytes)` for each. Call before start(), on every rank of the run alike.
  void enable_messages(std::function<void(int box, std::vector<std::byte> bytes)> deliver);
  /// Sends a message to `box` of rank `to` without waiting; messages to one rank arrive in order.
  void post(int to, int box, std::vector<std::byte> bytes);
  /// Collective: element-wise maximum over all ranks.
  void max_all(std::vector<int>& values);
  /// Messages outside edges (a partition's halo rows), posted by the progress thread. `channel`
  /// tells one run's message streams apart (every rank numbers them alike, below 65000); messages
  /// of one channel between two ranks arrive in order. Keep `data` alive until wait() returned.
  class Message;
  [[nodiscard]] std::shared_ptr<Message> send(const void* data, std::size_t bytes, int peer, int channel);
  [[nodiscard]] std::shared_ptr<Message> receive(void* data, std::size_t bytes, int peer, int channel);
  /// Blocks until the message left (send) or arrived (receive); false if the run was cancelled.
  [[nodiscard]] bool wait(const Message& message);
  /// Starts the threads; `on_error` is called with the first failure (local or from a peer).
  void start(std::function<void(std::exception_ptr)> on_error);
  /// Tells every other rank that this run failed here (unless the failure came from a peer),
  /// then cancels.
  void abort(const std::string& reason);
  /// Stops sending and receiving.
  void cancel();
  /// Joins every thread (after the task threads finished).
  void finish();
  /// Collective at the end of a run: every rank learns whether any rank failed. Returns the
  /// first failing rank's message, or an empty string if every rank succeeded.
  std::string agree(const std::string& local_error);
  /// Rank 0 receives every rank's trace events (clock offsets corrected); others send theirs.
  /// Records each token's send and receive (host side, and NCCL transfers on the GPU) there.
  void set_trace(TraceRecorder* trace);
  std::string gather_trace(const std::string& local_events, const TraceRecorder& recorder);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::detail
