#pragma once
// Internal to tasks/flow: what compute_cuda and the strips of a split flow share (defined in
// flow_gpu.cu): stream-ordered device buffers, the stage clock, the input conversion and texture
// part, and the pyramids of both frames.
#include <utility>
#include <vector>

#include "kernels.cuh"
#include "weft/cuda.hpp"
#include "weft/data/array.hpp"
#include "weft/tasks/flow/flow.hpp"

namespace weft::flow::gpu {

// Stream-ordered scratch memory (cudaMallocAsync pools; freed in stream order).
template <class T> class DeviceBuffer {
 public:
  DeviceBuffer(std::size_t count, cudaStream_t s) : stream_(s) {
    WEFT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), std::max<std::size_t>(count, 1) * sizeof(T), s));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), stream_(o.stream_) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] T* get() const noexcept { return ptr_; }
  void zero(std::size_t count) { WEFT_CUDA_CHECK(cudaMemsetAsync(ptr_, 0, count * sizeof(T), stream_)); }

 private:
  T* ptr_ = nullptr;
  cudaStream_t stream_;
};

// CUDA events between the stages of one call, when a benchmark asks for StageTimes; nothing
// otherwise. The interval from one enter() to the next is added to the stage entered first.
class StageClock {
 public:
  StageClock(StageTimes* out, cudaStream_t s) : out_(out), stream_(s) {}
  ~StageClock() {
    for (auto& m : marks_) cudaEventDestroy(m.first);
  }
  StageClock(const StageClock&) = delete;
  StageClock& operator=(const StageClock&) = delete;
  void enter(double StageTimes::*stage) {
    if (!out_) return;
    cudaEvent_t e = nullptr;
    WEFT_CUDA_CHECK(cudaEventCreate(&e));
    marks_.emplace_back(e, stage);
    WEFT_CUDA_CHECK(cudaEventRecord(e, stream_));
  }
  void finish() {
    if (!out_ || marks_.empty()) return;
    enter(nullptr);
    WEFT_CUDA_CHECK(cudaEventSynchronize(marks_.back().first));
    for (std::size_t i = 0; i + 1 < marks_.size(); ++i) {
      float ms = 0;
      WEFT_CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[i].first, marks_[i + 1].first));
      (*out_).*(marks_[i].second) += ms;
    }
  }

 private:
  StageTimes* out_;
  cudaStream_t stream_;
  std::vector<std::pair<cudaEvent_t, double StageTimes::*>> marks_;
};

struct Level {
  int w, h;
  [[nodiscard]] std::size_t n() const { return static_cast<std::size_t>(w) * h; }
};

// Both frames converted to float in [0, 1] and replaced by their texture part when
// params.texture > 0. level0: the finest level already stored in S by the conversion (integer
// frames without texture part or pre-smoothing), else empty.
template <class S> struct DeviceFrames {
  DeviceBuffer<float> f0, f1;
  std::vector<DeviceBuffer<S>> level0;
};
template <class S>
[[nodiscard]] DeviceFrames<S> convert_frames(const Array& frame0, const Array& frame1, const FlowParams& params,
                                             cudaStream_t s);

// Pyramids of both frames stored in S, finest level first (built in float; takes frames.level0).
template <class S> struct DevicePyramids {
  std::vector<Level> lv;
  std::vector<DeviceBuffer<S>> i0, i1;
};
template <class S>
[[nodiscard]] DevicePyramids<S> build_pyramids(DeviceFrames<S>& frames, int width, int height, const FlowParams& prm,
                                               cudaStream_t s, StageClock& clock);

}  // namespace weft::flow::gpu
