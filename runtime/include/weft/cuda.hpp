#pragma once
/// Opt-in CUDA helpers for task implementations (include from .cu files or CUDA-aware code): the
/// checks and launch helpers of weft/device/cuda_check.hpp, and a task's compute stream.
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#include "weft/graph/task.hpp"

namespace weft {

/// The compute stream of a task running on a GPU.
[[nodiscard]] inline cudaStream_t cuda_stream(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }

}  // namespace weft
