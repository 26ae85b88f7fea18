// Ball openings of radius w = ⌊√r⌋ ≤ 63 from the bounded erosion distances D (u16), three
// launches per size instead of the row pass, two windowed passes and a count:
// 1. pack: E = {D > r} and P = {0 < D ≤ r} (foreground outside the erosion) as bits, from the
//    u8 levels ⌈√D⌉ when r = w² (E = {level > w}, half the bytes), else from D; the erosion
//    voxels of the counted planes are counted here (every ball centred in E contains its
//    centre) and written in the size map;
// 2. y: per window row, dx = the distance along x to the nearest E voxel of the row (clz of
//    32-bit windows of the bits for w < 32, 64-bit ones above; ≤ w, else none), then
//    g = min over |dy| < W of dx(y + dy)² + dy², capped at r + 1, on u16 pairs, stopping once no
//    further offset can lower a minimum and skipping the offsets whose rows hold no E voxel
//    within w along x in the whole tile; stored as the reach ρ = ⌊√(r − g)⌋ (−1 where g > r):
//    the ball of radius w around the nearest E voxel of the plane covers the voxels of this
//    column within ρ along z;
// 3. z, counted planes only: a voxel of P is in the opening iff some ρ(z') ≥ |z − z'|, the
//    union of the reach intervals of its column. One upward walk per column decides it in O(1)
//    per voxel: R(z) = max(R(z − 1) − 1, ρ(z)) covers the intervals centred below, the bits
//    z − ρ .. z − 1 of a history those centred above, and plane z − w is final at plane z.
//    Background voxels are never in the opening.
// W = ⌈(w + 1) / 8⌉·8: offsets beyond w add more than r (d² ≥ (w + 1)² > r), so they leave every
// minimum ≤ r as it is and every other one > r, which is all the reach needs.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "distance_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology::cuda {
namespace {

constexpr int kPackThreads = 256;
constexpr int kPackChunks = 8;             // u16 loads per lane in flight before their ballots
constexpr int kWarps = 16;                 // y tiles of kWarps × kItems lines
constexpr int kItems = 8;                  // consecutive outputs per thread along y
constexpr int kTile = kWarps * kItems;
constexpr int kRing = kItems + 7;          // window rows of one block of 8 offsets
constexpr int kTileX = 64;                 // voxels across a tile: 32 lanes × a u16 pair
constexpr int kRowWords = kTileX / 32 + 4;  // bit words of a tile row with 64 bits each side
constexpr int kBatch = 8;                  // planes loaded together by the z sweep
constexpr int kSweepThreads = 256;
constexpr int kMaxRows = kTile + 2 * 64;   // window rows of a y tile (W ≤ 64)
constexpr std::uint32_t kMinus1 = 0xFFFFFFFFu;  // (−1, −1) as s16 pairs
constexpr std::uint32_t kSplat = 0x10001u;
static_assert(kRing <= 32, "a block of 8 offsets reads kRing window rows, flagged in one word");

__host__ __device__ constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// E = {v > thr} and P = {0 < v ≤ thr} as bits of rows of X voxels, ⌈X/32⌉ words a row, from
/// T = u16 erosion distances (thr = r) or u8 levels ⌈√D⌉ (thr = w, for r = w²): one warp per run
/// of 1024 voxels of a row, lane c ending with word c, so that each warp stores its words at once.
/// Scalar: a voxel per lane and load, a ballot per 32 voxels. Vector (X a multiple of the 16-byte
/// vector, D 16-byte aligned): 16 bytes per lane and load (512 a warp), their bits gathered into
/// words by shuffles. Rows [count_row0, count_row1) are counted: *count += |E| there, size_map ← n
/// on E there.
template <class T, bool kVector>
__global__ __launch_bounds__(kPackThreads) void ball_pack_kernel(const T* D, unsigned rows, int X, int wpr,
                                                                 std::uint32_t thr, unsigned count_row0,
                                                                 unsigned count_row1, std::uint32_t* ebits,
                                                                 std::uint32_t* pbits, std::int32_t* size_map, int n,
                                                                 unsigned long long* count) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "u8 levels or u16 distances");
  __shared__ unsigned long long partial[kPackThreads / 32];
  const int lane = threadIdx.x & 31;
  const unsigned runs_per_row = static_cast<unsigned>(ceil_div(X, 1024)), tasks = rows * runs_per_row;
  const unsigned warps = gridDim.x * (kPackThreads / 32);
  unsigned long long counted_e = 0;
  for (unsigned t = blockIdx.x * (kPackThreads / 32) + (threadIdx.x >> 5); t < tasks; t += warps) {
    const unsigned row = t / runs_per_row;
    const bool counted = row >= count_row0 && row < count_row1;
    const int x0 = static_cast<int>(t % runs_per_row) * 1024;
    const T* src = D + static_cast<std::int64_t>(row) * X;
    std::uint32_t my_e = 0, my_f = 0;
    if constexpr (kVector) {
      // V voxels per lane and load; the lanes per word and the words per load of the warp.
      constexpr int V = 16 / sizeof(T), kLoads = 1024 / (32 * V), kLanesPerWord = 32 / V;
      uint4 q[kLoads];  // voxels x0 + 32·V·k + V·lane .. + V
#pragma unroll
      for (int k = 0; k < kLoads; ++k) {
        const int x = x0 + 32 * V * k + V * lane;
        q[k] = x < X ? *reinterpret_cast<const uint4*>(src + x) : make_uint4(0, 0, 0, 0);
      }
      const std::uint32_t splat = sizeof(T) == 1 ? thr * 0x01010101u : thr * kSplat;
#pragma unroll
      for (int k = 0; k < kLoads; ++k) {
        const std::uint32_t u[4] = {q[k].x, q[k].y, q[k].z, q[k].w};
        std::uint32_t me = 0, mf = 0;  // bit i: voxel V·lane + i of the load
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          if constexpr (sizeof(T) == 1) {
            const std::uint32_t ge = __vcmpgtu4(u[h], splat), gf = __vcmpgtu4(u[h], 0u);
            me |= (((ge >> 7) & 1u) | ((ge >> 14) & 2u) | ((ge >> 21) & 4u) | ((ge >> 28) & 8u)) << (4 * h);
            mf |= (((gf >> 7) & 1u) | ((gf >> 14) & 2u) | ((gf >> 21) & 4u) | ((gf >> 28) & 8u)) << (4 * h);
          } else {
            const std::uint32_t ge = __vcmpgtu2(u[h], splat), gf = __vcmpgtu2(u[h], 0u);
            me |= ((ge & 1u) | ((ge >> 15) & 2u)) << (2 * h);
            mf |= ((gf & 1u) | ((gf >> 15) & 2u)) << (2 * h);
          }
        }
        if (size_map && counted && me) {
          std::int32_t* m = size_map + static_cast<std::int64_t>(row - count_row0) * X + x0 + 32 * V * k + V * lane;
#pragma unroll
          for (int i = 0; i < V; ++i)
            if ((me >> i) & 1u) m[i] = n;
        }
        // Lanes kLanesPerWord·j .. + kLanesPerWord − 1 hold word V·k + j; lane V·k + j ends with it.
        me <<= V * (lane % kLanesPerWord);
        mf <<= V * (lane % kLanesPerWord);
#pragma unroll
        for (int o = 1; o < kLanesPerWord; o *= 2) {
          me |= __shfl_xor_sync(~0u, me, o);
          mf |= __shfl_xor_sync(~0u, mf, o);
        }
        const int from = kLanesPerWord * (lane % V);
        const std::uint32_t we = __shfl_sync(~0u, me, from), wf = __shfl_sync(~0u, mf, from);
        if (lane / V == k) {
          my_e = we;
          my_f = wf;
        }
      }
    } else {
      for (int c0 = 0; c0 < 32; c0 += kPackChunks) {
        std::uint32_t v[kPackChunks];
#pragma unroll
        for (int c = 0; c < kPackChunks; ++c) {
          const int x = x0 + 32 * (c0 + c) + lane;
          v[c] = x < X ? src[x] : 0u;
        }
#pragma unroll
        for (int c = 0; c < kPackChunks; ++c) {
          const std::uint32_t e = __ballot_sync(~0u, v[c] > thr), f = __ballot_sync(~0u, v[c] > 0);
          if (lane == c0 + c) {
            my_e = e;
            my_f = f;
          }
        }
        if (size_map && counted) {
#pragma unroll
          for (int c = 0; c < kPackChunks; ++c)
            if (v[c] > thr)
              size_map[static_cast<std::int64_t>(row - count_row0) * X + x0 + 32 * (c0 + c) + lane] = n;
        }
      }
    }
    const int word = x0 / 32 + lane;
    if (word < wpr) {
      ebits[static_cast<std::int64_t>(row) * wpr + word] = my_e;
      pbits[static_cast<std::int64_t>(row) * wpr + word] = my_f & ~my_e;
      if (counted) counted_e += static_cast<unsigned>(__popc(my_e));
    }
  }
  for (int s = 16; s > 0; s /= 2) counted_e += __shfl_down_sync(~0u, counted_e, s);
  if (lane == 0) partial[threadIdx.x >> 5] = counted_e;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long total = 0;
    for (int i = 0; i < kPackThreads / 32; ++i) total += partial[i];
    if (total) atomicAdd(count, total);
  }
}

/// acc[k] ← min(acc[k], window row (k + d) + d²) over d in [−W, W), centre out in blocks of 8
/// offsets (0..7 and −1..−8 first); `column` is this thread's column at the row of item 0 and
/// offset 0. A block of offsets runs only if `rows_hold(j)` (warp-uniform) says that the kRing
/// window rows j .. j + kRing − 1 from `column`'s row may lower a minimum. After each pair of blocks
/// `done(next)` may stop the loop (it must be warp-uniform); the offsets still to come are all at
/// least `next` away.
template <class Holds, class Done>
__device__ __forceinline__ void window_min(const std::uint32_t* column, int W, std::uint32_t (&acc)[kItems],
                                           Holds rows_hold, Done done) {
  for (int b = 0; b < W; b += 8) {
    std::uint32_t ring[kRing];
    if (rows_hold(b)) {
#pragma unroll
      for (int j = 0; j < kRing; ++j) ring[j] = column[(b + j) * 32];
#pragma unroll
      for (int di = 0; di < kItems; ++di) {
        const std::uint32_t off = static_cast<std::uint32_t>((b + di) * (b + di)) * kSplat;
#pragma unroll
        for (int k = 0; k < kItems; ++k) acc[k] = __viaddmin_u16x2(ring[di + k], off, acc[k]);
      }
    }
    // Offsets d = −(b + 1 + di): row k + d = (−b − 8) + (k − di + 7).
    if (rows_hold(-b - 8)) {
#pragma unroll
      for (int j = 0; j < kRing; ++j) ring[j] = column[(j - b - 8) * 32];
#pragma unroll
      for (int di = 0; di < kItems; ++di) {
        const int dd = b + 1 + di;
        const std::uint32_t off = static_cast<std::uint32_t>(dd * dd) * kSplat;
#pragma unroll
        for (int k = 0; k < kItems; ++k) acc[k] = __viaddmin_u16x2(ring[k - di + 7], off, acc[k]);
      }
    }
    if (done(b + 8)) return;
  }
}

/// y pass: tiles of kTileX x × kTile y of one plane; rho (s16 pairs) ← the reach of the capped
/// minima. The resident blocks take the (plane, tile) items in turn from the counter `next` (0 at
/// the launch), the tiles of a plane one after the other: a tile's work follows its content (the
/// offsets skipped and the early stops), and blocks given fixed tiles ended up to 10 % apart (ncu
/// on an H200 at 1024³: the SMs' mean active cycles 0.91 of the longest's). The window rows are
/// first staged as E bits (the tile's two words and two each side), then turned into dx² per
/// voxel, each row flagged when one of its voxels has an E voxel within w along x. kNarrow
/// (w < 32): x distances from 32-bit windows, else 64-bit ones.
template <bool kNarrow>
__global__ __launch_bounds__(32 * kWarps, 3) void ball_y_kernel(const std::uint32_t* ebits, std::uint32_t* rho, int X,
                                                             int Y, int Z, int wpr, int w, int r, int W,
                                                             unsigned* next) {
  // (kTile + 2W) rows of 32 words, then their bits.
  extern __shared__ std::uint32_t win[];
  __shared__ std::uint32_t flagged[kMaxRows / 32 + 1];  // rows with an E voxel within w
  __shared__ std::int16_t reach[64 * 64 + 1];           // reach of g = 0 .. r + 1 (r + 1 ≤ 64²)
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 32 + tx;
  const std::uint32_t cap1 = static_cast<std::uint32_t>(r + 1), cap = cap1 * kSplat;
  const int rows = kTile + 2 * W;
  std::uint32_t* bits = win + rows * 32;
  __shared__ unsigned item;  // this block's current (plane, tile)
  const unsigned x_tiles = static_cast<unsigned>(ceil_div(X, kTileX));
  const unsigned tiles = x_tiles * static_cast<unsigned>(ceil_div(Y, kTile)), items = tiles * static_cast<unsigned>(Z);
  // Staging: element i of the (rows × kRowWords) bits is word j = i % kRowWords of row i / kRowWords.
  const std::int64_t plane_words = static_cast<std::int64_t>(Y) * wpr, plane_pairs = static_cast<std::int64_t>(Y) * X / 2;
  for (int i = tid; i <= r + 1; i += 32 * kWarps) {
    int q = 0;
    if (i <= r) {
      q = static_cast<int>(sqrtf(static_cast<float>(r - i)));
      while (q * q > r - i) --q;
      while ((q + 1) * (q + 1) <= r - i) ++q;
    }
    reach[i] = static_cast<std::int16_t>(i <= r ? q : -1);
  }
  for (;;) {
    if (tid == 0) item = atomicAdd(next, 1u);
    __syncthreads();  // (the loop's last barrier keeps this write after every read of the one before)
    const unsigned my_item = item;
    if (my_item >= items) break;  // block-uniform
    const int z = static_cast<int>(my_item / tiles), tile = static_cast<int>(my_item % tiles);
    const int tile_x = tile % static_cast<int>(x_tiles), tile_y = tile / static_cast<int>(x_tiles);
    const int y0 = tile_y * kTile, word0 = tile_x * (kTileX / 32) - 2;
    const int x = tile_x * kTileX + 2 * tx;
    if (tid <= kMaxRows / 32) flagged[tid] = 0;
    const std::uint32_t* plane_bits = ebits + z * plane_words;
    for (int i = tid; i < rows * kRowWords; i += 32 * kWarps) {
      const int row = i / kRowWords, j = i - row * kRowWords;
      const int y = y0 - W + row, word = word0 + j;
      bits[i] = (y >= 0 && y < Y && word >= 0 && word < wpr) ? plane_bits[y * wpr + word] : 0u;
    }
    __syncthreads();
    // Warp ty turns rows [ty·R, ty·R + R) into dx², R = rows / kWarps (rows = 128 + 2W, W % 8 == 0).
    const int per_warp = rows / kWarps, row0 = ty * per_warp;
    std::uint32_t near_rows = 0;  // bit i: row row0 + i has an E voxel within w of one of its voxels
    // This thread's voxels are staged bits q = 64 + 2·tx and q + 1. Wide: bits q − 63 .. q and
    // q + 1 .. q + 64 lie in the staged words c .. c + 4, each window shifted by e. Narrow: bits
    // q − 31 .. q and q + 1 .. q + 32 in words c .. c + 2.
    const int s0 = kNarrow ? 33 + 2 * tx : 1 + 2 * tx, c = s0 >> 5, e = s0 & 31;
    const std::uint32_t wpair = static_cast<std::uint32_t>(w) * kSplat;
    for (int i = 0; i < per_warp; ++i) {  // warp-uniform
      const int row = row0 + i;
      const std::uint32_t* E = bits + row * kRowWords + c;
      std::uint32_t v = cap, dl0, dr1, bit_q, bit_q1;
      if constexpr (kNarrow) {
        const std::uint32_t e0 = E[0], e1 = E[1], e2 = E[2];
        if (!__any_sync(~0u, (e0 | e1 | e2) != 0)) goto store;  // no E voxel within 32 of the warp's
        // left: bit 31 = q, bit 31 − d = q − d; right: bit 0 = q + 1, bit d = q + 1 + d.
        const std::uint32_t left = __funnelshift_r(e0, e1, e), right = __funnelshift_r(e1, e2, e);
        dl0 = static_cast<std::uint32_t>(__clz(static_cast<int>(left)));           // 32: none
        dr1 = static_cast<std::uint32_t>(__clz(static_cast<int>(__brev(right))));  // 32: none
        bit_q = left >> 31;
        bit_q1 = right & 1u;
      } else {
        const std::uint32_t e0 = E[0], e1 = E[1], e2 = E[2], e3 = E[3], e4 = E[4];
        if (!__any_sync(~0u, (e0 | e1 | e2 | e3 | e4) != 0)) goto store;  // none within 64 of the warp's
        // left: bit 63 = q, bit 63 − d = q − d; right: bit 0 = q + 1, bit d = q + 1 + d.
        const std::uint64_t left = (static_cast<std::uint64_t>(__funnelshift_r(e1, e2, e)) << 32) |
                                   __funnelshift_r(e0, e1, e);
        const std::uint64_t right = (static_cast<std::uint64_t>(__funnelshift_r(e3, e4, e)) << 32) |
                                    __funnelshift_r(e2, e3, e);
        dl0 = static_cast<std::uint32_t>(__clzll(static_cast<long long>(left)));  // 64: none
        dr1 = static_cast<std::uint32_t>(__clzll(static_cast<long long>(__brevll(right))));
        bit_q = static_cast<std::uint32_t>(left >> 63);
        bit_q1 = static_cast<std::uint32_t>(right) & 1u;
      }
      {
        const std::uint32_t dl1 = bit_q1 ? 0 : dl0 + 1;  // nearest left of q + 1
        const std::uint32_t dr0 = bit_q ? 0 : dr1 + 1;   // nearest right of q
        const std::uint32_t dx = __vminu2(dl0 | (dl1 << 16), dr0 | (dr1 << 16));  // ≤ 65 each
        const std::uint32_t within = __vcmpleu2(dx, wpair);
        const std::uint32_t lo = dx & 0xFFFFu, hi = dx >> 16;
        v = ((lo * lo + ((hi * hi) << 16)) & within) | (cap & ~within);
      }
    store:
      near_rows |= (__any_sync(~0u, v != cap) ? 1u : 0u) << i;
      win[row * 32 + tx] = v;
    }
    if (tx == 0 && near_rows) {  // per_warp ≤ 16: the rows span at most two words
      atomicOr(&flagged[row0 >> 5], near_rows << (row0 & 31));
      if ((row0 & 31) + per_warp > 32) atomicOr(&flagged[(row0 >> 5) + 1], near_rows >> (32 - (row0 & 31)));
    }
    const bool any = __syncthreads_or(near_rows != 0) != 0;
    std::uint32_t acc[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) acc[k] = cap;
    // Exact minima stop early: once acc ≤ d² of the next offsets, none of them lowers it. Rows
    // without E within w hold cap in every lane, which lowers nothing.
    const int base = W + ty * kItems;
    if (any)
      window_min(
          win + base * 32 + tx, W, acc,
          [&](int j) {
            const int a = base + j;  // ≥ 0, and a + 14 < rows
            return (__funnelshift_r(flagged[a >> 5], flagged[(a >> 5) + 1], a & 31) & ((1u << kRing) - 1)) != 0;
          },
          [&](int next) {
            bool all = true;
#pragma unroll
            for (int k = 0; k < kItems; ++k)
              all = all && __vcmpleu2(acc[k], static_cast<std::uint32_t>(next * next) * kSplat) == ~0u;
            return __all_sync(~0u, all);
          });
    if (x < X) {
      std::uint32_t* out = rho + z * plane_pairs + (static_cast<std::int64_t>(y0 + ty * kItems) * X + x) / 2;
      auto reach_pair = [&](std::uint32_t a) {
        return static_cast<std::uint32_t>(static_cast<std::uint16_t>(reach[a & 0xFFFFu])) |
               (static_cast<std::uint32_t>(static_cast<std::uint16_t>(reach[a >> 16])) << 16);
      };
      const int stride = X / 2, items = Y - (y0 + ty * kItems);
      if (items >= kItems) {
#pragma unroll
        for (int k = 0; k < kItems; ++k) out[k * stride] = reach_pair(acc[k]);
      } else {
#pragma unroll
        for (int k = 0; k < kItems; ++k)
          if (k < items) out[k * stride] = reach_pair(acc[k]);
      }
    }
    __syncthreads();  // the next tile overwrites the window and the flags
  }
}

/// z pass and count over the counted planes [zc0, zc1): one thread per voxel pair (x, x + 1) of a
/// row y, walking its column once upward. At plane z' the upward reach R(z') = max(R(z' − 1) − 1,
/// ρ(z')) says whether z' is covered from below, and ρ(z') covers the planes z' − ρ .. z' − 1 from
/// above: both go into a history of bits (bit j: plane z' − j, History: u32 for w < 32, else
/// u64). Plane z' − w is then decided (no centre further than w reaches it), counted if in P.
template <class History>
__global__ __launch_bounds__(kSweepThreads, 3) void ball_z_sweep_kernel(const std::uint32_t* rho,
                                                                     const std::uint32_t* pbits, int X, int Y, int Z,
                                                                     int wpr, int zc0, int zc1, int w,
                                                                     std::int32_t* size_map, int n,
                                                                     unsigned long long* count) {
  __shared__ unsigned long long partial[kSweepThreads / 32];
  const int pairs = X / 2;
  const std::int64_t columns = static_cast<std::int64_t>(pairs) * Y;
  const int plane_pairs = Y * (X / 2), plane_words = Y * wpr;  // < 2^31 (ball_shell_applies)
  // Planes z' walked: [z_begin, z_stop); those from out_begin decide plane z' − w; ρ exists below Z.
  const int z_begin = zc0 - w < 0 ? 0 : zc0 - w, out_begin = zc0 + w, z_stop = zc1 + w;
  const int z_valid = Z < z_stop ? Z : z_stop;
  unsigned long long c = 0;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kSweepThreads + threadIdx.x; t < columns;
       t += static_cast<std::int64_t>(gridDim.x) * kSweepThreads) {
    const int x = 2 * static_cast<int>(t % pairs), y = static_cast<int>(t / pairs);
    const int shift = x & 31;
    const std::uint32_t* col = rho + (static_cast<std::int64_t>(y) * X + x) / 2;        // plane 0
    const std::uint32_t* pcol = pbits + static_cast<std::int64_t>(y) * wpr + (x >> 5);  // plane 0
    std::uint32_t R = kMinus1;
    History h0 = 0, h1 = 0;
    // kBatch planes from zb, loads first. Outputs: whether any of them decides a plane; Checked:
    // per plane bounds (a batch across out_begin or z_valid, or the last one), else none needed.
    auto batch = [&](int zb, auto outputs, auto checked) {
      constexpr bool kOutputs = decltype(outputs)::value, kChecked = decltype(checked)::value;
      std::uint32_t v[kBatch], pw[kBatch];
      const std::uint32_t* vp = col + static_cast<std::int64_t>(zb) * plane_pairs;
      const std::uint32_t* pp = pcol + static_cast<std::int64_t>(zb - w) * plane_words;
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int z = zb + j;
        v[j] = !kChecked || z < z_valid ? vp[j * plane_pairs] : kMinus1;
        if constexpr (kOutputs) pw[j] = !kChecked || (z >= out_begin && z < z_stop) ? pp[j * plane_words] >> shift : 0u;
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        R = __viaddmax_s16x2(R, kMinus1, v[j]);
        const std::uint32_t reach = __vmaxs2(v[j], 0u);  // −1 (no centre) → 0: covers nothing below
        h0 = (h0 << 1) | ((History{2} << (reach & 0xFFFFu)) - 2) | ((~R >> 15) & 1u);
        h1 = (h1 << 1) | ((History{2} << (reach >> 16)) - 2) | (~R >> 31);
        if constexpr (kOutputs) {
          const std::uint32_t f0 = static_cast<std::uint32_t>(h0 >> w) & pw[j] & 1u;
          const std::uint32_t f1 = static_cast<std::uint32_t>(h1 >> w) & (pw[j] >> 1) & 1u;
          c += f0 + f1;
          if (size_map && (f0 | f1)) {
            std::int32_t* m = size_map + (static_cast<std::int64_t>(zb + j - w - zc0) * Y + y) * X + x;
            if (f0) m[0] = n;
            if (f1) m[1] = n;
          }
        }
      }
    };
    using yes = std::true_type;
    using no = std::false_type;
    for (int zb = z_begin; zb < z_stop; zb += kBatch) {
      const bool full = zb + kBatch <= z_valid;
      if (full && zb + kBatch <= out_begin) batch(zb, no{}, no{});
      else if (full && zb >= out_begin) batch(zb, yes{}, no{});
      else batch(zb, yes{}, yes{});
    }
  }
  for (int s = 16; s > 0; s /= 2) c += __shfl_down_sync(~0u, c, s);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long total = 0;
    for (int i = 0; i < kSweepThreads / 32; ++i) total += partial[i];
    if (total) atomicAdd(count, total);
  }
}

/// Row pass of the bounded ball distance: f ← the squared distance along x to the nearest
/// background voxel of the row (0 on background), 0xFFFF where none lies within 63 (voxels outside
/// the row are not background). One warp per word of 32 voxels, from the foreground bits of the
/// row and its two words on each side.
__global__ __launch_bounds__(256) void ball_row_distance_kernel(const std::uint32_t* fbits, std::uint16_t* f,
                                                                std::int64_t rows, int X, int wpr) {
  const int lane = threadIdx.x & 31;
  const std::int64_t tasks = rows * wpr, warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + (threadIdx.x >> 5); t < tasks;
       t += warps) {
    const std::int64_t row = t / wpr;
    const int word = static_cast<int>(t - row * wpr);
    std::uint32_t mine = 0;  // lane j < 5: background bits of word word − 2 + j, 0 outside the row
    const int wj = word - 2 + lane;
    if (lane < 5 && wj >= 0 && wj < wpr) {
      const int valid = X - 32 * wj;
      mine = ~fbits[row * wpr + wj] & (valid >= 32 ? ~0u : (1u << valid) - 1);
    }
    std::uint32_t W[5];
#pragma unroll
    for (int j = 0; j < 5; ++j) W[j] = __shfl_sync(~0u, mine, j);
    // left: bits x − 63 .. x (bit 63 = x), from word (lane + 1) / 32 of W; right: bits x .. x + 63.
    const int c = (lane + 1) >> 5, e = (lane + 1) & 31;
    const std::uint32_t l0 = c ? W[1] : W[0], l1 = c ? W[2] : W[1], l2 = c ? W[3] : W[2];
    const std::uint64_t left = (static_cast<std::uint64_t>(__funnelshift_r(l1, l2, e)) << 32) | __funnelshift_r(l0, l1, e);
    const std::uint64_t right =
        (static_cast<std::uint64_t>(__funnelshift_r(W[3], W[4], lane)) << 32) | __funnelshift_r(W[2], W[3], lane);
    const int dl = __clzll(static_cast<long long>(left)), dr = __clzll(static_cast<long long>(__brevll(right)));
    const int dx = dl < dr ? dl : dr;  // 64: none within 63
    const int x = 32 * word + lane;
    if (x < X) f[row * X + x] = static_cast<std::uint16_t>(dx < 64 ? dx * dx : 0xFFFF);
  }
}

/// L ← 0 where D = 0, else min(255, ⌈√D⌉): the levels of the erosion distances.
__global__ void ball_levels_kernel(const std::uint16_t* D, std::uint8_t* L, std::int64_t voxels) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < voxels;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int v = D[i];
    int q = static_cast<int>(sqrtf(static_cast<float>(v)));
    while (q * q < v) ++q;
    while (q > 0 && (q - 1) * (q - 1) >= v) --q;
    L[i] = static_cast<std::uint8_t>(q < 255 ? q : 255);
  }
}

/// Blocks that fill the GPU once (the kernels loop over their tiles; weft::resident_blocks asks
/// the device once per kernel, device, block size and shared memory).
template <class Kernel>
unsigned resident_grid(Kernel kernel, int threads, std::size_t shared, std::int64_t tiles) {
  const std::int64_t resident = weft::resident_blocks(kernel, threads, shared);
  return static_cast<unsigned>(tiles < 1 ? 1 : (tiles < resident ? tiles : resident));
}

/// ball_pack_kernel over the rows of d from `source` (u8 levels or u16 distances), vectorised
/// where X is a multiple of the 16-byte vector and `source` is aligned to it; rows [row0, row1)
/// are counted.
template <class T>
void launch_pack(const T* source, const VolumeDims& d, std::uint32_t thr, unsigned row0, unsigned row1,
                 std::uint32_t* ebits, std::uint32_t* pbits, std::int32_t* size_map, int n, unsigned long long* count,
                 cudaStream_t stream) {
  const int X = static_cast<int>(d.x), wpr = static_cast<int>(ceil_div(X, 32));
  const std::int64_t rows = d.z * d.y;
  const bool vector = X % (16 / sizeof(T)) == 0 && reinterpret_cast<std::uintptr_t>(source) % 16 == 0;
  auto* kernel = vector ? ball_pack_kernel<T, true> : ball_pack_kernel<T, false>;
  // Resident blocks looping over the runs (one block per 8 runs cost more in block launches
  // than the loads took: 0.75 ms per 1024³ pack of u8 levels).
  const std::int64_t blocks = ceil_div(rows * ceil_div(X, 1024), kPackThreads / 32);
  kernel<<<resident_grid(kernel, kPackThreads, 0, blocks), kPackThreads, 0, stream>>>(
      source, static_cast<unsigned>(rows), X, wpr, thr, row0, row1, ebits, pbits, size_map, n, count);
  check_launch("ball_pack_kernel", stream);
}

}  // namespace

bool ball_row_distance_applies(const VolumeDims& d) {
  constexpr std::int64_t kMax = std::int64_t{1} << 31;
  return d.x >= 32 && d.x < kMax && d.z * d.y < kMax && d.z * d.y * ceil_div(d.x, 1024) < kMax;
}

void launch_ball_row_distance(const std::uint8_t* mask, std::uint16_t* f, void* bits, const VolumeDims& d,
                              cudaStream_t stream) {
  if (!ball_row_distance_applies(d))
    throw ConfigError("ball row distance: needs X >= 32, got X = " + std::to_string(d.x));
  if (d.voxels() == 0) return;
  const int X = static_cast<int>(d.x), wpr = static_cast<int>(ceil_div(X, 32));
  const std::int64_t rows = d.z * d.y;
  auto* fbits = static_cast<std::uint32_t*>(bits);
  // E = {mask > 0} is the foreground; P = {0 < mask ≤ 0} is empty, written after it.
  launch_pack(mask, d, 0u, 0u, 0u, fbits, fbits + rows * wpr, nullptr, 0, nullptr, stream);
  ball_row_distance_kernel<<<resident_grid(ball_row_distance_kernel, 256, 0, ceil_div(rows * wpr, 8)), 256, 0,
                             stream>>>(fbits, f, rows, X, wpr);
  check_launch("ball_row_distance_kernel", stream);
}

void launch_ball_levels(const std::uint16_t* distance16, std::uint8_t* levels, std::int64_t voxels,
                        cudaStream_t stream) {
  if (voxels <= 0) return;
  const std::int64_t blocks = ceil_div(voxels, 256);
  ball_levels_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(distance16, levels,
                                                                                             voxels);
  check_launch("ball_levels_kernel", stream);
}

bool ball_shell_applies(const VolumeDims& d, std::int64_t r, std::int64_t count_first, std::int64_t count_voxels) {
  const std::int64_t plane = d.y * d.x;
  if (r < 0 || window_radius(r) > 63 || d.x % 2 != 0 || d.x < 32 || plane <= 0 || count_first % plane != 0 ||
      count_voxels % plane != 0)
    return false;
  // The pack loops over runs with 32-bit indices (t += gridDim stays below 2^32), the y pass counts
  // its (plane, tile) items in 32 bits: every count, padded tiles included, below 2^31.
  constexpr std::int64_t kMax = std::int64_t{1} << 31;
  const std::int64_t x_tiles = ceil_div(d.x, kTileX);
  // The z pass offsets a batch's loads by j · plane / 2 in 32 bits.
  return d.x < kMax && d.y < kMax && d.z < kMax && plane * kBatch < kMax && d.z * d.y * ceil_div(d.x, 1024) < kMax &&
         x_tiles * ceil_div(d.y, kTile) * d.z < kMax;
}

void launch_ball_shell_opening_count(const std::uint16_t* distance16, const std::uint8_t* levels, std::int64_t r,
                                     void* work, const VolumeDims& d,
                                     std::int32_t* size_map, int n, std::int64_t count_first,
                                     std::int64_t count_voxels, unsigned long long* count, cudaStream_t stream) {
  if (!ball_shell_applies(d, r, count_first, count_voxels))
    throw ConfigError("ball shell opening: needs an even X >= 32, whole counted planes and sqrt(r) < 64, got X = " +
                      std::to_string(d.x) + ", r = " + std::to_string(r));
  if (d.voxels() == 0 || count_voxels == 0) return;
  const int w = window_radius(r), W = (w + 1 + 7) / 8 * 8;
  const int X = static_cast<int>(d.x), Y = static_cast<int>(d.y), Z = static_cast<int>(d.z);
  const int wpr = static_cast<int>(ceil_div(X, 32));
  const std::int64_t rows = d.z * d.y, voxels = d.voxels();
  // work (4 bytes per voxel): ρ (s16), then E and P bits at a 16-byte boundary
  // (2 · rows · wpr words ≤ voxels / 2 bytes for X ≥ 32), then the y pass's item counter.
  auto* base = static_cast<std::uint8_t*>(work);
  auto* rho = reinterpret_cast<std::uint32_t*>(base);
  auto* ebits = reinterpret_cast<std::uint32_t*>(base + (2 * voxels + 15) / 16 * 16);
  auto* pbits = ebits + rows * wpr;
  auto* next_item = reinterpret_cast<unsigned*>(pbits + rows * wpr);
  const std::int64_t plane = d.y * d.x;
  const int zc0 = static_cast<int>(count_first / plane), zc1 = static_cast<int>((count_first + count_voxels) / plane);
  const unsigned row0 = static_cast<unsigned>(zc0 * d.y), row1 = static_cast<unsigned>(zc1 * d.y);
  if (levels && static_cast<std::int64_t>(w) * w == r)  // E = {D > w²} = {⌈√D⌉ > w}: half the bytes
    launch_pack(levels, d, static_cast<std::uint32_t>(w), row0, row1, ebits, pbits, size_map, n, count, stream);
  else
    launch_pack(distance16, d, static_cast<std::uint32_t>(r), row0, row1, ebits, pbits, size_map, n, count, stream);
  static_assert(static_cast<std::size_t>(kMaxRows) * (32 + kRowWords) * 4 + (64 * 64 + 1) * 2 + 64 <= 48 * 1024,
                "the y pass's window, bits, reach table and flags fit a block's default 48 KiB");
  // (12 lines per thread, fewer halo rows per output at 2 blocks an SM: 35 % slower on an H200,
  // and its first version failed BallShellMatchesCpu; not kept.)
  const std::size_t y_shared = static_cast<std::size_t>(kTile + 2 * W) * (32 + kRowWords) * sizeof(std::uint32_t);
  auto* y_kernel = w < 32 ? ball_y_kernel<true> : ball_y_kernel<false>;
  const dim3 block(32, kWarps);
  // As many blocks as are resident at once, taking the (plane, tile) items from next_item.
  const std::int64_t items = ceil_div(X, kTileX) * ceil_div(Y, kTile) * d.z;
  WEFT_CUDA_CHECK(cudaMemsetAsync(next_item, 0, sizeof(unsigned), stream));
  y_kernel<<<resident_grid(y_kernel, 32 * kWarps, y_shared, items), block, y_shared, stream>>>(
      ebits, rho, X, Y, Z, wpr, w, static_cast<int>(r), W, next_item);
  check_launch("ball_y_kernel", stream);
  const std::int64_t columns = d.x / 2 * d.y;
  auto* z_kernel = w < 32 ? ball_z_sweep_kernel<std::uint32_t> : ball_z_sweep_kernel<std::uint64_t>;
  z_kernel<<<resident_grid(z_kernel, kSweepThreads, 0, ceil_div(columns, kSweepThreads)), kSweepThreads, 0, stream>>>(
      rho, pbits, X, Y, Z, wpr, zc0, zc1, w, size_map, n, count);
  check_launch("ball_z_sweep_kernel", stream);
}

}  // namespace weft::morphology::cuda
