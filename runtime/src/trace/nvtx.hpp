#pragma once
// NVTX ranges on the calling thread, so that Nsight Systems shows each firing by its task's name,
// and the copies and transfers around it, on the threads' timelines (CUDA builds only). Without a
// tool attached a range costs a call through a null hook: a few nanoseconds.
#ifdef WEFT_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace weft::detail {

class NvtxRange {
 public:
  /// `name` must stay valid until the range ends (NVTX copies it at the push).
  explicit NvtxRange(const char* name) noexcept {
#ifdef WEFT_HAVE_CUDA
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#ifdef WEFT_HAVE_CUDA
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace weft::detail
