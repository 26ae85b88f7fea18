#include "data/copy.hpp"

#include <cstring>

#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/cuda.hpp"
#endif

namespace weft::detail {

void copy_bytes(void* dst, Memory to, const void* src, Memory from, std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (to.is_host() && from.is_host()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef WEFT_HAVE_CUDA
  // Unified addressing: cudaMemcpyDefault tells host, device and peer copies apart by address.
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
