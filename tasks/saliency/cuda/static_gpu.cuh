#pragma once
// Internal to the CUDA static pathway: tuning policy and the launchers (layer 1) of its kernels.
#include <cstdint>

#include <cuda_runtime.h>

#include "weft/data/dtype.hpp"
#include "weft/tasks/saliency/bank.hpp"

namespace weft::saliency::device {

/// Element-wise kernels use `threads` per block; the interactions kernel uses them over one
/// kStatTile × kStatTile tile per block (threads / kStatTile rows at a time).
/// Chosen for correctness first (bench/results/saliency.json not yet run on a GPU); retune there.
struct StaticPolicy {
  int threads = 256;
};
[[nodiscard]] constexpr StaticPolicy static_policy(int /*compute_capability*/) { return {}; }
inline constexpr int kMaxThreads = 256;
// The statistics reduction halves the block: a power of two of at least one warp.
static_assert(static_policy(90).threads <= kMaxThreads && static_policy(90).threads >= 32 &&
              (static_policy(90).threads & (static_policy(90).threads - 1)) == 0);
static_assert(static_policy(90).threads % kStatTile == 0);
static_assert(static_policy(90).threads >= 2 * kMaps);  // one thread per (map, min/max) combines the warps

/// Where each of the 24 response planes lives (gabor groups are separate arrays).
struct ResponsePlanes {
  const float* plane[kMaps];
};

/// frame [h, w] (u8, u16 or f32, scaled by `scale`) × Hann window → dst [h, wf] (zero column pad).
void launch_window(const StaticPolicy& p, const void* frame, DType type, float scale, std::int64_t h, std::int64_t w,
                   std::int64_t wf, float* dst, cudaStream_t stream);
/// spectrum [h, wf/2+1] → out[(i·4 + b)] = spectrum · gain(first + i, b) · scale for i < count.
void launch_gabor(const StaticPolicy& p, const float2* spectrum, std::int64_t h, std::int64_t wf, int first, int count,
                  float scale, float2* out, cudaStream_t stream);
/// Tiles of the statistics along an extent.
[[nodiscard]] inline std::int64_t stat_tiles(std::int64_t extent) { return (extent + kStatTile - 1) / kStatTile; }
/// Responses → interacted energies maps [24, h, w], per-tile partials [tiles, 24, 2] (min, max),
/// then stats [24, 3] (min, max, m̄) in double. `partials` holds stat_tiles(h)·stat_tiles(w)·48 floats.
void launch_interactions(const StaticPolicy& p, const ResponsePlanes& planes, std::int64_t h, std::int64_t w,
                         float* maps, float* partials, double* stats, cudaStream_t stream);
/// maps [24, n] and stats → static map [n].
void launch_normalize(const StaticPolicy& p, const float* maps, const double* stats, std::int64_t n, float* out,
                      cudaStream_t stream);

}  // namespace weft::saliency::device
