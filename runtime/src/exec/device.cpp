#include "exec/device.hpp"

#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "data/buffer.hpp"
#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/cuda.hpp"
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
  });
  return s;
}

}  // namespace

int gpu_count() noexcept {
  static int count = [] {
    if (const char* v = std::getenv("WEFT_HIDE_GPUS"); v && std::string(v) == "1") return 0;
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


void release_task_stream(int device, void* stream) noexcept {
  DeviceState& s = state(device);
  std::lock_guard lock(s.event_mutex);
  s.free_streams.push_back(static_cast<cudaStream_t>(stream));
}

Array copy_to_device(const Array& src, int device, void* user, std::shared_ptr<Event>& done) {
  DeviceStreams& st = device_streams(device);
  Array dst = Array::device(src.dtype(), src.shape(), device, st.h2d);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyHostToDevice,
                                  static_cast<cudaStream_t>(st.h2d)));
  done = Event::record(device, st.h2d);
  done->make_wait(user);
  return dst;
}

Array copy_to_host(const Array& src, const Event* ready) {
  int device = src.memory().device_index;
  DeviceStreams& st = device_streams(device);
  Array dst = Array::host(src.dtype(), src.shape());
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  if (ready) ready->make_wait(st.d2h);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToHost,
                                  static_cast<cudaStream_t>(st.d2h)));
  auto done = Event::record(device, st.d2h);
  done->synchronize();
  return dst;
}

Array copy_between_devices(const Array& src, int device, void* user, const Event* ready,
                           std::shared_ptr<Event>& done) {
  DeviceStreams& st = device_streams(device);
  Array dst = Array::device(src.dtype(), src.shape(), device, st.h2d);
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  if (ready) ready->make_wait(st.h2d);
  WEFT_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw(), device, src.raw(), src.memory().device_index,
                                      src.bytes(), static_cast<cudaStream_t>(st.h2d)));
  done = Event::record(device, st.h2d);
  done->make_wait(user);
  return dst;
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
Array copy_to_device(const Array&, int, void*, std::shared_ptr<Event>&) { no_cuda(); }
void* acquire_task_stream(int) { no_cuda(); }
void release_task_stream(int, void*) noexcept {}
void trim_device_pools() noexcept {}
Array copy_to_host(const Array&, const Event*) { no_cuda(); }
Array copy_between_devices(const Array&, int, void*, const Event*, std::shared_ptr<Event>&) { no_cuda(); }

#endif

}  // namespace weft::detail
