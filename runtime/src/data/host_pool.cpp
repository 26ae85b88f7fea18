#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "data/buffer.hpp"
#include "device/device.hpp"

namespace weft::detail {
namespace {

struct HostPool {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free;  // size class -> blocks
  HostPoolStats stats;
  bool decided = false;

  bool pinned() {
    if (!decided) {
      stats.pinned = gpu_count() > 0;
      decided = true;
    }
    return stats.pinned;
  }
};

HostPool& pool() {
  static HostPool* p = new HostPool;  // never destroyed: buffers may be released at exit
  return *p;
}

std::size_t size_class(std::size_t bytes) {
  return std::bit_ceil(std::max<std::size_t>(bytes, 256));
}

}  // namespace

void* host_pool_acquire(std::size_t bytes, std::size_t& capacity) {
  HostPool& p = pool();
  capacity = size_class(bytes);
  std::lock_guard lock(p.mutex);
  auto& list = p.free[capacity];
  if (!list.empty()) {
    void* ptr = list.back();
    list.pop_back();
    ++p.stats.reuses;
    return ptr;
  }
  ++p.stats.allocations;
  void* ptr = p.pinned() ? pinned_alloc(capacity) : std::aligned_alloc(256, capacity);
  if (!ptr) throw std::bad_alloc();
  return ptr;
}

void host_pool_release(void* ptr, std::size_t capacity) noexcept {
  HostPool& p = pool();
  std::lock_guard lock(p.mutex);
  p.free[capacity].push_back(ptr);
}

HostPoolStats host_pool_stats() {
  HostPool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.stats;
}

}  // namespace weft::detail
