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

/// One send in flight: the bytes sent must stay alive until done() says they have left. One
/// destroyed before that (after an error, its receiver gone) is given up without waiting
/// (MPI_Request_free), and its bytes must then stay alive until the process ends.
class SideSend {
 public:
  SideSend() = default;
  ~SideSend();
  SideSend(SideSend&& other) noexcept;
  SideSend& operator=(SideSend&& other) noexcept;
  SideSend(const SideSend&) = delete;
  SideSend& operator=(const SideSend&) = delete;
  /// Whether the bytes have left (tests, never blocks).
  [[nodiscard]] bool done();

 private:
  friend class SideMessages;
  struct Request;
  std::unique_ptr<Request> request_;
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
  [[nodiscard]] SideSend send(int rank, int tag, const void* data, std::size_t bytes) const;
  /// Receives the next message of `tag` from `rank` into `data`, which it must fill exactly;
  /// polls every 20 µs. Returns false, the receive withdrawn, as soon as `stop` returns true.
  [[nodiscard]] bool receive(int rank, int tag, void* data, std::size_t bytes,
                             const std::function<bool()>& stop = {}) const;

 private:
  bool available_ = false;
  int generation_ = 0;  // which SideMessages of the process (the same on every rank)
};

}  // namespace weft
