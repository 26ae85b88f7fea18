#include "device/device.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#include "weft/util/settings.hpp"
#endif

namespace weft::detail {

#ifdef WEFT_HAVE_CUDA
namespace {

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::once_flag once;
  DeviceStreams streams;
  std::mutex event_mutex;
  std::vector<cudaEvent_t> free_events;
  std::vector<cudaStream_t> free_streams;
};

DeviceState& state(int device) {
  static DeviceState* states = new DeviceState[kMaxDevices];  // process lifetime
  if (device < 0 || device >= kMaxDevices || device >= gpu_count())
    throw Error("no GPU " + std::to_string(device) + " in this process (it has " +
                std::to_string(gpu_count()) + ")");
  DeviceState& s = states[device];
  std::call_once(s.once, [&] {
    WEFT_CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t c, h, d;
    int lo = 0, hi = 0;
    WEFT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    WEFT_CUDA_CHECK(cudaStreamCreateWithPriority(&c, cudaStreamNonBlocking, lo));
    WEFT_CUDA_CHECK(cudaStreamCreateWithPriority(&h, cudaStreamNonBlocking, hi));
    WEFT_CUDA_CHECK(cudaStreamCreateWithPriority(&d, cudaStreamNonBlocking, hi));
    s.streams = {c, h, d};
    // Keep freed pool memory for reuse: no cudaMalloc per token in steady state.
    cudaMemPool_t pool;
    WEFT_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    std::uint64_t threshold = UINT64_MAX;
    WEFT_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    // Reuse across streams may insert dependencies (the CUDA default). Forbidding them let the
    // pool grow without bound under a saturated GPU (out of memory in the saliency benchmark)
    // and did not change the measured overlap (bench/results/overlap.json).
    // Peers: this device reads the others' memory directly, and its pool is mapped for them, so
    // that a peer copy between two pools may go GPU to GPU instead of through the host.
    for (int other = 0; other < gpu_count(); ++other) {
      if (other == device) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, other, device) == cudaSuccess && can) {
        cudaMemAccessDesc desc{};
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = other;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        if (cudaMemPoolSetAccess(pool, &desc, 1) != cudaSuccess) cudaGetLastError();
      }
      if (cudaDeviceCanAccessPeer(&can, device, other) == cudaSuccess && can &&
          cudaDeviceEnablePeerAccess(other, 0) != cudaSuccess)
        cudaGetLastError();  // already enabled (NCCL, the user): nothing to do
    }
  });
  return s;
}

}  // namespace

int gpu_count() noexcept {
  static int count = [] {
    if (settings().hide_gpus) return 0;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

std::vector<GpuInfo> list_gpus() {
  std::vector<GpuInfo> out;
  for (int i = 0; i < gpu_count(); ++i) {
    cudaDeviceProp p{};
    WEFT_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    char uuid[33] = {};
    for (int b = 0; b < 16; ++b) std::snprintf(uuid + 2 * b, 3, "%02x", static_cast<unsigned char>(p.uuid.bytes[b]));
    out.push_back({i, p.name, p.totalGlobalMem, p.major, p.minor, p.multiProcessorCount, uuid});
  }
  return out;
}

void* pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  WEFT_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

void copy_to_host_sync(void* dst, const void* src, std::size_t bytes, int device) {
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  WEFT_CUDA_CHECK(cudaDeviceSynchronize());
  WEFT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

DeviceStreams& device_streams(int device) { return state(device).streams; }

void bind_device(int device) {
  (void)state(device);
  WEFT_CUDA_CHECK(cudaSetDevice(device));
}

void* device_pool_acquire(int device, std::size_t bytes, void* stream) {
  DeviceState& s = state(device);
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  cudaStream_t st = stream ? static_cast<cudaStream_t>(stream) : static_cast<cudaStream_t>(s.streams.compute);
  WEFT_CUDA_CHECK(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), st));
  return p;
}

void device_pool_release(int device, void* ptr, void* stream) noexcept {
  DeviceState& s = state(device);
  cudaSetDevice(device);
  cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream ? stream : s.streams.compute));
}

std::shared_ptr<Event> Event::record(int device, void* stream) {
  DeviceState& s = state(device);
  auto e = std::make_shared<Event>();
  e->device_ = device;
  {
    std::lock_guard lock(s.event_mutex);
    if (!s.free_events.empty()) {
      e->event_ = s.free_events.back();
      s.free_events.pop_back();
    }
  }
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  if (!e->event_) {
    cudaEvent_t ev;
    WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    e->event_ = ev;
  }
  WEFT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e->event_), static_cast<cudaStream_t>(stream)));
  return e;
}

void Event::make_wait(void* stream) const {
  WEFT_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event_), 0));
}

void Event::synchronize() const { WEFT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_))); }

bool Event::done() const {
  cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (r == cudaErrorNotReady) return false;
  WEFT_CUDA_CHECK(r);
  return true;
}

Event::~Event() {
  if (!event_) return;
  DeviceState& s = state(device_);
  std::lock_guard lock(s.event_mutex);
  s.free_events.push_back(static_cast<cudaEvent_t>(event_));
}

void synchronize_stream(int device, void* stream) {
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void* acquire_task_stream(int device) {
  DeviceState& s = state(device);
  {
    std::lock_guard lock(s.event_mutex);
    if (!s.free_streams.empty()) {
      cudaStream_t st = s.free_streams.back();
      s.free_streams.pop_back();
      return st;
    }
  }
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t st;
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  return st;
}

void trim_device_pools() noexcept {
  for (int d = 0; d < gpu_count(); ++d) {
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, d) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
  }
}

void warm_device(int device) {
  DeviceState& s = state(device);
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  auto stream = static_cast<cudaStream_t>(s.streams.compute);
  void* p = nullptr;
  WEFT_CUDA_CHECK(cudaMallocAsync(&p, std::size_t(2) << 20, stream));
  WEFT_CUDA_CHECK(cudaFreeAsync(p, stream));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void release_task_stream(int device, void* stream) noexcept {
  DeviceState& s = state(device);
  std::lock_guard lock(s.event_mutex);
  s.free_streams.push_back(static_cast<cudaStream_t>(stream));
}

namespace {
std::mutex g_timing_mutex;
std::vector<cudaEvent_t>& timing_events(int device) {
  static std::vector<std::vector<cudaEvent_t>> free(kMaxDevices);
  return free.at(static_cast<std::size_t>(device));
}
cudaEvent_t take_timing_event(int device) {
  {
    std::lock_guard lock(g_timing_mutex);
    auto& free = timing_events(device);
    if (!free.empty()) {
      cudaEvent_t e = free.back();
      free.pop_back();
      return e;
    }
  }
  cudaEvent_t e;
  WEFT_CUDA_CHECK(cudaEventCreate(&e));  // with timing
  return e;
}
// Per device: a timing event and the steady-clock time (us) read right after it completed.
struct Reference {
  std::once_flag once;
  cudaEvent_t event = nullptr;
  double steady_us = 0;
};
Reference& reference(int device) {
  static Reference* refs = new Reference[kMaxDevices];
  Reference& r = refs[device];
  std::call_once(r.once, [&] {
    WEFT_CUDA_CHECK(cudaSetDevice(device));
    WEFT_CUDA_CHECK(cudaEventCreate(&r.event));
    WEFT_CUDA_CHECK(cudaEventRecord(r.event, static_cast<cudaStream_t>(device_streams(device).compute)));
    WEFT_CUDA_CHECK(cudaEventSynchronize(r.event));
    r.steady_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  });
  return r;
}
}  // namespace

void gpu_interval_start(GpuInterval& interval, int device, void* stream) {
  (void)reference(device);
  interval.device = device;
  interval.start = take_timing_event(device);
  interval.stop = nullptr;
  WEFT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(interval.start), static_cast<cudaStream_t>(stream)));
}

void gpu_interval_stop(GpuInterval& interval, void* stream) {
  if (!interval.start) return;
  interval.stop = take_timing_event(interval.device);
  WEFT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(interval.stop), static_cast<cudaStream_t>(stream)));
}

bool gpu_interval_times(GpuInterval& interval, double& start_steady_us, double& duration_us) {
  if (!interval.start || !interval.stop) return false;
  Reference& r = reference(interval.device);
  WEFT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(interval.stop)));
  float from_ref = 0, length = 0;
  WEFT_CUDA_CHECK(cudaEventElapsedTime(&from_ref, r.event, static_cast<cudaEvent_t>(interval.start)));
  WEFT_CUDA_CHECK(cudaEventElapsedTime(&length, static_cast<cudaEvent_t>(interval.start), static_cast<cudaEvent_t>(interval.stop)));
  start_steady_us = r.steady_us + 1e3 * static_cast<double>(from_ref);
  duration_us = 1e3 * static_cast<double>(length);
  std::lock_guard lock(g_timing_mutex);
  timing_events(interval.device).push_back(static_cast<cudaEvent_t>(interval.start));
  timing_events(interval.device).push_back(static_cast<cudaEvent_t>(interval.stop));
  interval.start = interval.stop = nullptr;
  return true;
}

#else  // no CUDA: CPU-only build

namespace {
[[noreturn]] void no_cuda() { throw Error("this build of Weft has no CUDA support (WEFT_CUDA=OFF)"); }
}  // namespace

int gpu_count() noexcept { return 0; }
std::vector<GpuInfo> list_gpus() { return {}; }
void* pinned_alloc(std::size_t) { no_cuda(); }
void copy_to_host_sync(void*, const void*, std::size_t, int) { no_cuda(); }
DeviceStreams& device_streams(int) { no_cuda(); }
void bind_device(int) { no_cuda(); }
void* device_pool_acquire(int, std::size_t, void*) { no_cuda(); }
void device_pool_release(int, void*, void*) noexcept {}
std::shared_ptr<Event> Event::record(int, void*) { no_cuda(); }
void Event::make_wait(void*) const { no_cuda(); }
void Event::synchronize() const { no_cuda(); }
bool Event::done() const { return true; }
Event::~Event() = default;
void synchronize_stream(int, void*) { no_cuda(); }
void gpu_interval_start(GpuInterval&, int, void*) { no_cuda(); }
void gpu_interval_stop(GpuInterval&, void*) {}
bool gpu_interval_times(GpuInterval&, double&, double&) { return false; }
void* acquire_task_stream(int) { no_cuda(); }
void release_task_stream(int, void*) noexcept {}
void trim_device_pools() noexcept {}
void warm_device(int) { no_cuda(); }

#endif

}  // namespace weft::detail
