#include "transport/remote.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster/mpi_check.hpp"
#include "cluster/tags.hpp"
#include "transport/edge_threads.hpp"
#include "transport/link.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

int g_run_counter = 0;

// Header of a message (MessageLinks); box < 0 closes the peer's receiver at the end of a run.
struct MessageHeader {
  std::int64_t box = 0;
  std::uint64_t bytes = 0;
};

}  // namespace

// The run's progress engine (transport/progress.hpp), the threads of its edges and messages, and
// what their links share.
struct RemoteLinks::Impl : MpiProgress {
  LinkOptions options;
  std::atomic<bool> aborted{false};
  std::thread progress;
  std::vector<std::thread> workers;
  std::vector<std::function<void()>> bodies;
  bool messages = false;
  bool messages_closed = false;
  std::mutex post_mutex;  // a message's header and payload are submitted together
  NcclShared nccl;
  // CUDA IPC buffers of this rank's sending edges: freed with the links, after the closing
  // agreement of the run, when every receiver has closed its handles.
  std::vector<std::shared_ptr<PeerExporter>> exporters;
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
  const EdgeEnd end{impl, impl->trace, id, to, link_lane(id, false)};
  if (impl->trace) {
    impl->trace->name_lane(end.lane, "edge " + std::to_string(id) + ": send to rank " + std::to_string(to));
    impl->trace->name_lane(gpu_lane(end.lane), "edge " + std::to_string(id) +
                                                   (how.nccl   ? ": NCCL send (GPU)"
                                                    : how.peer ? ": copies into CUDA IPC buffers (GPU)"
                                                               : ": staging copies (GPU)"));
  }
  auto links = std::make_shared<std::vector<std::unique_ptr<SendLink>>>(
      make_send_links(how, end, impl->options.channel_capacity, impl->nccl, impl->exporters));
  impl->bodies.push_back([impl, source, end, links] {
    try {
      send_tokens(*impl, *source, end, *links, !impl->options.overlap);
    } catch (...) {
      impl->fail_local(std::current_exception());
    }
  });
}

void RemoteLinks::add_receiver(int id, Channel* sink, int from, const EdgeTransport& how) {
  Impl* impl = impl_.get();
  // The header says how each payload travels; `how` names the trace lanes and chooses the links.
  const EdgeEnd end{impl, impl->trace, id, from, link_lane(id, true)};
  if (impl->trace) {
    impl->trace->name_lane(end.lane, "edge " + std::to_string(id) + ": receive from rank " + std::to_string(from));
    if (how.nccl) impl->trace->name_lane(gpu_lane(end.lane), "edge " + std::to_string(id) + ": NCCL receive (GPU)");
    if (how.peer)
      impl->trace->name_lane(gpu_lane(end.lane), "edge " + std::to_string(id) + ": copies out of CUDA IPC buffers (GPU)");
  }
  auto links = std::make_shared<std::vector<std::unique_ptr<ReceiveLink>>>(make_receive_links(
      how, end, impl->nccl, [impl](std::function<void()> body) { impl->bodies.push_back(std::move(body)); }));
  impl->bodies.push_back([impl, sink, end, links] {
    // The links end with this thread (a CUDA IPC link closes the sender's buffers then, before
    // the run's closing agreement, after which the sender frees them).
    std::vector<std::unique_ptr<ReceiveLink>> mine = std::move(*links);
    try {
      receive_tokens(*impl, *sink, end, mine, impl->options.channel_capacity);
    } catch (...) {
      impl->fail_local(std::current_exception());
    }
  });
}

class RemoteLinks::Message {
 public:
  std::vector<std::shared_ptr<MpiOp>> ops;  // one per chunk
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
  impl_->progress = std::thread([impl = impl_.get()] { impl->loop(); });
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
    std::vector<std::shared_ptr<MpiOp>> ops;
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
