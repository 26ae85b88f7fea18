// Ball openings of radius w = ⌊√r⌋ ≤ 63 from the bounded erosion distances D (u16), three
// launches per size instead of the row pass, two windowed passes and a count:
// 1. pack: E = {D > r} and F = {D > 0} as bits (a ballot per 32 voxels);
// 2. y: per window row, dx = the distance along x to the nearest E voxel of the row (clz / ffs
//    of 64-bit windows of the bits, ≤ w, else none), then g = min over |dy| < W of dx(y + dy)² +
//    dy², capped at r + 1, on u16 pairs, stopping once no further offset can lower a minimum;
// 3. z, counted planes only: a voxel is in the opening iff it is in E, or it is in F and
//    min over |dz| < W of g(z + dz) + dz² ≤ r. Background voxels are never in it (every ball
//    centred in E lies in the foreground), so a warp whose voxels are all in E or background
//    skips the window, a block whose tile has none left skips loading it, and the window runs
//    centre out and stops once every shell voxel of the warp has been found.
// W = ⌈(w + 1) / 8⌉·8: offsets beyond w add more than r (d² ≥ (w + 1)² > r), so they leave every
// minimum ≤ r as it is and every other one > r, which is all the count needs.
#include <cstdint>
#include <string>

#include "distance_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology::cuda {
namespace {

constexpr int kPackThreads = 256;
constexpr int kPackChunks = 8;             // u16 loads per lane in flight before their ballots
constexpr int kWarps = 16;                 // line tiles of kWarps × kItems outputs
constexpr int kItems = 8;                  // consecutive outputs per thread along the line
constexpr int kTile = kWarps * kItems;
constexpr int kTileX = 64;                 // voxels across a tile: 32 lanes × a u16 pair
constexpr int kRowWords = kTileX / 32 + 4;  // bit words of a tile row with 64 bits each side
constexpr int kStage = 8;                  // window rows loaded per thread before they are stored
constexpr std::uint32_t kSplat = 0x10001u;
static_assert(kItems == 8, "the window runs in blocks of 8 offsets");

__host__ __device__ constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// E and F bits of rows of X voxels, ⌈X/32⌉ words a row: one warp per run of 1024 voxels of a
/// row, a ballot per 32 voxels, lane c keeping word c, so that each warp stores its words at once.
__global__ __launch_bounds__(kPackThreads) void ball_pack_kernel(const std::uint16_t* D, unsigned rows, int X,
                                                                 int wpr, std::uint32_t r, std::uint32_t* ebits,
                                                                 std::uint32_t* fbits) {
  const int lane = threadIdx.x & 31;
  const unsigned runs_per_row = static_cast<unsigned>(ceil_div(X, 1024)), tasks = rows * runs_per_row;
  const unsigned warps = gridDim.x * (kPackThreads / 32);
  for (unsigned t = blockIdx.x * (kPackThreads / 32) + (threadIdx.x >> 5); t < tasks; t += warps) {
    const unsigned row = t / runs_per_row;
    const int x0 = static_cast<int>(t % runs_per_row) * 1024;
    const std::uint16_t* src = D + static_cast<std::int64_t>(row) * X;
    std::uint32_t my_e = 0, my_f = 0;
    for (int c0 = 0; c0 < 32; c0 += kPackChunks) {
      std::uint32_t v[kPackChunks];
#pragma unroll
      for (int c = 0; c < kPackChunks; ++c) {
        const int x = x0 + 32 * (c0 + c) + lane;
        v[c] = x < X ? src[x] : 0u;
      }
#pragma unroll
      for (int c = 0; c < kPackChunks; ++c) {
        const std::uint32_t e = __ballot_sync(~0u, v[c] > r), f = __ballot_sync(~0u, v[c] > 0);
        if (lane == c0 + c) {
          my_e = e;
          my_f = f;
        }
      }
    }
    const int word = x0 / 32 + lane;
    if (word < wpr) {
      ebits[static_cast<std::int64_t>(row) * wpr + word] = my_e;
      fbits[static_cast<std::int64_t>(row) * wpr + word] = my_f;
    }
  }
}

/// acc[k] ← min(acc[k], window row (k + d) + d²) over d in [−W, W), centre out in blocks of 8
/// offsets (0..7 and −1..−8 first); `column` is this thread's column at the row of item 0 and
/// offset 0. After each pair of blocks `done(next)` may stop the loop (it must be warp-uniform);
/// the offsets still to come are all at least `next` away.
template <class Done>
__device__ __forceinline__ void window_min(const std::uint32_t* column, int W, std::uint32_t (&acc)[kItems],
                                           Done done) {
  for (int b = 0; b < W; b += 8) {
    std::uint32_t ring[2 * kItems - 1];
#pragma unroll
    for (int j = 0; j < 2 * kItems - 1; ++j) ring[j] = column[(b + j) * 32];
#pragma unroll
    for (int di = 0; di < kItems; ++di) {
      const std::uint32_t off = static_cast<std::uint32_t>((b + di) * (b + di)) * kSplat;
#pragma unroll
      for (int k = 0; k < kItems; ++k) acc[k] = __viaddmin_u16x2(ring[di + k], off, acc[k]);
    }
    // Offsets d = −(b + 1 + di): row k + d = (−b − 8) + (k − di + 7).
#pragma unroll
    for (int j = 0; j < 2 * kItems - 1; ++j) ring[j] = column[(j - b - 8) * 32];
#pragma unroll
    for (int di = 0; di < kItems; ++di) {
      const int dd = b + 1 + di;
      const std::uint32_t off = static_cast<std::uint32_t>(dd * dd) * kSplat;
#pragma unroll
      for (int k = 0; k < kItems; ++k) acc[k] = __viaddmin_u16x2(ring[k - di + 7], off, acc[k]);
    }
    if (done(b + 8)) return;
  }
}

/// y pass: tiles of kTileX x × kTile y of one plane; g (u16 pairs) ← the capped minima. The
/// window rows are first staged as E bits (the tile's two words and two each side), then turned
/// into dx² per voxel.
__global__ __launch_bounds__(32 * kWarps) void ball_y_kernel(const std::uint32_t* ebits, std::uint32_t* g, int X,
                                                             int Y, int Z, int wpr, int w, int r, int W) {
  extern __shared__ std::uint32_t win[];  // (kTile + 2W) rows of 32 words, then their bits
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 32 + tx;
  const unsigned x_tiles = static_cast<unsigned>(ceil_div(X, kTileX)), y_tiles = static_cast<unsigned>(ceil_div(Y, kTile));
  const unsigned tiles = x_tiles * y_tiles * static_cast<unsigned>(Z);
  const std::uint32_t cap1 = static_cast<std::uint32_t>(r + 1), cap = cap1 * kSplat;
  const int rows = kTile + 2 * W;
  std::uint32_t* bits = win + rows * 32;
  for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
    const unsigned xt = t % x_tiles, rest = t / x_tiles;
    const int y0 = static_cast<int>(rest % y_tiles) * kTile;
    const std::int64_t z = rest / y_tiles;
    const int word0 = static_cast<int>(xt) * (kTileX / 32) - 2;
    for (int i = tid; i < rows * kRowWords; i += 32 * kWarps) {
      const int row = i / kRowWords, j = i % kRowWords;
      const int y = y0 - W + row, word = word0 + j;
      bits[i] = (y >= 0 && y < Y && word >= 0 && word < wpr) ? ebits[(z * Y + y) * wpr + word] : 0u;
    }
    __syncthreads();
    int near = 0;
    const int p = 64 + 2 * tx;  // staged bit of this thread's first voxel
    for (int row = ty; row < rows; row += kWarps) {
      const std::uint32_t* E = bits + row * kRowWords;
      std::uint32_t v = 0;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int q = p + h;
        const int s = q - 63, c = s >> 5, e = s & 31;  // bits q − 63 .. q: nearest on the left
        const std::uint64_t left = (static_cast<std::uint64_t>(__funnelshift_r(E[c + 1], E[c + 2], e)) << 32) |
                                   __funnelshift_r(E[c], E[c + 1], e);
        const int cr = q >> 5, er = q & 31;  // bits q .. q + 63: nearest on the right
        const std::uint64_t right = (static_cast<std::uint64_t>(__funnelshift_r(E[cr + 1], E[cr + 2], er)) << 32) |
                                    __funnelshift_r(E[cr], E[cr + 1], er);
        const int dl = __clzll(static_cast<long long>(left));  // 64 if none
        const int dr = right ? __ffsll(static_cast<long long>(right)) - 1 : 64;
        const std::uint32_t dx = static_cast<std::uint32_t>(dl < dr ? dl : dr);
        const bool in = dx <= static_cast<std::uint32_t>(w);
        near |= static_cast<int>(in);
        v |= (in ? dx * dx : cap1) << (16 * h);
      }
      win[row * 32 + tx] = v;
    }
    const bool any = __syncthreads_or(near) != 0;
    std::uint32_t acc[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) acc[k] = cap;
    // Exact minima stop early: once acc ≤ d² of the next offsets, none of them lowers it.
    if (any)
      window_min(win + (W + ty * kItems) * 32 + tx, W, acc, [&](int next) {
        bool all = true;
#pragma unroll
        for (int k = 0; k < kItems; ++k)
          all = all && __vcmpleu2(acc[k], static_cast<std::uint32_t>(next * next) * kSplat) == ~0u;
        return __all_sync(~0u, all);
      });
    const int x = static_cast<int>(xt) * kTileX + 2 * tx;
    if (x < X) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int y = y0 + ty * kItems + k;
        if (y < Y) g[((z * Y + y) * X + x) / 2] = acc[k];
      }
    }
    __syncthreads();  // the next tile overwrites the window
  }
}

/// z pass and count over the counted planes [zc0, zc1): tiles of kTileX x × kTile z of one y.
__global__ __launch_bounds__(32 * kWarps) void ball_z_count_kernel(
    const std::uint32_t* g, const std::uint32_t* ebits, const std::uint32_t* fbits, int X, int Y, int Z, int wpr,
    int zc0, int zc1, int r, int W, std::int32_t* size_map, int n, unsigned long long* count) {
  extern __shared__ std::uint32_t win[];
  __shared__ unsigned long long partial[kWarps];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t plane = static_cast<std::int64_t>(Y) * X;
  const unsigned x_tiles = static_cast<unsigned>(ceil_div(X, kTileX)),
                 z_tiles = static_cast<unsigned>(ceil_div(zc1 - zc0, kTile));
  const unsigned tiles = x_tiles * z_tiles * static_cast<unsigned>(Y);
  const std::uint32_t cap = static_cast<std::uint32_t>(r + 1) * kSplat, rr = static_cast<std::uint32_t>(r) * kSplat;
  const int rows = kTile + 2 * W;
  unsigned long long c = 0;
  for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
    const unsigned xt = t % x_tiles, rest = t / x_tiles;
    const int z0 = zc0 + static_cast<int>(rest % z_tiles) * kTile;
    const int y = static_cast<int>(rest / z_tiles);
    const int x = static_cast<int>(xt) * kTileX + 2 * tx;
    const bool x_in = x < X;
    // Bit 2k + lane: item k (z = z0 + ty·kItems + k), voxel x + lane.
    unsigned found = 0, pending = 0;
    if (x_in) {
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int z = z0 + ty * kItems + k;
        if (z >= zc1) continue;
        const std::int64_t i = (static_cast<std::int64_t>(z) * Y + y) * wpr + (x >> 5);
        const std::uint32_t e = (ebits[i] >> (x & 31)) & 3u, f = (fbits[i] >> (x & 31)) & 3u;
        found |= e << (2 * k);
        pending |= (f & ~e) << (2 * k);
      }
    }
    if (__syncthreads_or(pending != 0)) {
      const std::uint32_t* column = g + (static_cast<std::int64_t>(y) * X + x) / 2;
      for (int row0 = ty; row0 < rows; row0 += kWarps * kStage) {  // kStage loads in flight
        std::uint32_t v[kStage];
#pragma unroll
        for (int i = 0; i < kStage; ++i) {
          const int z = z0 - W + row0 + i * kWarps;
          v[i] = (x_in && row0 + i * kWarps < rows && z >= 0 && z < Z)
                     ? column[static_cast<std::int64_t>(z) * plane / 2] : cap;
        }
#pragma unroll
        for (int i = 0; i < kStage; ++i)
          if (row0 + i * kWarps < rows) win[(row0 + i * kWarps) * 32 + tx] = v[i];
      }
      __syncthreads();
      if (__any_sync(~0u, pending != 0)) {
        std::uint32_t acc[kItems];
#pragma unroll
        for (int k = 0; k < kItems; ++k) acc[k] = cap;
        window_min(win + (W + ty * kItems) * 32 + tx, W, acc, [&](int) {
          unsigned hits = 0;
#pragma unroll
          for (int k = 0; k < kItems; ++k) {
            const std::uint32_t m = __vcmpleu2(acc[k], rr);
            hits |= ((m & 1u) | ((m >> 15) & 2u)) << (2 * k);
          }
          found |= hits & pending;
          pending &= ~hits;
          return !__any_sync(~0u, pending != 0);
        });
      }
      __syncthreads();  // the next tile overwrites the window
    }
    c += static_cast<unsigned>(__popc(found));
    if (size_map && found) {
      for (int k = 0; k < kItems; ++k)
        for (int lane = 0; lane < 2; ++lane)
          if ((found >> (2 * k + lane)) & 1u)
            size_map[static_cast<std::int64_t>(z0 + ty * kItems + k - zc0) * plane + static_cast<std::int64_t>(y) * X +
                     x + lane] = n;
    }
  }
  for (int s = 16; s > 0; s /= 2) c += __shfl_down_sync(~0u, c, s);
  if (tx == 0) partial[ty] = c;
  __syncthreads();
  if (tx == 0 && ty == 0) {
    unsigned long long total = 0;
    for (int i = 0; i < kWarps; ++i) total += partial[i];
    if (total) atomicAdd(count, total);
  }
}

/// Blocks that fill the GPU once (the kernels loop over their tiles).
template <class Kernel>
unsigned resident_grid(Kernel kernel, int threads, std::size_t shared, std::int64_t tiles) {
  int device = 0, sms = 0, per_sm = 0;
  WEFT_CUDA_CHECK(cudaGetDevice(&device));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  WEFT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared));
  const std::int64_t resident = static_cast<std::int64_t>(sms) * (per_sm < 1 ? 1 : per_sm);
  return static_cast<unsigned>(tiles < 1 ? 1 : (tiles < resident ? tiles : resident));
}

}  // namespace

bool ball_shell_applies(const VolumeDims& d, std::int64_t r, std::int64_t count_first, std::int64_t count_voxels) {
  const std::int64_t plane = d.y * d.x;
  if (r < 0 || window_radius(r) > 63 || d.x % 2 != 0 || d.x < 32 || plane <= 0 || count_first % plane != 0 ||
      count_voxels % plane != 0)
    return false;
  // The kernels loop over tiles and runs with 32-bit indices (t += gridDim stays below 2^32):
  // every count, padded tiles included, below 2^31.
  constexpr std::int64_t kMax = std::int64_t{1} << 31;
  const std::int64_t x_tiles = ceil_div(d.x, kTileX);
  return d.x < kMax && d.y < kMax && d.z < kMax && d.z * d.y * ceil_div(d.x, 1024) < kMax &&
         x_tiles * ceil_div(d.y, kTile) * d.z < kMax && x_tiles * ceil_div(d.z, kTile) * d.y < kMax;
}

void launch_ball_shell_opening_count(const std::uint16_t* distance16, std::int64_t r, void* work, const VolumeDims& d,
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
  // work (4 bytes per voxel): g (u16), then E and F bits at a 16-byte boundary
  // (2 · rows · wpr words ≤ voxels / 2 bytes for X ≥ 32).
  auto* base = static_cast<std::uint8_t*>(work);
  auto* g = reinterpret_cast<std::uint32_t*>(base);
  auto* ebits = reinterpret_cast<std::uint32_t*>(base + (2 * voxels + 15) / 16 * 16);
  auto* fbits = ebits + rows * wpr;
  const std::int64_t pack_blocks = ceil_div(rows * ceil_div(X, 1024), kPackThreads / 32);
  ball_pack_kernel<<<static_cast<unsigned>(pack_blocks < (1 << 20) ? pack_blocks : (1 << 20)), kPackThreads, 0,
                     stream>>>(distance16, static_cast<unsigned>(rows), X, wpr, static_cast<std::uint32_t>(r), ebits,
                               fbits);
  check_launch("ball_pack_kernel", stream);
  const std::size_t shared = static_cast<std::size_t>(kTile + 2 * W) * 32 * sizeof(std::uint32_t);
  const std::size_t y_shared = shared + static_cast<std::size_t>(kTile + 2 * W) * kRowWords * sizeof(std::uint32_t);
  const dim3 block(32, kWarps);
  const std::int64_t y_tiles = ceil_div(X, kTileX) * ceil_div(Y, kTile) * d.z;
  ball_y_kernel<<<resident_grid(ball_y_kernel, 32 * kWarps, y_shared, y_tiles), block, y_shared, stream>>>(
      ebits, g, X, Y, Z, wpr, w, static_cast<int>(r), W);
  check_launch("ball_y_kernel", stream);
  const std::int64_t plane = d.y * d.x;
  const int zc0 = static_cast<int>(count_first / plane), zc1 = static_cast<int>((count_first + count_voxels) / plane);
  const std::int64_t z_tiles = ceil_div(X, kTileX) * ceil_div(zc1 - zc0, kTile) * d.y;
  ball_z_count_kernel<<<resident_grid(ball_z_count_kernel, 32 * kWarps, shared, z_tiles), block, shared, stream>>>(
      g, ebits, fbits, X, Y, Z, wpr, zc0, zc1, static_cast<int>(r), W, size_map, n, count);
  check_launch("ball_z_count_kernel", stream);
}

}  // namespace weft::morphology::cuda
