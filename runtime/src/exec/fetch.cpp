// The arrays an actor brings to its place before a firing, and the copies to the host it queues
// after one (declared in firing.hpp).
#include <string>

#include "data/copy.hpp"
#include "data/buffer.hpp"
#include "data/device_copy.hpp"
#include "exec/firing.hpp"
#include "trace/nvtx.hpp"

namespace weft::detail {

// Brings an array to the node's place. Copies to a GPU are asynchronous: the source stays
// alive in `pending` until its copy event completed.
Array fetch_array(State& run, Node& node, void* stream, Array a, const std::shared_ptr<Event>& ready, std::uint64_t token,
                  PendingCopies& pending) {
  Memory m = a.memory();
  const Place& p = node.place;
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  Array out;
  std::shared_ptr<Event> done;
  GpuInterval interval;
  GpuInterval* timing = run.trace.enabled() ? &interval : nullptr;
  const NvtxRange range(!p.is_gpu() ? "fetch to host" : m.is_host() ? "fetch to GPU" : "fetch from another GPU");
  if (!p.is_gpu()) {
    if (m.is_host()) {
      if (ready) ready->synchronize();  // a copy the producer queued, or its work on a pinned array
      return a;
    }
    out = copy_to_host(a, ready.get(), timing);
  } else if (m.is_host()) {
    out = copy_to_device(a, p.device, stream, done, timing);
  } else if (m.device_index != p.device) {
    out = copy_between_devices(a, p.device, stream, ready.get(), done, timing);
  } else {
    // Same GPU: produced on another task's stream, or received by NCCL on its own stream.
    if (ready) ready->make_wait(stream);
    release_on_home(a);
    return a;
  }
  if (!out.memory().is_host()) release_on_home(out);
  node.stats.bytes_in += a.bytes();
  node.bytes_in += a.bytes();
  if (done) {
    if (!run.options.overlap) done->synchronize();
    pending.emplace_back(std::move(done), std::move(a));
  }
  if (run.trace.enabled()) {
    run.trace.add({"copy to " + p.str(), "copy", node.lane, token, t0, run.trace.now_us() - t0});
    if (interval.alloc_us > 0) {  // the host side of a copy to a GPU, when it takes long
      run.trace.add({"allocate on " + p.str(), "copy", node.lane, token, t0, interval.alloc_us});
      run.trace.add({"cudaMemcpyAsync", "copy", node.lane, token, t0 + interval.alloc_us, interval.call_us});
    }
    const int device = p.is_gpu() ? p.device : m.device_index;
    run.trace.name_lane(gpu_lane(node.lane), node.task->name() + " (on gpu:" + std::to_string(device) + ")");
    run.trace.add_gpu({"copy to " + p.str(), "copy", gpu_lane(node.lane), token, interval});
  }
  return out;
}

// A GPU task's output for a task on a CPU of this rank: the copy to the host is queued at once,
// behind the firing, so that the copy of token k+1 is under way while the consumer works on token k.
Token copy_for_host(State& run, Node& node, const Array& a, const std::shared_ptr<Event>& ready, std::uint64_t token,
                    PendingCopies& pending) {
  const NvtxRange range("copy to host for a CPU task");
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  GpuInterval interval;
  std::shared_ptr<Event> done;
  Array host = copy_to_host_async(a, ready.get(), done, run.trace.enabled() ? &interval : nullptr);
  pending.emplace_back(done, a);  // the device array lives until its copy completed
  if (run.trace.enabled()) {
    run.trace.add({"copy to host", "copy", node.lane, token, t0, run.trace.now_us() - t0});
    run.trace.add_gpu({"copy to host", "copy", gpu_lane(node.lane), token, interval});
  }
  Token t{token, false, std::move(host), std::move(done)};
  t.copied = a.bytes();
  return t;
}

}  // namespace weft::detail
