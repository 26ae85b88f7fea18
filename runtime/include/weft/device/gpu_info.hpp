#pragma once
#include <cstdint>
#include <string>

namespace weft {

/// One GPU of a rank, as CUDA reports it.
struct GpuInfo {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::string uuid;  ///< tells GPUs apart across ranks (two ranks may see one GPU)
};

}  // namespace weft
