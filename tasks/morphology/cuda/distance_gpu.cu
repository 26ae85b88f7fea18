// CUDA distance transforms: x-rows by block scans (nearest seed left and right), y- and z-lines
// one thread each with the per-line math shared with the CPU (line_transforms.hpp).
// Erosion distances are i32; the per-size dilations of octahedra and cubes run on u16 (half the
// traffic), cubes as three separable window passes without envelope stacks.
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <string>
#include <type_traits>

#include "distance_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology::cuda {
namespace device {

using weft::morphology::device::kInfinity;

struct MaxOp {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};
struct MinOp {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

/// What a column pass does to each line.
enum class LineOp : int { cone, window, parabola, chessboard };

/// kWithin: the rule is SeedRule::within (a compile-time choice: a run-time test of it in every
/// x pass made the cubes' whole-volume openings 7 % slower, 2.199 -> 2.351 s at 2048^3 on an H200).
template <bool kWithin = false>
__device__ __forceinline__ bool is_seed(const SeedRule& s, std::int64_t i) {
  if constexpr (kWithin) return s.within[i] <= s.above;
  if (s.mask) return s.mask[i] == 0;
  if (s.distance8) return s.distance8[i] > s.above;
  if (s.distance16) return s.distance16[i] > s.above;
  return s.distance[i] > s.above;
}

template <class T>
__device__ __forceinline__ T saturate(std::int64_t d, T inf) {
  return d >= static_cast<std::int64_t>(inf) ? inf : static_cast<T>(d);
}

/// One x-row: f[i] = |i − nearest seed| (squared for balls), `inf` if the row has no seed. The
/// forward scan stores the distance to the nearest seed on the left, the backward scan combines
/// it with the nearest seed on the right.
template <class Policy, class Scan, class T, bool kWithin = false>
__device__ void row_distance_tile(const SeedRule& seeds, std::int64_t first, int n, bool squared, T inf, T* f,
                                  typename Scan::TempStorage& temp) {
  constexpr int kTile = Policy::kRowThreads * Policy::kRowItems;
  int carry = -kInfinity;
  for (int base = 0; base < n; base += kTile) {
    int items[Policy::kRowItems];
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int i = base + threadIdx.x * Policy::kRowItems + j;
      items[j] = (i < n && is_seed<kWithin>(seeds, first + i)) ? i : -kInfinity;
    }
    int aggregate = 0;
    Scan(temp).InclusiveScan(items, items, MaxOp{}, aggregate);
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int i = base + threadIdx.x * Policy::kRowItems + j;
      const int left = items[j] > carry ? items[j] : carry;
      if (i < n) f[first + i] = left > -kInfinity ? saturate<T>(i - left, inf) : inf;
    }
    carry = aggregate > carry ? aggregate : carry;
    __syncthreads();
  }
  carry = kInfinity;
  for (int base = 0; base < n; base += kTile) {
    int items[Policy::kRowItems];
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int q = base + threadIdx.x * Policy::kRowItems + j;
      const int i = n - 1 - q;
      items[j] = (q < n && is_seed<kWithin>(seeds, first + i)) ? i : kInfinity;
    }
    int aggregate = 0;
    Scan(temp).InclusiveScan(items, items, MinOp{}, aggregate);
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int q = base + threadIdx.x * Policy::kRowItems + j;
      if (q >= n) continue;
      const int i = n - 1 - q;
      const int right = items[j] < carry ? items[j] : carry;
      const T left = f[first + i];
      std::int64_t d = left >= inf ? std::int64_t{kInfinity} : static_cast<std::int64_t>(left);
      if (right < kInfinity && right - i < d) d = right - i;
      f[first + i] = d >= static_cast<std::int64_t>(inf) ? inf : saturate<T>(squared ? d * d : d, inf);
    }
    carry = aggregate < carry ? aggregate : carry;
    __syncthreads();
  }
}

/// One y- or z-line.
template <LineOp Op, class T>
__device__ __forceinline__ void column_line(T* line, std::int64_t stride, int n, T inf, std::int64_t r,
                                            void* stack_storage, std::int64_t l, std::int64_t lines) {
  T* stacks = static_cast<T*>(stack_storage);  // positions and values, both of type T
  namespace line_math = weft::morphology::device;
  if constexpr (Op == LineOp::cone) {
    line_math::cone_line(line, stride, n, inf);
  } else if constexpr (Op == LineOp::window) {
    line_math::window_line(line, stride, n, inf, r);
  } else if constexpr (Op == LineOp::parabola) {
    line_math::envelope_line<line_math::Parabola>(line, stride, n, inf, stacks + l, stacks + lines * n + l,
                                                  stacks + 2 * lines * n + l, lines);
  } else {
    line_math::envelope_line<line_math::Chessboard>(line, stride, n, inf, stacks + l, stacks + lines * n + l,
                                                    stacks + 2 * lines * n + l, lines);
  }
}

/// One tile of a windowed parabola pass: kWindowX lines (consecutive x) × kTile outputs along
/// them. The window rows [first, first + kTile + 2w) are staged in shared memory (positions
/// outside the line read as "no seed"); a tile whose inputs are all > r writes r + 1 without
/// computing. Each thread keeps kWindowItems running minima in registers.
template <class Policy>
__device__ void parabola_window_tile(const std::uint16_t* in, std::uint16_t* out, std::int64_t base, bool x_in,
                                     std::int64_t stride, int length, int tile_first, int w, int r,
                                     std::uint16_t* window) {
  constexpr int kItems = Policy::kWindowItems;
  constexpr int kWidth = Policy::kWindowX;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int first = tile_first - w;  // line position of window row 0
  const int rows = Policy::kWindowY * kItems + 2 * w;
  int near = 0;
  for (int row = ty; row < rows; row += Policy::kWindowY) {
    const int p = first + row;
    std::uint16_t v = 0xFFFF;
    if (x_in && p >= 0 && p < length) v = in[base + p * stride];
    window[row * kWidth + tx] = v;
    near |= static_cast<int>(v) <= r;
  }
  const bool any = __syncthreads_or(near) != 0;
  int acc[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) acc[k] = r + 1;
  if (any) {
    // Output k of this thread sits at window row ty·kItems + k + w; offset d reads row + d.
    const std::uint16_t* column = window + (ty * kItems) * kWidth + tx;
    for (int d = -w; d <= w; ++d) {
      const int dd = d * d;
      const std::uint16_t* at = column + (d + w) * kWidth;
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int v = static_cast<int>(at[k * kWidth]) + dd;
        acc[k] = v < acc[k] ? v : acc[k];
      }
    }
  }
  if (x_in) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int p = tile_first + ty * kItems + k;
      if (p < length) out[base + p * stride] = static_cast<std::uint16_t>(acc[k]);
    }
  }
  __syncthreads();  // the next tile overwrites the window
}

/// Lane arithmetic of the packed window tiles (32-bit words of several voxels along x).
/// Parabola: u16x2, step acc ← min(acc, v + d²) (__viaddmin_u16x2, a DPX instruction on sm_90).
struct ParabolaPairs {
  static constexpr int kLanes = 2;
  static constexpr std::uint32_t kSplat = 0x10001u;
  __device__ static std::uint32_t clamp(std::uint32_t v, std::uint32_t cap) { return __vminu2(v, cap); }
  __device__ static bool any_within(std::uint32_t v, int r) {
    return static_cast<int>(v & 0xFFFFu) <= r || static_cast<int>(v >> 16) <= r;
  }
  __device__ static std::uint32_t offset(int d) { return static_cast<std::uint32_t>(d * d) * kSplat; }
  __device__ static std::uint32_t step(std::uint32_t v, std::uint32_t off, std::uint32_t acc) {
    return __viaddmin_u16x2(v, off, acc);
  }
};
/// Chessboard: u8x4, step acc ← min(acc, max(v, |d|)).
struct ChessboardQuads {
  static constexpr int kLanes = 4;
  static constexpr std::uint32_t kSplat = 0x01010101u;
  __device__ static std::uint32_t clamp(std::uint32_t v, std::uint32_t cap) { return __vminu4(v, cap); }
  __device__ static bool any_within(std::uint32_t v, int r) {
    return __vcmpleu4(v, static_cast<std::uint32_t>(r) * kSplat) != 0;
  }
  __device__ static std::uint32_t offset(int d) { return static_cast<std::uint32_t>(d < 0 ? -d : d) * kSplat; }
  __device__ static std::uint32_t step(std::uint32_t v, std::uint32_t off, std::uint32_t acc) {
    return __vminu4(acc, __vmaxu4(v, off));
  }
};

/// Voxels per thread along x: 1 for the scalar tile (Ops = void), else the word's lanes.
template <class Ops>
constexpr int lanes_of() {
  if constexpr (std::is_void_v<Ops>) return 1;
  else return Ops::kLanes;
}

/// The same tile on words of Ops::kLanes consecutive x (X a multiple of the lanes): values are
/// clamped to r + 1 on load and each step is one add+min (or max+min) of all lanes. Offsets run
/// in blocks of 8 over a register ring of 16 window rows (one shared load per 8 steps); the
/// padding offsets beyond w contribute values > r, which leaves every minimum ≤ r unchanged and
/// every other one > r. The caller keeps the lanes from wrapping: r + 1 + (w + 7)² < 65536
/// (parabola), w + 7 < 256 and r < 255 (chessboard).
template <class Policy, class Ops>
__device__ void window_tile_packed(const std::uint32_t* in, std::uint32_t* out, std::int64_t base, bool x_in,
                                   std::int64_t stride, int length, int tile_first, int w, int r,
                                   std::uint32_t* window) {
  constexpr int kItems = Policy::kWindowItems;
  constexpr int kWidth = Policy::kWindowX;  // words per window row
  constexpr int kLanes = Ops::kLanes;
  static_assert(kItems == 8, "the offset loop works in blocks of 8");
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int steps = (2 * w + 1 + 7) / 8 * 8;  // offsets d = i − w, i < steps
  const int rows = Policy::kWindowY * kItems + steps;
  const int first = tile_first - w;
  const std::uint32_t cap = static_cast<std::uint32_t>(r + 1) * Ops::kSplat;
  int near = 0;
  for (int row = ty; row < rows; row += Policy::kWindowY) {
    const int p = first + row;
    std::uint32_t v = cap;
    if (x_in && p >= 0 && p < length) v = Ops::clamp(in[(base + p * stride) / kLanes], cap);
    window[row * kWidth + tx] = v;
    near |= Ops::any_within(v, r);
  }
  const bool any = __syncthreads_or(near) != 0;
  std::uint32_t acc[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) acc[k] = cap;
  if (any) {
    const std::uint32_t* column = window + (ty * kItems) * kWidth + tx;  // ring row j = column row i0 + j
    std::uint32_t ring[2 * kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) ring[kItems + j] = column[j * kWidth];
    for (int i0 = 0; i0 < steps; i0 += kItems) {
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        ring[j] = ring[kItems + j];
        ring[kItems + j] = column[(i0 + kItems + j) * kWidth];
      }
#pragma unroll
      for (int di = 0; di < kItems; ++di) {
        const std::uint32_t off = Ops::offset(i0 + di - w);
#pragma unroll
        for (int k = 0; k < kItems; ++k) acc[k] = Ops::step(ring[di + k], off, acc[k]);
      }
    }
  }
  if (x_in) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int p = tile_first + ty * kItems + k;
      if (p < length) out[(base + p * stride) / kLanes] = acc[k];
    }
  }
  __syncthreads();  // the next tile overwrites the window
}

/// One y- or z-line of 4-voxel words (u8 lanes, 255 = unreachable), `n` words `stride` apart: the
/// cone (L1) or window (cube) pass of line_transforms.hpp on four lines at once, with saturating
/// per-byte SIMD. Loads are issued kChunk words ahead of their use (the line is this thread's
/// own), so that each thread keeps several loads in flight.
template <class Policy, LineOp Op>
__device__ __forceinline__ void packed_byte_line(std::uint32_t* line, std::int64_t stride, int n, std::uint32_t r4) {
  constexpr int kChunk = Policy::kPackedChunk;
  constexpr std::uint32_t kOnes = 0x01010101u;
  std::uint32_t run = 0xFFFFFFFFu;
  for (int base = 0; base < n; base += kChunk) {
    std::uint32_t v[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = base + j < n ? line[(base + j) * stride] : 0u;
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      if constexpr (Op == LineOp::cone) {
        run = __vminu4(v[j], __vaddus4(run, kOnes));
      } else {  // window: 0 where v ≤ r, else the distance to the last such voxel
        run = __vaddus4(run, kOnes) & ~__vcmpleu4(v[j], r4);
      }
      v[j] = run;
    }
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (base + j < n) line[(base + j) * stride] = v[j];
  }
  run = 0xFFFFFFFFu;
  for (int top = n - 1; top >= 0; top -= kChunk) {
    std::uint32_t v[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) v[j] = top - j >= 0 ? line[(top - j) * stride] : 0u;
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      if constexpr (Op == LineOp::cone) {
        run = __vminu4(v[j], __vaddus4(run, kOnes));
        v[j] = run;
      } else {
        run = __vaddus4(run, kOnes) & ~__vcmpeq4(v[j], 0u);
        v[j] = __vminu4(v[j], run);
      }
    }
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (top - j >= 0) line[(top - j) * stride] = v[j];
  }
}

}  // namespace device

namespace {

using weft::morphology::device::kInfinity;
using device::LineOp;

template <class Policy, class T, bool kWithin = false>
__global__ __launch_bounds__(Policy::kRowThreads) void row_distance_kernel(SeedRule seeds, T* f, std::int64_t rows,
                                                                          int n, bool squared, T inf) {
  using Scan = cub::BlockScan<int, Policy::kRowThreads>;
  __shared__ typename Scan::TempStorage temp;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    device::row_distance_tile<Policy, Scan, T, kWithin>(seeds, row * n, n, squared, inf, f, temp);
}

/// Lines of the y axis (inner = X, outer = Y·X) or the z axis (inner = Y·X): one thread per line.
template <class Policy, LineOp Op, class T>
__global__ __launch_bounds__(Policy::kColumnThreads) void column_distance_kernel(
    T* f, std::int64_t lines, std::int64_t inner, std::int64_t outer, std::int64_t stride, int n, T inf,
    std::int64_t r, void* stacks) {
  for (std::int64_t l = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += std::int64_t(gridDim.x) * blockDim.x)
    device::column_line<Op>(f + (l / inner) * outer + l % inner, stride, n, inf, r, stacks, l, lines);
}

/// Windowed pass over the lines of one axis: tiles (x tile, line tile, outer index), one per
/// block iteration; element (o, p, x) at o·outer_stride + p·stride + x. Ops = void: scalar u16
/// parabola; otherwise each thread owns a word of Ops::kLanes consecutive x. Outputs positions
/// [line_first, line_first + line_count) of each line (and up to a tile past them), reading the
/// whole line [0, length).
template <class Policy, class Ops>
__global__ __launch_bounds__(Policy::kWindowX * Policy::kWindowY) void window_kernel(
    void* in, void* out, std::int64_t x_size, std::int64_t outer_count, std::int64_t outer_stride,
    std::int64_t stride, int length, int line_first, int line_count, int w, int r) {
  constexpr int kTile = Policy::kWindowY * Policy::kWindowItems;
  constexpr int kPer = device::lanes_of<Ops>();  // voxels per thread along x
  constexpr int kTileX = Policy::kWindowX * kPer;
  extern __shared__ std::uint32_t window_words[];  // window rows of kWindowX u16 or u32 values
  const std::int64_t x_tiles = (x_size + kTileX - 1) / kTileX;
  const std::int64_t line_tiles = (line_count + kTile - 1) / kTile;
  const std::int64_t tiles = x_tiles * line_tiles * outer_count;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t xt = t % x_tiles;
    const std::int64_t rest = t / x_tiles;
    const int lt = static_cast<int>(rest % line_tiles);
    const std::int64_t o = rest / line_tiles;
    const std::int64_t x = xt * kTileX + threadIdx.x * kPer;
    if constexpr (std::is_void_v<Ops>)
      device::parabola_window_tile<Policy>(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(out),
                                           o * outer_stride + x, x < x_size, stride, length, line_first + lt * kTile, w, r,
                                           reinterpret_cast<std::uint16_t*>(window_words));
    else
      device::window_tile_packed<Policy, Ops>(static_cast<const std::uint32_t*>(in),
                                              static_cast<std::uint32_t*>(out), o * outer_stride + x, x < x_size,
                                              stride, length, line_first + lt * kTile, w, r, window_words);
  }
}

/// y or z lines of 4-voxel words (X % 4 == 0): one thread per line of words.
template <class Policy, LineOp Op>
__global__ __launch_bounds__(Policy::kColumnThreads) void packed_byte_column_kernel(
    std::uint32_t* f, std::int64_t lines, std::int64_t inner, std::int64_t outer, std::int64_t stride, int n,
    std::uint32_t r4) {
  for (std::int64_t l = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += std::int64_t(gridDim.x) * blockDim.x)
    device::packed_byte_line<Policy, Op>(f + (l / inner) * outer + l % inner, stride, n, r4);
}

/// The z pass of a cube's opening first, from the erosion's seeds: for the planes [z0, z1) of a
/// box of Z planes, out (those planes only, words of 4 voxels) ← the distance along z to the
/// nearest voxel with d8 > r within the box, saturated at 255 (exact up to r: it reads r planes
/// past either end). `lines`: Y · X / 4 words per plane.
template <class Policy>
__global__ __launch_bounds__(Policy::kColumnThreads) void seed_window_z_kernel(
    const std::uint32_t* __restrict__ d8, std::uint32_t* __restrict__ out, std::int64_t lines, int Z, int z0, int z1,
    int r) {
  constexpr int kChunk = Policy::kPackedChunk;
  constexpr std::uint32_t kOnes = 0x01010101u;
  const std::uint32_t r4 = static_cast<std::uint32_t>(r) * kOnes;
  const int from = z0 - r > 0 ? z0 - r : 0, to = z1 + r < Z ? z1 + r : Z;
  for (std::int64_t l = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint32_t run = 0xFFFFFFFFu;  // forward: planes since the last seed
    for (int base = from; base < z1; base += kChunk) {
      std::uint32_t v[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) v[j] = base + j < z1 ? d8[(base + j) * lines + l] : 0u;
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        run = __vaddus4(run, kOnes) & ~__vcmpgtu4(v[j], r4);
        if (base + j >= z0 && base + j < z1) out[(base + j - z0) * lines + l] = run;
      }
    }
    run = 0xFFFFFFFFu;  // backward: planes to the next seed
    for (int top = to - 1; top >= z0; top -= kChunk) {
      std::uint32_t v[kChunk], o[kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const int z = top - j;
        v[j] = z >= z0 ? d8[z * lines + l] : 0u;
        o[j] = z >= z0 && z < z1 ? out[(z - z0) * lines + l] : 0u;
      }
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const int z = top - j;
        run = __vaddus4(run, kOnes) & ~__vcmpgtu4(v[j], r4);
        if (z >= z0 && z < z1) out[(z - z0) * lines + l] = __vminu4(o[j], run);
      }
    }
  }
}

template <class Policy>
__global__ __launch_bounds__(Policy::kReduceThreads) void clamp_u8_kernel(const std::int32_t* f, std::uint8_t* out,
                                                                         std::int64_t voxels) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<std::uint8_t>(f[i] < 255 ? f[i] : 255);
}

template <class Policy, class T>
__global__ __launch_bounds__(Policy::kReduceThreads) void count_within_kernel(const T* f, std::int64_t voxels,
                                                                             std::int64_t r, std::int32_t* size_map,
                                                                             int n, unsigned long long* count) {
  using Reduce = cub::BlockReduce<unsigned long long, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  unsigned long long c = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (static_cast<std::int64_t>(f[i]) <= r) {
      ++c;
      if (size_map) size_map[i] = n;
    }
  }
  const unsigned long long total = Reduce(temp).Sum(c);
  if (threadIdx.x == 0 && total) atomicAdd(count, total);
}

template <class Policy>
__global__ __launch_bounds__(Policy::kReduceThreads) void count_mask_kernel(const std::uint8_t* mask,
                                                                           std::int64_t voxels,
                                                                           std::int32_t* size_map,
                                                                           unsigned long long* count) {
  using Reduce = cub::BlockReduce<unsigned long long, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  unsigned long long c = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const bool fg = mask[i] != 0;
    c += fg;
    if (size_map) size_map[i] = fg ? 0 : -1;
  }
  const unsigned long long total = Reduce(temp).Sum(c);
  if (threadIdx.x == 0 && total) atomicAdd(count, total);
}

template <class Policy, class T>
__global__ __launch_bounds__(Policy::kReduceThreads) void max_kernel(const T* f, std::int64_t voxels, int* maximum) {
  using Reduce = cub::BlockReduce<int, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  int m = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x)
    m = static_cast<int>(f[i]) > m ? static_cast<int>(f[i]) : m;
  const int best = Reduce(temp).Reduce(m, device::MaxOp{});
  if (threadIdx.x == 0) atomicMax(maximum, best);
}

unsigned grid_for(std::int64_t work, int threads) {
  const std::int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

template <LineOp Op, class T>
void launch_column(T* f, const VolumeDims& d, int axis, T inf, std::int64_t r, void* stacks, cudaStream_t stream) {
  using P = DistancePolicy;
  const std::int64_t lines = axis == 1 ? d.z * d.x : d.y * d.x;
  const std::int64_t inner = axis == 1 ? d.x : d.y * d.x;
  const std::int64_t outer = axis == 1 ? d.y * d.x : 0;
  const std::int64_t stride = axis == 1 ? d.x : d.y * d.x;
  const int n = static_cast<int>(axis == 1 ? d.y : d.z);
  column_distance_kernel<P, Op, T><<<grid_for(lines, P::kColumnThreads), P::kColumnThreads, 0, stream>>>(
      f, lines, inner, outer, stride, n, inf, r, stacks);
  check_launch(axis == 1 ? "column_distance_kernel(y)" : "column_distance_kernel(z)", stream);
}

/// y (axis 1) or z (axis 0) pass on u8 values: words of 4 voxels when X % 4 == 0.
template <LineOp Op>
void launch_byte_column(std::uint8_t* f, const VolumeDims& d, int axis, std::int64_t r, cudaStream_t stream) {
  using P = DistancePolicy;
  if (d.x % 4 != 0) return launch_column<Op, std::uint8_t>(f, d, axis, std::uint8_t{255}, r, nullptr, stream);
  const std::int64_t words_x = d.x / 4;
  const std::int64_t lines = axis == 1 ? d.z * words_x : d.y * words_x;
  const std::int64_t inner = axis == 1 ? words_x : d.y * words_x;
  const std::int64_t outer = axis == 1 ? d.y * words_x : 0;
  const std::int64_t stride = axis == 1 ? words_x : d.y * words_x;
  const int n = static_cast<int>(axis == 1 ? d.y : d.z);
  packed_byte_column_kernel<P, Op><<<grid_for(lines, P::kColumnThreads), P::kColumnThreads, 0, stream>>>(
      reinterpret_cast<std::uint32_t*>(f), lines, inner, outer, stride, n, static_cast<std::uint32_t>(r) * 0x01010101u);
  check_launch(axis == 1 ? "packed_byte_column_kernel(y)" : "packed_byte_column_kernel(z)", stream);
}

template <class T, bool kWithin = false>
void launch_rows(const SeedRule& seeds, T* f, const VolumeDims& d, bool squared, T inf, cudaStream_t stream) {
  using P = DistancePolicy;
  const std::int64_t rows = d.z * d.y;
  row_distance_kernel<P, T, kWithin><<<grid_for(rows, 1), P::kRowThreads, 0, stream>>>(seeds, f, rows, static_cast<int>(d.x),
                                                                              squared, inf);
  check_launch("row_distance_kernel", stream);
}

}  // namespace

/// Launches window_kernel<Ops> over the lines of `axis` with window radius w, outputs on line
/// positions [line_first, line_end) (line_end < 0: the line's end).
template <class Ops>
void launch_window(void* in, void* out, const VolumeDims& d, int axis, int w, std::int64_t r, std::size_t word_bytes,
                   const char* name, cudaStream_t stream, std::int64_t line_first = 0, std::int64_t line_end = -1) {
  using P = DistancePolicy;
  constexpr int kPer = device::lanes_of<Ops>();
  constexpr int kTile = P::kWindowY * P::kWindowItems;
  const std::int64_t outer_count = axis == 1 ? d.z : d.y;
  const std::int64_t outer_stride = axis == 1 ? d.y * d.x : d.x;
  const std::int64_t stride = axis == 1 ? d.x : d.y * d.x;
  const int length = static_cast<int>(axis == 1 ? d.y : d.z);
  if (line_end < 0 || line_end > length) line_end = length;
  line_first = std::clamp<std::int64_t>(line_first, 0, line_end);
  const int count = static_cast<int>(line_end - line_first);
  if (count == 0) return;
  const std::int64_t tiles =
      ((d.x + P::kWindowX * kPer - 1) / (P::kWindowX * kPer)) * ((count + kTile - 1) / kTile) * outer_count;
  const int rows = std::is_void_v<Ops> ? kTile + 2 * w : kTile + (2 * w + 1 + 7) / 8 * 8;
  const std::size_t shared = static_cast<std::size_t>(rows) * P::kWindowX * word_bytes;
  window_kernel<P, Ops><<<grid_for(tiles, 1), dim3(P::kWindowX, P::kWindowY), shared, stream>>>(
      in, out, d.x, outer_count, outer_stride, stride, length, static_cast<int>(line_first), count, w,
      static_cast<int>(r));
  check_launch(name, stream);
}

int window_radius(std::int64_t r) {
  int w = 0;
  while (static_cast<std::int64_t>(w + 1) * (w + 1) <= r) ++w;
  return w;
}

void launch_parabola_window(const std::uint16_t* in, std::uint16_t* out, const VolumeDims& d, int axis,
                            std::int64_t r, cudaStream_t stream, std::int64_t line_first, std::int64_t line_end) {
  using P = DistancePolicy;
  if (r < 0 || r >= 0xFFFF) throw ConfigError("parabola window: r must be in [0, 65535), got " + std::to_string(r));
  const int w = window_radius(r);
  void* src = const_cast<std::uint16_t*>(in);
  const char* name = axis == 1 ? "window_kernel(parabola, y)" : "window_kernel(parabola, z)";
  // Packed pairs need every element offset even (X even: then Y·X and the volume are too).
  if (d.x % 2 == 0 && w <= P::kPackedMaxRadius)
    launch_window<device::ParabolaPairs>(src, out, d, axis, w, r, sizeof(std::uint32_t), name, stream, line_first,
                                         line_end);
  else
    launch_window<void>(src, out, d, axis, w, r, sizeof(std::uint16_t), name, stream, line_first, line_end);
}

/// Chessboard pass on u8 words of 4 voxels (X % 4 == 0), window w = r ≤ kPackedMaxRadius (so
/// that w + 7 < 256 and the window fits 48 KiB of shared memory).
void launch_chessboard_window(const std::uint8_t* in, std::uint8_t* out, const VolumeDims& d, int axis,
                              std::int64_t r, cudaStream_t stream, std::int64_t line_first = 0,
                              std::int64_t line_end = -1) {
  if (d.x % 4 != 0 || r < 0 || r > DistancePolicy::kPackedMaxRadius)
    throw ConfigError("chessboard window: needs X % 4 == 0 and r <= " +
                      std::to_string(DistancePolicy::kPackedMaxRadius) + ", got X = " + std::to_string(d.x) +
                      ", r = " + std::to_string(r));
  launch_window<device::ChessboardQuads>(const_cast<std::uint8_t*>(in), out, d, axis, static_cast<int>(r), r,
                                         sizeof(std::uint32_t),
                                         axis == 1 ? "window_kernel(chessboard, y)" : "window_kernel(chessboard, z)",
                                         stream, line_first, line_end);
}

void launch_distance_transform(const SeedRule& seeds, std::int32_t* f, std::int32_t* stacks, const VolumeDims& d,
                               Element element, cudaStream_t stream) {
  if (d.voxels() == 0) return;
  launch_rows<std::int32_t>(seeds, f, d, element == Element::ball, kInfinity, stream);
  for (int axis = 1; axis >= 0; --axis) {
    if (element == Element::octahedron) launch_column<LineOp::cone, std::int32_t>(f, d, axis, kInfinity, 0, stacks, stream);
    else if (element == Element::ball) launch_column<LineOp::parabola, std::int32_t>(f, d, axis, kInfinity, 0, stacks, stream);
    else launch_column<LineOp::chessboard, std::int32_t>(f, d, axis, kInfinity, 0, stacks, stream);
  }
}

void launch_opening_count(const std::int32_t* distance, const std::uint16_t* distance16,
                          const std::uint8_t* distance8, std::int64_t r, void* work, std::int32_t* stacks,
                          const VolumeDims& d, Element element, std::int32_t* size_map, int n,
                          std::int64_t count_first, std::int64_t count_voxels, unsigned long long* count,
                          cudaStream_t stream, int bit_steps, bool ball_windowed) {
  using P = DistancePolicy;
  if (d.voxels() == 0 || count_voxels == 0) return;
  const SeedRule seeds{nullptr, distance, r};
  const unsigned grid = grid_for(count_voxels, P::kReduceThreads * 8);
  constexpr std::uint16_t kInf = 0xFFFF;
  if (element == Element::ball && r >= kInf) {  // radius ≥ 256: i32 squared distances
    auto* f = static_cast<std::int32_t*>(work);
    launch_distance_transform(seeds, f, stacks, d, element, stream);
    count_within_kernel<P, std::int32_t><<<grid, P::kReduceThreads, 0, stream>>>(f + count_first, count_voxels, r, size_map, n, count);
  } else if (element == Element::ball && distance16 && !ball_windowed &&
             ball_shell_applies(d, r, count_first, count_voxels)) {
    launch_ball_shell_opening_count(distance16, distance8, r, work, d, size_map, n, count_first, count_voxels, count,
                                    stream);
    return;
  } else if (element == Element::ball) {
    // Only squared distances ≤ r = n² matter, so u16 values, and the y and z passes need only the
    // offsets |d| ≤ n: windowed minima in shared memory (no envelope stacks, no divergence),
    // ping-ponging between the two u16 halves of `work`.
    auto* f = static_cast<std::uint16_t*>(work);
    auto* g = f + d.voxels();
    const SeedRule seeds16{nullptr, nullptr, r, nullptr, distance16};
    launch_rows<std::uint16_t>(distance16 ? seeds16 : seeds, f, d, true, kInf, stream);
    launch_parabola_window(f, g, d, 1, r, stream);
    launch_parabola_window(g, f, d, 0, r, stream);
    count_within_kernel<P, std::uint16_t><<<grid, P::kReduceThreads, 0, stream>>>(f + count_first, count_voxels, r, size_map, n, count);
  } else if (element == Element::octahedron && distance8 && bit_octahedron_applies(d, r, size_map != nullptr)) {
    // One bit per voxel, several cross steps per launch, the count fused into the last one.
    launch_bit_octahedron_opening_count(distance8, r, work, d, count_first, count_voxels, count, stream, bit_steps);
    return;
  } else if (element == Element::cube && distance8 && r < 255 && d.x % 4 == 0 && count_voxels < d.voxels() &&
             count_first % (d.y * d.x) == 0 && count_voxels % (d.y * d.x) == 0 && d.z < (1 << 30) &&
             d.y * d.x / 4 < (std::int64_t{1} << 30)) {
    // A slab's box (counted planes ± r): the z pass first, reading D on the box and writing the
    // counted planes only, then y and x on those planes. The cube is separable, so the order of
    // the passes does not change the opening; the order below (x, y, z on the whole box) ran two
    // of its three passes on the 2r planes of halo too.
    const std::int64_t plane = d.y * d.x, z0 = count_first / plane, nz = count_voxels / plane;
    const VolumeDims counted{nz, d.y, d.x};
    auto* f = static_cast<std::uint8_t*>(work);  // work holds 4 bytes per voxel of the box
    auto* g = f + count_voxels;
    const std::int64_t lines = plane / 4;
    seed_window_z_kernel<P><<<grid_for(lines, P::kColumnThreads), P::kColumnThreads, 0, stream>>>(
        reinterpret_cast<const std::uint32_t*>(distance8), reinterpret_cast<std::uint32_t*>(f), lines,
        static_cast<int>(d.z), static_cast<int>(z0), static_cast<int>(z0 + nz), static_cast<int>(r));
    check_launch("seed_window_z_kernel", stream);
    launch_byte_column<LineOp::window>(f, counted, 1, r, stream);
    SeedRule near;  // seeds of the x pass: voxels within r along z and y
    near.within = f;
    near.above = r;
    launch_rows<std::uint8_t, true>(near, g, counted, false, std::uint8_t{255}, stream);
    count_within_kernel<P, std::uint8_t><<<grid, P::kReduceThreads, 0, stream>>>(g, count_voxels, r, size_map, n, count);
  } else if (distance8 && r < 255) {
    // Octahedra and cubes of radius < 255: u8 distances (a quarter of the i32 traffic), seeds
    // read from the u8 copy of D.
    auto* f = static_cast<std::uint8_t*>(work);
    const SeedRule seeds8{nullptr, nullptr, r, distance8};
    launch_rows<std::uint8_t>(seeds8, f, d, false, std::uint8_t{255}, stream);
    for (int axis = 1; axis >= 0; --axis) {
      if (element == Element::octahedron) launch_byte_column<LineOp::cone>(f, d, axis, r, stream);
      else launch_byte_column<LineOp::window>(f, d, axis, r, stream);
    }
    count_within_kernel<P, std::uint8_t><<<grid, P::kReduceThreads, 0, stream>>>(f + count_first, count_voxels, r, size_map, n, count);
  } else {
    auto* f = static_cast<std::uint16_t*>(work);
    launch_rows<std::uint16_t>(seeds, f, d, false, kInf, stream);
    for (int axis = 1; axis >= 0; --axis) {
      if (element == Element::octahedron) launch_column<LineOp::cone, std::uint16_t>(f, d, axis, kInf, r, nullptr, stream);
      else launch_column<LineOp::window, std::uint16_t>(f, d, axis, kInf, r, nullptr, stream);
    }
    count_within_kernel<P, std::uint16_t><<<grid, P::kReduceThreads, 0, stream>>>(f + count_first, count_voxels, r, size_map, n, count);
  }
  check_launch("count_within_kernel", stream);
}

void launch_count_mask(const std::uint8_t* mask, std::int64_t voxels, std::int32_t* size_map,
                       unsigned long long* count, cudaStream_t stream) {
  using P = DistancePolicy;
  count_mask_kernel<P><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(mask, voxels,
                                                                                                 size_map, count);
  check_launch("count_mask_kernel", stream);
}

void launch_clamp_u8(const std::int32_t* f, std::uint8_t* out, std::int64_t voxels, cudaStream_t stream) {
  using P = DistancePolicy;
  clamp_u8_kernel<P><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(f, out, voxels);
  check_launch("clamp_u8_kernel", stream);
}

void launch_max(const std::int32_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream) {
  using P = DistancePolicy;
  max_kernel<P, std::int32_t><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(f, voxels,
                                                                                                        maximum);
  check_launch("max_kernel", stream);
}

void launch_max_u16(const std::uint16_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream) {
  using P = DistancePolicy;
  max_kernel<P, std::uint16_t><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(
      f, voxels, maximum);
  check_launch("max_kernel(u16)", stream);
}

void launch_max_u8(const std::uint8_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream) {
  using P = DistancePolicy;
  max_kernel<P, std::uint8_t><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(
      f, voxels, maximum);
  check_launch("max_kernel(u8)", stream);
}

void launch_clamped_l1_distance(const std::uint8_t* mask, std::uint8_t* out, const VolumeDims& d,
                                cudaStream_t stream) {
  if (d.voxels() == 0) return;
  const SeedRule background{mask, nullptr, 0};
  launch_rows<std::uint8_t>(background, out, d, false, std::uint8_t{255}, stream);
  for (int axis = 1; axis >= 0; --axis) launch_byte_column<LineOp::cone>(out, d, axis, 0, stream);
}

void launch_bounded_chessboard_distance(const std::uint8_t* mask, std::uint8_t* out, std::uint8_t* scratch,
                                        const VolumeDims& d, std::int64_t bound, cudaStream_t stream,
                                        std::int64_t z_first, std::int64_t z_end) {
  if (d.voxels() == 0) return;
  const SeedRule background{mask, nullptr, 0};
  launch_rows<std::uint8_t>(background, out, d, false, std::uint8_t{255}, stream);
  launch_chessboard_window(out, scratch, d, 1, bound, stream);
  launch_chessboard_window(scratch, out, d, 0, bound, stream, z_first, z_end);
}

void launch_bounded_ball_distance(const std::uint8_t* mask, std::uint16_t* out, std::uint16_t* scratch,
                                  const VolumeDims& d, std::int64_t bound, cudaStream_t stream, std::int64_t z_first,
                                  std::int64_t z_end) {
  if (d.voxels() == 0) return;
  if (window_radius(bound) <= 63 && ball_row_distance_applies(d)) {
    // Distances along x beyond 63 exceed the bound: from bits and 64-bit windows (the bits in
    // `out`, which the z pass overwrites last).
    launch_ball_row_distance(mask, scratch, out, d, stream);
  } else {
    const SeedRule background{mask, nullptr, 0};
    launch_rows<std::uint16_t>(background, scratch, d, true, std::uint16_t{0xFFFF}, stream);
  }
  launch_parabola_window(scratch, scratch + d.voxels(), d, 1, bound, stream);
  launch_parabola_window(scratch + d.voxels(), out, d, 0, bound, stream, z_first, z_end);
}

}  // namespace weft::morphology::cuda
