#pragma once
/// Opt-in CUDA helpers for task implementations (include from .cu files or CUDA-aware code).
#include <cstddef>
#include <cstdint>
#include <source_location>

#include <cuda_runtime.h>

#include "weft/graph/task.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace detail {
void check_cuda(cudaError_t code, const char* call, std::source_location where);
}  // namespace detail

/// The compute stream of a task running on a GPU.
[[nodiscard]] inline cudaStream_t cuda_stream(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }
/// Number of usable GPUs (0 when there is no driver or device; never throws).
[[nodiscard]] int cuda_device_count() noexcept;
/// Blocks of `kernel` (`threads` per block, `shared` dynamic shared bytes) resident on the current
/// device at once: multiprocessors × blocks per multiprocessor (at least one per multiprocessor),
/// asked of the device once per kernel, device, block size and shared memory.
[[nodiscard]] std::int64_t resident_blocks(const void* kernel, int threads, std::size_t shared);
template <class Kernel>
[[nodiscard]] std::int64_t resident_blocks(Kernel* kernel, int threads, std::size_t shared) {
  return resident_blocks(reinterpret_cast<const void*>(kernel), threads, shared);
}
/// Checks the last launch (and synchronises when WEFT_DEBUG_SYNC=1).
void check_launch(const char* kernel, cudaStream_t stream,
                  std::source_location where = std::source_location::current());

}  // namespace weft

/// Evaluates `call` once; throws weft::CudaError naming the call and location on failure.
#define WEFT_CUDA_CHECK(call) ::weft::detail::check_cuda((call), #call, std::source_location::current())
