#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

#include "weft/cuda.hpp"

namespace weft::filters::bench {

template <class Body> double time_ms(int reps, cudaStream_t stream, Body&& body) {
  cudaEvent_t start, stop;
  WEFT_CUDA_CHECK(cudaEventCreate(&start));
  WEFT_CUDA_CHECK(cudaEventCreate(&stop));
  // Warm-up of at least 3 launches and 2 ms: after host-side work the first timings ran at lower
  // clocks (the policy's own choice measured 2.8x slower than the same kernel forced, 3x3 at 1024²).
  const auto warm_start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3 || std::chrono::steady_clock::now() - warm_start < std::chrono::milliseconds(2); ++i) {
    body();
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    WEFT_CUDA_CHECK(cudaEventRecord(start, stream));
    body();
    WEFT_CUDA_CHECK(cudaEventRecord(stop, stream));
    WEFT_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    WEFT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    t.push_back(ms);
  }
  WEFT_CUDA_CHECK(cudaEventDestroy(start));
  WEFT_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace weft::filters::bench
