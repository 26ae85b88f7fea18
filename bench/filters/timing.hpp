#pragma once
#include <algorithm>
#include <vector>

#include "weft/cuda.hpp"

namespace weft::filters::bench {

template <class Body> double time_ms(int reps, cudaStream_t stream, Body&& body) {
  cudaEvent_t start, stop;
  WEFT_CUDA_CHECK(cudaEventCreate(&start));
  WEFT_CUDA_CHECK(cudaEventCreate(&stop));
  body();
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
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
