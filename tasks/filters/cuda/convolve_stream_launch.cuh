#pragma once
// Launchers of the streaming full convolutions (convolve_stream.cuh) up to radius
// kStreamMaxRadius, kRows = 4, 8 or 16 output rows per thread (the fused separable ones are in
// separable_stream_launch.cuh). Weights travel by value (and by the caller's device copy for the
// strips at the image's edges). Each element type is instantiated in its
// own convolve_stream_<type>_gpu.cu, so that nvcc compiles them in parallel.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>

#include "convolve_stream.cuh"
#include "filters_gpu.cuh"
#include "weft/util/settings.hpp"

namespace weft::filters {
namespace device {

/// The general strip (image edges, unaligned rows, zero border, large planes) out of line, with
/// the weights from global memory (`weights`, the caller's device copy): inlined, its 64-bit
/// indexing raised the registers of the whole kernel and made the inside path spill (7×7: 92 bytes
/// at 4 rows); a reference to the kernel's parameter would copy the weights to the stack.
template <int R, int kRows, bool kInside, class T>
__device__ __noinline__ void convolve_general_strip(const T* src, T* dst, Extent e,
                                                    const float* __restrict__ weights, int border, long long z,
                                                    long long y0, long long xs, bool vector_store) {
  FullWeights<2 * R + 1> w;
#pragma unroll
  for (int i = 0; i < (2 * R + 1) * (2 * R + 1); ++i) w.w[i] = __ldg(weights + i);
  convolve_stream_strip<R, kRows, kInside>(src, dst, e, w, border, z, y0, xs, vector_store);
}

/// 4 rows per thread: at most 64 registers (8 blocks of 128 threads per SM), which the probe on an
/// H100 found fastest for 3×3 to 7×7; 8 and 16 rows: at most 80 (6 blocks), still slower than 4 at
/// every size measured (bench/filters/NOTES.md).
template <int R, int kRows, class T>
__global__ void __launch_bounds__(32 * kStreamWarps, kRows <= 4 ? 8 : 6)
    convolve_stream_kernel(const T* src, T* dst, Extent e, const FullWeights<2 * R + 1> w,
                           const float* weights, int border, bool aligned) {
  weft::allow_next_grid();
  const StreamStrip s = stream_strip<R, kRows>(e, aligned);
  if (s.y0 >= e.ny) return;  // whole warps (blockDim.x = 32)
  weft::wait_for_prior_grid();
  if (s.inside && s.small_plane && border == kClamp)
    convolve_inside_strip<R, kRows, kClamp>(src, dst, e, w, blockIdx.z, s.y0, s.xs);
  else if (s.inside && s.small_plane && border == kMirror)
    convolve_inside_strip<R, kRows, kMirror>(src, dst, e, w, blockIdx.z, s.y0, s.xs);
  else if (s.inside)
    convolve_general_strip<R, kRows, true>(src, dst, e, weights, border, blockIdx.z, s.y0, s.xs, s.vector_store);
  else
    convolve_general_strip<R, kRows, false>(src, dst, e, weights, border, blockIdx.z, s.y0, s.xs, s.vector_store);
}

/// Rolling strips (convolve_roll_strip): each warp 128 columns × `rows` rows, blocks of
/// kStreamWarps warps stacked vertically, or (strips > 0) one wave of even strips, the block's
/// warps side by side along a strip's rows; rows 4-element aligned (rows_aligned), planes that
/// small_plane<R> takes (else the launcher runs the 4-row streaming kernel).
/// One row ahead: at most 64 registers (8 blocks per SM; 7×7 spills 172 bytes of stores and 184 of
/// loads under nvcc 13, and is the policy's 7×7 from 8192²: 322 GP/s on an H100, where 80
/// registers and 6 blocks ran 240); two rows ahead: 80.
/// kAsync: the rows ahead go through a ring in shared memory (cp.async), kAhead + 1 slots per warp
/// (3 ahead: 64 registers without spills at 7×7, 8.7 KB of shared memory per block for f32; 7×7 at
/// 4096² on an H100 297-301 GP/s against 290-293 with 4 ahead, 6 ahead 286, 7 ahead 287, the cause
/// not measured; bench/filters/NOTES.md).
/// The body of the rolling kernels; kPaired: convolve_roll_pair_kernel.
template <int R, int kAhead, bool kAsync, bool kPaired, class T>
__device__ __forceinline__ void convolve_roll_body(const T* src, T* dst, Extent e, const FullWeights<2 * R + 1>& w,
                                                   int border, int rows, int strips, bool alternate) {
  constexpr int kRing = kAsync ? kStreamWarps * (kAhead + 1) * kRingSlot : 1;
  __shared__ __align__(16) T ring[kRing];
  weft::allow_next_grid();
  // strips > 0: the block's warps are numbered along the rows of strips, warp w in column
  // w mod columns of strip w / columns, one of `strips` even strips (rows unused), so that whole
  // blocks fill the wave whatever the count of strips; else blocks stacked as stream_launch puts
  // them, `rows` rows from g · rows. kPaired: warps 2j and 2j + 1 are strips 2q and 2q + 1 of one
  // column (q, column from j as above), a downward strip and the upward one below it.
  int warp_x;
  long long g;
  if (strips > 0) {
    const int columns = static_cast<int>(warp_columns(e));
    const long long warp = static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y;
    const long long unit = kPaired ? warp / 2 : warp;
    g = kPaired ? unit / columns * 2 + warp % 2 : unit / columns;
    warp_x = static_cast<int>(unit % columns) * 32 * kStreamColumns;
  } else {
    g = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y;
    warp_x = static_cast<int>(blockIdx.x) * 32 * kStreamColumns;
  }
  const StripSpan span = strips > 0 ? even_strip(g, e.ny, strips) : StripSpan{g * rows, rows};
  if (span.begin >= e.ny || span.count <= 0) return;  // whole warps (kPaired: whole pairs)
  weft::wait_for_prior_grid();
  rows = static_cast<int>(span.count);
  const int y = static_cast<int>(span.begin), x = warp_x + static_cast<int>(threadIdx.x) * kStreamColumns;
  const bool edge = warp_x - R < 0 || warp_x + 32 * kStreamColumns + R > e.nx;
  T* mine = kAsync ? ring + threadIdx.y * (kAhead + 1) * kRingSlot : nullptr;
  // Even strips alternate downwards and upwards, so that the 2R rows two neighbours share are read
  // by both at the same end of their streams (both last, or both first) and the second read can
  // hit L2; streamed the same way, one read them first and the other last, a whole strip's time
  // apart (19 % more input rows from DRAM at 7×7 with 31-row strips, if the first read is evicted).
  const bool up = (kPaired || alternate) && strips > 0 && g % 2 == 1;
  auto run = [&](auto border_tag) {
    constexpr int B = decltype(border_tag)::value;
    if (edge) {
      if (up) convolve_roll_strip<R, kAhead, true, B, kAsync, true, kPaired>(src, dst, e, w, blockIdx.z, y, x, rows, mine);
      else convolve_roll_strip<R, kAhead, true, B, kAsync, false, kPaired>(src, dst, e, w, blockIdx.z, y, x, rows, mine);
    } else {
      if (up) convolve_roll_strip<R, kAhead, false, B, kAsync, true, kPaired>(src, dst, e, w, blockIdx.z, y, x, rows, mine);
      else convolve_roll_strip<R, kAhead, false, B, kAsync, false, kPaired>(src, dst, e, w, blockIdx.z, y, x, rows, mine);
    }
  };
  if (border == kClamp) run(std::integral_constant<int, kClamp>{});
  else if (border == kMirror) run(std::integral_constant<int, kMirror>{});
  else run(std::integral_constant<int, kZero>{});
}

template <int R, int kAhead, bool kAsync, class T>
__global__ void __launch_bounds__(32 * kStreamWarps, kAhead == 1 || kAsync ? 8 : 6)
    convolve_roll_kernel(const T* src, T* dst, Extent e, const FullWeights<2 * R + 1> w, int border, int rows,
                         int strips, bool alternate) {
  convolve_roll_body<R, kAhead, kAsync, false>(src, dst, e, w, border, rows, strips, alternate);
}

/// Paired ring strips ("rollp"; even strips only, an even count of them): neighbours meet at the
/// ends of their streams and exchange their boundary sums instead of reading R rows past their
/// ends (convolve_roll_strip's kPaired). Exact, but not faster than "rollq" through the library
/// (7×7 at 4096² and 8192² on an H100, bench/filters/NOTES.md): not in the policy.
template <int R, class T>
__global__ void __launch_bounds__(32 * kStreamWarps, 8)
    convolve_roll_pair_kernel(const T* src, T* dst, Extent e, const FullWeights<2 * R + 1> w, int border,
                              int strips) {
  convolve_roll_body<R, 3, true, true>(src, dst, e, w, border, 0, strips, true);
}

}  // namespace device

namespace {

template <int R, int kRows, class T>
void full_rows(const T* src, T* dst, device::Extent e, const float* h_kernel, const float* d_kernel, int border,
               cudaStream_t stream) {
  constexpr int K = 2 * R + 1;
  device::FullWeights<K> w;
  for (int i = 0; i < K * K; ++i) w.w[i] = h_kernel[i];
  const device::StreamLaunch l = device::stream_launch(src, dst, e, kRows);
  weft::launch_chained(device::convolve_stream_kernel<R, kRows, T>, l.grid, l.block, 0, stream, src, dst, e, w,
                       d_kernel, border, l.aligned);
  check_launch("convolve_stream_kernel", stream);
}

template <int R, class T>
void full_radius(int rows, const T* src, T* dst, device::Extent e, const float* h, const float* d, int border,
                 cudaStream_t s) {
  switch (rows) {
    case 4: return full_rows<R, 4>(src, dst, e, h, d, border, s);
    case 8: return full_rows<R, 8>(src, dst, e, h, d, border, s);
    default: return full_rows<R, 16>(src, dst, e, h, d, border, s);
  }
}

/// Whether even strips alternate their direction (WEFT_ROLL_ALTERNATE=0 streams them all
/// downwards, to compare).
inline bool alternate_strips() {
  return settings().roll_alternate;
}

/// The rolling strips of a launch: `rows` rows each (strips = 0), or `strips` strips per plane
/// that split its rows evenly (even_strip).
struct RollStrips {
  int rows, strips;
};
/// `rows` when given (rounded up to a multiple of 4). Else one wave of resident warps when that
/// gives strips of 16 rows or more, split evenly: every resident warp slot holds one strip and the
/// strips differ by at most a row. 32-row strips at 4096² (128 per plane × 32 warps across, 1024
/// blocks) left 32 of the H100's 1056 block slots empty (by count: some SMs ran 7 blocks where the
/// others ran 8); the even split runs 132 strips of 31-32 rows, 1056 blocks (its blocks number their
/// warps along the strips' rows: 66 strips of 64 warps at 8192² are 1056 whole blocks, where
/// stacks of 4 strips would need 17 rows of 64 blocks, 32 of them in a second wave). Else several
/// waves of 16-row strips rather than one of short ones.
template <class Kernel> RollStrips roll_strips(Kernel* kernel, device::Extent e, int rows) {
  if (rows > 0) return {(rows + 3) / 4 * 4, 0};
  const long long warps = resident_blocks(kernel, 32 * device::kStreamWarps, 0) * device::kStreamWarps;
  const long long groups = warps / (device::warp_columns(e) * e.slices);  // row strips per plane in one wave
  if (groups > 0 && e.ny / groups >= 16) return {0, static_cast<int>(groups)};
  return {16, 0};
}

/// paired: "rollp", the ring strips paired where they are even (convolve_roll_pair_kernel); not
/// under WEFT_ROLL_ALTERNATE=0, as a pair is one downward and one upward strip.
template <int R, int kAhead, bool kAsync, class T>
void roll_radius(int rows, const T* src, T* dst, device::Extent e, const float* h_kernel, const float* d_kernel,
                 int border, bool paired, cudaStream_t stream) {
  if (!device::rows_aligned(src, dst, e) || !device::small_plane<R>(e))
    return full_rows<R, 4>(src, dst, e, h_kernel, d_kernel, border, stream);
  constexpr int K = 2 * R + 1;
  device::FullWeights<K> w;
  for (int i = 0; i < K * K; ++i) w.w[i] = h_kernel[i];
  if constexpr (kAsync && R > 0)
    if (paired && alternate_strips()) {
      RollStrips h = roll_strips(device::convolve_roll_pair_kernel<R, T>, e, rows);
      h.strips &= ~1;  // whole pairs
      if (h.strips > 0) {
        const device::StreamLaunch l = device::even_strips_launch(e, h.strips);
        weft::launch_chained(device::convolve_roll_pair_kernel<R, T>, l.grid, l.block, 0, stream, src, dst, e, w,
                             border, h.strips);
        check_launch("convolve_roll_pair_kernel", stream);
        return;
      }
    }
  const RollStrips h = roll_strips(device::convolve_roll_kernel<R, kAhead, kAsync, T>, e, rows);
  const device::StreamLaunch l =
      h.strips > 0 ? device::even_strips_launch(e, h.strips) : device::stream_launch(src, dst, e, h.rows);
  weft::launch_chained(device::convolve_roll_kernel<R, kAhead, kAsync, T>, l.grid, l.block, 0, stream, src, dst, e, w,
                       border, h.rows, h.strips, alternate_strips());
  check_launch("convolve_roll_kernel", stream);
}

template <int kAhead, bool kAsync, class T>
void roll_variant(int rows, const T* src, T* dst, device::Extent e, const float* h, const float* d, int ksize,
                  int border, bool paired, cudaStream_t s) {
  switch (ksize / 2) {
    case 0: return roll_radius<0, kAhead, kAsync>(rows, src, dst, e, h, d, border, paired, s);
    case 1: return roll_radius<1, kAhead, kAsync>(rows, src, dst, e, h, d, border, paired, s);
    case 2: return roll_radius<2, kAhead, kAsync>(rows, src, dst, e, h, d, border, paired, s);
    default: return roll_radius<3, kAhead, kAsync>(rows, src, dst, e, h, d, border, paired, s);
  }
}

}  // namespace

namespace device {

template <class T>
void launch_convolve_roll(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                          int rows, int ahead, int border, bool paired, cudaStream_t s) {
  if (ksize / 2 > kStreamMaxRadius)
    throw ConfigError("convolve: the rolling kernel takes sizes up to 7, not " + std::to_string(ksize));
  switch (ahead) {  // 1, 2: rows ahead in registers; 3: in a shared ring (cp.async), paired or not
    case 1: return roll_variant<1, false>(rows, src, dst, e, h_kernel, d_kernel, ksize, border, false, s);
    case 3: return roll_variant<3, true>(rows, src, dst, e, h_kernel, d_kernel, ksize, border, paired, s);
    default: return roll_variant<2, false>(rows, src, dst, e, h_kernel, d_kernel, ksize, border, false, s);
  }
}

template <class T>
void launch_convolve_stream(const T* src, T* dst, Extent e, const float* h_kernel, const float* d_kernel, int ksize,
                            int rows, int border, cudaStream_t s) {
  static_assert(kStreamMaxRadius == 3, "instantiated for radius 0 .. 3");
  switch (ksize / 2) {
    case 0: return full_radius<0>(rows, src, dst, e, h_kernel, d_kernel, border, s);
    case 1: return full_radius<1>(rows, src, dst, e, h_kernel, d_kernel, border, s);
    case 2: return full_radius<2>(rows, src, dst, e, h_kernel, d_kernel, border, s);
    case 3: return full_radius<3>(rows, src, dst, e, h_kernel, d_kernel, border, s);
    default: throw ConfigError("convolve: the streaming kernel takes sizes up to 7, not " + std::to_string(ksize));
  }
}
}  // namespace device
}  // namespace weft::filters
