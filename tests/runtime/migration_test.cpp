// Live migration on CPU places: run alone and under mpiexec -n 2 and -n 4. Every rank offers two
// places ("cpu" and "cpu:1"), so tasks move between thread groups of one rank and between ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "migration_fixture.hpp"
#include "common/mpi_main.hpp"

using namespace weft;
using weft::test::env;
using weft::test::every_cpu_place;

namespace {

int last_rank() { return env->size() - 1; }

/// source (rank 0) -> scale (2x+1) -> sum (running sum) -> fir -> sink (last rank).
struct Pipeline {
  Graph graph;
  std::shared_ptr<test::FlightLog> log = std::make_shared<test::FlightLog>();
  std::shared_ptr<tasks::Collect::Record> record = std::make_shared<tasks::Collect::Record>();
  Mapping mapping;

  Pipeline(std::uint64_t tokens, Place start) {
    auto& src = graph.add<test::CountingSource>("source", tokens, log);
    auto& scale = graph.add<tasks::Affine>("scale", 2.0f, 1.0f);
    auto& sum = graph.add<test::RunningSum>("sum");
    auto& fir = graph.add<test::Fir>("fir");
    auto& sink = graph.add<tasks::Collect>("sink", record);
    graph.connect(src.out, scale.in);
    graph.connect(scale.out, sum.in);
    graph.connect(sum.out, fir.in);
    graph.connect(fir.out, sink.in);
    for (const Task* t : {static_cast<const Task*>(&scale), static_cast<const Task*>(&sum), static_cast<const Task*>(&fir)})
      graph.migratable(*t, every_cpu_place());
    mapping.set("source", Place::host(0));
    mapping.set("scale", start);
    mapping.set("sum", start);
    mapping.set("fir", start);
    mapping.set("sink", Place::host(last_rank()));
  }
  /// On the sink's rank: every token once, in order, bit-identical to the sequential reference.
  void check(std::uint64_t tokens) const {
    if (env->rank() != last_rank()) return;
    auto expected = test::reference_sum_fir(tokens, 8);
    ASSERT_EQ(record->indices.size(), tokens);
    for (std::uint64_t k = 0; k < tokens; ++k) {
      ASSERT_EQ(record->indices[k], k);
      ASSERT_EQ(std::memcmp(record->arrays[k].data(), expected[k].data(), 8 * sizeof(float)), 0) << "token " << k;
    }
  }
};

}  // namespace

TEST(Migration, WithoutMovesTheExpandedGraphGivesTheReference) {
  constexpr std::uint64_t kTokens = 500;
  Pipeline p(kTokens, Place::host(0));
  Executor ex({.channel_capacity = 3});
  RunHandle run = ex.run(p.graph, p.mapping);
  run.wait();
  p.check(kTokens);
  EXPECT_EQ(run.stats().migrations, 0u);
  EXPECT_EQ(run.effective_mapping().at("sum"), Place::host(0));
}

TEST(Migration, RandomMovesEveryFewTokensLoseDuplicateAndReorderNothing) {
  constexpr std::uint64_t kTokens = 10000;
  Pipeline p(kTokens, Place::host(0));
  Executor ex({.channel_capacity = 8});  // more tokens in flight: the hops between ranks overlap
  RunHandle run = ex.run(p.graph, p.mapping);
  int issued = 0;
  if (env->rank() == 0) {
    test::RandomMigrations driver(run, p.log, kTokens, {"scale", "sum", "fir"}, every_cpu_place(), 3, 7);
    driver.join();
    issued = driver.issued();
  }
  run.wait();
  p.check(kTokens);
  if (env->rank() == 0) {
    // Routers of the three tasks sit on rank 0 (with the source and the tasks' first place).
    EXPECT_GT(issued, 100);
    EXPECT_GE(run.stats().migrations, 10u) << issued << " commands issued";
  }
  // Every rank agrees where the tasks ended, and the mapping names candidate places.
  Mapping m = run.effective_mapping();
  auto places = every_cpu_place();
  for (const char* t : {"scale", "sum", "fir"})
    EXPECT_NE(std::find(places.begin(), places.end(), m.at(t)), places.end()) << t;
}

TEST(Migration, TwoInputTaskAndSinkMoveToo) {
  constexpr std::uint64_t kTokens = 3000;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::fan_in(kTokens, 8, rec);
  auto log = std::make_shared<test::FlightLog>();
  g.migratable(g.at("left"), every_cpu_place());
  g.migratable(g.at("sum"), every_cpu_place());
  g.migratable(g.at("sink"), {Place::host(0), Place{Place::cpu, 1, 0}});  // its record lives on rank 0
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  m.set("right", Place::host(last_rank()));
  Executor ex({.channel_capacity = 2});
  RunHandle run = ex.run(g, m);
  if (env->rank() == 0) {
    // Progress as seen by the sink: migrate while tokens flow.
    std::mt19937 random(11);
    auto places = every_cpu_place();
    for (int i = 0; i < 60; ++i) {
      run.migrate(i % 3 == 2 ? "sink" : i % 3 ? "sum" : "left",
                  i % 3 == 2 ? Place{Place::cpu, static_cast<int>(random() % 2), 0} : places[random() % places.size()]);
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  }
  run.wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    float x = tasks::ArraySource::value(k, 5, 8);
    ASSERT_EQ(rec->arrays[k][5], std::fma(2.0f, x, 0.0f) + std::fma(-1.0f, x, 1.0f));
  }
}

TEST(Migration, DrainEmptiesThePlaceAndTheRunCompletes) {
  constexpr std::uint64_t kTokens = 2000;
  Place drained{Place::cpu, 1, last_rank()};
  Pipeline p(kTokens, drained);
  Executor ex({.channel_capacity = 3, .drain = {drained}});
  RunHandle run = ex.run(p.graph, p.mapping);
  run.wait();
  p.check(kTokens);
  Mapping m = run.effective_mapping();
  for (const char* t : {"scale", "sum", "fir"}) {
    EXPECT_NE(m.at(t), drained) << t;
    EXPECT_EQ(m.at(t).rank, drained.rank) << t << " should stay on its rank: " << m.at(t).str();
  }
}

TEST(Migration, ControlFileCommandMovesATaskAndTheMappingFileSaysSo) {
  constexpr std::uint64_t kTokens = 3000;
  auto dir = std::filesystem::temp_directory_path();
  std::string ctl = (dir / ("weft_migration_ctl_" + std::to_string(::getpid()) + ".txt")).string();
  std::string yaml = (dir / "weft_migration_mapping.yaml").string();
  Pipeline p(kTokens, Place::host(0));
  Place target{Place::cpu, 1, last_rank()};
  // The source slows down after token 50 until the move was made, so that it happens mid-stream.
  std::atomic<bool> moved{false};
  struct Gate final : Task {
    std::atomic<bool>* moved;
    Gate(std::atomic<bool>* m) : Task("gate"), moved(m) {}
    In<Array> in = input<Array>("in", DType::f32);
    Out<Array> out = output<Array>("out", DType::f32);
    void run(Context& ctx) override {
      if (ctx.index() >= 50 && !*moved) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ctx.put(out, ctx.take(in));
    }
  };
  Graph g;
  auto log = std::make_shared<test::FlightLog>();
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& src = g.add<test::CountingSource>("source", kTokens, log);
  auto& gate = g.add<Gate>(&moved);
  auto& sum = g.add<test::RunningSum>("sum");
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, gate.in);
  g.connect(gate.out, sum.in);
  g.connect(sum.out, sink.in);
  g.migratable(sum);  // candidates: every place of the mapping
  Mapping m;
  m.set("source", Place::host(0));
  m.set("gate", Place::host(0));
  m.set("sum", Place::host(0));
  m.set("sink", target);  // so that `target` is a place of the mapping
  Executor ex({.channel_capacity = 3, .control_file = ctl});
  RunHandle run = ex.run(g, m);
  if (env->rank() == 0) {
    while (log->produced < 60) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    { std::ofstream(ctl, std::ios::app) << "migrate sum " << target.str() << "\n"; }
    for (int i = 0; i < 5000 && run.effective_mapping().at("sum") != target; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    moved = true;
  }
  run.wait();
  std::filesystem::remove(ctl);
  EXPECT_EQ(run.effective_mapping().at("sum"), target);
  if (env->rank() == 0) {
    std::string tmp = yaml + ".tmp";
    { std::ofstream(tmp) << run.effective_mapping().to_yaml(env->size()); }
    FileMapper file(tmp);
    EXPECT_NO_THROW(file.check(g, env->cluster()));
    EXPECT_EQ(file.place(sum, g, env->cluster()), target);
    std::filesystem::remove(tmp);
  }
  if (env->rank() != last_rank()) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  float total = 0;
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    total += static_cast<float>(k) + 3.0f;
    ASSERT_EQ(rec->arrays[k][3], total) << "token " << k;
  }
}

TEST(Migration, AFailureWhileHandingOverStopsEveryRank) {
  struct BadState final : Task {
    BadState() : Task("bad") {}
    In<Array> in = input<Array>("in", DType::f32);
    Out<Array> out = output<Array>("out", DType::f32);
    void run(Context& ctx) override { ctx.put(out, ctx.take(in)); }
    bool stateful() const override { return true; }
    void save(std::vector<std::byte>&) const override { throw Error("planted failure in save"); }
  };
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 1000000, 8);
  auto& bad = g.add<BadState>();
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, bad.in);
  g.connect(bad.out, sink.in);
  Place from = Place::host(last_rank()), to{Place::cpu, 1, 0};
  g.migratable(bad, {from, to});
  Mapping m;
  m.set("source", Place::host(0));
  m.set("bad", from);
  m.set("sink", Place::host(0));
  Executor ex;
  RunHandle run = ex.run(g, m);
  if (env->rank() == 0) run.migrate("bad", to);
  try {
    run.wait();
    FAIL() << "rank " << env->rank() << " saw no error";
  } catch (const RemoteError& e) {
    EXPECT_NE(env->rank(), last_rank());
    EXPECT_NE(std::string(e.what()).find("planted failure in save"), std::string::npos) << e.what();
  } catch (const Error& e) {
    EXPECT_EQ(env->rank(), last_rank());
    EXPECT_NE(std::string(e.what()).find("planted failure in save"), std::string::npos) << e.what();
  }
}

namespace {
/// Holds a lock of its place for 1 ms per token: two such tasks on one place take turns, as on
/// one device, so that moving one of them away halves the time per token.
class Contending final : public Task {
 public:
  explicit Contending(std::string name) : Task(std::move(name)) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    static std::mutex locks[2];
    std::lock_guard lock(locks[ctx.place().device % 2]);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ctx.put(out, ctx.take(in));
  }
};
}  // namespace

TEST(Migration, GreedyBalancerSplitsACrowdedPlaceOnceAndLogsWhy) {
  constexpr std::uint64_t kTokens = 500;
  Place crowded = Place::host(0), spare{Place::cpu, 1, 0};
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", kTokens, 8);
  auto& w1 = g.add<Contending>("w1");
  auto& w2 = g.add<Contending>("w2");
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, w1.in);
  g.connect(w1.out, w2.in);
  g.connect(w2.out, sink.in);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), crowded);
  m.set("sink", spare);  // so that `spare` is a place of the mapping
  Executor ex({.channel_capacity = 3, .migratable = {"w*"}, .balance = "greedy", .balance_period = 0.05});
  RunHandle run = ex.run(g, m);
  run.wait();
  Mapping end = run.effective_mapping();
  EXPECT_NE(end.at("w1"), end.at("w2"));  // one of them moved to the spare place, the other stayed
  if (env->rank() == 0) {
    auto decisions = run.stats().balance;
    ASSERT_GE(decisions.size(), 1u);
    EXPECT_LE(decisions.size(), 2u) << "the balancer oscillates";
    EXPECT_EQ(decisions[0].from, crowded);
    EXPECT_EQ(decisions[0].to, spare);
    EXPECT_GT(decisions[0].predicted_gain, 0.1);
    EXPECT_FALSE(decisions[0].reason.empty());
    ASSERT_EQ(rec->indices.size(), kTokens);
    for (std::uint64_t k = 0; k < kTokens; ++k) ASSERT_EQ(rec->indices[k], k);
  }
}

namespace {
/// 2 ms per token, plus 6 ms on `slowed` from token `from` on: the migration bench's imbalance
/// on CPU places.
class Slowable final : public Task {
 public:
  Slowable(std::string name, Place slowed, std::uint64_t from) : Task(std::move(name)), slowed_(slowed), from_(from) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    bool slow = ctx.place() == slowed_ && ctx.index() >= from_;
    std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 8 : 2));
    ctx.put(out, ctx.take(in));
  }

 private:
  Place slowed_;
  std::uint64_t from_;
};
}  // namespace

// The migration bench's first part on CPU places: two stages, one per place (A on rank 0, B on
// the last rank's second place); A slows down mid-run; the balancer must move the stage off A.
TEST(Migration, GreedyBalancerMovesAStageOffAPlaceThatSlowedDown) {
  constexpr std::uint64_t kTokens = 300, kSlowFrom = 60;
  Place a = Place::host(0), b{Place::cpu, 1, last_rank()};
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", kTokens, 8);
  auto& s0 = g.add<Slowable>("s0", a, kSlowFrom);
  auto& s1 = g.add<Slowable>("s1", a, kSlowFrom);
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, s0.in);
  g.connect(s0.out, s1.in);
  g.connect(s1.out, sink.in);
  g.migratable(s0, {a, b});
  g.migratable(s1, {a, b});
  Mapping m;
  m.set("source", Place::host(0));
  m.set("s0", a);
  m.set("s1", b);
  m.set("sink", Place::host(last_rank()));
  Executor ex({.channel_capacity = 4, .balance = "greedy", .balance_period = 0.05, .balance_threshold = 0.1});
  RunHandle run = ex.run(g, m);
  run.wait();
  if (env->rank() == 0) {
    auto decisions = run.stats().balance;
    ASSERT_GE(decisions.size(), 1u) << "no move off the slowed place";
    EXPECT_EQ(decisions[0].task, "s0");
    EXPECT_EQ(decisions[0].from, a);
    EXPECT_EQ(decisions[0].to, b);
    // Measured afterwards on the ranks' own clocks. Its sign is a timing, not a property of the
    // code: under `-n 4 --oversubscribe` on 2 cores beside other tests it read -0.22 once, so it
    // is printed here; bench/results/migration.json reports it on GPUs.
    EXPECT_FALSE(std::isnan(decisions[0].measured_gain)) << "the move's gain was never measured";
    std::printf("measured gain of the move: %.3f (predicted %.3f)\n", decisions[0].measured_gain,
                decisions[0].predicted_gain);
    EXPECT_EQ(run.effective_mapping().at("s0"), b);
  }
  if (env->rank() == last_rank()) {
    ASSERT_EQ(rec->indices.size(), kTokens);
    for (std::uint64_t k = 0; k < kTokens; ++k) ASSERT_EQ(rec->indices[k], k);
  }
}

TEST(Migration, BadRequestsAreConfigErrors) {
  Pipeline p(10, Place::host(0));
  EXPECT_THROW(p.graph.migratable(p.graph.at("source")), ConfigError);  // a source cannot move
  Executor ex;
  RunHandle run = ex.run(p.graph, p.mapping);
  EXPECT_THROW(run.migrate("sink", Place::host(0)), ConfigError);                 // not migratable
  EXPECT_THROW(run.migrate("sum", Place::cuda(0, 0)), ConfigError);               // not a candidate
  run.wait();
  p.check(10);
}
