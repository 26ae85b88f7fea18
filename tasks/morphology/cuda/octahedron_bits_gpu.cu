// Octahedron openings on bits (1 bit per voxel, 32 consecutive x per word, X % 32 == 0):
// erosion n = {D > n} packed from the u8 erosion distances, opening n = n steps of the 6-cross
// dilation, fused k at a time (one launch dilates by the L1 ball of radius k, k = 1..4, default
// DistancePolicy::kBitSteps), the popcount of the counted planes fused into the last launch. A dilation only reaches voxels of the box it is
// given (paths between lattice points of a box stay in the box, so n cross steps inside the box
// are the L1 ball of radius n inside it: the CPU's cone passes on the same box).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "distance_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology::cuda {
namespace {

constexpr int kBitThreads = 256;

unsigned bit_grid(std::int64_t words) {
  const std::int64_t blocks = (words + kBitThreads - 1) / kBitThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

/// bits ← (d8 > r), 32 voxels (one aligned 32-byte run of d8) per word.
__global__ __launch_bounds__(kBitThreads) void pack_above_kernel(const std::uint8_t* d8, std::uint32_t* bits,
                                                                 std::int64_t words, std::uint32_t r) {
  for (std::int64_t w = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; w < words;
       w += std::int64_t(gridDim.x) * blockDim.x) {
    const uint4* src = reinterpret_cast<const uint4*>(d8 + w * 32);
    std::uint32_t out = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 v = src[h];
      const std::uint32_t parts[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int b = 0; b < 4; ++b)
          out |= static_cast<std::uint32_t>(((parts[j] >> (8 * b)) & 0xFFu) > r) << (16 * h + 4 * j + b);
    }
    bits[w] = out;
  }
}

/// Word `c` of a row dilated along x by m ≤ 4 voxels; `l` and `r` are the words left and right
/// of it in the same row (0 past the row's ends). Bit b of a word is x = 32·word + b.
__device__ __forceinline__ std::uint32_t x_dilate(std::uint32_t l, std::uint32_t c, std::uint32_t r, int m) {
  std::uint32_t d = c;
#pragma unroll
  for (int s = 1; s <= 4; ++s)
    if (s <= m) d |= (c << s) | (l >> (32 - s)) | (c >> s) | (r << (32 - s));
  return d;
}

/// out ← in dilated by the L1 ball of radius K (K cross steps) inside the box [Z, Y, WX words],
/// on planes [z_lo, z_hi) of out only (the planes later steps read; in is read on those ± K).
/// Thread (blockIdx.x, threadIdx.x) owns one word of the plane, blockIdx.y a run of `z_run`
/// planes. If `count` is set, *count += the set bits of out on planes [count_z0, count_z1).
template <int K>
__global__ __launch_bounds__(kBitThreads) void l1_dilate_bits_kernel(const std::uint32_t* in, std::uint32_t* out,
                                                                     int Z, int Y, int WX, int z_lo, int z_hi,
                                                                     int z_run, int count_z0, int count_z1,
                                                                     unsigned long long* count) {
  const int plane = Y * WX;
  const int pw = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = pw / WX, wx = pw - (pw / WX) * WX;
  const int z_first = z_lo + blockIdx.y * z_run;
  const int z_end = z_first + z_run < z_hi ? z_first + z_run : z_hi;
  unsigned long long c = 0;
  if (pw < plane) {
    for (int z = z_first; z < z_end; ++z) {
      std::uint32_t acc = 0;
#pragma unroll
      for (int dz = -K; dz <= K; ++dz) {
        const int az = dz < 0 ? -dz : dz;
        if (z + dz < 0 || z + dz >= Z) continue;
#pragma unroll
        for (int dy = -(K - az); dy <= K - az; ++dy) {
          const int m = K - az - (dy < 0 ? -dy : dy);
          if (y + dy < 0 || y + dy >= Y) continue;
          const std::uint32_t* row = in + static_cast<std::int64_t>(z + dz) * plane + (y + dy) * WX;
          const std::uint32_t center = row[wx];
          if (m == 0) {
            acc |= center;
          } else {
            const std::uint32_t left = wx > 0 ? row[wx - 1] : 0u;
            const std::uint32_t right = wx + 1 < WX ? row[wx + 1] : 0u;
            acc |= x_dilate(left, center, right, m);
          }
        }
      }
      out[static_cast<std::int64_t>(z) * plane + pw] = acc;
      if (z >= count_z0 && z < count_z1) c += __popc(acc);
    }
  }
  if (count) {
    for (int offset = 16; offset > 0; offset /= 2) c += __shfl_down_sync(0xFFFFFFFFu, c, offset);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
  }
}

template <int K>
void launch_dilate(const std::uint32_t* in, std::uint32_t* out, const VolumeDims& d, int z_lo, int z_hi, int count_z0,
                   int count_z1, unsigned long long* count, cudaStream_t stream) {
  const std::int64_t plane = d.y * (d.x / 32);
  const int z_run = static_cast<int>(std::max<std::int64_t>(8, (z_hi - z_lo + 65534) / 65535));
  const dim3 grid(static_cast<unsigned>((plane + kBitThreads - 1) / kBitThreads),
                  static_cast<unsigned>((z_hi - z_lo + z_run - 1) / z_run));
  l1_dilate_bits_kernel<K><<<grid, kBitThreads, 0, stream>>>(in, out, static_cast<int>(d.z), static_cast<int>(d.y),
                                                             static_cast<int>(d.x / 32), z_lo, z_hi, z_run, count_z0,
                                                             count_z1, count);
  static const char* const names[] = {"", "l1_dilate_bits_kernel<1>", "l1_dilate_bits_kernel<2>",
                                      "l1_dilate_bits_kernel<3>", "l1_dilate_bits_kernel<4>"};
  check_launch(names[K], stream);
}

}  // namespace

bool bit_octahedron_applies(const VolumeDims& d, std::int64_t r, bool size_map) {
  return !size_map && d.x % 32 == 0 && r >= 1 && r <= DistancePolicy::kBitMaxRadius;
}

void launch_bit_octahedron_opening_count(const std::uint8_t* distance8, std::int64_t r, void* work,
                                         const VolumeDims& d, std::int64_t count_first, std::int64_t count_voxels,
                                         unsigned long long* count, cudaStream_t stream, int steps) {
  if (steps == 0) steps = DistancePolicy::kBitSteps;
  if (steps < 1 || steps > 4)
    throw ConfigError("bit-packed octahedron opening: 1 to 4 cross steps per launch, got " + std::to_string(steps));
  if (!bit_octahedron_applies(d, r, false))
    throw ConfigError("bit-packed octahedron opening: needs X % 32 == 0 and 1 <= r <= " +
                      std::to_string(DistancePolicy::kBitMaxRadius) + ", got X = " + std::to_string(d.x) +
                      ", r = " + std::to_string(r));
  if (d.voxels() == 0 || count_voxels == 0) return;
  // The counted voxels are whole planes of the box (granulometry_gpu.cu).
  const std::int64_t plane = d.y * d.x;
  if (count_first % plane != 0 || count_voxels % plane != 0 || d.z > (1 << 30) || d.y * (d.x / 32) > (1 << 30))
    throw ConfigError("bit-packed octahedron opening: counted voxels must be whole planes of a box of < 2^30 words");
  const int cz0 = static_cast<int>(count_first / plane), cz1 = static_cast<int>((count_first + count_voxels) / plane);
  const std::int64_t words = d.voxels() / 32;
  auto* a = static_cast<std::uint32_t*>(work);
  auto* b = a + words;
  pack_above_kernel<<<bit_grid(words), kBitThreads, 0, stream>>>(distance8, a, words, static_cast<std::uint32_t>(r));
  check_launch("pack_above_kernel", stream);
  for (std::int64_t left = r; left > 0;) {
    const int k = static_cast<int>(std::min<std::int64_t>(left, steps));
    unsigned long long* c = left == k ? count : nullptr;  // the last launch counts
    // After this launch left − k steps remain, which read its output only on the counted planes
    // ± (left − k): a slab's box (counted planes ± r) shrinks by k planes a side per launch, and
    // what lies beyond, never read, is not computed. The whole volume (counted = box) keeps it all.
    const int z_lo = static_cast<int>(std::max<std::int64_t>(0, cz0 - (left - k)));
    const int z_hi = static_cast<int>(std::min<std::int64_t>(d.z, cz1 + (left - k)));
    switch (k) {
      case 1: launch_dilate<1>(a, b, d, z_lo, z_hi, cz0, cz1, c, stream); break;
      case 2: launch_dilate<2>(a, b, d, z_lo, z_hi, cz0, cz1, c, stream); break;
      case 3: launch_dilate<3>(a, b, d, z_lo, z_hi, cz0, cz1, c, stream); break;
      default: launch_dilate<4>(a, b, d, z_lo, z_hi, cz0, cz1, c, stream); break;
    }
    left -= k;
    std::swap(a, b);
  }
}

}  // namespace weft::morphology::cuda
