#pragma once
/// Graph tasks of the dynamic pathway and the fusion (CPU and CUDA implementations of each):
///   frame → motion.input → (cur, prev) → motion.dominant → θ → motion.compensate → motion.flow
///         → motion.median → motion.map → Md;   Ms, Md → fusion → Mf.
/// motion.input and motion.median hold frames across tokens (stateful); the others are stateless,
/// so a frame farm replicates FrameSaliency (static map and residual flow of one frame) between them.
#include <deque>
#include <string>

#include "weft/graph/graph.hpp"
#include "weft/graph/task.hpp"
#include "weft/tasks/flow/task.hpp"
#include "weft/tasks/saliency/motion.hpp"

namespace weft::saliency {

class RetinaGpu;
class GaborGpu;

/// Frame [H, W] (u8, u16, f32) → working frame cur f32 [H/K, W/K] and the previous one (frame 0:
/// itself, so its residual motion is zero).
class MotionInput final : public Task {
 public:
  MotionInput(std::string name, int k);
  In<Array> in = input<Array>("in", std::nullopt, 2);
  Out<Array> cur = output<Array>("cur", DType::f32, 2);
  Out<Array> prev = output<Array>("prev", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  /// Drops the held frame after the last token (a device array must not outlive its stream).
  void stop(Context& ctx) override;
  [[nodiscard]] bool stateful() const override { return true; }
  void save(std::vector<std::byte>& out) const override;
  void load(std::span<const std::byte> in) override;

 private:
  void emit(Context& ctx, Array frame);
  int k_;
  Array last_;
};

/// cur, prev → affine dominant motion θ f64 [6] (motion.hpp).
class DominantMotion final : public Task {
 public:
  DominantMotion(std::string name, MotionParams params);
  In<Array> cur = input<Array>("cur", DType::f32, 2);
  In<Array> prev = input<Array>("prev", DType::f32, 2);
  Out<Array> theta = output<Array>("theta", DType::f64, 1);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  MotionParams params_;
};

/// cur, prev, θ → prev warped onto cur by the dominant motion.
class Compensate final : public Task {
 public:
  explicit Compensate(std::string name);
  In<Array> cur = input<Array>("cur", DType::f32, 2);
  In<Array> prev = input<Array>("prev", DType::f32, 2);
  In<Array> theta = input<Array>("theta", DType::f64, 1);
  Out<Array> out = output<Array>("out", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
};

/// Residual flow f32 [h, w, 2] → median over the last n frames of its magnitude f32 [h, w].
class TemporalMedian final : public Task {
 public:
  TemporalMedian(std::string name, int frames);
  In<Array> in = input<Array>("in", DType::f32, 3);
  Out<Array> out = output<Array>("out", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  /// Drops the held flows after the last token (device arrays must not outlive their stream).
  void stop(Context& ctx) override;
  [[nodiscard]] bool stateful() const override { return true; }
  void save(std::vector<std::byte>& out) const override;
  void load(std::span<const std::byte> in) override;

 private:
  void push(Array flow);
  int frames_;
  std::deque<Array> last_;
};

/// Median motion f32 [h, w] → dynamic map Md f32 [H, W] (normalised, upsampled by K).
class DynamicMap final : public Task {
 public:
  DynamicMap(std::string name, std::int64_t height, std::int64_t width, int k);
  In<Array> in = input<Array>("in", DType::f32, 2);
  Out<Array> out = output<Array>("out", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  std::int64_t height_, width_;
  int k_;
};

/// Ms f32 [H, Wf], Md f32 [H, W] → Mf f32 [H, W] (Marat et al. 2009, eq. 11).
class Fusion final : public Task {
 public:
  explicit Fusion(std::string name);
  In<Array> static_map = input<Array>("static", DType::f32, 2);
  In<Array> dynamic_map = input<Array>("dynamic", DType::f32, 2);
  Out<Array> out = output<Array>("out", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
};

/// A frame farm's replica: the per-frame work of the chosen pathways in one task. Ports: with the
/// static pathway "frame" in and "static" out (f32 [H, Wf]); with the dynamic one "cur" and "prev"
/// in and "flow" out (the residual flow, f32 [h, w, 2]).
class FrameSaliency final : public Task {
 public:
  FrameSaliency(std::string name, bool with_static, bool with_dynamic, MotionParams params);
  ~FrameSaliency() override;
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override { return 60.0; }

 private:
  bool static_, dynamic_;
  MotionParams params_;
  int frame_ = -1, cur_ = -1, prev_ = -1, static_out_ = -1, flow_out_ = -1;
  std::unique_ptr<RetinaGpu> retina_;
  std::unique_ptr<GaborGpu> bank_;
};

/// The dynamic pathway's tasks added to a graph, named motion.input, motion.dominant,
/// motion.compensate, motion.flow, motion.median, motion.map, for frames [height, width].
/// Connect a frame source to input->in and take map->out.
struct DynamicPathway {
  MotionInput* input = nullptr;
  DominantMotion* dominant = nullptr;
  Compensate* compensate = nullptr;
  flow::OpticalFlow* flow = nullptr;
  TemporalMedian* median = nullptr;
  DynamicMap* map = nullptr;
};
/// Throws ConfigError for parameters out of range (messages name the option as `prefix`-name).
DynamicPathway add_dynamic_pathway(Graph& graph, const MotionParams& params, std::int64_t height, std::int64_t width);
/// Checks MotionParams (scale 0/1/2/4/8, levels 1..8, iterations 1..50, median 1..9, flow).
void validate(const MotionParams& params);

}  // namespace weft::saliency
