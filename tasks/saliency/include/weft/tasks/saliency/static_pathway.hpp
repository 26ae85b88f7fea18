#pragma once
/// Stages of the static saliency pathway over weft::Array, on the CPU (FFTW, float) and on a GPU
/// (cuFFT). Every stage has the same inputs and outputs on both, so tasks may be mapped freely.
///
///   frame [H,W] u8|u16|f32 ──retina──▶ spectrum f32 [H, Wf/2+1, 2]   (Hann window, forward R2C FFT)
///   spectrum ──gabor(o0, n)──▶ responses f32 [n·4, H, Wf]            (n orientations × 4 bands, inverse FFTs)
///   responses of every group ──interactions──▶ maps f32 [24, H, Wf] + stats f64 [24, 3] (min, max, m̄)
///   maps, stats ──normalize──▶ static map f32 [H, Wf]
///
/// Wf is W rounded up to even: an odd-width frame gets one zero column after the window (which
/// is zero at the border already), so the half spectrum's width gives Wf back unambiguously.
/// Callers crop the static map to W (static_map_cpu does). Grey levels are scaled to [0, 1]
/// (u8 / 255, u16 / 65535, f32 as is). Inverse transforms are normalised (1 / (H·Wf)).
#include <vector>

#include "weft/data/array.hpp"

namespace weft::saliency {

/// Padded FFT width for a frame width.
[[nodiscard]] inline std::int64_t fft_width(std::int64_t width) { return width + (width % 2); }

// ---- CPU (float, FFTW; plans cached per size, safe to call from several threads) ----
[[nodiscard]] Array retina_cpu(const Array& frame);
[[nodiscard]] Array gabor_cpu(const Array& spectrum, int first_orientation, int orientations);
struct Interacted {
  Array maps;   ///< f32 [24, H, Wf]
  Array stats;  ///< f64 [24, 3]: min, max and m̄ (mean of the other local maxima, bank.hpp) of each map
};
/// `groups` are gabor outputs covering orientations 0..5 in order (each n·4 maps).
[[nodiscard]] Interacted interactions_cpu(const std::vector<Array>& groups);
[[nodiscard]] Array normalize_cpu(const Array& maps, const Array& stats);
/// The whole pathway for one frame, cropped to the frame's [H, W].
[[nodiscard]] Array static_map_cpu(const Array& frame);
/// Crops a [H, Wf] map to width `width` (a copy; the same array when already that wide).
[[nodiscard]] Array crop_width(const Array& map, std::int64_t width);

// ---- GPU (cuFFT; arrays on the current device; work enqueued on `stream`, a cudaStream_t) ----
// Only defined when built with CUDA (WEFT_HAVE_CUDA). Outputs come from Array::device on `stream`.
// Each stage object caches its cuFFT plan for the last size seen.
class RetinaGpu {
 public:
  RetinaGpu();
  ~RetinaGpu();
  RetinaGpu(const RetinaGpu&) = delete;
  RetinaGpu& operator=(const RetinaGpu&) = delete;
  [[nodiscard]] Array run(const Array& frame, int device, void* stream);

 private:
  struct Plan;
  Plan* plan_ = nullptr;
};
class GaborGpu {
 public:
  GaborGpu(int first_orientation, int orientations);
  ~GaborGpu();
  GaborGpu(const GaborGpu&) = delete;
  GaborGpu& operator=(const GaborGpu&) = delete;
  [[nodiscard]] Array run(const Array& spectrum, int device, void* stream);

 private:
  struct Plan;
  int first_ = 0, count_ = 0;
  Plan* plan_ = nullptr;
};
[[nodiscard]] Interacted interactions_gpu(const std::vector<Array>& groups, int device, void* stream);
[[nodiscard]] Array normalize_gpu(const Array& maps, const Array& stats, int device, void* stream);

}  // namespace weft::saliency
