#include "data/device_copy.hpp"

#include <chrono>

#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#endif

namespace weft::detail {

#ifdef WEFT_HAVE_CUDA

Array copy_to_device(const Array& src, int device, void* user, std::shared_ptr<Event>& done, GpuInterval* timing) {
  DeviceStreams& st = device_streams(device);
  auto t0 = std::chrono::steady_clock::now();
  Array dst = Array::device(src.dtype(), src.shape(), device, st.h2d);
  auto t1 = std::chrono::steady_clock::now();
  if (timing) gpu_interval_start(*timing, device, st.h2d);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyHostToDevice,
                                  static_cast<cudaStream_t>(st.h2d)));
  if (timing) {
    gpu_interval_stop(*timing, st.h2d);
    timing->alloc_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
    timing->call_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count();
  }
  done = Event::record(device, st.h2d);
  done->make_wait(user);
  return dst;
}

Array copy_to_host(const Array& src, const Event* ready, GpuInterval* timing) {
  std::shared_ptr<Event> done;
  Array dst = copy_to_host_async(src, ready, done, timing);
  done->synchronize();
  return dst;
}

Array copy_to_host_async(const Array& src, const Event* ready, std::shared_ptr<Event>& done, GpuInterval* timing) {
  int device = src.memory().device_index;
  DeviceStreams& st = device_streams(device);
  Array dst = Array::host(src.dtype(), src.shape());
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  if (ready) ready->make_wait(st.d2h);
  if (timing) gpu_interval_start(*timing, device, st.d2h);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToHost,
                                  static_cast<cudaStream_t>(st.d2h)));
  if (timing) gpu_interval_stop(*timing, st.d2h);
  done = Event::record(device, st.d2h);
  return dst;
}

Array copy_between_devices(const Array& src, int device, void* user, const Event* ready,
                           std::shared_ptr<Event>& done, GpuInterval* timing) {
  DeviceStreams& st = device_streams(device);
  Array dst = Array::device(src.dtype(), src.shape(), device, st.h2d);
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  if (ready) ready->make_wait(st.h2d);
  if (timing) gpu_interval_start(*timing, device, st.h2d);
  WEFT_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw(), device, src.raw(), src.memory().device_index,
                                      src.bytes(), static_cast<cudaStream_t>(st.h2d)));
  if (timing) gpu_interval_stop(*timing, st.h2d);
  done = Event::record(device, st.h2d);
  done->make_wait(user);
  return dst;
}

#else  // no CUDA: CPU-only build

namespace {
[[noreturn]] void no_cuda() { throw Error("this build of Weft has no CUDA support (WEFT_CUDA=OFF)"); }
}  // namespace

Array copy_to_device(const Array&, int, void*, std::shared_ptr<Event>&, GpuInterval*) { no_cuda(); }
Array copy_to_host(const Array&, const Event*, GpuInterval*) { no_cuda(); }
Array copy_to_host_async(const Array&, const Event*, std::shared_ptr<Event>&, GpuInterval*) { no_cuda(); }
Array copy_between_devices(const Array&, int, void*, const Event*, std::shared_ptr<Event>&, GpuInterval*) { no_cuda(); }

#endif

}  // namespace weft::detail
