#pragma once
/// Graph tasks of the static saliency pathway (CPU and CUDA implementations of each):
///   frame → Retina → spectrum → GaborGroup × G → Interactions → Normalize → static map [H, Wf].
/// Gabor groups split the 6 orientations into G ∈ {1, 2, 3, 6} contiguous groups so that the
/// heaviest work (filtering + inverse FFTs) can be spread over devices.
#include <memory>
#include <string>
#include <vector>

#include "weft/graph/graph.hpp"
#include "weft/graph/task.hpp"

namespace weft::saliency {

class RetinaGpu;
class GaborGpu;

/// Frame [H, W] (u8, u16, f32) → Hann-windowed half spectrum f32 [H, Wf/2+1, 2].
class Retina final : public Task {
 public:
  explicit Retina(std::string name);
  ~Retina() override;
  In<Array> in = input<Array>("in", std::nullopt, 2);
  Out<Array> out = output<Array>("out", DType::f32, 3);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  std::unique_ptr<RetinaGpu> gpu_;
};

/// Spectrum → real responses f32 [n·4, H, Wf] of orientations first..first+n−1, 4 bands each.
class GaborGroup final : public Task {
 public:
  GaborGroup(std::string name, int first_orientation, int orientations);
  ~GaborGroup() override;
  In<Array> in = input<Array>("in", DType::f32, 3);
  Out<Array> out = output<Array>("out", DType::f32, 3);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override { return 4.0 * count_; }

 private:
  int first_, count_;
  std::unique_ptr<GaborGpu> gpu_;
};

/// Responses of every group (inputs "in0".."in<G-1>", orientations in order) → interacted
/// energies f32 [24, H, Wf] and their statistics f64 [24, 3] (min, max, m̄).
class Interactions final : public Task {
 public:
  Interactions(std::string name, int groups);
  std::vector<In<Array>> in;
  Out<Array> maps = output<Array>("maps", DType::f32, 3);
  Out<Array> stats = output<Array>("stats", DType::f64, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override { return 2.0; }
};

/// Maps and statistics → static map f32 [H, Wf] (normalised, weighted, thresholded, summed).
class Normalize final : public Task {
 public:
  explicit Normalize(std::string name);
  In<Array> maps = input<Array>("maps", DType::f32, 3);
  In<Array> stats = input<Array>("stats", DType::f64, 2);
  Out<Array> out = output<Array>("out", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
};

/// The whole static pathway as one task, frame → static map f32 [H, Wf] (same values as the staged
/// tasks): the replica of a frame farm (Graph::add_farm), one frame per replica at a time.
class StaticSaliency final : public Task {
 public:
  explicit StaticSaliency(std::string name);
  ~StaticSaliency() override;
  In<Array> in = input<Array>("in", std::nullopt, 2);
  Out<Array> out = output<Array>("out", DType::f32, 2);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override { return 30.0; }

 private:
  std::unique_ptr<RetinaGpu> retina_;
  std::unique_ptr<GaborGpu> bank_;
};

/// The static pathway's tasks added to a graph, named retina, gabor.<g>, interactions, normalize.
struct StaticPathway {
  Retina* retina = nullptr;
  std::vector<GaborGroup*> gabor;
  Interactions* interactions = nullptr;
  Normalize* normalize = nullptr;
};
/// Adds and connects the pathway with `groups` Gabor groups (1, 2, 3 or 6; else ConfigError naming
/// `option`). Connect a frame source to retina->in and take normalize->out.
StaticPathway add_static_pathway(Graph& graph, int groups, const std::string& option = "--gabor-groups");

}  // namespace weft::saliency
