// Stand-in for the CUDA entry point in builds without CUDA.
#include "split_gpu.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/util/error.hpp"

namespace weft::flow {

bool have_cuda() noexcept { return false; }

Array compute_cuda(const Array&, const Array&, const FlowParams&, void*) {
  throw ConfigError("flow: this build has no CUDA support (use --devices cpu)");
}

Array compute_cuda(const Array& a, const Array& b, const FlowParams& p, void* s, StageTimes*) {
  return compute_cuda(a, b, p, s);
}

Array detail::solve_strip_cuda(const Array&, const Array&, const FlowParams&, Halo&, Context&) {
  throw ConfigError("flow: this build has no CUDA support (use --devices cpu)");
}

}  // namespace weft::flow
