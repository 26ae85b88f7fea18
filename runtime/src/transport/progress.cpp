#include "transport/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <list>
#include <string>
#include <thread>

#include "cluster/liveness.hpp"
#include "cluster/tags.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {

std::shared_ptr<MpiOp> MpiProgress::submit(bool send, void* buffer, std::size_t bytes, int peer, int tag,
                                            std::shared_ptr<void> keep) {
  auto op = std::make_shared<MpiOp>();
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

bool MpiProgress::wait(const std::shared_ptr<MpiOp>& op) {
  std::unique_lock lock(mutex);
  changed.wait(lock, [&] { return op->done.load() || cancelled.load(); });
  return op->done.load();
}

void MpiProgress::send_bytes(std::vector<std::shared_ptr<MpiOp>>& ops, void* data, std::size_t bytes, int peer,
                             int tag, std::shared_ptr<void> keep) {
  auto* p = static_cast<char*>(data);
  std::size_t off = 0;
  do {
    std::size_t n = std::min(kChunk, bytes - off);
    ops.push_back(submit(true, p + off, n, peer, tag, keep));
    off += n;
  } while (off < bytes);
}

bool MpiProgress::recv_bytes(void* data, std::size_t bytes, int peer, int tag, const std::shared_ptr<void>& keep) {
  auto* p = static_cast<char*>(data);
  std::size_t off = 0;
  std::vector<std::shared_ptr<MpiOp>> ops;
  do {
    std::size_t n = std::min(kChunk, bytes - off);
    ops.push_back(submit(false, p + off, n, peer, tag, keep));
    off += n;
  } while (off < bytes);
  for (auto& op : ops)
    if (!wait(op)) return false;
  return true;
}


void MpiProgress::loop() {
  std::list<std::shared_ptr<MpiOp>> active;
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
      MpiOp& op = **it;
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

}  // namespace weft::detail
