#pragma once
// Streaming register-blocked convolution (layers 3-4; shared memory only as the rolling strips'
// ring of rows in flight, convolve_roll_strip's kAsync): each thread owns a strip
// of 4 consecutive output columns × kRows output rows; a warp covers 128 columns. The thread
// streams the kRows + 2R input rows of its strip top to bottom; each row is one aligned 4-element
// load, its 2R neighbours come from the adjacent lanes by shuffles (R ≤ 4) or from the adjacent
// strips' loads (L1 hits, R > 4), and the warp's edge lanes load their own. Each input row is
// convolved with every kernel row it meets and added to that output row's accumulator; a finished
// row leaves as one 4-element store. Weights are a kernel parameter (the constant bank, read by
// the FMAs directly). Border arithmetic per element only in warps that touch the left or right
// edge; rows are always mapped through the border (one uniform index per row).
//
// Rounding as the other GPU paths: full kernels sum each kernel row's products from zero and add
// the row sums in kernel-row order; separable kernels run the row pass per input row in registers
// (the same fma chain as the two-pass kernels' scratch image) and the column pass into the
// accumulators, so the fused result is bit-identical to the two-pass one.
#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>

#include "../src/detail/element.hpp"
#include "filters_gpu.cuh"

namespace weft::filters::device {

/// Full K×K weights, row-major, passed by value.
template <int K> struct FullWeights {
  float w[K * K];
};
/// Separable weights: rows then columns.
template <int K> struct SeparableWeights {
  float row[K];
  float column[K];
};

inline constexpr int kStreamColumns = 4;  // outputs per thread and row (one vector access)
inline constexpr int kStreamWarps = 4;    // warps per block, stacked vertically

/// The vector type of four elements of T (u8, u16 or f16 bits, f32).
template <class T>
using Vector4 = std::conditional_t<sizeof(T) == 4, float4, std::conditional_t<sizeof(T) == 1, uchar4, ushort4>>;
/// Four elements of T, loaded as one vector, as floats.
template <class T> __device__ __forceinline__ void widen4(const Vector4<T>& u, float (&v)[4]) {
  if constexpr (std::is_same_v<T, Half>) {
    const unsigned short s[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int c = 0; c < 4; ++c) v[c] = __half2float(__ushort_as_half(s[c]));
  } else {
    v[0] = u.x, v[1] = u.y, v[2] = u.z, v[3] = u.w;
  }
}
/// Four consecutive elements at p (aligned to 4 elements) as floats.
template <class T> __device__ __forceinline__ void load4(const T* __restrict__ p, float (&v)[4]) {
  widen4<T>(__ldg(reinterpret_cast<const Vector4<T>*>(p)), v);
}
template <class T> __device__ __forceinline__ float load1(const T* __restrict__ p) {
  if constexpr (std::is_same_v<T, Half>) return __half2float(__ushort_as_half(__ldg(&p->bits)));
  else return static_cast<float>(__ldg(p));
}

/// Asynchronous copy of the 4 elements at `from` (global, aligned to 4 elements) to the shared-memory
/// address `to` (__cvta_generic_to_shared, taken once by the caller rather than at every copy):
/// cp.async, which holds no register while in flight; committed as groups, waited for by count.
template <class T> __device__ __forceinline__ void copy4_async_at(unsigned to, const T* from) {
  if constexpr (sizeof(T) == 4)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(from), "n"(4 * sizeof(T)) : "memory");
}
/// Four elements at a shared-memory address (aligned to 4 elements) as floats. Volatile: kept in
/// order with the cp.async waits.
template <class T> __device__ __forceinline__ void load4_shared_at(unsigned at, float (&v)[4]) {
  Vector4<T> u;
  if constexpr (sizeof(T) == 4) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(u.x), "=f"(u.y), "=f"(u.z), "=f"(u.w) : "r"(at));
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("ld.shared.v4.u16 {%0, %1, %2, %3}, [%4];\n" : "=h"(u.x), "=h"(u.y), "=h"(u.z), "=h"(u.w) : "r"(at));
  } else {
    unsigned a, b, c, d;
    asm volatile("ld.shared.v4.u8 {%0, %1, %2, %3}, [%4];\n" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(at));
    u = make_uchar4(static_cast<unsigned char>(a), static_cast<unsigned char>(b), static_cast<unsigned char>(c),
                    static_cast<unsigned char>(d));
  }
  widen4<T>(u, v);
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending> __device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

/// Elements of one row's slot in a rolling strip's shared ring: 32 lane vectors and the two
/// vectors beside the warp (read by its edge lanes), 4 elements each.
inline constexpr int kRingSlot = 34 * 4;

/// Four outputs at p (aligned to 4 elements), converted as from_float.
template <class T> __device__ __forceinline__ void store4(T* __restrict__ p, const float (&v)[4]) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (sizeof(T) == 1) {
    *reinterpret_cast<uchar4*>(p) = make_uchar4(from_float<T>(v[0]), from_float<T>(v[1]), from_float<T>(v[2]),
                                                from_float<T>(v[3]));
  } else {
    unsigned short s[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if constexpr (std::is_same_v<T, Half>) s[c] = from_float<T>(v[c]).bits;
      else s[c] = from_float<T>(v[c]);
    }
    *reinterpret_cast<ushort4*>(p) = make_ushort4(s[0], s[1], s[2], s[3]);
  }
}

/// Input row `yi` (border applied; -1: a zero-border row) of the strip at xs: x[k] is column
/// xs − R + k, k < 4 + 2R. kInside: the warp's 128 columns and their ±R halo lie inside the image
/// and rows start 4-element aligned (all lanes take this path together: shuffles).
template <int R, bool kInside, class T>
__device__ __forceinline__ void fetch_row(float (&x)[4 + 2 * R], const T* __restrict__ src, Extent e, long long z,
                                          long long yi, long long xs, int border) {
  if (yi < 0) {
#pragma unroll
    for (int k = 0; k < 4 + 2 * R; ++k) x[k] = 0.0f;
    return;
  }
  const T* row = src + (z * e.ny + yi) * e.nx;
  if constexpr (kInside) {
    float v[4];
    load4(row + xs, v);
#pragma unroll
    for (int c = 0; c < 4; ++c) x[R + c] = v[c];
    if constexpr (R > 0 && R <= 4) {
      const unsigned lane = threadIdx.x;
#pragma unroll
      for (int k = 0; k < R; ++k) {
        x[k] = __shfl_up_sync(0xffffffffu, v[4 - R + k], 1);
        x[4 + R + k] = __shfl_down_sync(0xffffffffu, v[k], 1);
      }
      if (lane == 0) {
#pragma unroll
        for (int k = 0; k < R; ++k) x[k] = load1(row + xs - R + k);
      }
      if (lane == 31) {
#pragma unroll
        for (int k = 0; k < R; ++k) x[4 + R + k] = load1(row + xs + 4 + k);
      }
    } else if constexpr (R > 4) {  // whole neighbouring vectors, from L1
      constexpr int M = (R + 3) / 4;
#pragma unroll
      for (int m = 1; m <= M; ++m) {
        float l[4], r[4];
        load4(row + xs - 4 * m, l);
        load4(row + xs + 4 * m, r);
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int left = R - 4 * m + c;  // index in x of column xs − 4m + c
          const int right = R + 4 * m + c;
          if (left >= 0) x[left] = l[c];
          if (right < 4 + 2 * R) x[right] = r[c];
        }
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4 + 2 * R; ++k) {
      const long long xi = border_index(xs - R + k, e.nx, border);
      x[k] = xi < 0 ? 0.0f : load1(row + xi);
    }
  }
}

/// Writes one output row's 4 outputs at (y, xs), skipping columns outside the image (rows outside
/// are the caller's).
template <class T>
__device__ __forceinline__ void store_row(T* __restrict__ dst, const float (&acc)[4], Extent e, long long z,
                                          long long y, long long xs, bool vector_store) {
  T* out = dst + (z * e.ny + y) * e.nx + xs;
  if (vector_store) {
    store4(out, acc);
  } else {
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (xs + c < e.nx) out[c] = from_float<T>(acc[c]);
  }
}

/// Input row iy of the strip (0 ≤ iy < kRows + 2R) meets output row q through kernel row iy − q.
template <int R, int kRows, bool kInside, class T>
__device__ __forceinline__ void convolve_stream_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e,
                                                      const FullWeights<2 * R + 1>& w, int border, long long z,
                                                      long long y0, long long xs, bool vector_store) {
  constexpr int K = 2 * R + 1;
  float acc[kRows][4];
#pragma unroll
  for (int q = 0; q < kRows; ++q)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[q][c] = 0.0f;
#pragma unroll
  for (int iy = 0; iy < kRows + 2 * R; ++iy) {
    float x[4 + 2 * R];
    fetch_row<R, kInside>(x, src, e, z, border_index(y0 - R + iy, e.ny, border), xs, border);
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      const int i = iy - q;
      if (i < 0 || i >= K) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float partial = 0.0f;
#pragma unroll
        for (int j = 0; j < K; ++j) partial = fmaf(w.w[i * K + j], x[c + j], partial);
        acc[q][c] += partial;
      }
    }
    // Output row iy − 2R met its last kernel row: stored now, so that at most K rows of
    // accumulators are live (kRows = 16 kept all 64 until the end: 128 registers and spills).
    if (const int q = iy - 2 * R; q >= 0 && y0 + q < e.ny) store_row(dst, acc[q], e, z, y0 + q, xs, vector_store);
  }
}

/// The full convolution of a strip in a warp whose 128 columns and their ±R halo lie inside the
/// image (rows 4-element aligned, planes under 2³¹ elements and more than R rows, clamp or mirror
/// border): the border only maps the rows, all by selects before the first load (near_index), offsets
/// in 32 bits within the plane, the warp-edge lanes' halo loads predicated rather than branched,
/// the next row loaded before the current one is used (as the probe of bench/filters/NOTES.md),
/// each product added straight into its output's accumulator (K² FMAs per
/// output; the row sums of convolve_stream_strip cost K more adds).
template <int R, int kRows, int kBorder, class T>  // kBorder: kClamp or kMirror
__device__ __forceinline__ void convolve_inside_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e,
                                                      const FullWeights<2 * R + 1>& w, long long z, long long y0_,
                                                      long long xs_) {
  constexpr int K = 2 * R + 1, kIn = kRows + 2 * R;
  const int nx = static_cast<int>(e.nx), ny = static_cast<int>(e.ny), y0 = static_cast<int>(y0_);
  const int xs = static_cast<int>(xs_);
  const long long plane = z * e.ny * e.nx;
  const T* in = src + plane;
  T* out = dst + plane;
  float acc[kRows][4];
#pragma unroll
  for (int q = 0; q < kRows; ++q)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[q][c] = 0.0f;
  const unsigned lane = threadIdx.x;
  constexpr int H = R > 0 ? R : 1;
  float v[2][4], left[2][H], right[2][H];  // row iy in buffer iy % 2; row iy + 1 loads meanwhile
  // Row k of the strip (0 ≤ k < kIn). Rows past ny − 1 + R feed no stored output: capped there,
  // so that near_index's mirror stays inside the plane (ny > R) when kRows + R exceeds ny.
  auto row_at = [&](int k) { return in + (near_index(min(y0 - R + k, ny - 1 + R), ny, kBorder) * nx + xs); };
  auto fetch = [&](int k, int b) {
    const T* at = row_at(k);  // halo at fixed offsets from it
    load4(at, v[b]);
#pragma unroll
    for (int h = 0; h < R; ++h) {  // only the warp-edge lanes read their halo; predicated
      left[b][h] = lane == 0 ? load1(at - R + h) : 0.0f;
      right[b][h] = lane == 31 ? load1(at + 4 + h) : 0.0f;
    }
  };
  fetch(0, 0);
#pragma unroll
  for (int iy = 0; iy < kIn; ++iy) {
    const int b = iy % 2;
    if (iy + 1 < kIn) fetch(iy + 1, 1 - b);
    asm volatile("" ::: "memory");  // row iy + 1's loads stay ahead of row iy's arithmetic
    float x[4 + 2 * R];
#pragma unroll
    for (int c = 0; c < 4; ++c) x[R + c] = v[b][c];
#pragma unroll
    for (int k = 0; k < R; ++k) {  // R ≤ 3: the neighbours' vectors hold the halo
      const float up = __shfl_up_sync(0xffffffffu, v[b][4 - R + k], 1);
      const float down = __shfl_down_sync(0xffffffffu, v[b][k], 1);
      x[k] = lane == 0 ? left[b][k] : up;
      x[4 + R + k] = lane == 31 ? right[b][k] : down;
    }
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      const int i = iy - q;
      if (i < 0 || i >= K) continue;
#pragma unroll
      for (int j = 0; j < K; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[q][c] = fmaf(w.w[i * K + j], x[c + j], acc[q][c]);
    }
    if (const int q = iy - 2 * R; q >= 0 && y0 + q < ny) store4(out + ((y0 + q) * nx + xs), acc[q]);  // finished
  }
}

/// The rolling full convolution of one long strip (4 columns × `rows` output rows, `rows` at run
/// time) of a warp of 128 columns, on rows 4-element aligned in planes under 2³¹ elements and
/// more than R rows: the thread streams the rows + 2R input rows once, each input row added into
/// the K output rows it meets, so that only K × 4 accumulators are live. A finished row leaves as
/// one vector store; its accumulators start a new output row with its first product. With a long
/// strip the 2R halo rows cost 2R / rows more reads, against (kRows + 2R) / kRows for the short
/// strips above, and the grid can be sized to whole waves.
/// The warp-edge lanes read their halo as one predicated vector load beside the row's. kEdge: a
/// warp at the image's left or right edge, whose edge lanes take the halo from their own vector;
/// lanes past the image load the last vector and store nothing (nx ≥ 4). Rows are mapped by
/// selects (near_index) under clamp and mirror, and outside rows read as zeros under the zero
/// border.
/// One row per iteration: the accumulators shift down by one slot per row, as a renaming rather
/// than register moves (the loop's comment; SASS and timings in bench/filters/NOTES.md); kAhead
/// input rows are loaded ahead of the one in use (a ring shifted by moves). Unrolling K rows
/// instead (output o in slot o mod K, no moves) let ptxas hoist the body's loads: 128 registers
/// at 7×7, and slower on an H200 at every size and radius (bench/filters/NOTES.md).
/// `ring` (kAsync): the warp's kAhead + 1 slots of kRingSlot elements in shared memory; the kAhead
/// rows ahead are cp.async copies into it instead of registers (no register per row in flight,
/// so more rows ahead at the same occupancy).
/// The block's exchange buffer of paired strips (convolve_roll_strip's kPaired): per warp R rows of
/// 32 lane vectors of 4 floats, one allocation per radius.
template <int R> __device__ __forceinline__ float* roll_pair_buffer() {
  __shared__ __align__(16) float buffer[kStreamWarps * R * 32 * 4];
  return buffer;
}

/// kPaired (ring strips, R > 0): this strip and its vertical neighbour meet at the end of their
/// streams (a downward strip and the upward one below it, warps 2j and 2j + 1 of the block). Each
/// stops at its last own row, without the R rows past it, and the two exchange the partial sums
/// they hold for each other's R boundary outputs through roll_pair_buffer.
template <int R, int kAhead, bool kEdge, int kBorder, bool kAsync, bool kUp, bool kPaired = false, class T>
__device__ __forceinline__ void convolve_roll_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e,
                                                    const FullWeights<2 * R + 1>& w, long long z, int y0, int xs,
                                                    int rows, T* ring) {
  constexpr int K = 2 * R + 1;
  const int nx = static_cast<int>(e.nx), ny = static_cast<int>(e.ny);
  const long long plane = z * e.ny * e.nx;
  const unsigned lane = threadIdx.x;
  const int xl = kEdge ? min(xs, nx - 4) : xs;  // the vector this lane loads
  const T* in = src + plane + xl;
  T* out = dst + plane + xs;
  const bool store = !kEdge || xs < nx;
  const int n_out = min(rows, ny - y0);
  const int n_in = n_out + (kPaired ? R : 2 * R);  // kPaired: the partner supplies the rows past the end
  // kUp: the strip is streamed bottom to top (input row k is y0 + n_out − 1 + R − k, output o is
  // y0 + n_out − 1 − o), which is the downward stream with the kernel's rows flipped.
  auto in_row = [&](int k) { return kUp ? y0 + n_out - 1 + R - k : y0 - R + k; };
  // The lanes whose halo is not in the neighbouring lanes' vectors: the warp's edge lanes read the
  // vector beside theirs (inside the image); at the image's edges a lane maps its halo onto its own
  // vector (R < 4 columns: clamp repeats the edge pixel, mirror reflects the vector, zero is 0).
  const bool left_load = lane == 0 && xs > 0;
  const bool right_load = lane == 31 && xs + 4 < nx;
  const bool left_own = kEdge && xs == 0;
  const bool right_own = kEdge && xs + 4 == nx;
  struct Row {
    float v[4], h[4];  // the lane's vector; the one beside it for the warp's edge lanes
  };
  // Row k of the strip (0 ≤ k < n_in); under clamp and mirror, rows past ny − 1 + R capped as in
  // convolve_inside_strip.
  // 32-bit offsets: planes under 2³¹ elements (small_plane).
  auto row_at = [&](int y) {
    return in + (kBorder == kZero ? min(max(y, 0), ny - 1) : near_index(min(y, ny - 1 + R), ny, kBorder)) * nx;
  };
  auto clear_outside = [&](int y, Row& row) {
    if (kBorder == kZero && (y < 0 || y >= ny)) {
#pragma unroll
      for (int c = 0; c < 4; ++c) row.v[c] = row.h[c] = 0.0f;
    }
  };
  auto fetch = [&](int k, Row& row) {
    const T* at = row_at(in_row(k));
    load4(at, row.v);
    if constexpr (R > 0)
      if (left_load || right_load) load4(at + (left_load ? -4 : 4), row.h);
    clear_outside(in_row(k), row);
  };
  // kAsync: row k's copies go to slot k mod (kAhead + 1), one commit group per row (empty past
  // the strip, so that the count of groups in flight stays kAhead); a lane's vector at 4 · lane,
  // the edge lanes' neighbouring vectors after the 32 lanes'.
  // Shared-memory addresses: the ring's, converted once, and this lane's vector and the side vector
  // within a slot (the conversion at every copy and load cost about 6 instructions per row).
  const unsigned ring_at = kAsync ? static_cast<unsigned>(__cvta_generic_to_shared(ring)) : 0u;
  auto slot = [&](int k) { return ring_at + static_cast<unsigned>(k % (kAhead + 1)) * (kRingSlot * sizeof(T)); };
  const unsigned own_at = lane * 4 * sizeof(T), side_at = (right_load ? 33 : 32) * 4 * sizeof(T);
  auto issue = [&](int k) {
    if (k < n_in) {
      const T* at = row_at(in_row(k));
      copy4_async_at(slot(k) + own_at, at);
      if constexpr (R > 0)
        if (left_load || right_load) copy4_async_at(slot(k) + side_at, at + (left_load ? -4 : 4));
    }
    commit_async();
  };
  auto take = [&](int k, Row& row) {
    load4_shared_at<T>(slot(k) + own_at, row.v);
    if constexpr (R > 0)
      if (left_load || right_load) load4_shared_at<T>(slot(k) + side_at, row.h);
    clear_outside(in_row(k), row);
  };
  auto own = [](const float (&v)[4], int clamp_at, int mirror_at) {
    return kBorder == kClamp ? v[clamp_at] : kBorder == kMirror ? v[mirror_at] : 0.0f;
  };
  float acc[K][4];
#pragma unroll
  for (int s = 0; s < K; ++s)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[s][c] = 0.0f;
  Row ahead[kAsync ? 1 : kAhead];
  if constexpr (kAsync) {
#pragma unroll
    for (int a = 0; a < kAhead; ++a) issue(a);
  } else {
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
#pragma unroll
      for (int c = 0; c < 4; ++c) ahead[a].h[c] = 0.0f;
      if (a < n_in) fetch(a, ahead[a]);
    }
  }
  // Input row k: kernel row i meets output k − i (acc[K − 1 − i] before the row, acc[K − 2 − i]
  // after it); output k − 2R is then finished.
#pragma unroll 1
  for (int k = 0; k < n_in; ++k) {
    Row cur;
    if constexpr (kAsync) {
      issue(k + kAhead);        // into the slot row k − 1 left
      wait_async<kAhead>();     // row k has landed (this lane's own copies only)
#pragma unroll
      for (int c = 0; c < 4; ++c) cur.h[c] = 0.0f;
      take(k, cur);
    } else {
      cur = ahead[0];
#pragma unroll
      for (int a = 0; a + 1 < kAhead; ++a) ahead[a] = ahead[a + 1];
      if (k + kAhead < n_in) fetch(k + kAhead, ahead[kAhead - 1]);
    }
    asm volatile("" ::: "memory");  // the next rows' loads stay ahead of this row's arithmetic
    float x[4 + 2 * R];
#pragma unroll
    for (int c = 0; c < 4; ++c) x[R + c] = cur.v[c];
#pragma unroll
    for (int j = 0; j < R; ++j) {
      const float up = __shfl_up_sync(0xffffffffu, cur.v[4 - R + j], 1);
      const float down = __shfl_down_sync(0xffffffffu, cur.v[j], 1);
      x[j] = left_own ? own(cur.v, 0, R - j) : left_load ? cur.h[4 - R + j] : up;  // column xs − R + j
      x[4 + R + j] = right_own ? own(cur.v, 3, 2 - j) : right_load ? cur.h[j] : down;  // xs + 4 + j
    }
    // Kernel row i adds into output k − i, held in acc[K − 1 − i] (i > 0; i = 0 starts it) and
    // kept in acc[K − 2 − i] for the next row (the slots shift down by one), or stored (i = K − 1).
    // Rows in descending order, each written in place of the slot the row after it has just read,
    // so that the shift is a renaming and no register move.
    float done[4];
#pragma unroll
    for (int i = K - 1; i >= 0; --i) {
      float a[4];
#pragma unroll
      for (int j = 0; j < K; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const float wij = w.w[(kUp ? K - 1 - i : i) * K + j];
          a[c] = j == 0 ? (i == 0 ? wij * x[c] : fmaf(wij, x[c], acc[K - 1 - i][c])) : fmaf(wij, x[c + j], a[c]);
        }
      // Row K − 1 finishes output k − 2R (done); the others keep theirs one slot down. (The inner
      // select only keeps the index of the branch not taken at i = K − 1 inside the array.)
#pragma unroll
      for (int c = 0; c < 4; ++c) (i == K - 1 ? done : acc[i == K - 1 ? 0 : K - 2 - i])[c] = a[c];
    }
    if (const int o = k - 2 * R; o >= 0 && store)
      store4(out + (kUp ? y0 + n_out - 1 - o : y0 + o) * static_cast<long long>(nx), done);
  }
  if constexpr (kPaired) {
    static_assert(kAsync && R > 0, "paired strips: the ring kernels, radius 1 to 3");
    // acc[m] (m < R) holds this strip's output n_out − R + m without the rows past its end;
    // acc[R + m] the partner's boundary output on the other side, from this strip's rows. The
    // same image row is the partner's slot 2R − 1 − m.
    float4* buffer = reinterpret_cast<float4*>(roll_pair_buffer<R>());
    float4* mine = buffer + threadIdx.y * R * 32;
    const float4* partner = buffer + (threadIdx.y ^ 1) * R * 32;
#pragma unroll
    for (int m = 0; m < R; ++m)
      mine[m * 32 + lane] = make_float4(acc[R + m][0], acc[R + m][1], acc[R + m][2], acc[R + m][3]);
    asm volatile("bar.sync %0, 64;\n" ::"r"(1 + threadIdx.y / 2) : "memory");  // the pair's two warps
#pragma unroll
    for (int m = 0; m < R; ++m) {
      const float4 p = partner[(R - 1 - m) * 32 + lane];
      const float done[4] = {acc[m][0] + p.x, acc[m][1] + p.y, acc[m][2] + p.z, acc[m][3] + p.w};
      // output n_out − R + m = n_in − 2R + m: row y0 + n_in − 2R + m downwards, y0 + R − 1 − m upwards
      if (store) store4(out + (kUp ? y0 + R - 1 - m : y0 + n_in - 2 * R + m) * static_cast<long long>(nx), done);
    }
  }
}

template <int R, int kRows, bool kInside, class T>
__device__ __forceinline__ void separable_stream_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e,
                                                       const SeparableWeights<2 * R + 1>& w, int border, long long z,
                                                       long long y0, long long xs, bool vector_store) {
  constexpr int K = 2 * R + 1;
  float acc[kRows][4];
#pragma unroll
  for (int q = 0; q < kRows; ++q)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[q][c] = 0.0f;
#pragma unroll
  for (int iy = 0; iy < kRows + 2 * R; ++iy) {
    float x[4 + 2 * R];
    fetch_row<R, kInside>(x, src, e, z, border_index(y0 - R + iy, e.ny, border), xs, border);
    float h[4];  // the row pass of this input row
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      h[c] = 0.0f;
#pragma unroll
      for (int j = 0; j < K; ++j) h[c] = fmaf(w.row[j], x[c + j], h[c]);
    }
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      const int i = iy - q;
      if (i < 0 || i >= K) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[q][c] = fmaf(w.column[i], h[c], acc[q][c]);
    }
    if (const int q = iy - 2 * R; q >= 0 && y0 + q < e.ny) store_row(dst, acc[q], e, z, y0 + q, xs, vector_store);
  }
}

/// Planes the 32-bit inside and rolling paths take: under 2³¹ elements and more than R rows (so
/// that near_index's reflections stay inside the plane).
template <int R> __host__ __device__ constexpr bool small_plane(Extent e) {
  return e.ny * e.nx < (1LL << 31) && e.ny > R;
}

/// The strip of this thread and whether its warp takes the inside path (warp-uniform).
struct StreamStrip {
  long long y0, xs;
  bool inside, vector_store;
  bool small_plane;  // planes under 2³¹ elements and more than R rows: convolve_inside_strip applies
};
template <int R, int kRows>
__device__ __forceinline__ StreamStrip stream_strip(Extent e, bool aligned) {
  const long long warp_x = static_cast<long long>(blockIdx.x) * 32 * kStreamColumns;
  StreamStrip s;
  s.y0 = (static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y) * kRows;
  s.xs = warp_x + threadIdx.x * kStreamColumns;
  s.inside = aligned && warp_x - R >= 0 && warp_x + 32 * kStreamColumns + R <= e.nx;
  s.vector_store = aligned && s.xs + kStreamColumns <= e.nx;
  s.small_plane = small_plane<R>(e);
  return s;
}

/// Whether every row of src and dst starts on a kStreamColumns-element vector.
template <class T> inline bool rows_aligned(const T* src, const T* dst, Extent e) {
  constexpr std::uintptr_t vector = kStreamColumns * sizeof(T);
  return reinterpret_cast<std::uintptr_t>(src) % vector == 0 && reinterpret_cast<std::uintptr_t>(dst) % vector == 0 &&
         e.nx % kStreamColumns == 0;
}

/// Grid and block of a streaming launch and whether the vector path is allowed.
struct StreamLaunch {
  dim3 grid, block;
  bool aligned;
};

/// Warps across a row: 128 columns each (32 lanes × kStreamColumns).
__host__ __device__ constexpr long long warp_columns(Extent e) {
  return (e.nx + 32 * kStreamColumns - 1) / (32 * kStreamColumns);
}

/// Blocks of kStreamWarps warps stacked vertically (fewer when the grid would not give two blocks
/// per SM: small images), each warp 128 columns × rows.
template <class T> inline StreamLaunch stream_launch(const T* src, const T* dst, Extent e, int rows) {
  const long long blocks_x = warp_columns(e);
  const long long warps_y = (e.ny + rows - 1) / rows;
  int warps = kStreamWarps;
  const int min_blocks = 2 * multiprocessor_count();
  while (warps > 1 && blocks_x * ((warps_y + warps - 1) / warps) * e.slices < min_blocks) warps /= 2;
  const bool aligned = rows_aligned(src, dst, e);
  return {dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>((warps_y + warps - 1) / warps),
               static_cast<unsigned>(e.slices)),
          dim3(32, warps), aligned};
}
/// One wave of even strips: whole blocks of kStreamWarps warps over `strips` × warp_columns warps
/// per plane, numbered along the strips' rows (the rolling kernels' strips > 0).
inline StreamLaunch even_strips_launch(Extent e, long long strips) {
  const long long blocks = (strips * warp_columns(e) + kStreamWarps - 1) / kStreamWarps;
  return {dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(e.slices)), dim3(32, kStreamWarps), true};
}

/// Rows [begin, begin + count) of strip g of `strips` that split n rows as evenly as whole rows
/// allow (counts differ by at most one).
struct StripSpan {
  long long begin, count;
};
__host__ __device__ constexpr StripSpan even_strip(long long g, long long n, long long strips) {
  const long long begin = g * n / strips;
  return {begin, (g + 1) * n / strips - begin};
}

}  // namespace weft::filters::device
