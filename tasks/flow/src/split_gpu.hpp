#pragma once
// The CUDA strip of a split flow (cuda/split_gpu.cu; src/no_cuda.cpp without CUDA).
#include "weft/graph/partition.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow::detail {

/// The flow of the strip `halo.slab()` of frame0 -> frame1 on ctx's GPU, on its stream: f32
/// [slab rows, W, 2] (halo rows as last exchanged). Throws ConfigError without CUDA.
[[nodiscard]] Array solve_strip_cuda(const Array& frame0, const Array& frame1, const FlowParams& params, Halo& halo,
                                     Context& ctx);

}  // namespace weft::flow::detail
