#pragma once
// Launchers of the flow kernels (layer 1) and their policy. Internal to tasks/flow.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "weft/data/dtype.hpp"

namespace weft::flow::gpu {

// Tile of the fused TV-L1 iteration and of the pointwise kernels. Chosen as the usual 32x8
// (warp-wide rows, 256 threads); to be tuned from bench/results/flow.json.
struct FlowPolicy {
  int tile_w = 32;
  int tile_h = 8;
  int check_every = 10;  // iterations between host reads of the stopping criterion
};
inline constexpr FlowPolicy kPolicySm90{};
static_assert(kPolicySm90.tile_w % 32 == 0 && kPolicySm90.tile_w * kPolicySm90.tile_h <= 1024);
[[nodiscard]] inline FlowPolicy policy_for(int /*compute_capability*/) { return kPolicySm90; }
inline constexpr int kTileW = kPolicySm90.tile_w, kTileH = kPolicySm90.tile_h;

// Fused TV-L1 iterations (tvl1_fused_gpu.cu): output tile tile_w x tile_h, up to `steps`
// iterations per launch over a halo of `steps` pixels, block_w x block_h threads looping over the
// region. 32x16 with 5 steps: 42x26 cells, 1.7x the centre's work for 5 global round trips
// saved; 39 KiB of static shared memory in fp32. To be tuned from bench/results/flow.json.
struct FusedTvl1Policy {
  int tile_w = 32;
  int tile_h = 16;
  int steps = 5;
  int block_w = 32;
  int block_h = 8;
};
inline constexpr FusedTvl1Policy kFusedTvl1Sm90{};
// Layout of a fused launch: shared-memory tiles as above (tvl1_fused_gpu.cu), or the state in
// registers, two columns per lane and R rows per warp (tvl1_columns_gpu.cu: R x warps = 2 x 32,
// 4 x 16 or 8 x 8 for 64 x 64 regions and 54 x 54 outputs; 4 x 8 for 64 x 32 regions and 54 x 22
// outputs). WEFT_FLOW_FUSED_LAYOUT=shared|columns2x32|columns4x16|columns4x8|columns8x8 overrides
// the policy's choice (flow_bench --seed compares them). 4 x 8 chosen on an H100 (4K fp16 at the
// seed's setting, iterations: shared 1.71 ms, 4 x 16 0.86, 2 x 32 0.79, 4 x 8 0.78, with the
// thresholding still a branch per pixel; bench/results/flow.json has the policy's time).
enum class FusedLayout { shared, columns2x32, columns4x16, columns4x8, columns8x8 };
inline constexpr FusedLayout kFusedLayoutSm90 = FusedLayout::columns4x8;
[[nodiscard]] FusedLayout fused_layout();  // the policy's, or the environment's override
static_assert(kFusedTvl1Sm90.block_w % 32 == 0 && kFusedTvl1Sm90.block_w * kFusedTvl1Sm90.block_h <= 1024);
static_assert(kFusedTvl1Sm90.steps >= 1 && 30 % kFusedTvl1Sm90.steps == 0,
              "steps should divide the default median interval (30) so batches end where the median runs");

// Storage traits: S is float (fp32) or __half (fp16); pairs are float2 or __half2.
template <class S> struct Pair;
template <> struct Pair<float> { using type = float2; };
template <> struct Pair<__half> { using type = __half2; };
template <class S> using Pair_t = typename Pair<S>::type;

struct Gauss1D {
  int radius = 0;
  float w[32];
};
[[nodiscard]] Gauss1D gaussian_weights(double sigma);

// Pyramid and image operations (pyramid_gpu.cu). Sizes are w x h, planes row-major.
// Frames to float (times scale when > 0); `also`, when not null, gets the same values in S.
template <class S>
void launch_to_float(DType type, const void* in, float* out, S* also, long n, float scale, cudaStream_t s);
void launch_normalise(float* a, float* b, long n, cudaStream_t s);  // joint min/max to [0, 1]
// Both frames (float, w x h) replaced in place by their texture part f - alpha * ROF(f)
// (structure_texture in src/image_ops.hpp); scratch holds 6 w h floats.
void launch_structure_texture(float* f0, float* f1, float* scratch, int w, int h, float alpha, cudaStream_t s);
template <class In, class Out>
void launch_gaussian(const Gauss1D& g, const In* in, float* tmp, Out* out, int w, int h, cudaStream_t s);
// The float resize and the same level stored in S, in one pass.
template <class S>
void launch_resize_both(const float* in, int wi, int hi, float* out, S* out_s, int w, int h, cudaStream_t s);
// Frame 1's gradient of a level as (x, y) pairs (5-point derivatives, replicated borders).
template <class S> void launch_gradient_pairs(const S* in, Pair_t<S>* g, int w, int h, cudaStream_t s);
// Frame 1 warped by the flow and the data term's gradient (mean of frame 1's gradient warped
// there and frame 0's; one set of bicubic weights for the frame and its gradient pairs, the
// pairs' sums in half2 arithmetic in fp16): grad = (Ix, Iy), rho_c = I1w - Ix u - Iy v - I0.
// With `coarse` (wc x hc) not null, the flow is first the coarser level's upsampled (bilinear,
// vectors scaled), written to `flow`: the first warp of a level needs no upsampling pass.
//
// Row windows (`weft flow --split`): the warp, median and TV-L1 iteration launchers compute rows
// [y_first, y_end) of the level only (y_end < 0: h); pointers then index the level's rows as in the
// whole image (a strip's buffer minus its first held row), so border tests and results are the
// whole image's.
template <class S>
void launch_warp(const S* i0, const S* i1, const Pair_t<S>* g1, const float2* coarse, int wc, int hc, float2* flow,
                 Pair_t<S>* grad, S* rho_c, int w, int h, cudaStream_t s, int y_first = 0, int y_end = -1);
// Median of the flow; a no-op copy when iteration n is past the stopping point (see below;
// err null: no stopping test).
void launch_median_flow(const float2* in, float2* out, int size, const float* err, int n, float stop, int w, int h,
                        cudaStream_t s, int y_first = 0, int y_end = -1);

// Solvers (solvers_gpu.cu). err[n] accumulates iteration n's squared update; an iteration whose
// predecessor's err <= stop (or n > 0 and stopped) copies its input and does nothing else.
// With a row window the iteration also computes the new flow of row y_end (the next strip's
// first; not written) when y_end < h: the dual step of row y_end - 1 needs it. Its inputs there
// (flow, duals, warp data) must be valid.
struct Tvl1Step {
  float lt, theta, taut, stop;
};
template <class S>
void launch_tvl1_iteration(const Tvl1Step& c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in,
                           const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad,
                           const S* rho_c, float* err, int n, int w, int h, cudaStream_t s, int y_first = 0,
                           int y_end = -1);
// `steps` (1..kFusedTvl1Sm90.steps) iterations in one launch, without stopping test; zero_duals:
// read the duals as zero (first launch of a level) instead of clearing them beforehand.
template <class S>
void launch_tvl1_fused(const Tvl1Step& c, const float2* u_in, float2* u_out, const Pair_t<S>* p1_in,
                       const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out, const Pair_t<S>* grad,
                       const S* rho_c, int steps, bool zero_duals, int w, int h, cudaStream_t s);
template <class S>
void launch_tvl1_columns(FusedLayout layout, const Tvl1Step& c, const float2* u_in, float2* u_out,
                         const Pair_t<S>* p1_in, const Pair_t<S>* p2_in, Pair_t<S>* p1_out, Pair_t<S>* p2_out,
                         const Pair_t<S>* grad, const S* rho_c, int steps, bool zero_duals, int w, int h,
                         cudaStream_t s);
// Structure tensor J = (Ix^2, IxIy, Iy^2, Ix It, Iy It) in 5 planes of w*h (float, before smoothing).
template <class S> void launch_tensor(const Pair_t<S>* grad, const S* rho_c, float* j, int w, int h, cudaStream_t s);
// A row window as the launchers above; `plane`: elements between the tensor's planes (< 0: w h),
// j then indexed like the flow (a strip's buffer minus its first held row).
template <class S>
void launch_jacobi(float a, float stop, const float2* u_in, float2* u_out, const S* j, float* err, int n, int w, int h,
                   cudaStream_t s, int y_first = 0, int y_end = -1, long plane = -1);

}  // namespace weft::flow::gpu
