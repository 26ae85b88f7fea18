// CUDA kernels of the static pathway: window, fused Gabor bank (all maps of a group from one read
// of the spectrum), interactions fused with the per-map statistics, normalisation + sum.
// Per-element math is shared with the CPU path (bank.hpp).
#include <algorithm>
#include <cfloat>

#include "static_gpu.cuh"
#include "weft/cuda.hpp"

namespace weft::saliency::device {
namespace {

/// cos θ and sin θ of a group's orientations.
struct Directions {
  float c[kOrientations];
  float s[kOrientations];
};

// ---- layer 3: per-tile work ----

template <class T>
__device__ void window_element(const T* __restrict__ frame, float scale, std::int64_t h, std::int64_t w,
                               std::int64_t wf, float* __restrict__ dst, std::int64_t i) {
  const std::int64_t y = i / wf, x = i - y * wf;
  dst[i] = x < w ? static_cast<float>(frame[y * w + x]) * scale * hann(x, w) * hann(y, h) : 0.0f;
}

__device__ void gabor_element(const float2* __restrict__ spectrum, std::int64_t h, std::int64_t wf,
                              const Directions& dir, int count, float scale, float2* __restrict__ out, std::int64_t k) {
  const std::int64_t wc = wf / 2 + 1, plane = h * wc;
  const std::int64_t ky = k / wc, kx = k - ky * wc;
  const float2 x = spectrum[k];
  const bool nyquist = on_nyquist(ky, kx, h, wf);
  const float fy = static_cast<float>(ky <= h / 2 ? ky : ky - h) / static_cast<float>(h);
  const float fx = static_cast<float>(kx) / static_cast<float>(wf);
  for (int i = 0; i < count; ++i)
#pragma unroll
    for (int b = 0; b < kBands; ++b) {
      const float g = nyquist ? 0.0f : gabor_gain(dir.c[i], dir.s[i], b, fy, fx) * scale;
      out[(i * kBands + b) * plane + k] = make_float2(x.x * g, x.y * g);
    }
}

/// Reduces v over the warp with `op`; the result is valid in lane 0.
template <class Op> __device__ float warp_reduce(float v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}
struct Min {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// One kStatTile × kStatTile tile per block: interacted energies of its pixels, and per map the
/// tile's min and max (partials[tile][map] = {min, max}).
__device__ void interactions_tile(const ResponsePlanes& planes, std::int64_t h, std::int64_t w,
                                  float* __restrict__ maps, float* __restrict__ partials,
                                  float (*scratch)[2 * kMaps]) {
  float lo[kMaps], hi[kMaps];
#pragma unroll
  for (int k = 0; k < kMaps; ++k) {
    lo[k] = FLT_MAX;
    hi[k] = -FLT_MAX;
  }
  const std::int64_t n = h * w;
  const std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * kStatTile + threadIdx.x % kStatTile;
  const int rows = blockDim.x / kStatTile;
  for (int r = threadIdx.x / kStatTile; r < kStatTile; r += rows) {
    const std::int64_t y = static_cast<std::int64_t>(blockIdx.y) * kStatTile + r;
    if (x >= w || y >= h) continue;
    const std::int64_t p = y * w + x;
    float e[kMaps];
#pragma unroll
    for (int k = 0; k < kMaps; ++k) {
      const float v = planes.plane[k][p];
      e[k] = v * v;
    }
#pragma unroll
    for (int o = 0; o < kOrientations; ++o)
#pragma unroll
      for (int b = 0; b < kBands; ++b) {
        const int k = o * kBands + b;
        const float v = interact(e, o, b);
        maps[k * n + p] = v;
        lo[k] = fminf(lo[k], v);
        hi[k] = fmaxf(hi[k], v);
      }
  }
  // Warps reduce their 48 values with shuffles, then 48 threads combine the warps: one barrier.
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int k = 0; k < kMaps; ++k) {
    const float a = warp_reduce(lo[k], Min{});
    const float b = warp_reduce(hi[k], Max{});
    if (lane == 0) {
      scratch[warp][2 * k] = a;
      scratch[warp][2 * k + 1] = b;
    }
  }
  __syncthreads();
  if (threadIdx.x < 2 * kMaps) {
    const int j = threadIdx.x;
    float v = scratch[0][j];
    for (int i = 1; i < static_cast<int>(blockDim.x / 32); ++i) v = j % 2 == 0 ? fminf(v, scratch[i][j]) : fmaxf(v, scratch[i][j]);
    const std::int64_t tile = static_cast<std::int64_t>(blockIdx.y) * gridDim.x + blockIdx.x;
    partials[tile * 2 * kMaps + j] = v;
  }
}

/// One block per map: min, max and m̄ (mean of the tile maxima other than the largest) over every
/// tile, in double, in a fixed order.
__device__ void stats_tile(const float* __restrict__ partials, std::int64_t tiles, double* __restrict__ stats,
                           double* scratch) {
  const int k = blockIdx.x;
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0.0;
  for (std::int64_t i = threadIdx.x; i < tiles; i += blockDim.x) {
    const float* s = partials + (i * kMaps + k) * 2;
    lo = fmin(lo, static_cast<double>(s[0]));
    hi = fmax(hi, static_cast<double>(s[1]));
    sum += s[1];
  }
  scratch[threadIdx.x] = lo;
  scratch[blockDim.x + threadIdx.x] = hi;
  scratch[2 * blockDim.x + threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      scratch[threadIdx.x] = fmin(scratch[threadIdx.x], scratch[threadIdx.x + half]);
      scratch[blockDim.x + threadIdx.x] = fmax(scratch[blockDim.x + threadIdx.x], scratch[blockDim.x + threadIdx.x + half]);
      scratch[2 * blockDim.x + threadIdx.x] += scratch[2 * blockDim.x + threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double min = scratch[0], max = scratch[blockDim.x], total = scratch[2 * blockDim.x];
    stats[3 * k] = min;
    stats[3 * k + 1] = max;
    stats[3 * k + 2] = tiles > 1 ? (total - max) / static_cast<double>(tiles - 1) : min;
  }
}

__device__ void normalize_tile(const float* __restrict__ maps, const double* __restrict__ stats, std::int64_t n,
                               float* __restrict__ out, MapNorm* norm) {
  if (threadIdx.x < kMaps) {
    const int k = threadIdx.x;
    norm[k] = map_norm(stats[3 * k], stats[3 * k + 1], stats[3 * k + 2]);
  }
  __syncthreads();
  const std::int64_t p = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (p >= n) return;
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaps; ++k) s += normalized_contribution(maps[k * n + p], norm[k]);
  out[p] = s;
}

// ---- layer 2: kernels ----

template <class T>
__global__ void __launch_bounds__(kMaxThreads) window_kernel(const T* frame, float scale, std::int64_t h,
                                                            std::int64_t w, std::int64_t wf, float* dst) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < h * wf) window_element(frame, scale, h, w, wf, dst, i);
}
__global__ void __launch_bounds__(kMaxThreads) gabor_kernel(const float2* spectrum, std::int64_t h, std::int64_t wf,
                                                           Directions dir, int count, float scale, float2* out) {
  const std::int64_t k = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (k < h * (wf / 2 + 1)) gabor_element(spectrum, h, wf, dir, count, scale, out, k);
}
__global__ void __launch_bounds__(kMaxThreads) interactions_kernel(ResponsePlanes planes, std::int64_t h,
                                                                  std::int64_t w, float* maps, float* partials) {
  __shared__ float scratch[kMaxThreads / 32][2 * kMaps];
  interactions_tile(planes, h, w, maps, partials, scratch);
}
__global__ void __launch_bounds__(kMaxThreads) stats_kernel(const float* partials, std::int64_t tiles, double* stats) {
  __shared__ double scratch[3 * kMaxThreads];
  stats_tile(partials, tiles, stats, scratch);
}
__global__ void __launch_bounds__(kMaxThreads) normalize_kernel(const float* maps, const double* stats, std::int64_t n,
                                                               float* out) {
  __shared__ MapNorm norm[kMaps];
  normalize_tile(maps, stats, n, out, norm);
}

unsigned blocks_for(std::int64_t count, int threads) {
  return static_cast<unsigned>((count + threads - 1) / threads);
}

}  // namespace

// ---- layer 1: launchers ----

void launch_window(const StaticPolicy& p, const void* frame, DType type, float scale, std::int64_t h, std::int64_t w,
                   std::int64_t wf, float* dst, cudaStream_t stream) {
  if (h * wf == 0) return;
  const unsigned grid = blocks_for(h * wf, p.threads);
  switch (type) {
    case DType::u8:
      window_kernel<<<grid, p.threads, 0, stream>>>(static_cast<const std::uint8_t*>(frame), scale, h, w, wf, dst);
      break;
    case DType::u16:
      window_kernel<<<grid, p.threads, 0, stream>>>(static_cast<const std::uint16_t*>(frame), scale, h, w, wf, dst);
      break;
    default:
      window_kernel<<<grid, p.threads, 0, stream>>>(static_cast<const float*>(frame), scale, h, w, wf, dst);
      break;
  }
  check_launch("saliency.window_kernel", stream);
}

void launch_gabor(const StaticPolicy& p, const float2* spectrum, std::int64_t h, std::int64_t wf, int first, int count,
                  float scale, float2* out, cudaStream_t stream) {
  const std::int64_t elements = h * (wf / 2 + 1);
  if (elements == 0) return;
  Directions dir{};  // kernel parameters: indexed per orientation from the constant bank
  for (int i = 0; i < count; ++i) orientation_direction(first + i, dir.c[i], dir.s[i]);
  gabor_kernel<<<blocks_for(elements, p.threads), p.threads, 0, stream>>>(spectrum, h, wf, dir, count, scale, out);
  check_launch("saliency.gabor_kernel", stream);
}

void launch_interactions(const StaticPolicy& p, const ResponsePlanes& planes, std::int64_t h, std::int64_t w,
                         float* maps, float* partials, double* stats, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(stat_tiles(w)), static_cast<unsigned>(stat_tiles(h)));
  if (h * w == 0) return;
  interactions_kernel<<<grid, p.threads, 0, stream>>>(planes, h, w, maps, partials);
  check_launch("saliency.interactions_kernel", stream);
  stats_kernel<<<kMaps, p.threads, 0, stream>>>(partials, stat_tiles(h) * stat_tiles(w), stats);
  check_launch("saliency.stats_kernel", stream);
}

void launch_normalize(const StaticPolicy& p, const float* maps, const double* stats, std::int64_t n, float* out,
                      cudaStream_t stream) {
  if (n == 0) return;
  normalize_kernel<<<blocks_for(n, p.threads), p.threads, 0, stream>>>(maps, stats, n, out);
  check_launch("saliency.normalize_kernel", stream);
}

}  // namespace weft::saliency::device
