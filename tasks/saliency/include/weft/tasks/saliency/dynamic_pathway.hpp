#pragma once
/// Stages of the dynamic saliency pathway and of the fusion over weft::Array, on the CPU (float,
/// sums in double) and on a GPU (same inputs and outputs, so tasks may be mapped freely):
///
///   frame [H,W] ──motion_frame(K)──▶ cur f32 [h,w] (h = H/K, w = W/K; K × K box average, [0, 1])
///   cur, prev ──dominant_motion──▶ θ f64 [6] (affine, motion.hpp)
///   cur, prev, θ ──compensate──▶ prev warped onto cur f32 [h,w] (cur where p + d(p) leaves the frame)
///   cur, compensated ──flow (weft::flow tasks)──▶ residual flow f32 [h,w,2]
///   last n flows ──temporal_median──▶ median of |flow| over the n frames f32 [h,w]
///   median ──dynamic_map(H, W, K)──▶ Md f32 [H,W] (normalised like a static map: to [0,1], Itti's
///                                     weight from 32 × 32 tiles of the working map, threshold 0.2)
///   Ms [H,Wf], Md [H,W] ──fusion──▶ Mf f32 [H,W] = αMs + βMd + αβMsMd, α = max Ms, β = skew Md ∨ 0
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/saliency/motion.hpp"

namespace weft::saliency {

// ---- CPU ----
[[nodiscard]] Array motion_frame_cpu(const Array& frame, int k);
[[nodiscard]] Array dominant_motion_cpu(const Array& cur, const Array& prev, const MotionParams& params);
[[nodiscard]] Array compensate_cpu(const Array& cur, const Array& prev, const Array& theta);
[[nodiscard]] Array temporal_median_cpu(const std::vector<Array>& flows);
[[nodiscard]] Array dynamic_map_cpu(const Array& median, std::int64_t height, std::int64_t width, int k);
[[nodiscard]] Array fusion_cpu(const Array& static_map, const Array& dynamic_map);
/// Residual motion of one pair: dominant motion, compensation, flow (params.flow) → flow [h,w,2].
[[nodiscard]] Array residual_flow_cpu(const Array& cur, const Array& prev, const MotionParams& params);

// ---- GPU (arrays on `device`; work on `stream`, a cudaStream_t; outputs from Array::device) ----
// Only defined when built with CUDA (WEFT_HAVE_CUDA). None synchronises the stream.
[[nodiscard]] Array motion_frame_gpu(const Array& frame, int k, int device, void* stream);
[[nodiscard]] Array dominant_motion_gpu(const Array& cur, const Array& prev, const MotionParams& params, int device,
                                        void* stream);
[[nodiscard]] Array compensate_gpu(const Array& cur, const Array& prev, const Array& theta, int device, void* stream);
[[nodiscard]] Array temporal_median_gpu(const std::vector<Array>& flows, int device, void* stream);
[[nodiscard]] Array dynamic_map_gpu(const Array& median, std::int64_t height, std::int64_t width, int k, int device,
                                    void* stream);
[[nodiscard]] Array fusion_gpu(const Array& static_map, const Array& dynamic_map, int device, void* stream);
/// A host array copied to `device` (ordered on `stream`).
[[nodiscard]] Array upload_gpu(const Array& host, int device, void* stream);
[[nodiscard]] Array residual_flow_gpu(const Array& cur, const Array& prev, const MotionParams& params, int device,
                                      void* stream);

}  // namespace weft::saliency
