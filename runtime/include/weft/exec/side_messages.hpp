#pragma once
/// Byte messages between ranks beside a run's edges, for tasks that coordinate with a task of
/// another rank outside the graph (a slab source handing the halo planes it read to the source of
/// the next slab, so that they are not read twice). Sent and received by the tasks themselves,
/// over MPI (a communicator of their own), while the run's own messages go on.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace weft {

/// One message in flight, sent or received; its bytes must stay alive until done() says so. A
/// receive destroyed before that is cancelled. A send destroyed before that (after an error, its
/// receiver gone) is given up without waiting (MPI_Request_free), and its bytes must then stay
/// alive until the process ends.
class SideRequest {
 public:
  SideRequest();
  ~SideRequest();
  SideRequest(SideRequest&& other) noexcept;
  SideRequest& operator=(SideRequest&& other) noexcept;
  SideRequest(const SideRequest&) = delete;
  SideRequest& operator=(const SideRequest&) = delete;
  /// Whether the message has left or arrived (tests, never blocks). A received message of another
  /// size than asked throws Error.
  [[nodiscard]] bool done();
  /// Polls done() every 20 µs; false as soon as `stop` (if given) returns true, the message still in flight.
  [[nodiscard]] bool wait(const std::function<bool()>& stop = {});

 private:
  friend class SideMessages;
  struct State;
  void release() noexcept;
  std::unique_ptr<State> state_;
};

class SideMessages {
 public:
  /// Under MPI, collective over every rank (call it at the same point on every rank, outside a
  /// run). available() is false without MPI, with one rank, or where MPI offers less than
  /// MPI_THREAD_MULTIPLE (the tasks call MPI beside the runtime's threads): callers then do without.
  SideMessages();
  SideMessages(const SideMessages&) = delete;
  SideMessages& operator=(const SideMessages&) = delete;

  [[nodiscard]] bool available() const noexcept { return available_; }
  /// Largest tag (0 .. kMaxTag) that send() and receive() take; messages of different tags, or of
  /// different SideMessages objects, never match each other.
  static constexpr int kMaxTag = (1 << 20) - 1;

  /// Starts sending `bytes` bytes (under 2 GiB) to `rank` under `tag`. Messages of one tag from one
  /// rank arrive in the order sent.
  [[nodiscard]] SideRequest send(int rank, int tag, const void* data, std::size_t bytes) const;
  /// Starts receiving the next message of `tag` from `rank` into `data`, which it must fill
  /// exactly. Posted early, the transfer goes on while the caller does other work.
  [[nodiscard]] SideRequest receive(int rank, int tag, void* data, std::size_t bytes) const;

 private:
  bool available_ = false;
  int generation_ = 0;  // which SideMessages of the process (the same on every rank)
};

}  // namespace weft
