#include "data/copy.hpp"

#include <cstring>

#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#endif

namespace weft::detail {

void copy_bytes(void* dst, Memory to, const void* src, Memory from, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (to.is_host() && from.is_host()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef WEFT_HAVE_CUDA
  // Two GPUs: a peer copy. Arrays come from stream-ordered pools, which other devices may not
  // access, and cudaMemcpyDefault between two such pools fails (cudaErrorInvalidValue, seen with
  // 4 GPUs in one process); cudaMemcpyPeer copies them (staged by the driver when needed).
  if (!to.is_host() && !from.is_host() && to.device_index != from.device_index) {
    if (stream)
      WEFT_CUDA_CHECK(cudaMemcpyPeerAsync(dst, to.device_index, src, from.device_index, bytes,
                                          static_cast<cudaStream_t>(stream)));
    else
      WEFT_CUDA_CHECK(cudaMemcpyPeer(dst, to.device_index, src, from.device_index, bytes));
    return;
  }
  // Otherwise unified addressing: cudaMemcpyDefault tells host and device copies apart by address.
  if (stream)
    WEFT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
  else
    WEFT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
#else
  (void)stream;
  throw Error("this build of Weft has no CUDA support (WEFT_CUDA=OFF)");
#endif
}

std::size_t row_bytes(const Array& a) noexcept {
  if (a.shape().ndim() == 0 || a.shape()[0] == 0) return 0;
  return a.bytes() / static_cast<std::size_t>(a.shape()[0]);
}

}  // namespace weft::detail
