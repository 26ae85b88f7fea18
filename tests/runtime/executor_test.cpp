#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor_fixture.hpp"

using namespace weft;

namespace {

Mapping on_cpu(const Graph& g) {
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host());
  return m;
}

}  // namespace

TEST(Executor, TenThousandTokensArriveCompleteAndInOrder) {
  constexpr std::uint64_t kTokens = 10000;
  constexpr std::int64_t kLength = 16;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::affine_chain(kTokens, kLength, rec);
  Executor ex({.channel_capacity = 3});
  RunHandle run = ex.run(g, on_cpu(g));
  run.wait();
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    for (std::int64_t i = 0; i < kLength; ++i)
      ASSERT_EQ(rec->arrays[k][i], test::expected(k, i, kLength, 2.0f, 1.0f, 0.5f, -3.0f));
  }
  RunStats s = run.stats();
  EXPECT_LE(s.max_in_flight, 3u);
  for (const auto& t : s.tasks) {
    EXPECT_EQ(t.tokens, kTokens) << t.task;
    // Its firings lie within the run: from the first's start to the last's end, at least its busy time.
    EXPECT_GE(t.first_start, 0.0) << t.task;
    EXPECT_GE(t.last_end - t.first_start, t.busy_seconds - 1e-6) << t.task;
    EXPECT_LE(t.last_end, s.seconds) << t.task;
  }
}

TEST(Executor, FanOutFanInJoinsTokensByIndex) {
  constexpr std::uint64_t kTokens = 10000;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::fan_in(kTokens, 4, rec);
  Executor ex;
  ex.run(g, on_cpu(g)).wait();
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    for (int i = 0; i < 4; ++i) {
      float x = tasks::ArraySource::value(k, i, 4);
      ASSERT_EQ(rec->arrays[k][i], std::fma(2.0f, x, 0.0f) + std::fma(-1.0f, x, 1.0f));
    }
  }
}

TEST(Executor, BackPressureBoundsTokensInFlight) {
  for (int capacity : {1, 2, 5}) {
    auto log = std::make_shared<test::FlightLog>();
    Graph g;
    auto& src = g.add<test::CountingSource>("source", 300, log);
    auto& f = g.add<tasks::Affine>("f", 1.0f, 0.0f);
    auto& sink = g.add<test::SlowSink>("sink", log);
    g.connect(src.out, f.in);
    g.connect(f.out, sink.in);
    Executor ex({.channel_capacity = capacity});
    RunHandle run = ex.run(g, on_cpu(g));
    run.wait();
    EXPECT_EQ(log->consumed, 300);
    // Two channels of `capacity`, one token held by each of f and the sink, and one the source
    // made and waits to push.
    EXPECT_LE(log->worst_gap, 2 * capacity + 3) << "capacity " << capacity;
    EXPECT_LE(run.stats().max_in_flight, static_cast<std::uint64_t>(capacity));
  }
}

TEST(Executor, ErrorInATaskStopsTheRunAndIsRethrownWithItsContext) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 1000000, 4);
  auto& fail = g.add<test::FailAt>("fails", 50);
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec, false);
  g.connect(src.out, fail.in);
  g.connect(fail.out, sink.in);
  Executor ex;
  try {
    ex.run(g, on_cpu(g)).wait();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("planted failure at token 50"), std::string::npos);
    EXPECT_EQ(e.task(), "fails");
    EXPECT_EQ(e.place(), "cpu");
  }
  // The run stops at once: tokens before the failure may or may not have reached the sink, none after.
  EXPECT_LE(rec->indices.size(), 50u);
  for (std::size_t k = 0; k < rec->indices.size(); ++k) EXPECT_EQ(rec->indices[k], k);
}

namespace {

/// Sends {k} for k = 0 .. count − 1.
class NumberSource final : public Task {
 public:
  NumberSource(std::string name, std::int64_t count) : Task(std::move(name)), count_(count) {}
  Out<std::vector<std::int64_t>> out = output<std::vector<std::int64_t>>("out");
  void run(Context& ctx) override {
    if (next_ == count_) return ctx.end_stream();
    ctx.put(out, std::vector<std::int64_t>{next_++});
  }

 private:
  std::int64_t count_, next_ = 0;
};

/// Gathers groups of `group` numbers into their sum: a routing task that renumbers its tokens.
class GroupSum final : public Task {
 public:
  GroupSum(std::string name, int group) : Task(std::move(name)), group_(group) {}
  In<std::vector<std::int64_t>> in = input<std::vector<std::int64_t>>("in");
  Out<std::vector<std::int64_t>> out = output<std::vector<std::int64_t>>("out");
  bool routes() const override { return true; }
  bool renumbers() const override { return true; }
  void run(Context& ctx) override {
    sum_ += ctx.take(in).at(0);
    if (++seen_ % group_ == 0) ctx.put(out, std::vector<std::int64_t>{std::exchange(sum_, 0)});
  }

 private:
  int group_;
  std::int64_t seen_ = 0, sum_ = 0;
};

/// Joins two inputs by token index and records (index, a, b).
class PairSink final : public Task {
 public:
  PairSink(std::string name, std::shared_ptr<std::vector<std::array<std::int64_t, 3>>> seen)
      : Task(std::move(name)), seen_(std::move(seen)) {}
  In<std::vector<std::int64_t>> a = input<std::vector<std::int64_t>>("a");
  In<std::vector<std::int64_t>> b = input<std::vector<std::int64_t>>("b");
  void run(Context& ctx) override {
    const auto x = ctx.take(a), y = ctx.take(b);
    seen_->push_back({static_cast<std::int64_t>(ctx.index()), x.at(0), y.at(0)});
  }

 private:
  std::shared_ptr<std::vector<std::array<std::int64_t, 3>>> seen_;
};

}  // namespace

// A task gathering 3 tokens into one sends tokens numbered 0, 1, 2, ... (renumbers()), which a
// fan-in joins with another stream of that many tokens: no "token arrived with token" mismatch.
TEST(Executor, GatheringTaskRenumbersItsTokens) {
  auto seen = std::make_shared<std::vector<std::array<std::int64_t, 3>>>();
  Graph g;
  auto& numbers = g.add<NumberSource>("numbers", 300);
  auto& groups = g.add<GroupSum>("groups", 3);
  auto& other = g.add<NumberSource>("other", 100);
  auto& sink = g.add<PairSink>("sink", seen);
  g.connect(numbers.out, groups.in);
  g.connect(groups.out, sink.a);
  g.connect(other.out, sink.b);
  Executor ex({.channel_capacity = 2});
  RunHandle run = ex.run(g, on_cpu(g));
  run.wait();
  ASSERT_EQ(seen->size(), 100u);
  for (std::int64_t k = 0; k < 100; ++k) {
    EXPECT_EQ((*seen)[k][0], k);
    EXPECT_EQ((*seen)[k][1], 9 * k + 3);  // 3k + 3k+1 + 3k+2
    EXPECT_EQ((*seen)[k][2], k);
  }
  for (const auto& t : run.stats().tasks) {
    if (t.task == "groups") {
      EXPECT_EQ(t.tokens, 300u);
    }
  }
}

TEST(Executor, WritesAChromeTrace) {
  auto path = (std::filesystem::temp_directory_path() / "weft_trace_test.json").string();
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 20, 4);
  auto& f = g.add<tasks::Affine>("f", 1.0f, 0.0f);
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>());
  g.connect(src.out, f.in);
  g.connect(f.out, sink.in);
  Executor ex({.trace_file = path});
  ex.run(g, on_cpu(g)).wait();
  std::ifstream in(path);
  auto doc = nlohmann::json::parse(in);
  int spans = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "f") ++spans;
  EXPECT_EQ(spans, 20);
}

TEST(Executor, SourceOnlyGraphAndEmptyStream) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 0, 4);
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, sink.in);
  Executor ex;
  ex.run(g, on_cpu(g)).wait();
  EXPECT_TRUE(rec->indices.empty());
}

TEST(Executor, LeastLoadedFarmSendsFewerTokensToASlowReplicaAndKeepsOrder) {
  constexpr std::uint64_t kTokens = 400;
  using us = std::chrono::microseconds;
  for (Dispatch dispatch : {Dispatch::round_robin, Dispatch::least_loaded}) {
    auto rec = std::make_shared<tasks::Collect::Record>();
    Graph g = test::uneven_farm(kTokens, 3, dispatch, us(4000), us(1000), rec);
    ApiMapper api;
    AutoMapper automatic(DeviceChoice::cpu);
    Cluster c{{local_devices(0)}};
    const Mapping m = map_graph(g, c, {&api, &automatic});
    // Least loaded runs the same graph twice: its counts start afresh each run.
    for (int again = 0; again < (dispatch == Dispatch::least_loaded ? 2 : 1); ++again) {
      rec->indices.clear();
      rec->arrays.clear();
      Executor ex({.channel_capacity = 2});
      RunHandle run = ex.run(g, m);
      run.wait();
      ASSERT_EQ(rec->indices.size(), kTokens);
      for (std::uint64_t k = 0; k < kTokens; ++k) {
        ASSERT_EQ(rec->indices[k], k);
        ASSERT_EQ(rec->arrays[k][5], std::fma(3.0f, tasks::ArraySource::value(k, 5, 8), -1.0f));
      }
      std::uint64_t slow = 0, all = 0;
      for (const auto& t : run.stats().tasks)
        if (t.task.starts_with("work.") && t.task != "work.scatter" && t.task != "work.gather") {
          all += t.tokens;
          if (t.task == "work.0") slow = t.tokens;
        }
      EXPECT_EQ(all, kTokens);
      if (dispatch == Dispatch::round_robin) {
        EXPECT_EQ(slow, (kTokens + 2) / 3);
      } else {  // four times slower: about a ninth of the tokens (round robin gives it a third)
        EXPECT_LT(slow, kTokens / 5) << "run " << again << ": the slow replica got " << slow << " of " << kTokens;
      }
    }
  }
}

TEST(Executor, FarmKeepsTokensInOrderAndMatchesOneTask) {
  constexpr std::uint64_t kTokens = 5000;
  for (int replicas : {1, 3, 4}) {
    Graph g;
    auto& src = g.add<tasks::ArraySource>("source", kTokens, 8);
    Farm farm = g.add_farm("affine", replicas, [](int i) {
      return std::make_unique<tasks::Affine>("affine." + std::to_string(i), 3.0f, -1.0f);
    });
    auto rec = std::make_shared<tasks::Collect::Record>();
    auto& sink = g.add<tasks::Collect>("sink", rec);
    g.connect(src.out, farm.in());
    g.connect(farm.out(), sink.in);
    ApiMapper api;
    AutoMapper automatic(DeviceChoice::cpu);
    Cluster c{{local_devices(0)}};
    Executor ex({.channel_capacity = 2});
    RunHandle run = ex.run(g, map_graph(g, c, {&api, &automatic}));
    run.wait();
    ASSERT_EQ(rec->indices.size(), kTokens);
    for (std::uint64_t k = 0; k < kTokens; ++k) {
      ASSERT_EQ(rec->indices[k], k);
      ASSERT_EQ(rec->arrays[k][3], std::fma(3.0f, tasks::ArraySource::value(k, 3, 8), -1.0f));
    }
    for (const auto& t : run.stats().tasks) {
      if (t.task.starts_with("affine.") && t.task != "affine.scatter" && t.task != "affine.gather") {
        EXPECT_NEAR(static_cast<double>(t.tokens), static_cast<double>(kTokens) / replicas, 1.0) << t.task;
      }
    }
  }
}
