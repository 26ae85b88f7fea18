// The CUDA IPC link: device arrays between ranks of one host, staged by the sender into a ring
// of exportable GPU buffers and copied out by the receiver through the buffer's handle
// (transport/peer.hpp); only the ticket travels in the header.
#include <algorithm>
#include <string>

#include "data/buffer.hpp"
#include "transport/link.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

class IpcSend final : public SendLink {
 public:
  // A ring of capacity + 1 buffers. Token k of the edge (counting every token, each of which
  // takes a credit) is staged after tokens 0 .. k - 1 were sent, so after the receiver granted at
  // least k credits: capacity of them at the start and one per token it delivered, which it does
  // only after its copy out of the token's buffer completed (IpcReceive::before_credit). Tokens
  // 0 .. k - 1 - capacity are therefore out of their buffers, and the buffer written for token k
  // was last written for an array token at least capacity + 1 tokens earlier, one of those.
  IpcSend(const EdgeEnd& end, const EdgeTransport& how, int capacity,
          std::vector<std::shared_ptr<PeerExporter>>& exporters)
      : end_(end), devices_(how.ipc_devices), exporter_(std::make_shared<PeerExporter>(capacity + 1)) {
    exporters.push_back(exporter_);
  }

  [[nodiscard]] bool carries(const Token& t) const override {
    const auto* a = std::get_if<Array>(&t.value);
    return a && !a->memory().is_host() &&
           std::find(devices_.begin(), devices_.end(), a->memory().device_index) != devices_.end();
  }

  StagedBytes stage(const Token& t, Header& h) override {
    const Array& a = std::get<Array>(t.value);
    h.describe(a);
    h.peer = 1;
    GpuInterval interval;
    TraceRecorder* trace = end_.trace;
    const double c0 = trace ? trace->now_us() : 0;
    h.ticket = exporter_->stage(a, t.ready.get(), trace ? &interval : nullptr);
    if (trace)
      trace_copy(*trace, "copy into CUDA IPC buffer for rank " + std::to_string(end_.peer), end_.lane, t.index, c0,
                 interval);
    return {};
  }

 private:
  EdgeEnd end_;
  std::vector<int> devices_;
  std::shared_ptr<PeerExporter> exporter_;
};

class IpcReceive final : public ReceiveLink {
 public:
  IpcReceive(const EdgeEnd& end, const EdgeTransport& how) : end_(end), device_(how.device), to_host_(how.to_host) {}

  [[nodiscard]] bool carries(const Header& h) const override { return h.kind == 1 && h.peer; }

  bool take(const Header& h, Token& t) override {  // in the sender's GPU memory: copied out here
    const Shape shape = shape_from(h.ndim, h.dims, "token header");
    // Closes the sender's buffers when the edge's thread ends (before the run's closing
    // agreement, after which the sender frees them).
    if (!importer_) importer_ = std::make_unique<PeerImporter>();
    GpuInterval interval;
    std::shared_ptr<Event> done;
    TraceRecorder* trace = end_.trace;
    const double c0 = trace ? trace->now_us() : 0;
    Array a = importer_->fetch(h.ticket, static_cast<DType>(h.dtype), shape, device_, to_host_, done,
                               trace ? &interval : nullptr);
    if (trace)
      trace_copy(*trace, "copy out of CUDA IPC buffer of rank " + std::to_string(end_.peer), end_.lane, h.index, c0,
                 interval);
    t.value = std::move(a);
    t.ready = done;
    copied_ = std::move(done);
    return true;
  }

  void before_credit() override {  // the sender may reuse the buffer once this credit arrives
    if (!copied_) return;
    copied_->synchronize();
    copied_.reset();
  }

 private:
  EdgeEnd end_;
  int device_;
  bool to_host_;
  std::unique_ptr<PeerImporter> importer_;
  std::shared_ptr<Event> copied_;  // the last token's copy out of a buffer: done before its credit
};

}  // namespace

std::unique_ptr<SendLink> make_ipc_send(const EdgeEnd& end, const EdgeTransport& how, int capacity,
                                        std::vector<std::shared_ptr<PeerExporter>>& exporters) {
  return std::make_unique<IpcSend>(end, how, capacity, exporters);
}

std::unique_ptr<ReceiveLink> make_ipc_receive(const EdgeEnd& end, const EdgeTransport& how) {
  return std::make_unique<IpcReceive>(end, how);
}

}  // namespace weft::detail
