#pragma once
/// The whole saliency computation between a source of frames and the caller's sink, as `weft
/// saliency` and the Python package build it: the static pathway (staged, or a farm of whole
/// StaticSaliency tasks), the dynamic pathway (staged, or a farm of per-frame work between the
/// stateful motion.input and motion.median), and their fusion.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "weft/graph/graph.hpp"
#include "weft/tasks/saliency/motion.hpp"

namespace weft::saliency {

struct PipelineOptions {
  std::string pathway = "fused";  ///< static | dynamic | fused
  MotionParams motion;            ///< the dynamic pathway's parameters (validated here)
  int gabor_groups = 6;           ///< tasks the orientations are split into, staged graph (1, 2, 3 or 6)
  int farm = 0;                   ///< > 0: replicas of the per-frame work, round-robin; 0: staged
};

/// Producers of the maps, each a (task, output port) pair: `map` is the pathway's result, and for
/// the fused pathway `static_map` and `dynamic_map` are the two it fuses (else empty).
struct PipelineOutputs {
  std::pair<Task*, int> map{nullptr, 0};
  std::optional<std::pair<Task*, int>> static_map, dynamic_map;
};

/// Adds the tasks fed by `frames` (2D arrays [height, width], u8, u16 or f32, one per frame in
/// order) and returns the producers of the maps. Throws ConfigError on bad options.
PipelineOutputs add_saliency_pipeline(Graph& graph, std::pair<Task*, int> frames, std::int64_t height,
                                      std::int64_t width, const PipelineOptions& options);

}  // namespace weft::saliency
