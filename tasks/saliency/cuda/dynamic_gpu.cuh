#pragma once
// Internal to the CUDA dynamic pathway and fusion: tuning policy and the launchers (layer 1).
#include <cstdint>

#include <cuda_runtime.h>

#include "weft/data/dtype.hpp"
#include "weft/tasks/saliency/motion.hpp"

namespace weft::saliency::device {

/// Element-wise kernels and reductions use `threads` per block (a power of two, whole warps);
/// reductions that accumulate per thread over a grid-stride loop use at most `reduce_blocks`.
/// Chosen for correctness first (not yet measured: bench/results/saliency.json); retune there.
struct DynamicPolicy {
  int threads = 256;
  int reduce_blocks = 256;
};
[[nodiscard]] constexpr DynamicPolicy dynamic_policy(int /*compute_capability*/) { return {}; }
inline constexpr int kDynamicThreads = 256;
static_assert(dynamic_policy(90).threads == kDynamicThreads);  // shared scratch is sized for it
static_assert(kDynamicThreads >= 32 * 1 && kDynamicThreads % 32 == 0 && (kDynamicThreads & (kDynamicThreads - 1)) == 0);
static_assert(kDynamicThreads >= kAffineSums && kDynamicThreads > kResidualBins);

/// The last `count` residual flows (f32 [h, w, 2] each) of the temporal median.
struct FlowPlanes {
  const float* flow[kMaxMedianFrames];
  int count;
};

/// frame [rows, cols] (u8, u16, f32 × scale) → dst [h, w], k × k box averages.
void launch_motion_frame(const DynamicPolicy& p, const void* frame, DType type, float scale, std::int64_t rows,
                         std::int64_t cols, int k, std::int64_t h, std::int64_t w, float* dst, cudaStream_t stream);
/// src [h, w] → dst [h/2, w/2], 2 × 2 box averages.
void launch_half_size(const DynamicPolicy& p, const float* src, std::int64_t h, std::int64_t w, float* dst,
                      cudaStream_t stream);
/// One Gauss-Newton step at a level: per-block sums (partials [reduce_blocks, kAffineSums]) and
/// the |r| histogram, then one block solves, updates theta[6] and sigma, and clears the histogram.
void launch_affine_step(const DynamicPolicy& p, const float* cur, const float* prev, std::int64_t h, std::int64_t w,
                        const AffineFrame& frame, double* theta, double* sigma, unsigned* hist, float* partials,
                        cudaStream_t stream);
/// Blocks launch_affine_step uses for a level of h × w pixels (partials holds that many rows).
[[nodiscard]] int affine_blocks(const DynamicPolicy& p, std::int64_t h, std::int64_t w);
/// dst(p) = prev(p + d(p)) under theta[6] (level 0), cur(p) outside.
void launch_compensate(const DynamicPolicy& p, const float* cur, const float* prev, std::int64_t h, std::int64_t w, const double* theta,
                       float* dst, cudaStream_t stream);
/// out[i] = median over the planes of |flow[i]|.
void launch_temporal_median(const DynamicPolicy& p, const FlowPlanes& planes, std::int64_t n, float* out,
                            cudaStream_t stream);
/// Working map [h, w] → Md [height, width]: tile statistics (partials: 2 floats per 32 × 32
/// tile), the map's MapNorm in `norm` (3 floats), then the upsampled, normalised map.
void launch_dynamic_map(const DynamicPolicy& p, const float* map, std::int64_t h, std::int64_t w, int k,
                        std::int64_t height, std::int64_t width, float* partials, float* norm, float* out,
                        cudaStream_t stream);
[[nodiscard]] inline std::int64_t dynamic_tiles(std::int64_t h, std::int64_t w) {
  return ((h + kStatTile - 1) / kStatTile) * ((w + kStatTile - 1) / kStatTile);
}
/// Ms [h, ws] (ws >= w), Md [h, w] → Mf [h, w]: per-block max and moments (partials: 4 doubles
/// per block, reduce_blocks rows), α and β (weights: 2 floats), then the fused map.
void launch_fusion(const DynamicPolicy& p, const float* ms, std::int64_t ws, const float* md, std::int64_t h,
                   std::int64_t w, double* partials, float* weights, float* out, cudaStream_t stream);

}  // namespace weft::saliency::device
