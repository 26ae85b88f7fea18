#pragma once
// Prefetches into L2 (layer 4), for the streaming filters' "bytes in flight without registers"
// variants (bench/filters/NOTES.md: the median and the 7×7 convolution are latency-bound, each warp
// keeping about one row load ahead in registers). A prefetch holds no register once issued: the
// row is on its way to L2 while the thread computes, and the later load waits for an L2 hit
// instead of DRAM. Hints only (no fault, no result); no-ops on the host, where the strips are
// tested.
#include <cstdint>

#include "element.hpp"

namespace weft::filters::device {

/// How a strip prefetches its input rows: not at all (the policy's kernels), each thread its own
/// 16 bytes (and the warp-edge lanes their halo) with prefetch.global.L2, or each warp its whole
/// row segment with sm_90's bulk prefetch (cp.async.bulk.prefetch.L2, one request per row).
enum PrefetchCode : int { kNoPrefetch = 0, kPrefetchLines = 1, kPrefetchBulk = 2 };

/// The L2 line (sector) holding p.
WEFT_FILTERS_HD void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(p)));
#else
  (void)p;
#endif
}

/// `bytes` from p into L2 (p 16-byte aligned, bytes a multiple of 16, inside one allocation). The
/// address goes through uniform registers: threads of a warp with different addresses are
/// serialised by the compiler (one request each).
WEFT_FILTERS_HD void prefetch_l2_bulk(const void* p, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(bytes));
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace weft::filters::device
