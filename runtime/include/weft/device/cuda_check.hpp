#pragma once
/// CUDA error checks and launch helpers, for the runtime and for task implementations (through
/// weft/cuda.hpp).
#include <cstddef>
#include <cstdint>
#include "weft/util/source_location.hpp"
#include <utility>

#include <cuda_runtime.h>

#include "weft/util/error.hpp"

namespace weft {
namespace detail {
void check_cuda(cudaError_t code, const char* call, ::weft::SourceLocation where);
}  // namespace detail

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
                  ::weft::SourceLocation where = ::weft::SourceLocation::current());

/// Whether launch_chained chains (WEFT_CHAINED_LAUNCH=0 turns it off, to compare).
[[nodiscard]] bool chained_launches() noexcept;

/// Launches `kernel` so that it may be scheduled while the kernel before it on `stream` ends
/// (programmatic dependent launch, sm_90): its blocks become resident as the other's leave instead
/// of after the launch that follows its end. The kernel must call wait_for_prior_grid() before it
/// reads or writes memory (that wait returns once the kernel before has completed and its writes
/// are visible, as with ordinary stream order), and may call allow_next_grid() to let the kernel
/// after it be scheduled early the same way. Without chaining, an ordinary launch.
template <class... Params, class... Args>
void launch_chained(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared, cudaStream_t stream,
                    Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = chained_launches() ? 1 : 0;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);  // errors: check_launch
}

#if defined(__CUDACC__)
/// In a kernel launched by launch_chained: waits for the kernel before it on the stream (a no-op
/// when it was launched otherwise).
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
/// Lets the kernel after this one on the stream, if launched by launch_chained, be scheduled.
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}
#endif

}  // namespace weft

/// Evaluates `call` once; throws weft::CudaError naming the call and location on failure.
#define WEFT_CUDA_CHECK(call) ::weft::detail::check_cuda((call), #call, ::weft::SourceLocation::current())
