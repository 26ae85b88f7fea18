#include <cstdlib>
#include <string>

#include "exec/device.hpp"
#include "weft/cuda.hpp"

namespace weft {
namespace detail {
void check_cuda(cudaError_t code, const char* call, std::source_location where) {
  if (code == cudaSuccess) return;
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(code) + " (" +
                      cudaGetErrorString(code) + ")",
                  static_cast<int>(code), where);
}
}  // namespace detail

int cuda_device_count() noexcept { return detail::gpu_count(); }

void check_launch(const char* kernel, cudaStream_t stream, std::source_location where) {
  detail::check_cuda(cudaGetLastError(), kernel, where);
  static const bool debug_sync = [] {
    const char* v = std::getenv("WEFT_DEBUG_SYNC");
    return v && std::string(v) == "1";
  }();
  if (debug_sync) detail::check_cuda(cudaStreamSynchronize(stream), kernel, where);
}

}  // namespace weft
