#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "device/device.hpp"
#include "weft/device/cuda_check.hpp"
#include "weft/util/settings.hpp"

namespace weft {
namespace detail {
void check_cuda(cudaError_t code, const char* call, ::weft::SourceLocation where) {
  if (code == cudaSuccess) return;
  throw CudaError(std::string(call) + " failed: " + cudaGetErrorName(code) + " (" +
                      cudaGetErrorString(code) + ")",
                  static_cast<int>(code), where);
}
}  // namespace detail

int cuda_device_count() noexcept { return detail::gpu_count(); }

std::int64_t resident_blocks(const void* kernel, int threads, std::size_t shared) {
  using Key = std::tuple<const void*, int, int, std::size_t>;
  static std::mutex mutex;
  static std::map<Key, std::int64_t> known;
  int device = 0;
  WEFT_CUDA_CHECK(cudaGetDevice(&device));
  const Key key{kernel, device, threads, shared};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(key); it != known.end()) return it->second;
  }
  int sms = 0, per_sm = 0;
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  WEFT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared));
  const std::int64_t resident = static_cast<std::int64_t>(sms) * (per_sm < 1 ? 1 : per_sm);
  const std::lock_guard<std::mutex> lock(mutex);
  known[key] = resident;
  return resident;
}

bool chained_launches() noexcept {
  static const bool on = settings().chained_launch;
  return on;
}

void check_launch(const char* kernel, cudaStream_t stream, ::weft::SourceLocation where) {
  detail::check_cuda(cudaGetLastError(), kernel, where);
  static const bool debug_sync = settings().debug_sync;
  if (debug_sync) detail::check_cuda(cudaStreamSynchronize(stream), kernel, where);
}

}  // namespace weft
