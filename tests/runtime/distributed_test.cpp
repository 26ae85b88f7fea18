// Multi-rank tests: run alone (one rank) and under mpiexec -n 2 and -n 4 (CPU places).
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "executor_fixture.hpp"
#include "common/mpi_main.hpp"

using namespace weft;
using weft::test::env;

namespace {

int last_rank() { return env->size() - 1; }

}  // namespace

TEST(Distributed, ChainAcrossRanksDeliversEveryTokenInOrder) {
  constexpr std::uint64_t kTokens = 10000;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::affine_chain(kTokens, 16, rec);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("a", Place::host(last_rank()));
  m.set("b", Place::host(env->size() > 2 ? 1 : 0));
  m.set("sink", Place::host(0));
  Executor ex({.channel_capacity = 3});
  ex.run(g, m).wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    for (int i = 0; i < 16; ++i) ASSERT_EQ(rec->arrays[k][i], test::expected(k, i, 16, 2.0f, 1.0f, 0.5f, -3.0f));
  }
}

TEST(Distributed, FanOutOverEveryRankFanInOnOne) {
  constexpr std::uint64_t kTokens = 2000;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::fan_in(kTokens, 8, rec);
  Mapping m;
  int n = env->size();
  m.set("source", Place::host(0));
  m.set("left", Place::host(1 % n));
  m.set("right", Place::host(2 % n));
  m.set("sum", Place::host(3 % n));
  m.set("sink", Place::host(last_rank()));
  Executor ex;
  ex.run(g, m).wait();
  if (env->rank() != last_rank()) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    float x = tasks::ArraySource::value(k, 5, 8);
    ASSERT_EQ(rec->arrays[k][5], std::fma(2.0f, x, 0.0f) + std::fma(-1.0f, x, 1.0f));
  }
}

TEST(Distributed, AnErrorOnOneRankStopsEveryRank) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 1000000, 8);
  auto& fail = g.add<test::FailAt>("fails", 100);
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, fail.in);
  g.connect(fail.out, sink.in);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("fails", Place::host(last_rank()));
  m.set("sink", Place::host(0));
  Executor ex;
  try {
    ex.run(g, m).wait();
    FAIL() << "rank " << env->rank() << " saw no error";
  } catch (const RemoteError& e) {
    EXPECT_NE(env->rank(), last_rank());
    EXPECT_NE(std::string(e.what()).find("planted failure"), std::string::npos) << e.what();
  } catch (const Error& e) {
    EXPECT_EQ(env->rank(), last_rank());
    EXPECT_NE(std::string(e.what()).find("planted failure"), std::string::npos) << e.what();
  }
}

TEST(Distributed, MergedTraceHoldsEveryRank) {
  auto path = (std::filesystem::temp_directory_path() / "weft_trace_distributed.json").string();
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 50, 4);
  auto& f = g.add<tasks::Affine>("f", 1.0f, 0.0f);
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, f.in);
  g.connect(f.out, sink.in);
  Mapping m;
  m.set("source", Place::host(0));
  m.set("f", Place::host(last_rank()));
  m.set("sink", Place::host(0));
  Executor ex({.trace_file = path});
  ex.run(g, m).wait();
  if (env->rank() != 0) return;
  std::ifstream in(path);
  auto doc = nlohmann::json::parse(in);
  std::set<int> pids;
  std::set<std::uint64_t> sent, received;
  for (const auto& e : doc["traceEvents"]) {
    // Slow MPI calls of a progress thread ("mpi") are recorded on every rank, idle ones too (one
    // showed up on an oversubscribed 2-core machine under -n 4): the tasks' and edges' spans are
    // on rank 0 and the last rank only.
    if (e["ph"] != "X" || e["cat"] == "mpi") continue;
    pids.insert(e["pid"].get<int>());
    if (e["cat"] == "send") sent.insert(e["args"]["token"].get<std::uint64_t>());
    if (e["cat"] == "recv") received.insert(e["args"]["token"].get<std::uint64_t>());
  }
  EXPECT_EQ(pids.size(), static_cast<std::size_t>(std::min(env->size(), 2)));
  if (env->size() > 1) {  // every token crosses to the last rank and back: a send and a receive each way
    EXPECT_EQ(sent.size(), 50u);
    EXPECT_EQ(received.size(), 50u);
  }
}

TEST(Distributed, FarmOverEveryRankKeepsOrder) {
  constexpr std::uint64_t kTokens = 3000;
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", kTokens, 8);
  Farm farm = g.add_farm("work", 2 * env->size(), [](int i) {
    return std::make_unique<tasks::Affine>("work." + std::to_string(i), 2.0f, 1.0f);
  });
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, farm.in());
  g.connect(farm.out(), sink.in);
  AutoMapper automatic(DeviceChoice::cpu);  // replicas spread over the ranks
  Mapping m = map_graph(g, env->cluster(), {&automatic});
  EXPECT_EQ(m.at("work.1").rank, 1 % env->size());
  Executor ex({.channel_capacity = 2});
  ex.run(g, m).wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    ASSERT_EQ(rec->arrays[k][7], std::fma(2.0f, tasks::ArraySource::value(k, 7, 8), 1.0f));
  }
}

TEST(Distributed, LeastLoadedFarmOverEveryRankKeepsOrderAndSparesASlowReplica) {
  constexpr std::uint64_t kTokens = 300;
  using us = std::chrono::microseconds;
  const int replicas = std::max(3, env->size());
  auto rec = std::make_shared<tasks::Collect::Record>();
  // 40 times slower than the others: with 4 ranks oversubscribed on two cores the links add
  // milliseconds to the fast replicas' results too (at 12 times it took more than its round-robin
  // share once in a loaded local run).
  Graph g = test::uneven_farm(kTokens, replicas, Dispatch::least_loaded, us(40000), us(1000), rec);
  Mapping m;
  for (const char* t : {"source", "work.scatter", "work.gather", "sink"}) m.set(t, Place::host(0));
  for (int i = 0; i < replicas; ++i)  // the slow replica on the last rank, the others round the ranks
    m.set("work." + std::to_string(i), Place::host(i == 0 ? env->size() - 1 : i % env->size()));
  Executor ex({.channel_capacity = 2});
  RunHandle run = ex.run(g, m);
  run.wait();
  std::int64_t slow = 0;  // counted on the rank that ran it
  for (const auto& t : run.stats().tasks)
    if (t.task == "work.0" && env->rank() == env->size() - 1) slow = static_cast<std::int64_t>(t.tokens);
  std::int64_t slow_all = slow;  // (without mpiexec there is no MPI)
  if (env->size() > 1) MPI_Allreduce(&slow, &slow_all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    ASSERT_EQ(rec->arrays[k][2], std::fma(3.0f, tasks::ArraySource::value(k, 2, 8), -1.0f));
  }
  // Much slower than the others: at most the share round robin gives it (the single-process
  // test checks how much less; here, with ranks oversubscribed on CI's two cores, the replicas on
  // other ranks are slowed by the links too).
  EXPECT_LE(slow_all, static_cast<std::int64_t>(kTokens) / replicas) << "slow replica took " << slow_all;
  std::printf("least-loaded farm over %d ranks: the slow replica took %lld of %llu tokens\n", env->size(),
              static_cast<long long>(slow_all), static_cast<unsigned long long>(kTokens));
}
