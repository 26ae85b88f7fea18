// Migration of GPU-resident tasks (labels gpu, mpi): a stateless GPU task and a stateful one
// (running sum whose state lives in device memory) move at random between every GPU of every rank
// and a CPU, while 3000 tokens flow. Output bit-identical to a sequential CPU reference. Skips
// with fewer than two GPUs in the job.
#include <gtest/gtest.h>

#include "migration_fixture.hpp"
#include "weft/tasks/demo/running_sum.hpp"
#include "common/mpi_main.hpp"

using namespace weft;
using weft::test::env;


namespace {
std::vector<Place> every_gpu() {
  std::vector<Place> places;
  for (const auto& r : env->cluster().ranks)
    for (const auto& g : r.gpus) places.push_back(Place::cuda(g.index, r.rank));
  return places;
}

/// Every token once, in order, each the running sum of 2x + 1 over the source's tokens so far
/// (bit-identical: the GPU adds in the same order as this loop).
void check_running_sum(const tasks::Collect::Record& rec, std::uint64_t tokens, std::int64_t length) {
  ASSERT_EQ(rec.indices.size(), tokens);
  std::vector<float> total(length, 0.0f);
  for (std::uint64_t k = 0; k < tokens; ++k) {
    ASSERT_EQ(rec.indices[k], k);
    for (std::int64_t i = 0; i < length; ++i) {
      total[i] += std::fma(2.0f, tasks::ArraySource::value(k, i, length), 1.0f);
      if (i % 997 == 0) {
        ASSERT_EQ(rec.arrays[k][i], total[i]) << "token " << k << " element " << i;
      }
    }
  }
}
}  // namespace

TEST(MigrationGpu, StatefulGpuTaskMovesBetweenGpusAndRanksBitIdentical) {
  std::vector<Place> places = every_gpu();
  if (places.size() < 2) GTEST_SKIP() << "needs two GPUs in the job, found " << places.size();
  places.push_back(Place::host(0));  // GPU <-> CPU moves too
  constexpr std::uint64_t kTokens = 3000;
  constexpr std::int64_t kLength = 4096;
  int last = env->size() - 1;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", kTokens, kLength);
  auto& scale = g.add<tasks::Affine>("scale", 2.0f, 1.0f);
  auto& sum = g.add<tasks::RunningSum>("sum", std::size_t(1) << 20);  // 1 MiB of ballast state
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, scale.in);
  g.connect(scale.out, sum.in);
  g.connect(sum.out, sink.in);
  g.migratable(scale, places);
  g.migratable(sum, places);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("scale", places[0]);
  m.set("sum", places[0]);
  m.set("sink", Place::host(last));
  Executor ex({.channel_capacity = 3});
  RunHandle run = ex.run(g, m);
  if (env->rank() == 0) {
    // The source's progress is not visible here; the sink's rank may differ: move on a timer.
    std::mt19937 random(5);
    for (int i = 0; i < 200; ++i) {
      run.migrate(i % 2 ? "sum" : "scale", places[random() % places.size()]);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  run.wait();
  if (env->rank() == 0) {  // both routers sit on rank 0, with the source and the first GPU
    std::printf("%llu moves in %.3f s\n", static_cast<unsigned long long>(run.stats().migrations), run.stats().seconds);
    EXPECT_GE(run.stats().migrations, 1u);
  }
  if (env->rank() != last) return;
  check_running_sum(*rec, kTokens, kLength);
}

// The same running sum between GPU tasks: its router sits with a GPU producer on rank 0, its
// merger with a GPU consumer on the last rank, so that between ranks of distinct GPUs the
// tokens into and out of the moving task travel through NCCL (several edges between the same
// two ranks), while it moves at random between every GPU of every rank.
TEST(MigrationGpu, MovesWhileItsTokensTravelThroughNccl) {
  std::vector<Place> places = every_gpu();
  if (places.size() < 2) GTEST_SKIP() << "needs two GPUs in the job, found " << places.size();
  constexpr std::uint64_t kTokens = 3000;
  constexpr std::int64_t kLength = 4096;
  int last = env->size() - 1;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", kTokens, kLength);
  auto& pre = g.add<tasks::Affine>("pre", 2.0f, 1.0f);
  auto& sum = g.add<tasks::RunningSum>("sum", std::size_t(1) << 20);
  auto& post = g.add<tasks::Affine>("post", 1.0f, 0.0f);  // exact: fma(1, x, 0) = x
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, pre.in);
  g.connect(pre.out, sum.in);
  g.connect(sum.out, post.in);
  g.connect(post.out, sink.in);
  g.migratable(sum, places);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("pre", places.front());
  m.set("sum", places.front());
  m.set("post", places.back());
  m.set("sink", Place::host(last));
  Executor ex({.channel_capacity = 3});
  RunHandle run = ex.run(g, m);
  if (env->rank() == 0) {
    std::mt19937 random(7);
    for (int i = 0; i < 150; ++i) {
      run.migrate("sum", places[random() % places.size()]);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  run.wait();
  if (env->rank() == 0) {
    std::printf("%llu moves in %.3f s, %d edge(s) through NCCL\n",
                static_cast<unsigned long long>(run.stats().migrations), run.stats().seconds, run.stats().nccl_edges);
    EXPECT_GE(run.stats().migrations, 1u);
    const auto& ranks = env->cluster().ranks;
    if (ranks.size() > 1 && ranks.front().host == ranks.back().host &&
        ranks.front().gpus.front().uuid != ranks.back().gpus.back().uuid) {
      EXPECT_GE(run.stats().nccl_edges, 2) << "router to the instance on the last rank, first instance to merger";
    }
  }
  if (env->rank() != last) return;
  check_running_sum(*rec, kTokens, kLength);
}
