#pragma once
// Internal: GPU time of a task's firings, from timing events recorded around each firing on its
// stream and read once they completed (never blocking the task). The load balancer needs it:
// a GPU task's host side returns at once, so host time says nothing about its cost. Without
// CUDA every call is a no-op.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstdint>
#include <deque>
#include <vector>

namespace weft::detail {

class StreamTimer {
 public:
  explicit StreamTimer(int device) : device_(device) {}
  ~StreamTimer();
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;
  void start(void* stream);
  void stop(void* stream);
  /// Seconds of GPU time of the intervals completed since the last call; `completed` counts them.
  [[nodiscard]] double collect(std::uint64_t& completed);

 private:
  void* take();
  int device_;
  void* open_ = nullptr;
  std::deque<std::pair<void*, void*>> pending_;
  std::vector<void*> free_;
};

}  // namespace weft::detail
