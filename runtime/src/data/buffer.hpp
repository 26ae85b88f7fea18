#pragma once
// Internal: pooled storage behind weft::Array.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstddef>

#include "weft/data/array.hpp"

namespace weft::detail {

struct Buffer {
  enum class Owner { host_pool, device_pool, external };
  void* ptr = nullptr;
  std::size_t capacity = 0;  // bytes reserved (pool size class)
  Memory memory;
  Owner owner = Owner::external;
  // Device buffers are freed in order on this stream: the stream they were allocated on while
  // only one task used them, the device's home stream once they travelled to another task.
  void* release_stream = nullptr;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
};

// Host pool: size classes of powers of two, pinned (page-locked) when a GPU is present, so that
// copies to and from devices run asynchronously at full speed. Thread-safe.
void* host_pool_acquire(std::size_t bytes, std::size_t& capacity);
void host_pool_release(void* ptr, std::size_t capacity) noexcept;
struct HostPoolStats {
  std::size_t allocations = 0;  // fresh allocations from the system
  std::size_t reuses = 0;       // acquisitions served from the free lists
  bool pinned = false;
};
HostPoolStats host_pool_stats();

struct ArrayAccess {
  static Buffer* buffer(const Array& a) { return a.buffer_.get(); }
};
/// The array left the task that made it: free it on its device's home stream.
void release_on_home(const Array& a) noexcept;

/// The shape with `ndim` (1 to 3) extents `dims`, as messages between ranks describe arrays;
/// throws Error naming `what` for another count.
[[nodiscard]] Shape shape_from(int ndim, const std::int64_t* dims, const char* what);

}  // namespace weft::detail
