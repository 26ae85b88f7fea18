// Foreground bits to the u8 0/1 mask on a GPU (threshold.hpp has the layout): one thread per
// byte of bits, its 8 voxels stored as one 8-byte word where they are aligned, else byte by byte.
#include <cstdint>

#include "weft/cuda.hpp"
#include "weft/tasks/morphology/threshold.hpp"

namespace weft::morphology {
namespace {

constexpr int kUnpackThreads = 256;

/// The 4 bits of a nibble as 4 bytes of 0 or 1 (bit k in byte k).
__device__ __forceinline__ std::uint32_t spread_nibble(std::uint32_t b) {
  return (b & 1u) | ((b & 2u) << 7) | ((b & 4u) << 14) | ((b & 8u) << 21);
}

__global__ __launch_bounds__(kUnpackThreads) void unpack_kernel(const std::uint8_t* bits, std::uint8_t* to,
                                                                 std::int64_t bytes, std::int64_t row,
                                                                 std::int64_t plane) {
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < bytes;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t b = bits[k];
    const std::int64_t z = k / row, first = (k - z * row) * 8;
    const std::int64_t n = plane - first < 8 ? plane - first : 8;
    std::uint8_t* out = to + z * plane + first;
    if (n == 8 && (reinterpret_cast<std::uintptr_t>(out) & 7u) == 0) {
      *reinterpret_cast<uint2*>(out) = make_uint2(spread_nibble(b & 15u), spread_nibble(b >> 4));
    } else {
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>((b >> i) & 1u);
    }
  }
}

}  // namespace

void unpack_foreground_gpu(const void* bits, void* to, std::int64_t planes, std::int64_t height, std::int64_t width,
                           void* stream) {
  const std::int64_t row = foreground_plane_bytes(height, width), bytes = planes * row;
  if (bytes <= 0) return;
  const std::int64_t blocks = (bytes + kUnpackThreads - 1) / kUnpackThreads;
  unpack_kernel<<<static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20)), kUnpackThreads, 0,
                  static_cast<cudaStream_t>(stream)>>>(static_cast<const std::uint8_t*>(bits),
                                                       static_cast<std::uint8_t*>(to), bytes, row, height * width);
  WEFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace weft::morphology
