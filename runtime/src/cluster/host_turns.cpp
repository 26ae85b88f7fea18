#include "weft/cluster/host_turns.hpp"

#include <atomic>
#include <chrono>
#include <thread>

namespace weft {

HostTurns::HostTurns()
    : segment_(std::make_unique<HostSegment>(sizeof(std::int64_t), "their turns (they go on without them)")),
      count_(static_cast<std::int64_t*>(segment_->data())) {
  // Without a shared count every rank of the host goes on without turns (wait() returns at once),
  // as it would read without them: slower, never stuck.
}

HostTurns::~HostTurns() = default;

bool HostTurns::wait(std::int64_t turn, const std::function<bool()>& stop) const {
  if (!count_) return true;  // no turns on this host
  const std::atomic_ref<std::int64_t> count(*count_);
  while (count.load(std::memory_order_acquire) < turn) {
    if (stop && stop()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

void HostTurns::end(std::int64_t turn) noexcept {
  if (!count_) return;
  const std::atomic_ref<std::int64_t> count(*count_);
  std::int64_t seen = count.load(std::memory_order_relaxed);
  while (seen < turn + 1 && !count.compare_exchange_weak(seen, turn + 1, std::memory_order_release)) {
  }
}

std::int64_t HostTurns::ended() const noexcept {
  return count_ ? std::atomic_ref<std::int64_t>(*count_).load(std::memory_order_acquire) : 0;
}

}  // namespace weft
