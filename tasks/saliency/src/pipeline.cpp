#include "weft/tasks/saliency/pipeline.hpp"

#include <memory>

#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/tasks/saliency/tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

/// The tasks after a farm of FrameSaliency or the dynamic pathway's stateless middle: the
/// temporal median and the dynamic map.
struct MotionTail {
  TemporalMedian* median = nullptr;
  DynamicMap* map = nullptr;
};

MotionTail add_motion_tail(Graph& graph, const MotionParams& motion, std::int64_t height, std::int64_t width) {
  MotionTail t;
  t.median = &graph.add<TemporalMedian>("motion.median", motion.median_frames);
  t.map = &graph.add<DynamicMap>("motion.map", height, width, motion_scale(motion, width));
  graph.connect(t.median->out, t.map->in);
  return t;
}

}  // namespace

PipelineOutputs add_saliency_pipeline(Graph& graph, std::pair<Task*, int> frames, std::int64_t height,
                                      std::int64_t width, const PipelineOptions& o) {
  if (o.pathway != "static" && o.pathway != "dynamic" && o.pathway != "fused")
    throw ConfigError("--pathway: expected static, dynamic or fused, got '" + o.pathway + "'");
  if (o.farm < 0) throw ConfigError("--farm: expected N >= 0, got " + std::to_string(o.farm));
  const bool with_static = o.pathway != "dynamic", with_dynamic = o.pathway != "static";
  PipelineOutputs out;
  if (o.farm > 0 && !with_dynamic) {
    const Farm farm = graph.add_farm("static", o.farm, [](int i) {
      return std::make_unique<StaticSaliency>("static." + std::to_string(i));
    });
    graph.connect(frames, farm.in());
    out.map = farm.out();
    return out;
  }
  std::optional<std::pair<Task*, int>> static_map, dynamic_map;
  if (o.farm > 0) {
    // Stateful ends around a farm of per-frame work: motion.input pairs the frames before it,
    // motion.median follows it (the gather restores the frame order).
    validate(o.motion);
    auto& motion_in = graph.add<MotionInput>("motion.input", motion_scale(o.motion, width));
    graph.connect(frames, std::pair<Task*, int>{&motion_in, motion_in.in.index});
    const Farm farm = graph.add_farm("frame", o.farm, [&](int i) {
      return std::make_unique<FrameSaliency>("frame." + std::to_string(i), with_static, true, o.motion);
    });
    int port = 0;
    if (with_static) graph.connect(frames, farm.in(port++));
    graph.connect(motion_in.cur, farm.in(port++));
    graph.connect(motion_in.prev, farm.in(port++));
    const MotionTail tail = add_motion_tail(graph, o.motion, height, width);
    if (with_static) static_map = farm.out(0);
    graph.connect(farm.out(with_static ? 1 : 0), tail.median->in);
    dynamic_map = std::pair<Task*, int>{tail.map, tail.map->out.index};
  } else {
    if (with_static) {
      const StaticPathway path = add_static_pathway(graph, o.gabor_groups, "--gabor-groups");
      graph.connect(frames, std::pair<Task*, int>{path.retina, path.retina->in.index});
      static_map = std::pair<Task*, int>{path.normalize, path.normalize->out.index};
    }
    if (with_dynamic) {
      const DynamicPathway path = add_dynamic_pathway(graph, o.motion, height, width);
      graph.connect(frames, std::pair<Task*, int>{path.input, path.input->in.index});
      dynamic_map = std::pair<Task*, int>{path.map, path.map->out.index};
    }
  }
  if (!(with_static && with_dynamic)) {
    out.map = *(with_static ? static_map : dynamic_map);
    return out;
  }
  auto& fusion = graph.add<Fusion>("fusion");
  graph.connect(*static_map, std::pair<Task*, int>{&fusion, fusion.static_map.index});
  graph.connect(*dynamic_map, std::pair<Task*, int>{&fusion, fusion.dynamic_map.index});
  out.map = {&fusion, fusion.out.index};
  out.static_map = static_map;
  out.dynamic_map = dynamic_map;
  return out;
}

}  // namespace weft::saliency
