// The two threads of an edge between ranks: what every link shares. The sender waits for
// credits (flow control across ranks), takes the serial lock of `--overlap off`, has the token's
// link stage it, sends the header and the payload's MPI bytes, and keeps at most two tokens'
// sends outstanding. The receiver grants credits, waits for each header, has the link the
// header names take the payload, and pushes the token downstream. Both trace what they do.
#include "transport/edge_threads.hpp"

#include <algorithm>
#include <deque>
#include <string>

#include "cluster/tags.hpp"
#include "trace/nvtx.hpp"
#include "transport/remote.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

using tags::EdgePart;

// Where an arrow leaves a send span or reaches a receive span: just after the span's start
// (the send submitted, the header arrived), so that it points forward in time, yet strictly
// inside the span for the viewer to bind it there.
double flow_point(double start_us, double end_us) { return start_us + std::min(0.5, (end_us - start_us) / 2); }

}  // namespace

void send_tokens(MpiProgress& mpi, Channel& source, const EdgeEnd& end, std::vector<std::unique_ptr<SendLink>>& links,
                 bool serial) {
  TraceRecorder* trace = end.trace;
  const int to = end.peer, id = end.edge, lane = end.lane;
  int credits = 0;
  std::deque<std::vector<std::shared_ptr<MpiOp>>> in_flight;
  struct Traced {
    std::uint64_t token;  // ~0: the end of the stream, not drawn
    double submitted;
    bool marker;
  };
  std::deque<Traced> traced;  // of in_flight
  const std::string range_name = "send to rank " + std::to_string(to);
  while (true) {
    Token t;
    if (!source.pop(t)) return;
    const NvtxRange range(range_name.c_str());
    auto wait_for_credit = [&] {  // until the receiver grants room; false if cancelled
      const double w0 = trace && credits == 0 && !t.end ? trace->now_us() : -1;
      while (credits == 0 && !t.end) {
        auto c = std::make_shared<std::int32_t>(0);
        auto op = mpi.submit(false, c.get(), sizeof(std::int32_t), to, tags::edge(mpi.run, id, EdgePart::credit), c);
        if (!mpi.wait(op)) return false;
        credits += *c;
      }
      if (w0 >= 0) trace->add({"wait for credit", "send", lane, t.index, w0, trace->now_us() - w0});
      return true;
    };
    // Overlap on: the token is staged (device to host) while the credit is awaited. Off: the
    // credit first, then the serial lock (never held while waiting for the peer).
    if (serial && !wait_for_credit()) return;
    SerialLock one_at_a_time(serial);  // overlap off: this rank does only this transfer
    auto header = std::make_shared<Header>();
    header->index = t.index;
    header->end = t.end ? 1 : 0;
    header->kind = static_cast<int>(t.value.index());
    header->marker = t.marker;
    SendLink* link = nullptr;
    StagedBytes payload;
    if (!t.end) {
      const auto it = std::find_if(links.begin(), links.end(), [&](const auto& l) { return l->carries(t); });
      if (it == links.end()) throw Error("internal: edge " + std::to_string(id) + " has no link for its token");
      link = it->get();
      payload = link->stage(t, *header);
    }
    if (!serial && !wait_for_credit()) return;
    std::vector<std::shared_ptr<MpiOp>> ops;
    const double t0 = trace ? trace->now_us() : 0;
    ops.push_back(mpi.submit(true, header.get(), sizeof(Header), to, tags::edge(mpi.run, id, EdgePart::header), header));
    if (header->bytes)
      mpi.send_bytes(ops, payload.data, header->bytes, to, tags::edge(mpi.run, id, EdgePart::payload), payload.keep);
    if (link) link->after_header(t, *header, ops, serial);
    if (!t.end) --credits;
    in_flight.push_back(std::move(ops));
    traced.push_back({t.end ? ~std::uint64_t{0} : t.index, t0, t.marker > 0});
    // Double buffering: at most two tokens' sends outstanding per edge (none with overlap off).
    while (in_flight.size() > (serial ? 0u : 2u) || (t.end && !in_flight.empty())) {
      for (auto& op : in_flight.front())
        if (!mpi.wait(op)) return;
      in_flight.pop_front();
      if (trace && traced.front().token != ~std::uint64_t{0}) {  // from submission to completion of its MPI messages
        const Traced& s = traced.front();
        const double now = trace->now_us();
        trace->add({"send", "send", lane, s.token, s.submitted, now - s.submitted});
        trace->add_flow({flow_id(id, s.token, s.marker), lane, s.token, flow_point(s.submitted, now), true});
      }
      traced.pop_front();
    }
    if (t.end) {
      for (auto& l : links)
        if (!l->close()) return;
      return;
    }
  }
}

void receive_tokens(MpiProgress& mpi, Channel& sink, const EdgeEnd& end,
                    std::vector<std::unique_ptr<ReceiveLink>>& links, int capacity) {
  TraceRecorder* trace = end.trace;
  const int from = end.peer, id = end.edge, lane = end.lane;
  auto grant = [&](int n) {
    auto c = std::make_shared<std::int32_t>(n);
    mpi.submit(true, c.get(), sizeof(std::int32_t), from, tags::edge(mpi.run, id, EdgePart::credit), c);
  };
  grant(capacity);
  const std::string range_name = "receive from rank " + std::to_string(from);
  while (true) {
    auto header = std::make_shared<Header>();  // outlives this thread if the run is cancelled
    Header& h = *header;
    const double posted = trace ? trace->now_us() : 0;
    auto op = mpi.submit(false, &h, sizeof h, from, tags::edge(mpi.run, id, EdgePart::header), header);
    if (!mpi.wait(op)) return;
    const NvtxRange range(range_name.c_str());
    const double t0 = trace ? trace->now_us() : 0;  // the header arrived
    if (trace) trace->add({"wait for header", "recv", lane, h.index, posted, t0 - posted});
    Token t;
    t.index = h.index;
    t.end = h.end != 0;
    t.marker = h.marker;
    ReceiveLink* link = nullptr;
    if (!t.end) {
      const auto it = std::find_if(links.begin(), links.end(), [&](const auto& l) { return l->carries(h); });
      if (it == links.end())
        throw Error("internal: edge " + std::to_string(id) + " has no link for a token of kind " +
                    std::to_string(h.kind) + (h.nccl ? " sent through NCCL" : h.peer ? " sent through CUDA IPC" : ""));
      link = it->get();
      if (!link->take(h, t)) return;
    }
    const bool last = t.end;
    if (trace && !last) {  // from the header's arrival to the payload's (or its NCCL receive queued)
      const double now = trace->now_us();
      trace->add({"receive", "recv", lane, t.index, t0, now - t0});
      trace->add_flow({flow_id(id, t.index, t.marker > 0), lane, t.index, flow_point(t0, now), false});
    }
    const double p0 = trace && !last ? trace->now_us() : 0;
    const std::uint64_t index = t.index;
    if (!sink.push(std::move(t))) return;
    if (last) return;
    if (trace && trace->now_us() - p0 > 5)
      trace->add({"push (downstream full)", "recv", lane, index, p0, trace->now_us() - p0});
    link->before_credit();
    grant(1);
  }
}

}  // namespace weft::detail
