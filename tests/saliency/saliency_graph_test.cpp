// The static pathway as a graph: same maps, bit for bit, as the direct CPU call, for every
// grouping of the Gabor bank and every spread of the tasks over the ranks (run alone and under
// mpiexec -n 2 and -n 4, CPU places).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "frames.hpp"
#include "motion_frames.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/exec/executor.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/tasks/saliency/tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

Environment* env = nullptr;

constexpr int kFrames = 4;

class Frames final : public Task {
 public:
  Frames(std::int64_t h, std::int64_t w) : Task("read"), h_(h), w_(w) {}
  Out<Array> out = output<Array>("out", DType::u8, 2);
  void run(Context& ctx) override {
    if (next_ == kFrames) return ctx.end_stream();
    ctx.put(out, test::textured_frame(h_, w_, next_++));
  }

 private:
  std::int64_t h_, w_;
  int next_ = 0;
};

class Collect final : public Task {
 public:
  explicit Collect(std::shared_ptr<std::vector<Array>> maps) : Task("write"), maps_(std::move(maps)) {}
  In<Array> in = input<Array>("in", DType::f32, 2);
  void run(Context& ctx) override { maps_->push_back(ctx.take(in)); }

 private:
  std::shared_ptr<std::vector<Array>> maps_;
};

TEST(SaliencyGraph, SameMapsForEveryGroupingAndEverySpreadOverRanks) {
  constexpr std::int64_t kH = 40, kW = 54;
  const int ranks = env->size();
  for (int groups : {1, 2, 3, 6}) {
    for (int spread = 0; spread < 2; ++spread) {
      Graph g;
      auto& read = g.add<Frames>(kH, kW);
      const StaticPathway path = add_static_pathway(g, groups);
      auto maps = std::make_shared<std::vector<Array>>();
      auto& sink = g.add<Collect>(maps);
      g.connect(read.out, path.retina->in);
      g.connect(path.normalize->out, sink.in);
      Mapping m;
      // spread 0: everything on rank 0; spread 1: stages round-robin over the ranks.
      int next = 0;
      auto place = [&](const std::string& task) { m.set(task, Place::host(spread ? next++ % ranks : 0)); };
      place("read");
      place("retina");
      for (int i = 0; i < groups; ++i) place("gabor." + std::to_string(i));
      place("interactions");
      place("normalize");
      m.set("write", Place::host(ranks - 1));
      ExecutorOptions options;
      options.channel_capacity = 2;
      Executor executor(options);
      executor.run(g, m).wait();
      if (env->rank() != ranks - 1) continue;
      ASSERT_EQ(maps->size(), static_cast<std::size_t>(kFrames));
      for (int t = 0; t < kFrames; ++t) {
        const Array want = static_map_cpu(test::textured_frame(kH, kW, t));
        const Array got = crop_width((*maps)[t], kW);
        ASSERT_EQ(got.shape(), want.shape());
        for (std::int64_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << "groups " << groups << " spread " << spread
                                                                 << " frame " << t << " pixel " << i;
      }
    }
  }
}

/// Frames of a moving patch under a pan, as a source.
class PanFrames final : public Task {
 public:
  PanFrames(std::int64_t h, std::int64_t w) : Task("read"), h_(h), w_(w) {}
  Out<Array> out = output<Array>("out", DType::u8, 2);
  void run(Context& ctx) override {
    if (next_ == kFrames) return ctx.end_stream();
    ctx.put(out, pan_frame(h_, w_, next_++));
  }
  static Array pan_frame(std::int64_t h, std::int64_t w, int t) {
    return test::moving_patch_frame(h, w, t, 1.0, 0.5, 1.5, -1.0, 14, 16, 10);
  }

 private:
  std::int64_t h_, w_;
  int next_ = 0;
};

TEST(SaliencyGraph, FusedMapsSameForEveryMappingPipelineAndFarm) {
  constexpr std::int64_t kH = 40, kW = 54;
  const int ranks = env->size();
  MotionParams params;
  params.median_frames = 3;
  std::vector<Array> frames;
  for (int t = 0; t < kFrames; ++t) frames.push_back(PanFrames::pan_frame(kH, kW, t));
  const test::ChainMaps want = test::chain_cpu(frames, params);
  for (int layout = 0; layout < 3; ++layout) {  // 0: all on rank 0, 1: stages over the ranks, 2: farm of 3
    Graph g;
    auto& read = g.add<PanFrames>(kH, kW);
    auto maps = std::make_shared<std::vector<Array>>();
    auto& sink = g.add<Collect>(maps);
    auto& fusion = g.add<Fusion>("fusion");
    Mapping m;
    int next = 0;
    auto place = [&](const std::string& task) { m.set(task, Place::host(layout == 1 ? next++ % ranks : 0)); };
    if (layout < 2) {
      const StaticPathway s = add_static_pathway(g, 2);
      const DynamicPathway d = add_dynamic_pathway(g, params, kH, kW);
      g.connect(read.out, s.retina->in);
      g.connect(read.out, d.input->in);
      g.connect(s.normalize->out, fusion.static_map);
      g.connect(d.map->out, fusion.dynamic_map);
      for (const char* t : {"retina", "gabor.0", "gabor.1", "interactions", "normalize", "motion.input", "motion.dominant",
                            "motion.compensate", "motion.flow", "motion.median", "motion.map"})
        place(t);
    } else {
      auto& input = g.add<MotionInput>("motion.input", motion_scale(params, kW));
      const Farm farm = g.add_farm("frame", 3, [&](int i) {
        return std::make_unique<FrameSaliency>("frame." + std::to_string(i), true, true, params);
      });
      auto& median = g.add<TemporalMedian>("motion.median", params.median_frames);
      auto& map = g.add<DynamicMap>("motion.map", kH, kW, motion_scale(params, kW));
      g.connect(read.out, input.in);
      g.connect(read.out, farm.in(0));
      g.connect(input.cur, farm.in(1));
      g.connect(input.prev, farm.in(2));
      g.connect(farm.out(0), fusion.static_map);
      g.connect(farm.out(1), median.in);
      g.connect(median.out, map.in);
      g.connect(map.out, fusion.dynamic_map);
      for (const char* t : {"motion.input", "frame.scatter", "frame.gather", "motion.median", "motion.map"})
        m.set(t, Place::host(0));
      for (int i = 0; i < 3; ++i) m.set("frame." + std::to_string(i), Place::host(i % ranks));
    }
    g.connect(fusion.out, sink.in);
    m.set("read", Place::host(0));
    m.set("fusion", Place::host(ranks > 1 ? 1 : 0));
    m.set("write", Place::host(ranks - 1));
    ExecutorOptions options;
    options.channel_capacity = 2;
    Executor executor(options);
    executor.run(g, m).wait();
    if (env->rank() != ranks - 1) continue;
    ASSERT_EQ(maps->size(), static_cast<std::size_t>(kFrames));
    for (int t = 0; t < kFrames; ++t) {
      const Array& got = (*maps)[t];
      ASSERT_EQ(got.shape(), want.fused[t].shape());
      for (std::int64_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got.data<float>()[i], want.fused[t].data<float>()[i]) << "layout " << layout << " frame " << t << " pixel " << i;
    }
  }
}

TEST(SaliencyGraph, RejectsGroupCountsThatDoNotDivideTheOrientations) {
  Graph g;
  EXPECT_THROW(add_static_pathway(g, 4, "--gabor-groups"), ConfigError);
}

}  // namespace
}  // namespace weft::saliency

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  weft::Environment environment(argc, argv);
  weft::saliency::env = &environment;
  if (environment.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
