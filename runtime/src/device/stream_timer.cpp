#include "device/stream_timer.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#endif

namespace weft::detail {

#ifdef WEFT_HAVE_CUDA

void* StreamTimer::take() {
  if (!free_.empty()) {
    void* e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e;
  WEFT_CUDA_CHECK(cudaEventCreate(&e));  // with timing, unlike the runtime's other events
  return e;
}

void StreamTimer::start(void* stream) {
  open_ = take();
  WEFT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(open_), static_cast<cudaStream_t>(stream)));
}

void StreamTimer::stop(void* stream) {
  if (!open_) return;
  void* end = take();
  WEFT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(end), static_cast<cudaStream_t>(stream)));
  pending_.emplace_back(open_, end);
  open_ = nullptr;
}

double StreamTimer::collect(std::uint64_t& completed) {
  double seconds = 0;
  while (!pending_.empty()) {
    auto [a, b] = pending_.front();
    cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(b));
    if (r == cudaErrorNotReady) break;
    WEFT_CUDA_CHECK(r);
    float ms = 0;
    WEFT_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)));
    seconds += ms * 1e-3;
    ++completed;
    free_.push_back(a);
    free_.push_back(b);
    pending_.pop_front();
  }
  return seconds;
}

StreamTimer::~StreamTimer() {
  cudaSetDevice(device_);
  for (auto [a, b] : pending_) {
    cudaEventSynchronize(static_cast<cudaEvent_t>(b));
    free_.push_back(a);
    free_.push_back(b);
  }
  if (open_) free_.push_back(open_);
  for (void* e : free_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

#else

StreamTimer::~StreamTimer() = default;
void StreamTimer::start(void*) {}
void StreamTimer::stop(void*) {}
double StreamTimer::collect(std::uint64_t&) { return 0; }
void* StreamTimer::take() { return nullptr; }

#endif

}  // namespace weft::detail
