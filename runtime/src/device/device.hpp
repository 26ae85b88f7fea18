#pragma once
// Internal: the CUDA backend of the executor (streams, events, pools, copies). Without CUDA every
// function reports zero GPUs, and those that need a GPU throw.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstddef>
#include <memory>
#include <vector>

#include "weft/device/gpu_info.hpp"

namespace weft::detail {

[[nodiscard]] int gpu_count() noexcept;
[[nodiscard]] std::vector<GpuInfo> list_gpus();
[[nodiscard]] void* pinned_alloc(std::size_t bytes);
void copy_to_host_sync(void* dst, const void* src, std::size_t bytes, int device);

// Device pool (stream-ordered, backed by the CUDA memory pool of each device with an infinite
// release threshold: memory freed by one token is reused by the next without cudaMalloc).
void* device_pool_acquire(int device, std::size_t bytes, void* stream);
void device_pool_release(int device, void* ptr, void* stream) noexcept;  // null stream: the home stream

/// Streams of one GPU: kernels on `compute`, host→device copies on `h2d`, device→host on `d2h`.
struct DeviceStreams {
  void* compute = nullptr;
  void* h2d = nullptr;
  void* d2h = nullptr;
};
DeviceStreams& device_streams(int device);

/// A recorded CUDA event, returned to a per-device pool when the last holder drops it.
class Event {
 public:
  /// Records a new event on `stream` of `device`.
  [[nodiscard]] static std::shared_ptr<Event> record(int device, void* stream);
  void make_wait(void* stream) const;  ///< stream waits for the event (no host block)
  void synchronize() const;            ///< host blocks until the event completed
  [[nodiscard]] bool done() const;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event() = default;

 private:
  int device_ = 0;
  void* event_ = nullptr;
};

void synchronize_stream(int device, void* stream);

/// GPU time of some work on a stream, for the trace: timing events recorded before and after it,
/// read once the run is over. `start` and `stop` own pooled events until `gpu_interval_times`.
struct GpuInterval {
  int device = -1;
  void* start = nullptr;
  void* stop = nullptr;
  // Copies: host time (steady-clock microseconds) spent allocating the destination and in the
  // copy call, which a trace shows when the call blocks.
  double alloc_us = 0;
  double call_us = 0;
};
void gpu_interval_start(GpuInterval& interval, int device, void* stream);
void gpu_interval_stop(GpuInterval& interval, void* stream);
/// Start (microseconds on the steady clock, through a reference event of the device whose host
/// time was read right after it completed: a few microseconds late at most) and duration; waits
/// for the interval's end and gives its events back. False if it was never closed.
bool gpu_interval_times(GpuInterval& interval, double& start_steady_us, double& duration_us);

/// A stream of `device` for one task (streams are pooled and reused across runs). Each GPU task
/// launches on its own stream so that tasks on one device do not queue behind each other; the
/// device's compute stream stays the home where pooled memory is freed.
[[nodiscard]] void* acquire_task_stream(int device);
void release_task_stream(int device, void* stream) noexcept;
/// Gives the unused memory of every device pool back (end of a run), so that libraries that
/// allocate outside the pool (cuFFT plans, NCCL) find it.
void trim_device_pools() noexcept;
/// Readies `device` before a run's first token: its streams, peer access and a first block of its
/// pool (one allocation and free, waited for), so that neither the first token nor a state
/// migrated onto it later pays for them (a state arriving on a GPU not readied waited for its
/// streams and pool in the migration bench's debug log).
void warm_device(int device);


}  // namespace weft::detail

namespace weft::detail {
/// Makes `device` current for the calling thread.
void bind_device(int device);
}  // namespace weft::detail
