#pragma once
/// One frame pair's flow computed in row strips over several places (`weft flow --split`): a
/// partition of FlowStrip tasks exchanging halo rows, giving the flow the OpticalFlow task gives.
///
///   weft::flow::SplitFlow split = weft::flow::add_split_flow(g, "flow", 4, params);
///   weft::flow::connect_split_flow(g, split, source.frame0, source.frame1);
///   g.connect(split.partition.out(), sink.flow);   // f32 [H, W, 2]
#include <string>
#include <vector>

#include "weft/graph/graph.hpp"
#include "weft/graph/partition.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow {

/// One row strip of a split flow (hs, tvl1, clg; CPU, or CUDA with compute_cuda's arithmetic:
/// for TV-L1 its one-iteration-per-launch path, fp32 or fp16). Takes its slab of frame 0 on `in`
/// (only where it lies is used) and both whole frames on frame0 / frame1 (the warp reads frame 1
/// anywhere); puts the flow of its slab's rows, f32 [slab rows, W, 2], on `out`.
class FlowStrip : public SlabTask {
 public:
  FlowStrip(std::string name, FlowParams params);
  In<Array> frame0 = input<Array>("frame0", std::nullopt, 2);
  In<Array> frame1 = input<Array>("frame1", std::nullopt, 2);

  void run_slab(Context& ctx, Halo& halo) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_slab_cuda(Context& ctx, Halo& halo) override;
  [[nodiscard]] double cost_hint() const override;

 private:
  FlowParams params_;
};

/// The tasks of a split flow: `partition` (its out() is the whole flow) and its strips.
struct SplitFlow {
  Partition partition;
  std::vector<FlowStrip*> strips;
};

/// Rows of the neighbours each strip holds (the partition's halo width): frames need at least
/// this many rows per strip. (CLG's strips hold ceil(3 rho) rows on every level; a level thinner
/// than that is computed whole by every strip.)
[[nodiscard]] int split_halo_rows() noexcept;

/// Adds `parts` strips "<name>.<i>" between "<name>.split" and "<name>.join". Throws ConfigError
/// for fewer than one part or bad parameters.
[[nodiscard]] SplitFlow add_split_flow(Graph& g, const std::string& name, int parts, const FlowParams& params);

/// Connects a frame pair: frame0 to the split and to every strip, frame1 to every strip.
void connect_split_flow(Graph& g, const SplitFlow& flow, Out<Array> frame0, Out<Array> frame1);

}  // namespace weft::flow
