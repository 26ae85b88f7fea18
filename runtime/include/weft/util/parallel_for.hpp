#pragma once
/// A minimal parallel loop for CPU implementations: [0, count) split into one contiguous range
/// per core (at least `grain` iterations each); the first exception of any worker is rethrown.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace weft {

template <class Body>  // Body(std::int64_t begin, std::int64_t end, int worker)
void parallel_for(std::int64_t count, Body&& body, std::int64_t grain = 64) {
  const int workers = static_cast<int>(std::clamp<std::int64_t>(
      std::min<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()), count / std::max<std::int64_t>(grain, 1)),
      1, 256));
  if (workers <= 1) {
    if (count > 0) body(0, count, 0);
    return;
  }
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(workers);
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        body(count * w / workers, count * (w + 1) / workers, w);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

/// Number of workers parallel_for may use (one per core).
[[nodiscard]] inline int worker_count_hint() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace weft
