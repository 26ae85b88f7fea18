// CUDA kernels of the dynamic pathway and the fusion. Per-element math is shared with the CPU
// path (motion.hpp, bank.hpp); reductions are per block in float over a fixed grid, then in
// double over the blocks in a fixed order (same result for the same device and size).
#include <cfloat>

#include "dynamic_gpu.cuh"
#include "weft/cuda.hpp"

namespace weft::saliency::device {
namespace {

// ---- layer 4/3: warp and block reductions ----

template <class T, class Op> __device__ T warp_reduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;  // valid in lane 0
}
struct Sum {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Min {
  __device__ float operator()(float a, float b) const { return fminf(a, b); }
  __device__ double operator()(double a, double b) const { return fmin(a, b); }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};
/// Tree reduction over the block (blockDim.x a power of two, scratch[blockDim.x]); every thread
/// gets the result.
template <class T, class Op> __device__ T block_reduce(T v, Op op, T* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + half]);
    __syncthreads();
  }
  const T r = scratch[0];
  __syncthreads();
  return r;
}

// ---- layer 3: per-tile work ----

/// A block's share of one Gauss-Newton step: sums of w·jjᵀ and w·j·r over a grid-stride range of
/// pixels (warp shuffles, then one row of partials per block) and the |r| histogram.
__device__ void affine_tile(const float* __restrict__ cur, const float* __restrict__ prev, std::int64_t h,
                            std::int64_t w, const AffineFrame& frame, const double* __restrict__ theta_in,
                            const double* __restrict__ sigma_in, unsigned* __restrict__ hist,
                            float* __restrict__ partials, unsigned* s_hist, float (*s_sums)[kAffineSums]) {
  for (int b = threadIdx.x; b <= kResidualBins; b += blockDim.x) s_hist[b] = 0;
  double theta[kAffineParams];
#pragma unroll
  for (int i = 0; i < kAffineParams; ++i) theta[i] = theta_in[i];
  const auto sigma = static_cast<float>(*sigma_in);
  __syncthreads();
  float acc[kAffineSums];
#pragma unroll
  for (int k = 0; k < kAffineSums; ++k) acc[k] = 0.0f;
  const std::int64_t n = h * w, stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::int64_t y = i / w, x = i - y * w;
    float r, j[kAffineParams];
    if (!affine_terms(cur, prev, h, w, theta, frame, y, x, r, j)) continue;
    atomicAdd(&s_hist[residual_bin(r)], 1u);
    accumulate_affine(acc, j, r, tukey_weight(r, sigma));
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int k = 0; k < kAffineSums; ++k) {
    const float v = warp_reduce(acc[k], Sum{});
    if (lane == 0) s_sums[warp][k] = v;
  }
  __syncthreads();
  if (threadIdx.x < kAffineSums) {
    float v = 0.0f;
    for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) v += s_sums[i][threadIdx.x];
    partials[blockIdx.x * kAffineSums + threadIdx.x] = v;
  }
  for (int b = threadIdx.x; b <= kResidualBins; b += blockDim.x)
    if (s_hist[b]) atomicAdd(&hist[b], s_hist[b]);
}

/// One block: sums the partials in double, solves, updates θ; σ from the histogram, cleared after.
__device__ void affine_solve_tile(const float* __restrict__ partials, int blocks, double* theta, double* sigma,
                                  unsigned* hist, double* scratch, double* sums) {
  for (int k = 0; k < kAffineSums; ++k) {
    double v = 0.0;
    for (int b = threadIdx.x; b < blocks; b += blockDim.x) v += partials[b * kAffineSums + k];
    v = block_reduce(v, Sum{}, scratch);
    if (threadIdx.x == 0) sums[k] = v;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double step[kAffineParams];
    if (solve_affine_step(sums, step))
      for (int i = 0; i < kAffineParams; ++i) theta[i] += step[i];
    *sigma = sigma_from_histogram(hist);
  }
  __syncthreads();
  for (int b = threadIdx.x; b <= kResidualBins; b += blockDim.x) hist[b] = 0;
}

/// One block per 32 × 32 tile of the working map: its min and max.
__device__ void tile_minmax(const float* __restrict__ map, std::int64_t h, std::int64_t w, float* __restrict__ partials,
                            float* scratch) {
  const std::int64_t tx = (w + kStatTile - 1) / kStatTile;
  const std::int64_t tile = blockIdx.x, y0 = (tile / tx) * kStatTile, x0 = (tile % tx) * kStatTile;
  float lo = FLT_MAX, hi = -FLT_MAX;
  for (int i = threadIdx.x; i < kStatTile * kStatTile; i += blockDim.x) {
    const std::int64_t y = y0 + i / kStatTile, x = x0 + i % kStatTile;
    if (y >= h || x >= w) continue;
    lo = fminf(lo, map[y * w + x]);
    hi = fmaxf(hi, map[y * w + x]);
  }
  lo = block_reduce(lo, Min{}, scratch);
  hi = block_reduce(hi, Max{}, scratch);
  if (threadIdx.x == 0) {
    partials[2 * tile] = lo;
    partials[2 * tile + 1] = hi;
  }
}

/// One block: min, max and m̄ over the tiles (as interactions_cpu) → MapNorm stored as 3 floats.
__device__ void map_norm_tile(const float* __restrict__ partials, std::int64_t tiles, float* norm, double* scratch) {
  double lo = DBL_MAX, hi = -DBL_MAX, sum = 0.0;
  for (std::int64_t t = threadIdx.x; t < tiles; t += blockDim.x) {
    lo = fmin(lo, static_cast<double>(partials[2 * t]));
    hi = fmax(hi, static_cast<double>(partials[2 * t + 1]));
    sum += partials[2 * t + 1];
  }
  lo = block_reduce(lo, Min{}, scratch);
  hi = block_reduce(hi, Max{}, scratch);
  sum = block_reduce(sum, Sum{}, scratch);
  if (threadIdx.x == 0) {
    const MapNorm n = map_norm(lo, hi, tiles > 1 ? (sum - hi) / static_cast<double>(tiles - 1) : lo);
    norm[0] = n.min;
    norm[1] = n.inv_range;
    norm[2] = n.weight;
  }
}

/// A block's max of Ms and raw moments of Md over a grid-stride range.
__device__ void fusion_stats_tile(const float* __restrict__ ms, std::int64_t ws, const float* __restrict__ md,
                                  std::int64_t h, std::int64_t w, double* __restrict__ partials, double* scratch) {
  const std::int64_t n = h * w, stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  float top = 0.0f;  // maps are >= 0 (and α of an empty map is 0)
  float s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::int64_t y = i / w, x = i - y * w;
    top = fmaxf(top, ms[y * ws + x]);
    const float v = md[i];
    s1 += v;
    s2 += v * v;
    s3 += v * v * v;
  }
  const double m = block_reduce(static_cast<double>(top), Max{}, scratch);
  const double a = block_reduce(static_cast<double>(s1), Sum{}, scratch);
  const double b = block_reduce(static_cast<double>(s2), Sum{}, scratch);
  const double c = block_reduce(static_cast<double>(s3), Sum{}, scratch);
  if (threadIdx.x == 0) {
    double* row = partials + 4 * blockIdx.x;
    row[0] = m;
    row[1] = a;
    row[2] = b;
    row[3] = c;
  }
}

__device__ void fusion_weights_tile(const double* __restrict__ partials, int blocks, std::int64_t n, float* weights,
                                    double* scratch) {
  double m = 0.0, a = 0.0, b = 0.0, c = 0.0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) {
    m = fmax(m, partials[4 * i]);
    a += partials[4 * i + 1];
    b += partials[4 * i + 2];
    c += partials[4 * i + 3];
  }
  m = block_reduce(m, Max{}, scratch);
  a = block_reduce(a, Sum{}, scratch);
  b = block_reduce(b, Sum{}, scratch);
  c = block_reduce(c, Sum{}, scratch);
  if (threadIdx.x == 0) {
    weights[0] = static_cast<float>(m);
    weights[1] = static_cast<float>(skewness_weight(static_cast<double>(n), a, b, c));
  }
}

// ---- layer 2: kernels ----

template <class T>
__global__ void __launch_bounds__(kDynamicThreads) motion_frame_kernel(const T* frame, float scale, std::int64_t rows,
                                                                      std::int64_t cols, int k, std::int64_t h,
                                                                      std::int64_t w, float* dst) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= h * w) return;
  const std::int64_t y = i / w, x = i - y * w;
  float s = 0.0f;
  for (int dy = 0; dy < k; ++dy)
    for (int dx = 0; dx < k; ++dx) {
      const std::int64_t yy = y * k + dy < rows - 1 ? y * k + dy : rows - 1, xx = x * k + dx < cols - 1 ? x * k + dx : cols - 1;
      s += static_cast<float>(frame[yy * cols + xx]);
    }
  dst[i] = s * (scale / static_cast<float>(k * k));
}
__global__ void __launch_bounds__(kDynamicThreads) half_size_kernel(const float* src, std::int64_t h, std::int64_t w,
                                                                   float* dst) {
  const std::int64_t hw = w / 2, i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= (h / 2) * hw) return;
  const std::int64_t y = i / hw, x = i - y * hw;
  dst[i] = 0.25f * (src[2 * y * w + 2 * x] + src[2 * y * w + 2 * x + 1] + src[(2 * y + 1) * w + 2 * x] +
                    src[(2 * y + 1) * w + 2 * x + 1]);
}
__global__ void __launch_bounds__(kDynamicThreads) affine_pass_kernel(const float* cur, const float* prev, std::int64_t h,
                                                                     std::int64_t w, AffineFrame frame,
                                                                     const double* theta, const double* sigma,
                                                                     unsigned* hist, float* partials) {
  __shared__ unsigned s_hist[kResidualBins + 1];
  __shared__ float s_sums[kDynamicThreads / 32][kAffineSums];
  affine_tile(cur, prev, h, w, frame, theta, sigma, hist, partials, s_hist, s_sums);
}
__global__ void __launch_bounds__(kDynamicThreads) affine_solve_kernel(const float* partials, int blocks, double* theta,
                                                                      double* sigma, unsigned* hist) {
  __shared__ double scratch[kDynamicThreads];
  __shared__ double sums[kAffineSums];
  affine_solve_tile(partials, blocks, theta, sigma, hist, scratch, sums);
}
__global__ void __launch_bounds__(kDynamicThreads) compensate_kernel(const float* cur, const float* prev, std::int64_t h,
                                                                    std::int64_t w, const double* theta, AffineFrame frame,
                                                                    float* dst) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= h * w) return;
  const std::int64_t y = i / w, x = i - y * w;
  double t[kAffineParams];
#pragma unroll
  for (int k = 0; k < kAffineParams; ++k) t[k] = theta[k];
  dst[i] = compensated(cur, prev, h, w, t, frame, y, x);
}
__global__ void __launch_bounds__(kDynamicThreads) temporal_median_kernel(FlowPlanes planes, std::int64_t n, float* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v[kMaxMedianFrames];
  for (int k = 0; k < planes.count; ++k) {
    const float2 f = reinterpret_cast<const float2*>(planes.flow[k])[i];
    v[k] = sqrtf(f.x * f.x + f.y * f.y);
  }
  out[i] = small_median(v, planes.count);
}
__global__ void __launch_bounds__(kDynamicThreads) tile_minmax_kernel(const float* map, std::int64_t h, std::int64_t w,
                                                                     float* partials) {
  __shared__ float scratch[kDynamicThreads];
  tile_minmax(map, h, w, partials, scratch);
}
__global__ void __launch_bounds__(kDynamicThreads) map_norm_kernel(const float* partials, std::int64_t tiles, float* norm) {
  __shared__ double scratch[kDynamicThreads];
  map_norm_tile(partials, tiles, norm, scratch);
}
__global__ void __launch_bounds__(kDynamicThreads) upsample_kernel(const float* map, std::int64_t h, std::int64_t w, int k,
                                                                  const float* norm, std::int64_t height,
                                                                  std::int64_t width, float* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= height * width) return;
  const std::int64_t y = i / width, x = i - y * width;
  const MapNorm n{norm[0], norm[1], norm[2]};
  out[i] = normalized_contribution(upsampled(map, h, w, k, y, x), n);
}
__global__ void __launch_bounds__(kDynamicThreads) fusion_stats_kernel(const float* ms, std::int64_t ws, const float* md,
                                                                      std::int64_t h, std::int64_t w, double* partials) {
  __shared__ double scratch[kDynamicThreads];
  fusion_stats_tile(ms, ws, md, h, w, partials, scratch);
}
__global__ void __launch_bounds__(kDynamicThreads) fusion_weights_kernel(const double* partials, int blocks, std::int64_t n,
                                                                        float* weights) {
  __shared__ double scratch[kDynamicThreads];
  fusion_weights_tile(partials, blocks, n, weights, scratch);
}
__global__ void __launch_bounds__(kDynamicThreads) fusion_kernel(const float* ms, std::int64_t ws, const float* md,
                                                                std::int64_t h, std::int64_t w, const float* weights,
                                                                float* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= h * w) return;
  const std::int64_t y = i / w, x = i - y * w;
  out[i] = fuse(ms[y * ws + x], md[i], weights[0], weights[1]);
}

unsigned blocks_for(std::int64_t count, int threads) { return static_cast<unsigned>((count + threads - 1) / threads); }
unsigned reduce_grid(const DynamicPolicy& p, std::int64_t count) {
  const unsigned b = blocks_for(count, p.threads);
  return b < 1 ? 1u : (b > static_cast<unsigned>(p.reduce_blocks) ? static_cast<unsigned>(p.reduce_blocks) : b);
}

}  // namespace

// ---- layer 1: launchers ----

void launch_motion_frame(const DynamicPolicy& p, const void* frame, DType type, float scale, std::int64_t rows,
                         std::int64_t cols, int k, std::int64_t h, std::int64_t w, float* dst, cudaStream_t stream) {
  if (h * w == 0) return;
  const unsigned grid = blocks_for(h * w, p.threads);
  switch (type) {
    case DType::u8:
      motion_frame_kernel<<<grid, p.threads, 0, stream>>>(static_cast<const std::uint8_t*>(frame), scale, rows, cols, k, h, w, dst);
      break;
    case DType::u16:
      motion_frame_kernel<<<grid, p.threads, 0, stream>>>(static_cast<const std::uint16_t*>(frame), scale, rows, cols, k, h, w, dst);
      break;
    default:
      motion_frame_kernel<<<grid, p.threads, 0, stream>>>(static_cast<const float*>(frame), scale, rows, cols, k, h, w, dst);
      break;
  }
  check_launch("saliency.motion_frame_kernel", stream);
}

void launch_half_size(const DynamicPolicy& p, const float* src, std::int64_t h, std::int64_t w, float* dst,
                      cudaStream_t stream) {
  const std::int64_t n = (h / 2) * (w / 2);
  if (n == 0) return;
  half_size_kernel<<<blocks_for(n, p.threads), p.threads, 0, stream>>>(src, h, w, dst);
  check_launch("saliency.half_size_kernel", stream);
}

int affine_blocks(const DynamicPolicy& p, std::int64_t h, std::int64_t w) {
  return static_cast<int>(reduce_grid(p, h * w));
}

void launch_affine_step(const DynamicPolicy& p, const float* cur, const float* prev, std::int64_t h, std::int64_t w,
                        const AffineFrame& frame, double* theta, double* sigma, unsigned* hist, float* partials,
                        cudaStream_t stream) {
  const int blocks = affine_blocks(p, h, w);
  affine_pass_kernel<<<blocks, kDynamicThreads, 0, stream>>>(cur, prev, h, w, frame, theta, sigma, hist, partials);
  check_launch("saliency.affine_pass_kernel", stream);
  affine_solve_kernel<<<1, kDynamicThreads, 0, stream>>>(partials, blocks, theta, sigma, hist);
  check_launch("saliency.affine_solve_kernel", stream);
}

void launch_compensate(const DynamicPolicy& p, const float* cur, const float* prev, std::int64_t h, std::int64_t w,
                       const double* theta, float* dst, cudaStream_t stream) {
  if (h * w == 0) return;
  compensate_kernel<<<blocks_for(h * w, p.threads), p.threads, 0, stream>>>(cur, prev, h, w, theta, affine_frame(h, w, 0), dst);
  check_launch("saliency.compensate_kernel", stream);
}

void launch_temporal_median(const DynamicPolicy& p, const FlowPlanes& planes, std::int64_t n, float* out,
                            cudaStream_t stream) {
  if (n == 0) return;
  temporal_median_kernel<<<blocks_for(n, p.threads), p.threads, 0, stream>>>(planes, n, out);
  check_launch("saliency.temporal_median_kernel", stream);
}

void launch_dynamic_map(const DynamicPolicy& p, const float* map, std::int64_t h, std::int64_t w, int k,
                        std::int64_t height, std::int64_t width, float* partials, float* norm, float* out,
                        cudaStream_t stream) {
  if (height * width == 0 || h * w == 0) return;
  const std::int64_t tiles = dynamic_tiles(h, w);
  tile_minmax_kernel<<<static_cast<unsigned>(tiles), kDynamicThreads, 0, stream>>>(map, h, w, partials);
  check_launch("saliency.tile_minmax_kernel", stream);
  map_norm_kernel<<<1, kDynamicThreads, 0, stream>>>(partials, tiles, norm);
  check_launch("saliency.map_norm_kernel", stream);
  upsample_kernel<<<blocks_for(height * width, p.threads), p.threads, 0, stream>>>(map, h, w, k, norm, height, width, out);
  check_launch("saliency.upsample_kernel", stream);
}

void launch_fusion(const DynamicPolicy& p, const float* ms, std::int64_t ws, const float* md, std::int64_t h,
                   std::int64_t w, double* partials, float* weights, float* out, cudaStream_t stream) {
  if (h * w == 0) return;
  const unsigned blocks = reduce_grid(p, h * w);
  fusion_stats_kernel<<<blocks, kDynamicThreads, 0, stream>>>(ms, ws, md, h, w, partials);
  check_launch("saliency.fusion_stats_kernel", stream);
  fusion_weights_kernel<<<1, kDynamicThreads, 0, stream>>>(partials, static_cast<int>(blocks), h * w, weights);
  check_launch("saliency.fusion_weights_kernel", stream);
  fusion_kernel<<<blocks_for(h * w, p.threads), p.threads, 0, stream>>>(ms, ws, md, h, w, weights, out);
  check_launch("saliency.fusion_kernel", stream);
}

}  // namespace weft::saliency::device
