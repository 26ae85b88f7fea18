// Ball openings of radius w = ⌊√r⌋ ≤ 63 from the bounded erosion distances D (u16), three
// launches per size instead of the row pass, two windowed passes and a count:
// 1. rows: E = {D > r} and F = {D > 0} as bits (ballots), and dx = the distance along x to the
//    nearest E voxel of the row (clz / ffs of 64-bit windows of the bits), ≤ w, else 255, as u8;
// 2. y: g = min over |dy| < W of dx(y + dy)² + dy², capped at r + 1, on u16 pairs;
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

constexpr int kRowThreads = 256;
constexpr int kSegment = 1024;  // voxels of a row per block iteration
constexpr int kHaloWords = 2;   // 64 bits each side of the segment: every dx ≤ 63
constexpr int kStaged = kSegment / 32 + 2 * kHaloWords;
constexpr int kWarps = 16;                 // line tiles of kWarps × kItems outputs
constexpr int kItems = 8;                  // consecutive outputs per thread along the line
constexpr int kTile = kWarps * kItems;
constexpr int kTileX = 64;                 // voxels across a tile: 32 lanes × a u16 pair
constexpr std::uint32_t kSplat = 0x10001u;
static_assert(kItems == 8, "the window runs in blocks of 8 offsets");

__host__ __device__ constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Row pass, one block per row (segments of kSegment voxels with 64 bits of halo each side).
__global__ __launch_bounds__(kRowThreads) void ball_row_kernel(const std::uint16_t* D, std::int64_t rows, int X,
                                                               int wpr, std::uint32_t r, int w, std::uint8_t* dx8,
                                                               std::uint32_t* ebits, std::uint32_t* fbits) {
  __shared__ std::uint32_t E[kStaged];
  __shared__ std::uint32_t F[kSegment / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::uint16_t* src = D + row * X;
    for (int seg = 0; seg < X; seg += kSegment) {
      for (int j = warp; j < kStaged; j += kRowThreads / 32) {
        const int q = seg - 32 * kHaloWords + 32 * j + lane;
        const std::uint32_t v = (q >= 0 && q < X) ? src[q] : 0u;
        const std::uint32_t e = __ballot_sync(~0u, v > r);
        const std::uint32_t f = __ballot_sync(~0u, v > 0);
        if (lane == 0) {
          E[j] = e;
          if (j >= kHaloWords && j < kStaged - kHaloWords) F[j - kHaloWords] = f;
        }
      }
      __syncthreads();
      for (int k = threadIdx.x; k < kSegment && seg + k < X; k += kRowThreads) {
        const int p = k + 32 * kHaloWords;  // staged bit of this voxel
        // Bits p − 63 .. p (bit 63 = p): the nearest E on the left is clz away.
        const int s = p - 63, c = s >> 5, e = s & 31;
        const std::uint64_t left = (static_cast<std::uint64_t>(__funnelshift_r(E[c + 1], E[c + 2], e)) << 32) |
                                   __funnelshift_r(E[c], E[c + 1], e);
        // Bits p .. p + 63 (bit 0 = p): the nearest on the right is ffs − 1 away.
        const int cr = p >> 5, er = p & 31;
        const std::uint64_t right = (static_cast<std::uint64_t>(__funnelshift_r(E[cr + 1], E[cr + 2], er)) << 32) |
                                    __funnelshift_r(E[cr], E[cr + 1], er);
        const int dl = __clzll(static_cast<long long>(left));  // 64 if none
        const int dr = right ? __ffsll(static_cast<long long>(right)) - 1 : 64;
        const int dx = dl < dr ? dl : dr;
        dx8[row * X + seg + k] = static_cast<std::uint8_t>(dx <= w ? dx : 255);
      }
      const int word = seg / 32 + static_cast<int>(threadIdx.x);
      if (threadIdx.x < kSegment / 32 && word < wpr) {
        ebits[row * wpr + word] = E[threadIdx.x + kHaloWords];
        fbits[row * wpr + word] = F[threadIdx.x];
      }
      __syncthreads();  // the next segment overwrites E and F
    }
  }
}

/// acc[k] ← min(acc[k], window row (k + d) + d²) over d in [−W, W), centre out in blocks of 8
/// offsets (0..7 and −1..−8 first); `column` is this thread's column at the row of item 0 and
/// offset 0. After each pair of blocks `done()` may stop the loop (it must be warp-uniform).
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
    if (done()) return;
  }
}

/// y pass: tiles of kTileX x × kTile y of one plane; g (u16 pairs) ← the capped minima.
__global__ __launch_bounds__(32 * kWarps) void ball_y_kernel(const std::uint8_t* dx8, std::uint32_t* g, int X,
                                                             int Y, std::int64_t Z, int w, int r, int W) {
  extern __shared__ std::uint32_t win[];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t x_tiles = ceil_div(X, kTileX), y_tiles = ceil_div(Y, kTile);
  const std::int64_t tiles = x_tiles * y_tiles * Z;
  const std::uint32_t cap1 = static_cast<std::uint32_t>(r + 1), cap = cap1 * kSplat;
  const int rows = kTile + 2 * W;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t xt = t % x_tiles, rest = t / x_tiles;
    const int y0 = static_cast<int>(rest % y_tiles) * kTile;
    const std::int64_t z = rest / y_tiles;
    const int x = static_cast<int>(xt) * kTileX + 2 * tx;
    const bool x_in = x < X;
    const std::uint8_t* plane = dx8 + z * Y * X + x;
    int near = 0;
    for (int row = ty; row < rows; row += kWarps) {
      const int y = y0 - W + row;
      std::uint32_t v = cap;
      if (x_in && y >= 0 && y < Y) {
        const std::uint32_t two = *reinterpret_cast<const std::uint16_t*>(plane + static_cast<std::int64_t>(y) * X);
        const std::uint32_t d0 = two & 0xFFu, d1 = two >> 8;
        const bool n0 = d0 <= static_cast<std::uint32_t>(w), n1 = d1 <= static_cast<std::uint32_t>(w);
        v = (n0 ? d0 * d0 : cap1) | ((n1 ? d1 * d1 : cap1) << 16);
        near |= static_cast<int>(n0 || n1);
      }
      win[row * 32 + tx] = v;
    }
    const bool any = __syncthreads_or(near) != 0;
    std::uint32_t acc[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) acc[k] = cap;
    if (any) window_min(win + (W + ty * kItems) * 32 + tx, W, acc, [] { return false; });
    if (x_in) {
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
  const std::int64_t x_tiles = ceil_div(X, kTileX), z_tiles = ceil_div(zc1 - zc0, kTile);
  const std::int64_t tiles = x_tiles * z_tiles * Y;
  const std::uint32_t cap = static_cast<std::uint32_t>(r + 1) * kSplat, rr = static_cast<std::uint32_t>(r) * kSplat;
  const int rows = kTile + 2 * W;
  unsigned long long c = 0;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t xt = t % x_tiles, rest = t / x_tiles;
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
        if (z >= zc1) break;
        const std::int64_t i = (static_cast<std::int64_t>(z) * Y + y) * wpr + (x >> 5);
        const std::uint32_t e = (ebits[i] >> (x & 31)) & 3u, f = (fbits[i] >> (x & 31)) & 3u;
        found |= e << (2 * k);
        pending |= (f & ~e) << (2 * k);
      }
    }
    if (__syncthreads_or(pending != 0)) {
      const std::uint32_t* column = g + (static_cast<std::int64_t>(y) * X + x) / 2;
      for (int row = ty; row < rows; row += kWarps) {
        const int z = z0 - W + row;
        win[row * 32 + tx] = (x_in && z >= 0 && z < Z) ? column[static_cast<std::int64_t>(z) * plane / 2] : cap;
      }
      __syncthreads();
      if (__any_sync(~0u, pending != 0)) {
        std::uint32_t acc[kItems];
#pragma unroll
        for (int k = 0; k < kItems; ++k) acc[k] = cap;
        window_min(win + (W + ty * kItems) * 32 + tx, W, acc, [&] {
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

int window_radius(std::int64_t r) {
  int w = 0;  // ⌊√r⌋, exactly
  while (static_cast<std::int64_t>(w + 1) * (w + 1) <= r) ++w;
  return w;
}

}  // namespace

bool ball_shell_applies(const VolumeDims& d, std::int64_t r, std::int64_t count_first, std::int64_t count_voxels) {
  const std::int64_t plane = d.y * d.x;
  constexpr std::int64_t kMax = 1 << 30;
  return r >= 0 && window_radius(r) <= 63 && d.x % 2 == 0 && d.x >= 32 && plane > 0 && d.x < kMax && d.y < kMax &&
         d.z < kMax && count_first % plane == 0 && count_voxels % plane == 0;
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
  // work (4 bytes per voxel): g (u16), dx (u8), then E and F bits at a 16-byte boundary
  // (2 · rows · wpr words ≤ voxels / 2 bytes for X ≥ 32).
  auto* base = static_cast<std::uint8_t*>(work);
  auto* g = reinterpret_cast<std::uint32_t*>(base);
  auto* dx8 = base + 2 * voxels;
  auto* ebits = reinterpret_cast<std::uint32_t*>(base + (3 * voxels + 15) / 16 * 16);
  auto* fbits = ebits + rows * wpr;
  const unsigned row_grid = static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20));
  ball_row_kernel<<<row_grid, kRowThreads, 0, stream>>>(distance16, rows, X, wpr, static_cast<std::uint32_t>(r), w,
                                                        dx8, ebits, fbits);
  check_launch("ball_row_kernel", stream);
  const std::size_t shared = static_cast<std::size_t>(kTile + 2 * W) * 32 * sizeof(std::uint32_t);
  const dim3 block(32, kWarps);
  const std::int64_t y_tiles = ceil_div(X, kTileX) * ceil_div(Y, kTile) * d.z;
  ball_y_kernel<<<resident_grid(ball_y_kernel, 32 * kWarps, shared, y_tiles), block, shared, stream>>>(
      dx8, g, X, Y, d.z, w, static_cast<int>(r), W);
  check_launch("ball_y_kernel", stream);
  const std::int64_t plane = d.y * d.x;
  const int zc0 = static_cast<int>(count_first / plane), zc1 = static_cast<int>((count_first + count_voxels) / plane);
  const std::int64_t z_tiles = ceil_div(X, kTileX) * ceil_div(zc1 - zc0, kTile) * d.y;
  ball_z_count_kernel<<<resident_grid(ball_z_count_kernel, 32 * kWarps, shared, z_tiles), block, shared, stream>>>(
      g, ebits, fbits, X, Y, Z, wpr, zc0, zc1, static_cast<int>(r), W, size_map, n, count);
  check_launch("ball_z_count_kernel", stream);
}

}  // namespace weft::morphology::cuda
