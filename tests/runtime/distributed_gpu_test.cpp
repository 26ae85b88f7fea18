// GPU tasks on two ranks (labels gpu, mpi): NCCL between distinct GPUs, CUDA IPC between distinct
// GPUs of one host where NCCL does not apply (the edges form a loop of ranks), host staging over
// MPI where the ranks share one GPU or with WEFT_PEER_IPC=0. Skips without a GPU on every rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "executor_fixture.hpp"
#include "common/mpi_main.hpp"
#include "weft/util/settings.hpp"

using namespace weft;
using weft::test::env;


TEST(DistributedGpu, ChainOverTwoRanksGpusIsCompleteOrderedAndExact) {
  for (const auto& r : env->cluster().ranks)
    if (r.gpus.empty()) GTEST_SKIP() << "rank " << r.rank << " has no GPU";
  if (env->size() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr std::uint64_t kTokens = 3000;
  constexpr std::int64_t kLength = 4096;
  int last = env->size() - 1;
  int second_gpu = env->cluster().ranks[last].gpus.size() > 1 ? 1 : 0;
  for (bool overlap : {true, false}) {
    auto rec = std::make_shared<tasks::Collect::Record>();
    Graph g = test::affine_chain(kTokens, kLength, rec);
    Mapping m;
    m.set("source", Place::host(0));
    m.set("a", Place::cuda(0, 0));
    m.set("b", Place::cuda(second_gpu, last));
    m.set("sink", Place::host(last));
    Executor ex({.channel_capacity = 3, .overlap = overlap, .trace_file = ""});
    RunHandle run = ex.run(g, m);
    run.wait();
    if (env->rank() == 0)
      std::printf("overlap %s: %d edge(s) through NCCL, %d through CUDA IPC, %.3f s\n", overlap ? "on" : "off",
                  run.stats().nccl_edges, run.stats().peer_edges, run.stats().seconds);
    if (env->rank() != last) continue;
    ASSERT_EQ(rec->indices.size(), kTokens);
    for (std::uint64_t k = 0; k < kTokens; ++k) {
      ASSERT_EQ(rec->indices[k], k);
      for (std::int64_t i = 0; i < kLength; i += 511)
        ASSERT_EQ(rec->arrays[k][i], test::expected(k, i, kLength, 2.0f, 1.0f, 0.5f, -3.0f));
    }
  }
}

// Two NCCL edges between the same two ranks, each carrying different data (and arrays of
// different lengths): NCCL matches sends and receives between two ranks in the order they were
// issued, so both ranks must issue them in one order whatever the edges' threads do.
TEST(DistributedGpu, TwoNcclEdgesBetweenTheSameRanksKeepTheirData) {
  for (const auto& r : env->cluster().ranks)
    if (r.gpus.empty()) GTEST_SKIP() << "rank " << r.rank << " has no GPU";
  if (env->size() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr std::uint64_t kTokens = 2000;
  constexpr std::int64_t kLong = 8192, kShort = 1024;
  int last = env->size() - 1;
  int second_gpu = env->cluster().ranks[last].gpus.size() > 1 ? 1 : 0;
  auto rec1 = std::make_shared<tasks::Collect::Record>();
  auto rec2 = std::make_shared<tasks::Collect::Record>();
  Graph g;
  auto& src1 = g.add<tasks::ArraySource>("source1", kTokens, kLong);
  auto& src2 = g.add<tasks::ArraySource>("source2", kTokens, kShort);
  auto& a1 = g.add<tasks::Affine>("a1", 2.0f, 1.0f);
  auto& a2 = g.add<tasks::Affine>("a2", 3.0f, -1.0f);
  auto& b1 = g.add<tasks::Affine>("b1", 0.5f, -3.0f);
  auto& b2 = g.add<tasks::Affine>("b2", -1.0f, 4.0f);
  auto& sink1 = g.add<tasks::Collect>("sink1", rec1);
  auto& sink2 = g.add<tasks::Collect>("sink2", rec2);
  g.connect(src1.out, a1.in);
  g.connect(src2.out, a2.in);
  g.connect(a1.out, b1.in);
  g.connect(a2.out, b2.in);
  g.connect(b1.out, sink1.in);
  g.connect(b2.out, sink2.in);
  Mapping m;
  m.set("source1", Place::host(0));
  m.set("source2", Place::host(0));
  m.set("a1", Place::cuda(0, 0));
  m.set("a2", Place::cuda(0, 0));
  m.set("b1", Place::cuda(second_gpu, last));
  m.set("b2", Place::cuda(second_gpu, last));
  m.set("sink1", Place::host(last));
  m.set("sink2", Place::host(last));
  Executor ex({.channel_capacity = 3});
  RunHandle run = ex.run(g, m);
  run.wait();
  if (env->rank() == 0) {
    std::printf("%d edge(s) through NCCL\n", run.stats().nccl_edges);
    const auto& ranks = env->cluster().ranks;
    if (ranks.front().host == ranks.back().host &&
        ranks.front().gpus.front().uuid != ranks.back().gpus.at(second_gpu).uuid) {
      EXPECT_EQ(run.stats().nccl_edges, 2) << "both edges through NCCL";
    }
  }
  if (env->rank() != last) return;
  ASSERT_EQ(rec1->indices.size(), kTokens);
  ASSERT_EQ(rec2->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec1->indices[k], k);
    ASSERT_EQ(rec2->indices[k], k);
    ASSERT_EQ(rec1->arrays[k].size(), static_cast<std::size_t>(kLong)) << "token " << k;
    ASSERT_EQ(rec2->arrays[k].size(), static_cast<std::size_t>(kShort)) << "token " << k;
    for (std::int64_t i = 0; i < kShort; i += 127) {
      ASSERT_EQ(rec1->arrays[k][i], test::expected(k, i, kLong, 2.0f, 1.0f, 0.5f, -3.0f)) << "token " << k;
      ASSERT_EQ(rec2->arrays[k][i], test::expected(k, i, kShort, 3.0f, -1.0f, -1.0f, 4.0f)) << "token " << k;
    }
  }
}

TEST(DistributedGpu, TraceShowsGpuWorkCopiesAndTransfers) {
  for (const auto& r : env->cluster().ranks)
    if (r.gpus.empty()) GTEST_SKIP() << "rank " << r.rank << " has no GPU";
  if (env->size() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr std::uint64_t kTokens = 40;
  const int last = env->size() - 1;
  const int second_gpu = env->cluster().ranks[last].gpus.size() > 1 ? 1 : 0;
  const auto path = (std::filesystem::temp_directory_path() / "weft_trace_gpu.json").string();
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::affine_chain(kTokens, 1 << 16, rec);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("a", Place::cuda(0, 0));
  m.set("b", Place::cuda(second_gpu, last));
  m.set("sink", Place::host(last));
  Executor ex({.channel_capacity = 3, .overlap = true, .trace_file = path});
  RunHandle run = ex.run(g, m);
  run.wait();
  if (env->rank() != 0) return;
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  std::map<std::string, int> gpu_spans;  // category -> spans on the GPU clock
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || !e["args"].contains("clock")) continue;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    ++gpu_spans[e["cat"].get<std::string>()];
  }
  // Kernels of a and b, the copies in (rank 0) and out (last rank), and the transfer between the
  // ranks: through NCCL, or (ranks sharing one GPU, or no NCCL) staged by a copy to the host on
  // rank 0 and a copy to the GPU on the last rank (through CUDA IPC: a copy into its buffer on
  // rank 0 and one out of it on the last rank).
  EXPECT_EQ(gpu_spans["gpu"], static_cast<int>(2 * kTokens));
  const int staged = run.stats().nccl_edges > 0 ? 0 : 2;
  EXPECT_EQ(gpu_spans["copy"], static_cast<int>((2 + staged) * kTokens));
  if (run.stats().nccl_edges > 0) {
    EXPECT_EQ(gpu_spans["send"], static_cast<int>(kTokens));
    EXPECT_EQ(gpu_spans["recv"], static_cast<int>(kTokens));
  }
}

// A loop of ranks (a: rank 0's GPU -> b: the last rank's GPU -> c: rank 0's GPU), then a CPU
// task of the last rank: NCCL cannot carry the loop; between distinct GPUs of one host CUDA IPC
// carries its edges (c -> sink into host memory through the last rank's GPU). The same results
// with WEFT_PEER_IPC=0 (host staging over MPI), and where the ranks share one GPU (staged too).
TEST(DistributedGpu, LoopOfRanksThroughCudaIpcIsExactAndOrdered) {
  for (const auto& r : env->cluster().ranks)
    if (r.gpus.empty()) GTEST_SKIP() << "rank " << r.rank << " has no GPU";
  if (env->size() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr std::uint64_t kTokens = 1500;
  constexpr std::int64_t kLength = 3 * 4096 + 7;
  const int last = env->size() - 1;
  const int second_gpu = env->cluster().ranks[last].gpus.size() > 1 ? 1 : 0;
  const auto& ranks = env->cluster().ranks;
  const bool distinct_gpus_of_one_host =
      ranks.front().host == ranks[last].host && ranks.front().gpus.front().uuid != ranks[last].gpus.at(second_gpu).uuid;
  for (const char* ipc : {"1", "0"}) {
    setenv("WEFT_PEER_IPC", ipc, 1);
    weft::reload_settings();
    auto rec = std::make_shared<tasks::Collect::Record>();
    Graph g;
    auto& src = g.add<tasks::ArraySource>("source", kTokens, kLength);
    auto& a = g.add<tasks::Affine>("a", 2.0f, 1.0f);
    auto& b = g.add<tasks::Affine>("b", 0.5f, -3.0f);
    auto& c = g.add<tasks::Affine>("c", -1.5f, 0.25f);
    auto& sink = g.add<tasks::Collect>("sink", rec);
    g.connect(src.out, a.in);
    g.connect(a.out, b.in);
    g.connect(b.out, c.in);
    g.connect(c.out, sink.in);
    Mapping m;
    m.set("source", Place::host(0));
    m.set("a", Place::cuda(0, 0));
    m.set("b", Place::cuda(second_gpu, last));
    m.set("c", Place::cuda(0, 0));
    m.set("sink", Place::host(last));
    Executor ex({.channel_capacity = 2});
    RunHandle run = ex.run(g, m);
    run.wait();
    if (env->rank() == 0)
      std::printf("WEFT_PEER_IPC=%s: %d edge(s) through NCCL, %d through CUDA IPC, %.3f s\n", ipc,
                  run.stats().nccl_edges, run.stats().peer_edges, run.stats().seconds);
    EXPECT_EQ(run.stats().nccl_edges, 0) << "a loop of ranks never goes through NCCL";
    EXPECT_EQ(run.stats().peer_edges, distinct_gpus_of_one_host && std::string(ipc) == "1" ? 3 : 0);
    if (env->rank() == last) {
      auto expected = [&](std::uint64_t k, std::int64_t i) {  // c(b(a(source)))
        const float x = std::fma(0.5f, std::fma(2.0f, tasks::ArraySource::value(k, i, kLength), 1.0f), -3.0f);
        return std::fma(-1.5f, x, 0.25f);
      };
      ASSERT_EQ(rec->indices.size(), kTokens);
      for (std::uint64_t k = 0; k < kTokens; ++k) {
        ASSERT_EQ(rec->indices[k], k);
        ASSERT_EQ(rec->arrays[k].size(), static_cast<std::size_t>(kLength));
        for (std::int64_t i = 0; i < kLength; i += 257)
          ASSERT_EQ(rec->arrays[k][i], expected(k, i)) << "token " << k << ", element " << i;
        ASSERT_EQ(rec->arrays[k][kLength - 1], expected(k, kLength - 1));
      }
    }
  }
  unsetenv("WEFT_PEER_IPC");
  weft::reload_settings();
}
#include "weft/util/settings.hpp"
