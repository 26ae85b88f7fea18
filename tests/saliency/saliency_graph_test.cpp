// The static pathway as a graph: same maps, bit for bit, as the direct CPU call, for every
// grouping of the Gabor bank and every spread of the tasks over the ranks (run alone and under
// mpiexec -n 2 and -n 4, CPU places).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "frames.hpp"
#include "weft/exec/environment.hpp"
#include "weft/exec/executor.hpp"
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
