#pragma once
// Internal: copies of byte ranges between any two memories (the split, the join and the halo
// exchange of a partition move rows of arrays, never whole arrays).
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstddef>

#include "weft/data/array.hpp"

namespace weft::detail {

/// Copies `bytes` from `src` (in `from`) to `dst` (in `to`). Host to host is a memcpy. Otherwise
/// the copy is enqueued on `stream` (a cudaStream_t of the calling thread's device) and returns
/// at once, or, with a null stream, completes before returning. Without CUDA only host to host.
void copy_bytes(void* dst, Memory to, const void* src, Memory from, std::size_t bytes, void* stream);

/// Bytes of one row along the slowest axis of `a`.
[[nodiscard]] std::size_t row_bytes(const Array& a) noexcept;

/// Address of row `row` of `a`.
[[nodiscard]] inline char* row_address(const Array& a, std::int64_t row) noexcept {
  return static_cast<char*>(a.raw()) + static_cast<std::size_t>(row) * row_bytes(a);
}

}  // namespace weft::detail
