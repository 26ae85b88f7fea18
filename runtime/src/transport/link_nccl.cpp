// The NCCL link: device arrays from GPU to GPU of different ranks (transport/nccl.hpp), in the
// order NcclShared (link.hpp) keeps between two ranks.
#include <algorithm>
#include <chrono>
#include <deque>
#include <string>
#include <utility>

#include "cluster/tags.hpp"
#include "data/buffer.hpp"
#include "transport/link.hpp"
#include "transport/nccl.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

// One NCCL send announced to the peer, on the run's NCCL order tag.
struct NcclOrder {
  std::int32_t edge = -1;  // -1: no more NCCL sends from this rank in this run
  std::int32_t dtype = 0;
  std::int32_t ndim = 0;
  std::int32_t pad = 0;
  std::int64_t dims[3] = {0, 0, 0};
  std::uint64_t index = 0;
};

class NcclSend final : public SendLink {
 public:
  NcclSend(const EdgeEnd& end, NcclShared& shared) : end_(end), shared_(shared) { ++shared_.senders[end.peer]; }

  [[nodiscard]] bool carries(const Token& t) const override {
    const auto* a = std::get_if<Array>(&t.value);
    return a && !a->memory().is_host() && a->memory().device_index == nccl_device();
  }

  StagedBytes stage(const Token& t, Header& h) override {
    h.describe(std::get<Array>(t.value));
    h.nccl = 1;
    return {};
  }

  void after_header(const Token& t, const Header& h, std::vector<std::shared_ptr<MpiOp>>& ops, bool serial) override {
    const Array& direct = std::get<Array>(t.value);
    MpiProgress& mpi = *end_.mpi;
    TraceRecorder* trace = end_.trace;
    GpuInterval interval;
    const double n0 = trace ? trace->now_us() : 0;
    {
      auto order = std::make_shared<NcclOrder>();
      order->edge = end_.edge;
      order->dtype = h.dtype;
      order->ndim = h.ndim;
      std::copy(std::begin(h.dims), std::end(h.dims), order->dims);
      order->index = t.index;
      // The order message first: NCCL may only finish queueing a send (its first one to a
      // peer connects) once the peer issues the receive, which waits for that message.
      std::lock_guard in_order(shared_.order);
      ops.push_back(mpi.submit(true, order.get(), sizeof *order, end_.peer, tags::nccl_order(mpi.run), order));
      in_flight_.emplace_back(nccl_send(direct, t.ready.get(), end_.peer, trace ? &interval : nullptr), direct);
    }
    if (trace) {
      trace->add({"ncclSend call", "send", end_.lane, t.index, n0, trace->now_us() - n0});
      trace->add_gpu({"ncclSend to rank " + std::to_string(end_.peer), "send", gpu_lane(end_.lane), t.index, interval});
    }
    while (in_flight_.size() > (serial ? 0u : 2u)) {  // double buffering (none with overlap off)
      const double s0 = trace ? trace->now_us() : 0;
      in_flight_.front().first->synchronize();
      if (trace)
        trace->add({"wait for ncclSend", "send", end_.lane, t.index + 1 - in_flight_.size(), s0, trace->now_us() - s0});
      in_flight_.pop_front();
    }
  }

  bool close() override {
    for (auto& [event, array] : in_flight_) event->synchronize();
    MpiProgress& mpi = *end_.mpi;
    std::shared_ptr<MpiOp> op;
    {
      std::lock_guard in_order(shared_.order);
      if (--shared_.senders[end_.peer] == 0) {  // the last NCCL edge to this peer: no more
        auto last = std::make_shared<NcclOrder>();
        op = mpi.submit(true, last.get(), sizeof *last, end_.peer, tags::nccl_order(mpi.run), last);
      }
    }
    return !op || mpi.wait(op);
  }

 private:
  EdgeEnd end_;
  NcclShared& shared_;
  std::deque<std::pair<std::shared_ptr<Event>, Array>> in_flight_;
};

// The thread that issues every NCCL receive from one peer, in the order its messages announce.
void receive_in_order(MpiProgress& mpi, TraceRecorder* trace, int from, NcclShared::Inbox& box) {
  try {
    while (true) {
      auto order = std::make_shared<NcclOrder>();
      if (!mpi.wait(mpi.submit(false, order.get(), sizeof *order, from, tags::nccl_order(mpi.run), order))) return;
      if (order->edge < 0) return;
      const Shape shape = shape_from(order->ndim, order->dims, "NCCL order message");
      std::shared_ptr<Event> done;
      GpuInterval interval;
      Array a = nccl_recv(static_cast<DType>(order->dtype), shape, from, done, trace ? &interval : nullptr);
      if (trace)
        trace->add_gpu({"ncclRecv from rank " + std::to_string(from), "recv", gpu_lane(link_lane(order->edge, true)),
                        order->index, interval});
      {
        std::lock_guard lock(box.mutex);
        box.edges[order->edge].emplace_back(std::move(a), std::move(done));
      }
      box.arrived.notify_all();
    }
  } catch (...) {
    mpi.fail_local(std::current_exception());
  }
}

class NcclReceive final : public ReceiveLink {
 public:
  NcclReceive(const EdgeEnd& end, std::shared_ptr<NcclShared::Inbox> inbox) : end_(end), inbox_(std::move(inbox)) {}

  [[nodiscard]] bool carries(const Header& h) const override { return h.kind == 1 && h.nccl; }

  bool take(const Header& h, Token& t) override {  // received by the peer's NCCL thread, in its order
    const Shape shape = shape_from(h.ndim, h.dims, "token header");
    std::unique_lock lock(inbox_->mutex);
    auto& arrived = inbox_->edges.at(end_.edge);
    while (arrived.empty()) {
      if (end_.mpi->cancelled) return false;
      inbox_->arrived.wait_for(lock, std::chrono::milliseconds(10));
    }
    auto [a, done] = std::move(arrived.front());
    arrived.pop_front();
    lock.unlock();
    if (a.shape() != shape) throw Error("internal: NCCL array of another shape on edge " + std::to_string(end_.edge));
    t.value = std::move(a);
    t.ready = std::move(done);
    return true;
  }

 private:
  EdgeEnd end_;
  std::shared_ptr<NcclShared::Inbox> inbox_;
};

}  // namespace

std::unique_ptr<SendLink> make_nccl_send(const EdgeEnd& end, NcclShared& nccl) {
  return std::make_unique<NcclSend>(end, nccl);
}

std::unique_ptr<ReceiveLink> make_nccl_receive(const EdgeEnd& end, NcclShared& nccl,
                                               const std::function<void(std::function<void()>)>& start_thread) {
  auto& box = nccl.inboxes[end.peer];
  if (!box) {  // the first NCCL edge from this peer: one thread issues every receive from it
    box = std::make_shared<NcclShared::Inbox>();
    start_thread([mpi = end.mpi, trace = end.trace, from = end.peer, inbox = box] {
      receive_in_order(*mpi, trace, from, *inbox);
    });
  }
  (void)box->edges[end.edge];  // made before the threads start
  return std::make_unique<NcclReceive>(end, box);
}

}  // namespace weft::detail
