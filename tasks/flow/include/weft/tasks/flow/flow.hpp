#pragma once
/// Optical flow between two grey frames: host entry points (CPU) and the CUDA one.
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow {

/// Flow from frame0 to frame1 (2D arrays [H,W] of u8, u16, f32 or f64, same shape, H,W >= 2):
/// f32 [H,W,2] with (u, v) per pixel in pixels, frame1(x + u, y + v) ~ frame0(x, y).
/// Fast CPU float path (multi-threaded). Throws ConfigError on bad input or parameters.
[[nodiscard]] Array compute(const Array& frame0, const Array& frame1, const FlowParams& params);

/// Double-precision, single-threaded reference of the same algorithms (for tests; small images).
[[nodiscard]] Array compute_reference(const Array& frame0, const Array& frame1, const FlowParams& params);

/// Whether this build has the CUDA path.
[[nodiscard]] bool have_cuda() noexcept;

/// CUDA path: frames are device arrays (any dtype accepted by compute) on the current GPU;
/// returns a device f32 [H,W,2] array. Work is enqueued on `stream` (a cudaStream_t); the call
/// synchronises only to test the stopping criterion (every few iterations when epsilon > 0).
/// With epsilon 0, TV-L1 runs several iterations per kernel (shared memory, recomputed halos).
/// params.precision picks fp32 or fp16 (half2) storage. Throws ConfigError without CUDA.
[[nodiscard]] Array compute_cuda(const Array& frame0, const Array& frame1, const FlowParams& params,
                                 void* stream);

/// Milliseconds of GPU time per stage of one compute_cuda call (CUDA events; for benchmarks).
struct StageTimes {
  double input = 0;       ///< upload of host frames, conversion to float, normalisation, texture part
  double pyramid = 0;     ///< Gaussian pyramids of both frames
  double warp = 0;        ///< frame 1's gradient, flow upsampling (first warp of a level), bicubic
                          ///< warps and the linearised data term
  double iterations = 0;  ///< the solver's iterations
  double median = 0;      ///< median filtering of the flow
  double upsample = 0;    ///< the final copy to the output, where the last launch could not write it
};

/// compute_cuda that also adds each stage's time to `times` (when not null; synchronises then).
[[nodiscard]] Array compute_cuda(const Array& frame0, const Array& frame1, const FlowParams& params, void* stream,
                                 StageTimes* times);

/// Brightness change between two frames: |ln(s1 / s0)| + |m1 - m0| / s, from the mean m and
/// standard deviation s of each frame's intensities (s: the root mean square of s0 and s1);
/// 0 for two constant frames, infinite when only one is constant.
[[nodiscard]] double brightness_change(const Array& frame0, const Array& frame1);
/// The same from each frame's mean and variance.
[[nodiscard]] double brightness_change(double mean0, double variance0, double mean1, double variance1);

/// `params` for this pair: texture set to 0 when params.texture_threshold > 0 and the pair's
/// brightness_change is at most that threshold. Every entry point (CPU, CUDA, split) applies it.
[[nodiscard]] FlowParams params_for_pair(const Array& frame0, const Array& frame1, const FlowParams& params);

/// Checks two frames for compute(): 2D, same shape, at least 2x2, supported dtype.
void check_frames(const Array& frame0, const Array& frame1);

}  // namespace weft::flow
