#include "transport/remote.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "data/buffer.hpp"
#include "data/device_copy.hpp"
#include "cluster/liveness.hpp"
#include "cluster/mpi_check.hpp"
#include "transport/nccl.hpp"
#include "transport/peer.hpp"
#include "trace/nvtx.hpp"
#include "cluster/tags.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft::detail {
namespace {

constexpr std::size_t kChunk = std::size_t(1) << 30;  // MPI counts are int: send in 1 GiB pieces

int g_run_counter = 0;
using tags::EdgePart;

struct Header {
  std::uint64_t index = 0;
  std::int32_t end = 0;
  std::int32_t kind = 0;
  std::int32_t dtype = 0;
  std::int32_t ndim = 0;
  std::int64_t dims[3] = {0, 0, 0};
  std::uint64_t bytes = 0;
  std::int32_t nccl = 0;  // payload follows through NCCL, device to device
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

// Where an arrow leaves a send span or reaches a receive span: just after the span's start
// (the send submitted, the header arrived), so that it points forward in time, yet strictly
// inside the span for the viewer to bind it there.
double flow_point(double start_us, double end_us) { return start_us + std::min(0.5, (end_us - start_us) / 2); }

// A copy of a token's array on an edge: its host span on `lane` from c0 until now and its GPU
// interval on the lane's GPU lane, both named `what`.
void trace_copy(TraceRecorder& trace, const std::string& what, int lane, std::uint64_t token, double c0,
                const GpuInterval& gpu) {
  trace.add({what, "copy", lane, token, c0, trace.now_us() - c0});
  trace.add_gpu({what, "copy", gpu_lane(lane), token, gpu});
}

// NCCL matches the sends and receives between two ranks in the order each side issued them. A
// rank issues its NCCL sends to a peer one at a time, each announced by one of these on a single
// MPI tag (MPI keeps their order), and the peer issues its receives in that order from one
// thread, then hands each array to its edge's receiver: edges' threads never race for the order.
struct NcclOrder {
  std::int32_t edge = -1;  // -1: no more NCCL sends from this rank in this run
  std::int32_t dtype = 0;
  std::int32_t ndim = 0;
  std::int32_t pad = 0;
  std::int64_t dims[3] = {0, 0, 0};
  std::uint64_t index = 0;
};

// Header of a message (MessageLinks); box < 0 closes the peer's receiver at the end of a run.
struct MessageHeader {
  std::int64_t box = 0;
  std::uint64_t bytes = 0;
};

// One MPI operation handed to the progress thread.
struct Op {
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

}  // namespace

struct RemoteLinks::Impl {
  int rank = 0;
  int size = 1;
  int run = 0;
  bool debug = settings().debug_remote;
  LinkOptions options;
  MPI_Comm comm = MPI_COMM_NULL;
  std::function<void(std::exception_ptr)> on_error;

  std::mutex mutex;
  std::condition_variable changed;
  std::condition_variable submitted_one;  // wakes an idle progress thread
  std::deque<std::shared_ptr<Op>> submitted;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> stop_progress{false};
  std::atomic<bool> remote_failure{false};
  std::atomic<bool> aborted{false};
  std::thread progress;
  std::vector<std::thread> workers;
  std::vector<std::function<void()>> bodies;
  char control_buffer[4096] = {};
  bool messages = false;
  bool messages_closed = false;
  std::mutex post_mutex;  // a message's header and payload are submitted together
  TraceRecorder* trace = nullptr;  // set before the links start
  // NCCL (see NcclOrder): a send and its order message go together; per peer, this rank's NCCL
  // edges still sending (the last one to end says "no more"); per peer sending through NCCL
  // here, the arrays received for each edge, in order.
  std::mutex nccl_order;
  std::map<int, int> nccl_senders;
  struct NcclInbox {
    std::mutex mutex;
    std::condition_variable arrived;
    std::map<int, std::deque<std::pair<Array, std::shared_ptr<Event>>>> edges;
  };
  std::map<int, std::shared_ptr<NcclInbox>> nccl_inboxes;
  // CUDA IPC buffers of this rank's sending edges: freed with the links, after the closing
  // agreement of the run, when every receiver has closed its handles.
  std::vector<std::shared_ptr<PeerExporter>> exporters;

  std::shared_ptr<Op> submit(bool send, void* buffer, std::size_t bytes, int peer, int tag, std::shared_ptr<void> keep = {}) {
    auto op = std::make_shared<Op>();
    op->send = send;
    op->buffer = buffer;
    op->bytes = bytes;
    op->peer = peer;
    op->tag = tag;
    op->keep = std::move(keep);
    if (debug) std::fprintf(stderr, "[r%d run%d] submit %s peer %d tag %d bytes %zu\n", rank, run, send ? "send" : "recv", peer, tag, bytes);
    {
      std::lock_guard lock(mutex);
      submitted.push_back(op);
    }
    submitted_one.notify_one();
    return op;
  }
  // Waits for an operation; false if the run was cancelled first.
  bool wait(const std::shared_ptr<Op>& op) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return op->done.load() || cancelled.load(); });
    return op->done.load();
  }
  // Sends `bytes` in chunks; returns the operations.
  void send_bytes(std::vector<std::shared_ptr<Op>>& ops, void* data, std::size_t bytes, int peer, int tag,
                  std::shared_ptr<void> keep) {
    auto* p = static_cast<char*>(data);
    std::size_t off = 0;
    do {
      std::size_t n = std::min(kChunk, bytes - off);
      ops.push_back(submit(true, p + off, n, peer, tag, keep));
      off += n;
    } while (off < bytes);
  }
  // `keep` owns the buffer: a cancelled receiver thread leaves while the receive is posted.
  bool recv_bytes(void* data, std::size_t bytes, int peer, int tag, const std::shared_ptr<void>& keep) {
    auto* p = static_cast<char*>(data);
    std::size_t off = 0;
    std::vector<std::shared_ptr<Op>> ops;
    do {
      std::size_t n = std::min(kChunk, bytes - off);
      ops.push_back(submit(false, p + off, n, peer, tag, keep));
      off += n;
    } while (off < bytes);
    for (auto& op : ops)
      if (!wait(op)) return false;
    return true;
  }

  void fail_local(std::exception_ptr e) {
    if (on_error) on_error(e);
  }

  void progress_loop() {
    std::list<std::shared_ptr<Op>> active;
    MPI_Request control = MPI_REQUEST_NULL;
    MPI_Irecv(control_buffer, sizeof control_buffer - 1, MPI_CHAR, MPI_ANY_SOURCE, tags::control(run), comm, &control);
    int idle = 0;
    long drain_loops = 0;
    while (true) {
      bool any = false;
      {
        std::lock_guard lock(mutex);
        while (!submitted.empty()) {
          active.push_back(std::move(submitted.front()));
          submitted.pop_front();
        }
      }
      // Traced runs: a span for every MPI call that held the thread over 20 us, and for every
      // pass of this loop that took over 100 us (what delays a message a task waits for).
      const double pass_start = trace ? trace->now_us() : 0;
      auto timed = [&](const char* call, int tag, double t0) {
        const double now = trace->now_us();
        if (now - t0 > 20) trace->add({call, "mpi", progress_lane(), static_cast<std::uint64_t>(tag & 0x3ffff), t0, now - t0});
      };
      for (auto it = active.begin(); it != active.end();) {
        Op& op = **it;
        if (!op.posted) {
          const double t0 = trace ? trace->now_us() : 0;
          int rc = op.send ? MPI_Isend(op.buffer, static_cast<int>(op.bytes), MPI_BYTE, op.peer, op.tag, comm, &op.request)
                           : MPI_Irecv(op.buffer, static_cast<int>(op.bytes), MPI_BYTE, op.peer, op.tag, comm, &op.request);
          if (trace) timed(op.send ? "MPI_Isend" : "MPI_Irecv", op.tag, t0);
          if (rc != MPI_SUCCESS) {
            fail_local(std::make_exception_ptr(MpiError("MPI_Isend/Irecv failed on the progress thread", rc)));
            op.done = true;
          }
          op.posted = true;
          any = true;
        }
        int flag = 0;
        if (!op.done && op.request != MPI_REQUEST_NULL) {
          const double t0 = trace ? trace->now_us() : 0;
          MPI_Status status;
          const int rc = MPI_Test(&op.request, &flag, &status);
          if (trace) timed("MPI_Test", op.tag, t0);
          // Every receive here expects an exact size: a larger message (MPI_ERR_TRUNCATE, returned
          // under MPI_ERRORS_RETURN) or a smaller one means the two ranks disagree about what is
          // sent (say, halo widths); it stops the run rather than leaving rows unwritten.
          int count = 0;
          if (rc != MPI_SUCCESS) {
            fail_local(std::make_exception_ptr(MpiError("MPI_Test failed on the progress thread (rank " +
                                                        std::to_string(op.peer) + ", tag " + std::to_string(op.tag) +
                                                        ")", rc)));
            op.done = true;
          } else if (flag && !op.send && MPI_Get_count(&status, MPI_BYTE, &count) == MPI_SUCCESS &&
                     static_cast<std::size_t>(count) != op.bytes) {
            fail_local(std::make_exception_ptr(Error("received " + std::to_string(count) + " bytes from rank " +
                                                     std::to_string(op.peer) + " (tag " + std::to_string(op.tag) +
                                                     ") where " + std::to_string(op.bytes) + " were expected")));
          }
        }
        if (flag || op.done) {
          if (debug) std::fprintf(stderr, "[r%d run%d] done %s peer %d tag %d\n", rank, run, op.send ? "send" : "recv", op.peer, op.tag);
          op.done = true;
          op.keep.reset();
          count_progress();  // a message moved (cluster/liveness.hpp)
          it = active.erase(it);
          any = true;
          std::lock_guard lock(mutex);
          changed.notify_all();
        } else {
          ++it;
        }
      }
      if (control != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Status status;
        MPI_Test(&control, &flag, &status);
        if (flag) {
          remote_failure = true;
          const DecodedFailure failure = decode_failure(std::string(control_buffer));
          fail_local(std::make_exception_ptr(RemoteError(failure.message, failure.exit_code)));
          any = true;
        }
      }
      if (stop_progress) {
        bool queued;
        {
          std::lock_guard lock(mutex);
          queued = !submitted.empty();
        }
        if (active.empty() && !queued) break;
        if (cancelled) {
          bool control_left = std::any_of(active.begin(), active.end(), [](const auto& op) { return op->control; });
          if ((!control_left && !queued) || ++drain_loops > 200000) break;
        }
      }
      if (trace) {
        const double now = trace->now_us();
        if (now - pass_start > 100)
          trace->add({"slow progress pass", "mpi", progress_lane(), active.size(), pass_start, now - pass_start});
      }
      // Poll without sleeping while messages are in flight where cores are plenty (a sleep adds
      // its length to every hop of every token); back off when idle or on small machines.
      static const bool plenty = std::thread::hardware_concurrency() >= 8;
      if (any) {
        idle = 0;
      } else if (++idle > 2000 && !(plenty && !active.empty())) {
        // Sleep until a task submits work (or a while, to poll MPI): a plain sleep delayed the
        // first message after an idle spell by up to its length, on every hop of a slow stream.
        std::unique_lock lock(mutex);
        submitted_one.wait_for(lock, std::chrono::microseconds(idle > 20000 ? 50 : 5),
                               [&] { return !submitted.empty() || stop_progress.load(); });
      } else {
        std::this_thread::yield();
      }
    }
    // Leftovers (only after a cancellation): cancel receives and wait until they are cancelled
    // or complete (a receive already matched may still write into its buffer), let sends go.
    for (auto& op : active) {
      if (op->request != MPI_REQUEST_NULL) {
        if (op->send) {
          MPI_Request_free(&op->request);
        } else {
          MPI_Cancel(&op->request);
          MPI_Wait(&op->request, MPI_STATUS_IGNORE);
        }
      }
    }
    if (control != MPI_REQUEST_NULL) {
      MPI_Cancel(&control);
      MPI_Wait(&control, MPI_STATUS_IGNORE);
    }
    std::lock_guard lock(mutex);
    changed.notify_all();
  }
};

std::mutex& serial_mutex() {
  static std::mutex m;
  return m;
}

namespace {
thread_local std::unique_lock<std::mutex>* t_serial = nullptr;  // the lock this thread holds
}

SerialLock::SerialLock(bool take) {
  if (!take) return;
  lock_ = std::unique_lock(serial_mutex());
  t_serial = &lock_;
}
SerialLock::~SerialLock() { release(); }
void SerialLock::release() {
  if (t_serial == &lock_) t_serial = nullptr;
  if (lock_.owns_lock()) lock_.unlock();
}

SerialPause::SerialPause() {
  if (t_serial && t_serial->owns_lock()) {
    paused_ = t_serial;
    paused_->unlock();
  }
}
SerialPause::~SerialPause() {
  if (paused_) paused_->lock();
}

RemoteLinks::RemoteLinks(int rank, const LinkOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->rank = rank;
  impl_->options = options;
  MPI_Comm_size(MPI_COMM_WORLD, &impl_->size);
  impl_->comm = run_communicator();
  impl_->run = g_run_counter++;
}

RemoteLinks::~RemoteLinks() { finish(); }

void RemoteLinks::set_trace(TraceRecorder* trace) {
  impl_->trace = trace && trace->enabled() ? trace : nullptr;
  if (impl_->trace) impl_->trace->name_lane(progress_lane(), "MPI progress thread (slow calls)");
}

void RemoteLinks::add_sender(int id, Channel* source, int to, const EdgeTransport& how) {
  Impl* impl = impl_.get();
  const int lane = link_lane(id, false);
  const bool nccl = how.nccl;
  if (impl->trace) {
    impl->trace->name_lane(lane, "edge " + std::to_string(id) + ": send to rank " + std::to_string(to));
    impl->trace->name_lane(gpu_lane(lane), "edge " + std::to_string(id) +
                                               (nccl       ? ": NCCL send (GPU)"
                                                : how.peer ? ": copies into CUDA IPC buffers (GPU)"
                                                           : ": staging copies (GPU)"));
  }
  int capacity = impl->options.channel_capacity;
  if (nccl) ++impl->nccl_senders[to];
  // CUDA IPC: a ring of capacity + 1 buffers. Token k of the edge (counting every token, each of
  // which takes a credit) is staged after tokens 0 .. k - 1 were sent, so after the receiver
  // granted at least k credits: capacity of them at the start and one per token it delivered,
  // which it does only after its copy out of the token's buffer completed. Tokens 0 .. k - 1 -
  // capacity are therefore out of their buffers, and the buffer written for token k was last
  // written for an array token at least capacity + 1 tokens earlier, one of those.
  std::shared_ptr<PeerExporter> exporter;
  if (how.peer) {
    exporter = std::make_shared<PeerExporter>(capacity + 1);
    impl->exporters.push_back(exporter);
  }
  const std::vector<int> ipc_devices = how.ipc_devices;
  impl->bodies.push_back([impl, source, to, id, capacity, nccl, lane, exporter, ipc_devices] {
    try {
      int credits = 0;
      std::deque<std::vector<std::shared_ptr<Op>>> in_flight;
      struct Traced {
        std::uint64_t token;  // ~0: the end of the stream, not drawn
        double submitted;
        bool marker;
      };
      std::deque<Traced> traced;  // of in_flight
      std::deque<std::pair<std::shared_ptr<Event>, Array>> nccl_in_flight;
      const bool serial = !impl->options.overlap;
      const std::string range_name = "send to rank " + std::to_string(to);
      while (true) {
        Token t;
        if (!source->pop(t)) return;
        const NvtxRange range(range_name.c_str());
        auto wait_for_credit = [&] {  // until the receiver grants room; false if cancelled
          const double w0 = impl->trace && credits == 0 && !t.end ? impl->trace->now_us() : -1;
          while (credits == 0 && !t.end) {
            auto c = std::make_shared<std::int32_t>(0);
            auto op = impl->submit(false, c.get(), sizeof(std::int32_t), to, tags::edge(impl->run, id, EdgePart::credit), c);
            if (!impl->wait(op)) return false;
            credits += *c;
          }
          if (w0 >= 0) impl->trace->add({"wait for credit", "send", lane, t.index, w0, impl->trace->now_us() - w0});
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
        std::shared_ptr<void> keep;
        void* data = nullptr;
        Array direct;  // sent through NCCL after the header
        if (auto* a = std::get_if<Array>(&t.value);
            a && nccl && !a->memory().is_host() && a->memory().device_index == nccl_device()) {
          header->describe(*a);
          header->nccl = 1;
          direct = *a;
        } else if (auto* a = std::get_if<Array>(&t.value);
                   a && exporter && !a->memory().is_host() &&
                   std::find(ipc_devices.begin(), ipc_devices.end(), a->memory().device_index) != ipc_devices.end()) {
          header->describe(*a);
          header->peer = 1;
          GpuInterval interval;
          const double c0 = impl->trace ? impl->trace->now_us() : 0;
          header->ticket = exporter->stage(*a, t.ready.get(), impl->trace ? &interval : nullptr);
          if (impl->trace)
            trace_copy(*impl->trace, "copy into CUDA IPC buffer for rank " + std::to_string(to), lane, t.index, c0,
                       interval);
        } else if (auto* a = std::get_if<Array>(&t.value)) {
          Array host = *a;
          if (!a->memory().is_host()) {  // staged through the host: MPI carries host memory
            GpuInterval interval;
            const double c0 = impl->trace ? impl->trace->now_us() : 0;
            host = copy_to_host(*a, t.ready.get(), impl->trace ? &interval : nullptr);
            if (impl->trace)
              trace_copy(*impl->trace, "copy to host for rank " + std::to_string(to), lane, t.index, c0, interval);
          }
          header->describe(host);
          header->bytes = host.bytes();
          data = host.raw();
          keep = std::make_shared<Array>(host);
        } else if (!t.end) {
          auto bytes = std::make_shared<std::vector<char>>();
          std::visit([&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, double>) {
              bytes->resize(sizeof v);
              std::memcpy(bytes->data(), &v, sizeof v);
            } else if constexpr (std::is_same_v<V, std::string>) {
              bytes->assign(v.begin(), v.end());
            } else if constexpr (std::is_same_v<V, std::vector<double>> || std::is_same_v<V, std::vector<std::int64_t>>) {
              bytes->resize(v.size() * sizeof(typename V::value_type));
              if (!v.empty()) std::memcpy(bytes->data(), v.data(), bytes->size());
            }
          }, t.value);
          header->bytes = bytes->size();
          data = bytes->data();
          keep = bytes;
        }
        if (!serial && !wait_for_credit()) return;
        std::vector<std::shared_ptr<Op>> ops;
        const double t0 = impl->trace ? impl->trace->now_us() : 0;
        ops.push_back(impl->submit(true, header.get(), sizeof(Header), to, tags::edge(impl->run, id, EdgePart::header), header));
        if (header->bytes) impl->send_bytes(ops, data, header->bytes, to, tags::edge(impl->run, id, EdgePart::payload), keep);
        if (header->nccl) {
          GpuInterval interval;
          const double n0 = impl->trace ? impl->trace->now_us() : 0;
          {
            auto order = std::make_shared<NcclOrder>();
            order->edge = id;
            order->dtype = header->dtype;
            order->ndim = header->ndim;
            std::copy(std::begin(header->dims), std::end(header->dims), order->dims);
            order->index = t.index;
            // The order message first: NCCL may only finish queueing a send (its first one to a
            // peer connects) once the peer issues the receive, which waits for that message.
            std::lock_guard in_order(impl->nccl_order);
            ops.push_back(impl->submit(true, order.get(), sizeof *order, to, tags::nccl_order(impl->run), order));
            nccl_in_flight.emplace_back(nccl_send(direct, t.ready.get(), to, impl->trace ? &interval : nullptr), direct);
          }
          if (impl->trace) {
            impl->trace->add({"ncclSend call", "send", lane, t.index, n0, impl->trace->now_us() - n0});
            impl->trace->add_gpu({"ncclSend to rank " + std::to_string(to), "send", gpu_lane(lane), t.index, interval});
          }
          while (nccl_in_flight.size() > (serial ? 0u : 2u)) {  // double buffering (none with overlap off)
            const double s0 = impl->trace ? impl->trace->now_us() : 0;
            nccl_in_flight.front().first->synchronize();
            if (impl->trace) impl->trace->add({"wait for ncclSend", "send", lane, t.index + 1 - nccl_in_flight.size(), s0, impl->trace->now_us() - s0});
            nccl_in_flight.pop_front();
          }
        }
        if (!t.end) --credits;
        in_flight.push_back(std::move(ops));
        traced.push_back({t.end ? ~std::uint64_t{0} : t.index, t0, t.marker > 0});
        // Double buffering: at most two tokens' sends outstanding per edge (none with overlap off).
        while (in_flight.size() > (serial ? 0u : 2u) || (t.end && !in_flight.empty())) {
          for (auto& op : in_flight.front())
            if (!impl->wait(op)) return;
          in_flight.pop_front();
          if (impl->trace && traced.front().token != ~std::uint64_t{0}) {  // from submission to completion of its MPI messages
            const Traced& s = traced.front();
            const double now = impl->trace->now_us();
            impl->trace->add({"send", "send", lane, s.token, s.submitted, now - s.submitted});
            impl->trace->add_flow({flow_id(id, s.token, s.marker), lane, s.token, flow_point(s.submitted, now), true});
          }
          traced.pop_front();
        }
        if (t.end) {
          for (auto& [event, array] : nccl_in_flight) event->synchronize();
          if (nccl) {
            std::shared_ptr<Op> op;
            {
              std::lock_guard in_order(impl->nccl_order);
              if (--impl->nccl_senders[to] == 0) {  // the last NCCL edge to this peer: no more
                auto last = std::make_shared<NcclOrder>();
                op = impl->submit(true, last.get(), sizeof *last, to, tags::nccl_order(impl->run), last);
              }
            }
            if (op && !impl->wait(op)) return;
          }
          return;
        }
      }
      (void)capacity;
    } catch (...) {
      impl->fail_local(std::current_exception());
    }
  });
}

void RemoteLinks::add_receiver(int id, Channel* sink, int from, const EdgeTransport& how) {
  Impl* impl = impl_.get();
  int capacity = impl->options.channel_capacity;
  // the header says how each payload travels; `how` names the trace lane and the GPU where CUDA
  // IPC arrays land
  const bool nccl = how.nccl;
  const int lane = link_lane(id, true);
  if (impl->trace) {
    impl->trace->name_lane(lane, "edge " + std::to_string(id) + ": receive from rank " + std::to_string(from));
    if (nccl) impl->trace->name_lane(gpu_lane(lane), "edge " + std::to_string(id) + ": NCCL receive (GPU)");
    if (how.peer)
      impl->trace->name_lane(gpu_lane(lane), "edge " + std::to_string(id) + ": copies out of CUDA IPC buffers (GPU)");
  }
  std::shared_ptr<Impl::NcclInbox> inbox;
  if (nccl) {
    auto& box = impl->nccl_inboxes[from];
    if (!box) {  // the first NCCL edge from this peer: one thread issues every receive from it
      box = std::make_shared<Impl::NcclInbox>();
      impl->bodies.push_back([impl, from, box] {
        try {
          while (true) {
            auto order = std::make_shared<NcclOrder>();
            if (!impl->wait(impl->submit(false, order.get(), sizeof *order, from, tags::nccl_order(impl->run), order))) return;
            if (order->edge < 0) return;
            const Shape shape = shape_from(order->ndim, order->dims, "NCCL order message");
            std::shared_ptr<Event> done;
            GpuInterval interval;
            Array a = nccl_recv(static_cast<DType>(order->dtype), shape, from, done, impl->trace ? &interval : nullptr);
            if (impl->trace)
              impl->trace->add_gpu({"ncclRecv from rank " + std::to_string(from), "recv",
                                    gpu_lane(link_lane(order->edge, true)), order->index, interval});
            {
              std::lock_guard lock(box->mutex);
              box->edges[order->edge].emplace_back(std::move(a), std::move(done));
            }
            box->arrived.notify_all();
          }
        } catch (...) {
          impl->fail_local(std::current_exception());
        }
      });
    }
    inbox = box;
    (void)inbox->edges[id];  // made before the threads start
  }
  impl->bodies.push_back([impl, sink, from, id, capacity, lane, inbox, how] {
    try {
      // Closes the sender's buffers when this thread ends (before the run's closing agreement,
      // after which the sender frees them).
      std::unique_ptr<PeerImporter> importer;
      std::shared_ptr<Event> copied;  // the last token's copy out of a buffer: done before its credit
      auto grant = [&](int n) {
        auto c = std::make_shared<std::int32_t>(n);
        impl->submit(true, c.get(), sizeof(std::int32_t), from, tags::edge(impl->run, id, EdgePart::credit), c);
      };
      grant(capacity);
      const std::string range_name = "receive from rank " + std::to_string(from);
      while (true) {
        auto header = std::make_shared<Header>();  // outlives this thread if the run is cancelled
        Header& h = *header;
        const double posted = impl->trace ? impl->trace->now_us() : 0;
        auto op = impl->submit(false, &h, sizeof h, from, tags::edge(impl->run, id, EdgePart::header), header);
        if (!impl->wait(op)) return;
        const NvtxRange range(range_name.c_str());
        const double t0 = impl->trace ? impl->trace->now_us() : 0;  // the header arrived
        if (impl->trace) impl->trace->add({"wait for header", "recv", lane, h.index, posted, t0 - posted});
        Token t;
        t.index = h.index;
        t.end = h.end != 0;
        t.marker = h.marker;
        if (!t.end) {
          if (h.kind == 1) {
            Shape shape = shape_from(h.ndim, h.dims, "token header");
            if (h.peer) {  // in the sender's GPU memory: copied out here (CUDA IPC)
              if (!how.peer) throw Error("internal: a CUDA IPC token on edge " + std::to_string(id) + ", not a peer edge");
              if (!importer) importer = std::make_unique<PeerImporter>();
              GpuInterval interval;
              std::shared_ptr<Event> done;
              const double c0 = impl->trace ? impl->trace->now_us() : 0;
              Array a = importer->fetch(h.ticket, static_cast<DType>(h.dtype), shape, how.device, how.to_host, done,
                                        impl->trace ? &interval : nullptr);
              if (impl->trace)
                trace_copy(*impl->trace, "copy out of CUDA IPC buffer of rank " + std::to_string(from), lane, h.index,
                           c0, interval);
              t.value = std::move(a);
              t.ready = done;
              copied = std::move(done);
            } else if (h.nccl) {  // received by the peer's NCCL thread, in its order
              if (!inbox) throw Error("internal: an NCCL token on edge " + std::to_string(id) + ", not an NCCL edge");
              std::unique_lock lock(inbox->mutex);
              auto& arrived = inbox->edges.at(id);
              while (arrived.empty()) {
                if (impl->cancelled) return;
                inbox->arrived.wait_for(lock, std::chrono::milliseconds(10));
              }
              auto [a, done] = std::move(arrived.front());
              arrived.pop_front();
              lock.unlock();
              if (a.shape() != shape) throw Error("internal: NCCL array of another shape on edge " + std::to_string(id));
              t.value = std::move(a);
              t.ready = std::move(done);
            } else {
              Array a = Array::host(static_cast<DType>(h.dtype), shape);
              if (h.bytes && !impl->recv_bytes(a.raw(), h.bytes, from, tags::edge(impl->run, id, EdgePart::payload),
                                               std::make_shared<Array>(a)))
                return;
              t.value = std::move(a);
            }
          } else {
            auto kept = std::make_shared<std::vector<char>>(h.bytes);
            std::vector<char>& bytes = *kept;
            if (h.bytes && !impl->recv_bytes(bytes.data(), h.bytes, from, tags::edge(impl->run, id, EdgePart::payload), kept)) return;
            switch (h.kind) {
              case 0: break;  // no value: a migration marker
              case 2: { std::int64_t v; std::memcpy(&v, bytes.data(), 8); t.value = v; break; }
              case 3: { double v; std::memcpy(&v, bytes.data(), 8); t.value = v; break; }
              case 4: t.value = std::string(bytes.begin(), bytes.end()); break;
              case 5: { std::vector<double> v(h.bytes / 8); if (h.bytes) std::memcpy(v.data(), bytes.data(), h.bytes); t.value = std::move(v); break; }
              case 6: { std::vector<std::int64_t> v(h.bytes / 8); if (h.bytes) std::memcpy(v.data(), bytes.data(), h.bytes); t.value = std::move(v); break; }
              default: throw Error("received a token of unknown kind " + std::to_string(h.kind));
            }
          }
        }
        bool end = t.end;
        if (impl->trace && !end) {  // from the header's arrival to the payload's (or its NCCL receive queued)
          const double now = impl->trace->now_us();
          impl->trace->add({"receive", "recv", lane, t.index, t0, now - t0});
          impl->trace->add_flow({flow_id(id, t.index, t.marker > 0), lane, t.index, flow_point(t0, now), false});
        }
        const double p0 = impl->trace && !end ? impl->trace->now_us() : 0;
        const std::uint64_t index = t.index;
        if (!sink->push(std::move(t))) return;
        if (end) return;
        if (impl->trace && impl->trace->now_us() - p0 > 5)
          impl->trace->add({"push (downstream full)", "recv", lane, index, p0, impl->trace->now_us() - p0});
        if (copied) {  // the sender may reuse the buffer once this credit arrives
          copied->synchronize();
          copied.reset();
        }
        grant(1);
      }
    } catch (...) {
      impl->fail_local(std::current_exception());
    }
  });
}

class RemoteLinks::Message {
 public:
  std::vector<std::shared_ptr<Op>> ops;  // one per chunk
};

std::shared_ptr<RemoteLinks::Message> RemoteLinks::send(const void* data, std::size_t bytes, int peer, int channel) {
  auto m = std::make_shared<Message>();
  impl_->send_bytes(m->ops, const_cast<void*>(data), bytes, peer, tags::channel(impl_->run, channel), {});
  return m;
}

std::shared_ptr<RemoteLinks::Message> RemoteLinks::receive(void* data, std::size_t bytes, int peer, int channel) {
  auto m = std::make_shared<Message>();
  auto* p = static_cast<char*>(data);
  std::size_t off = 0;
  do {
    std::size_t n = std::min(kChunk, bytes - off);
    m->ops.push_back(impl_->submit(false, p + off, n, peer, tags::channel(impl_->run, channel)));
    off += n;
  } while (off < bytes);
  return m;
}

bool RemoteLinks::wait(const Message& message) {
  SerialPause pause;  // overlap off: the peer's work may wait for this rank's other tasks
  for (const auto& op : message.ops)
    if (!impl_->wait(op)) return false;
  return true;
}

void RemoteLinks::start(std::function<void(std::exception_ptr)> on_error) {
  impl_->on_error = std::move(on_error);
  impl_->progress = std::thread([impl = impl_.get()] { impl->progress_loop(); });
  for (auto& body : impl_->bodies) impl_->workers.emplace_back(body);
}

void RemoteLinks::abort(const std::string& reason) {
  Impl& impl = *impl_;
  if (!impl.remote_failure && !impl.aborted.exchange(true)) {
    const DecodedFailure failure = decode_failure(reason);
    auto text = std::make_shared<std::string>(std::to_string(failure.exit_code) + ":rank " +
                                              std::to_string(impl.rank) + ": " + failure.message);
    if (text->size() > sizeof impl.control_buffer - 2) text->resize(sizeof impl.control_buffer - 2);
    for (int r = 0; r < impl.size; ++r) {
      if (r == impl.rank) continue;
      auto op = impl.submit(true, text->data(), text->size() + 1, r, tags::control(impl.run), text);
      op->control = true;
    }
  }
  cancel();
}

void RemoteLinks::cancel() {
  Impl& impl = *impl_;
  if (impl.cancelled.exchange(true)) return;
  {
    std::lock_guard lock(impl.mutex);
    impl.changed.notify_all();
  }
}

void RemoteLinks::enable_messages(std::function<void(int box, std::vector<std::byte> bytes)> deliver) {
  Impl* impl = impl_.get();
  impl->messages = true;
  for (int peer = 0; peer < impl->size; ++peer) {
    if (peer == impl->rank) continue;
    impl->bodies.push_back([impl, peer, deliver] {
      try {
        while (true) {
          // Buffers owned by the operations: a cancelled thread leaves while a receive is posted.
          auto h = std::make_shared<MessageHeader>();
          auto op = impl->submit(false, h.get(), sizeof *h, peer, tags::message(impl->run), h);
          if (!impl->wait(op) || h->box < 0) return;
          auto bytes = std::make_shared<std::vector<std::byte>>(h->bytes);
          if (h->bytes && !impl->recv_bytes(bytes->data(), h->bytes, peer, tags::message(impl->run), bytes)) return;
          deliver(static_cast<int>(h->box), std::move(*bytes));
        }
      } catch (...) {
        impl->fail_local(std::current_exception());
      }
    });
  }
}

void RemoteLinks::post(int to, int box, std::vector<std::byte> bytes) {
  Impl& impl = *impl_;
  auto header = std::make_shared<MessageHeader>(MessageHeader{box, bytes.size()});
  auto payload = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  std::lock_guard lock(impl.post_mutex);
  if (impl.messages_closed) return;  // the run has ended here: nothing can receive it
  impl.submit(true, header.get(), sizeof *header, to, tags::message(impl.run), header);
  if (!payload->empty()) {
    std::vector<std::shared_ptr<Op>> ops;
    impl.send_bytes(ops, payload->data(), payload->size(), to, tags::message(impl.run), payload);
  }
}

void RemoteLinks::max_all(std::vector<int>& values) {
  if (values.empty()) return;
  int rc = MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT, MPI_MAX, impl_->comm);
  if (rc != MPI_SUCCESS) throw MpiError("MPI_Allreduce failed", rc);
}

void RemoteLinks::finish() {
  Impl& impl = *impl_;
  if (impl.messages && !impl.cancelled) {
    // This rank's tasks are done: no message will leave here any more; close the peers' receivers.
    for (int peer = 0; peer < impl.size; ++peer)
      if (peer != impl.rank) post(peer, -1, {});
  }
  {
    std::lock_guard lock(impl.post_mutex);
    impl.messages_closed = true;
  }
  for (auto& w : impl.workers)
    if (w.joinable()) w.join();
  impl.workers.clear();
  if (impl.progress.joinable()) {
    impl.stop_progress = true;
    impl.progress.join();
  }
  impl.on_error = nullptr;  // it holds the run's state: break the cycle
}

std::string RemoteLinks::agree(const std::string& local_error) {
  Impl& impl = *impl_;
  int mine = local_error.empty() ? impl.size : impl.rank, first = impl.size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, impl.comm);
  if (first == impl.size) return {};
  std::string text = local_error;
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, impl.comm);
  text.resize(len);
  MPI_Bcast(text.data(), len, MPI_CHAR, first, impl.comm);
  if (first == impl.rank) return text;
  const DecodedFailure failure = decode_failure(text);
  return std::to_string(failure.exit_code) + ":rank " + std::to_string(first) + ": " + failure.message;
}

std::string RemoteLinks::gather_trace(const std::string& local_events, const TraceRecorder& recorder) {
  Impl& impl = *impl_;
  std::string all = impl.rank == 0 ? local_events : std::string();
  for (int r = 1; r < impl.size; ++r) {
    if (impl.rank == 0) {
      // Ping-pong to estimate rank r's clock relative to ours.
      double t0 = recorder.now_us(), tr = 0;
      MPI_Send(&t0, 1, MPI_DOUBLE, r, tags::trace(impl.run), impl.comm);
      MPI_Recv(&tr, 1, MPI_DOUBLE, r, tags::trace(impl.run), impl.comm, MPI_STATUS_IGNORE);
      double t2 = recorder.now_us();
      double offset = (t0 + t2) / 2 - tr;
      MPI_Send(&offset, 1, MPI_DOUBLE, r, tags::trace(impl.run), impl.comm);
      int len = 0;
      MPI_Recv(&len, 1, MPI_INT, r, tags::trace(impl.run), impl.comm, MPI_STATUS_IGNORE);
      std::string text(len, '\0');
      MPI_Recv(text.data(), len, MPI_CHAR, r, tags::trace(impl.run), impl.comm, MPI_STATUS_IGNORE);
      if (!text.empty()) all += (all.empty() ? "" : ",\n") + text;
    } else if (impl.rank == r) {
      double t0 = 0, offset = 0;
      MPI_Recv(&t0, 1, MPI_DOUBLE, 0, tags::trace(impl.run), impl.comm, MPI_STATUS_IGNORE);
      double now = recorder.now_us();
      MPI_Send(&now, 1, MPI_DOUBLE, 0, tags::trace(impl.run), impl.comm);
      MPI_Recv(&offset, 1, MPI_DOUBLE, 0, tags::trace(impl.run), impl.comm, MPI_STATUS_IGNORE);
      std::string text = recorder.events_json(impl.rank, offset);
      int len = static_cast<int>(text.size());
      MPI_Send(&len, 1, MPI_INT, 0, tags::trace(impl.run), impl.comm);
      MPI_Send(text.data(), len, MPI_CHAR, 0, tags::trace(impl.run), impl.comm);
    }
  }
  return all;
}

}  // namespace weft::detail
