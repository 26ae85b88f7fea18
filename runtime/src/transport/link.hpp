#pragma once
// Internal: the links of an edge between ranks. Every token crosses as a header over MPI (index,
// end, kind, marker, type and shape) followed by its payload, which one of the edge's links
// carries: NCCL (GPU to GPU), CUDA IPC (ranks of one host), host-staged arrays over MPI, or the
// bytes of a scalar over MPI. The edge's sender and receiver threads (remote.cpp) own what is
// common to every link: credits, the serial lock of `--overlap off`, double buffering, tracing.
// A link only says which tokens it carries and how their payload goes. make_send_links and
// make_receive_links (links.cpp) choose an edge's links from its EdgeTransport, in order of
// preference: a new transport is one new file and one line there.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "transport/channel.hpp"
#include "transport/peer.hpp"
#include "transport/progress.hpp"
#include "transport/transports.hpp"

namespace weft::detail {

/// What crosses MPI ahead of every token's payload.
struct Header {
  std::uint64_t index = 0;
  std::int32_t end = 0;
  std::int32_t kind = 0;  ///< the Value alternative (0: none, a marker; 1: an array)
  std::int32_t dtype = 0;
  std::int32_t ndim = 0;
  std::int64_t dims[3] = {0, 0, 0};
  std::uint64_t bytes = 0;  ///< payload bytes that follow over MPI on the edge's payload tag
  std::int32_t nccl = 0;    // payload follows through NCCL, device to device
  std::int32_t marker = 0;  // Token::marker (migration)
  std::int32_t peer = 0;    // payload waits in the sender's GPU memory: `ticket` opens it (CUDA IPC)
  std::int32_t pad = 0;
  PeerTicket ticket;

  void describe(const Array& a) {  // an array's type and shape
    dtype = static_cast<int>(a.dtype());
    ndim = a.shape().ndim();
    for (int i = 0; i < ndim; ++i) dims[i] = a.shape()[i];
  }
};

/// The two ends of one edge, as its links see them.
struct EdgeEnd {
  MpiProgress* mpi = nullptr;
  TraceRecorder* trace = nullptr;  ///< null: not traced
  int edge = 0;
  int peer = 0;  ///< the other rank
  int lane = 0;  ///< this end's trace lane (link_lane)
};

/// Host bytes that MPI sends after the header (none: data null), kept alive until sent.
struct StagedBytes {
  void* data = nullptr;
  std::shared_ptr<void> keep;
};

class SendLink {
 public:
  virtual ~SendLink() = default;
  /// Whether this link carries the payload of `t` (never asked for the end of the stream).
  [[nodiscard]] virtual bool carries(const Token& t) const = 0;
  /// Describes the payload in `h` (sets `bytes` for what MPI sends after it) and stages it: with
  /// overlap on, while the sender waits for a credit.
  virtual StagedBytes stage(const Token& t, Header& h) = 0;
  /// After the header was submitted, for payloads that travel outside MPI (NCCL); `ops` are the
  /// token's MPI operations, which the sender waits for. `serial`: overlap off.
  virtual void after_header(const Token& t, const Header& h, std::vector<std::shared_ptr<MpiOp>>& ops,
                            bool serial) {}
  /// At the end of the stream, once the token sends completed; false if the run was cancelled.
  virtual bool close() { return true; }
};

class ReceiveLink {
 public:
  virtual ~ReceiveLink() = default;
  /// Whether this link carries the payload `h` announces.
  [[nodiscard]] virtual bool carries(const Header& h) const = 0;
  /// Puts the payload into `t` (value and ready event); false if the run was cancelled.
  virtual bool take(const Header& h, Token& t) = 0;
  /// After the token was pushed downstream, before its credit goes back (the sender may then
  /// reuse what held the payload).
  virtual void before_credit() {}
};

/// Per rank and run: what the NCCL links of every edge share (link_nccl.cpp). NCCL matches the
/// sends and receives between two ranks in the order each side issued them. A rank issues its
/// NCCL sends to a peer one at a time, each announced by an order message on a single MPI tag
/// (MPI keeps their order), and the peer issues its receives in that order from one thread, then
/// hands each array to its edge's receiver: edges' threads never race for the order.
struct NcclShared {
  std::mutex order;            ///< a send and its order message go together
  std::map<int, int> senders;  ///< per peer: this rank's NCCL edges still sending (the last says "no more")
  struct Inbox {               ///< per peer sending through NCCL here: the arrays of each edge, in order
    std::mutex mutex;
    std::condition_variable arrived;
    std::map<int, std::deque<std::pair<Array, std::shared_ptr<Event>>>> edges;
  };
  std::map<int, std::shared_ptr<Inbox>> inboxes;
};

/// The links of an edge's sending end, in order of preference (the first that carries a token
/// takes it). `exporters` keeps CUDA IPC buffers until the run's closing agreement.
[[nodiscard]] std::vector<std::unique_ptr<SendLink>> make_send_links(
    const EdgeTransport& how, const EdgeEnd& end, int capacity, NcclShared& nccl,
    std::vector<std::shared_ptr<PeerExporter>>& exporters);
/// The links of an edge's receiving end. `start_thread` receives bodies of threads that must
/// run beside the edge's (NCCL's receive thread of a peer).
[[nodiscard]] std::vector<std::unique_ptr<ReceiveLink>> make_receive_links(
    const EdgeTransport& how, const EdgeEnd& end, NcclShared& nccl,
    const std::function<void(std::function<void()>)>& start_thread);

// The links, one file each.
[[nodiscard]] std::unique_ptr<SendLink> make_nccl_send(const EdgeEnd& end, NcclShared& nccl);
[[nodiscard]] std::unique_ptr<ReceiveLink> make_nccl_receive(const EdgeEnd& end, NcclShared& nccl,
                                                             const std::function<void(std::function<void()>)>& start_thread);
[[nodiscard]] std::unique_ptr<SendLink> make_ipc_send(const EdgeEnd& end, const EdgeTransport& how, int capacity,
                                                      std::vector<std::shared_ptr<PeerExporter>>& exporters);
[[nodiscard]] std::unique_ptr<ReceiveLink> make_ipc_receive(const EdgeEnd& end, const EdgeTransport& how);
[[nodiscard]] std::unique_ptr<SendLink> make_host_array_send(const EdgeEnd& end);
[[nodiscard]] std::unique_ptr<ReceiveLink> make_host_array_receive(const EdgeEnd& end);
[[nodiscard]] std::unique_ptr<SendLink> make_bytes_send(const EdgeEnd& end);
[[nodiscard]] std::unique_ptr<ReceiveLink> make_bytes_receive(const EdgeEnd& end);

/// A copy of a token's array on an edge: its host span on `lane` from c0 until now and its GPU
/// interval on the lane's GPU lane, both named `what`.
void trace_copy(TraceRecorder& trace, const std::string& what, int lane, std::uint64_t token, double c0,
                const GpuInterval& gpu);

}  // namespace weft::detail
