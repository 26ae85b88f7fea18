// Partitions with halos and reductions across ranks: run alone and under mpiexec -n 2 and -n 4
// (CPU places). Every partitioned result is compared bit for bit with the whole-array reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "executor_fixture.hpp"
#include "partition_fixture.hpp"
#include "common/mpi_main.hpp"

using namespace weft;
using weft::test::env;

namespace {


/// `iterations` smoothing steps per token, boundary rows first so that the interior overlaps the
/// exchange. Optionally puts a histogram of its owned rows (100 bins) and fails at one step.
class Smooth final : public SlabTask {
 public:
  Smooth(std::string name, int radius, int iterations, bool histogram = false, int fail_at = -1)
      : SlabTask(std::move(name), DType::f32), radius_(radius), iterations_(iterations), fail_at_(fail_at) {
    if (histogram) histogram_ = output<std::vector<std::int64_t>>("histogram");
  }
  void run_slab(Context& ctx, Halo& halo) override {
    Array u = ctx.take(in), v = ctx.alloc(DType::f32, u.shape());
    const Slab& s = halo.slab();
    auto [lo, hi] = test::interior(s, radius_);
    for (int it = 0; it < iterations_; ++it) {
      if (ctx.index() == 1 && it == fail_at_) throw Error("planted failure in " + name());
      test::smooth_rows(u, v, s, radius_, 0, lo);
      test::smooth_rows(u, v, s, radius_, hi, s.rows);
      halo.begin(v);
      test::smooth_rows(u, v, s, radius_, lo, hi);
      halo.end(v);
      std::swap(u, v);
    }
    if (histogram_.task) {
      std::vector<std::int64_t> bins(100, 0);
      auto [ny, nx] = test::plane(u.shape());
      const float* p = u.data<float>() + s.halo_before * ny * nx;
      for (std::int64_t i = 0; i < s.rows * ny * nx; ++i)
        ++bins[std::clamp<std::int64_t>(static_cast<std::int64_t>(p[i] * 100), 0, 99)];
      ctx.put(histogram_, std::move(bins));
    }
    ctx.put(out, std::move(u));
  }

 private:
  int radius_, iterations_, fail_at_;
  Out<std::vector<std::int64_t>> histogram_;
};

Mapping spread_over_ranks(const Graph& g, const Partition& p) {
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  for (std::size_t i = 0; i < p.slabs.size(); ++i)
    m.set(p.slabs[i]->name(), Place::host(static_cast<int>((i + 1) % env->size())));
  return m;
}

void expect_partition_matches_reference(Shape shape, int parts, int radius, int iterations, bool overlap) {
  constexpr std::uint64_t kTokens = 3;
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", kTokens, shape);
  Partition p = g.add_partition("smooth", parts, [&](int i) {
    return std::make_unique<Smooth>("smooth." + std::to_string(i), radius, iterations);
  }, {.halo = radius});
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  Executor ex({.channel_capacity = 2, .overlap = overlap});
  ex.run(g, spread_over_ranks(g, p)).wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    std::vector<float> want = test::smooth_reference(test::volume(k, shape), radius, iterations);
    ASSERT_EQ(rec->arrays[k].size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(rec->arrays[k][i], want[i]) << shape.str() << " over " << parts << " parts, token " << k << ", element " << i;
  }
}

}  // namespace

TEST(Partition, SlabsOf2DArrayMatchWholeArrayWithHaloWidth1) {
  for (int parts : {1, 2, 3, 5}) expect_partition_matches_reference(Shape(37, 29), parts, 1, 6, true);
}

TEST(Partition, SlabsOf3DArrayMatchWholeArrayWithHaloWidth3) {
  for (int parts : {2, 4, 7}) expect_partition_matches_reference(Shape(23, 7, 9), parts, 3, 4, true);
}

TEST(Partition, OverlapOffGivesTheSameResult) {
  expect_partition_matches_reference(Shape(19, 5, 11), 3, 2, 3, false);
}

TEST(Partition, ThinSlabsExchangeEveryOwnedRow) {
  expect_partition_matches_reference(Shape(9, 13), 3, 3, 5, true);  // 3 rows each, halo 3
}

TEST(Partition, PerSlabHistogramsReduceAcrossRanksWithoutJoin) {
  const Shape shape(31, 6, 8);
  constexpr std::uint64_t kTokens = 2;
  constexpr int kParts = 4;
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", kTokens, shape);
  Partition p = g.add_partition("smooth", kParts, [](int i) {
    return std::make_unique<Smooth>("smooth." + std::to_string(i), 1, 3, true);
  }, {.halo = 1, .join = false});
  EXPECT_EQ(p.join, nullptr);
  g.connect(src.out, p.in());
  auto rec = std::make_shared<tasks::Collect::Record>();
  std::vector<std::pair<Task*, int>> histograms;
  for (int i = 0; i < kParts; ++i) {
    auto& drop = g.add<tasks::Collect>("drop." + std::to_string(i), rec, false);
    g.connect(p.slab_out(i), drop.in);
    histograms.push_back(p.slab_out(i, 1));
  }
  Reduce total = g.add_reduce("total", histograms, ReduceOp::sum);
  auto seen = std::make_shared<std::vector<std::vector<std::int64_t>>>();
  struct Keep final : Task {
    Keep(std::shared_ptr<std::vector<std::vector<std::int64_t>>> s) : Task("keep"), seen(std::move(s)) {}
    In<std::vector<std::int64_t>> in = input<std::vector<std::int64_t>>("in");
    void run(Context& ctx) override { seen->push_back(ctx.take(in)); }
    std::shared_ptr<std::vector<std::vector<std::int64_t>>> seen;
  };
  auto& keep = g.add<Keep>(seen);
  g.connect(total.out(), keep.in);
  Mapping m = spread_over_ranks(g, p);
  m.set("total", Place::host(env->size() - 1));
  m.set("keep", Place::host(env->size() - 1));
  Executor ex;
  ex.run(g, m).wait();
  if (env->rank() != env->size() - 1) return;
  ASSERT_EQ(seen->size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    std::vector<float> want = test::smooth_reference(test::volume(k, shape), 1, 3);
    std::vector<std::int64_t> bins(100, 0);
    for (float x : want) ++bins[std::clamp<std::int64_t>(static_cast<std::int64_t>(x * 100), 0, 99)];
    EXPECT_EQ((*seen)[k], bins) << "token " << k;
  }
}

namespace {

/// Token k on source r: k + r (int64), 0.5 k + r (double), {k, r, -r} and an f32 array [k, r].
class RankValues final : public Task {
 public:
  RankValues(std::string name, int rank) : Task(std::move(name)), rank_(rank) {}
  Out<std::int64_t> i = output<std::int64_t>("i");
  Out<double> d = output<double>("d");
  Out<std::vector<std::int64_t>> v = output<std::vector<std::int64_t>>("v");
  Out<Array> a = output<Array>("a", DType::f32);
  void run(Context& ctx) override {
    if (ctx.index() >= 50) return ctx.end_stream();
    auto k = static_cast<std::int64_t>(ctx.index());
    ctx.put(i, k + rank_);
    ctx.put(d, 0.5 * static_cast<double>(k) + rank_);
    ctx.put(v, std::vector<std::int64_t>{k, rank_, -rank_});
    Array x = Array::host(DType::f32, Shape(2));
    x.data<float>()[0] = static_cast<float>(k);
    x.data<float>()[1] = static_cast<float>(rank_);
    ctx.put(a, std::move(x));
  }

 private:
  int rank_;
};

template <class T> class Keep final : public Task {
 public:
  Keep(std::string name, std::shared_ptr<std::vector<T>> seen) : Task(std::move(name)), seen_(std::move(seen)) {}
  In<T> in = input<T>("in");
  void run(Context& ctx) override { seen_->push_back(ctx.take(in)); }

 private:
  std::shared_ptr<std::vector<T>> seen_;
};

}  // namespace

TEST(Reduce, SumsMinimaAndMaximaOfEveryRank) {
  const int n = std::max(env->size(), 3);  // three sources at least, some sharing a rank
  Graph g;
  std::vector<RankValues*> sources;
  for (int r = 0; r < n; ++r) sources.push_back(&g.add<RankValues>("values." + std::to_string(r), r));
  auto from = [&](int port) {
    std::vector<std::pair<Task*, int>> s;
    for (auto* t : sources) s.emplace_back(t, port);
    return s;
  };
  auto sums = std::make_shared<std::vector<std::int64_t>>();
  auto mins = std::make_shared<std::vector<double>>();
  auto maxs = std::make_shared<std::vector<std::vector<std::int64_t>>>();
  auto arrays = std::make_shared<std::vector<Array>>();
  g.connect(g.add_reduce("sum", from(0), ReduceOp::sum).out(), g.add<Keep<std::int64_t>>("keep.sum", sums).in);
  g.connect(g.add_reduce("min", from(1), ReduceOp::min).out(), g.add<Keep<double>>("keep.min", mins).in);
  g.connect(g.add_reduce("max", from(2), ReduceOp::max).out(), g.add<Keep<std::vector<std::int64_t>>>("keep.max", maxs).in);
  g.connect(g.add_reduce("asum", from(3), ReduceOp::sum).out(), g.add<Keep<Array>>("keep.asum", arrays).in);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  for (int r = 0; r < n; ++r) m.set(sources[r]->name(), Place::host(r % env->size()));
  Executor ex;
  ex.run(g, m).wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(sums->size(), 50u);
  const std::int64_t ranks_sum = n * (n - 1) / 2;
  for (std::int64_t k = 0; k < 50; ++k) {
    EXPECT_EQ((*sums)[k], n * k + ranks_sum);
    EXPECT_EQ((*mins)[k], 0.5 * static_cast<double>(k));
    EXPECT_EQ((*maxs)[k], (std::vector<std::int64_t>{k, n - 1, 0}));
    ASSERT_EQ((*arrays)[k].size(), 2);
    EXPECT_EQ((*arrays)[k].data<float>()[0], static_cast<float>(n * k));
    EXPECT_EQ((*arrays)[k].data<float>()[1], static_cast<float>(ranks_sum));
  }
}

TEST(Partition, AnErrorInOneSlabStopsEveryRank) {
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", 1000, Shape(40, 16));
  const int parts = std::max(env->size(), 3);
  Partition p = g.add_partition("smooth", parts, [&](int i) {
    return std::make_unique<Smooth>("smooth." + std::to_string(i), 1, 5, false, i == parts - 1 ? 2 : -1);
  });
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  Mapping m = spread_over_ranks(g, p);  // the failing slab is on the last rank's neighbour list
  Executor ex;
  try {
    ex.run(g, m).wait();
    FAIL() << "rank " << env->rank() << " saw no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("planted failure in smooth." + std::to_string(parts - 1)), std::string::npos)
        << e.what();
  }
}

TEST(Partition, BadDefinitionsAreReported) {
  Graph g;
  auto make = [](int i) { return std::make_unique<Smooth>("s." + std::to_string(i), 1, 1); };
  EXPECT_THROW(g.add_partition("none", 0, make), ConfigError);
  EXPECT_THROW(g.add_partition("negative", 2, make, {.halo = -1}), ConfigError);
  EXPECT_THROW(g.add_reduce("empty", {}, ReduceOp::sum), ConfigError);
}

TEST(Partition, TooThinSlabsAreAnErrorNamingThePartition) {
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", 1, Shape(8, 4));  // 2 rows per slab, halo 3
  Partition p = g.add_partition("thin", 4, [](int i) {
    return std::make_unique<Smooth>("thin." + std::to_string(i), 3, 1);
  }, {.halo = 3});
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  Executor ex;
  try {
    ex.run(g, spread_over_ranks(g, p)).wait();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than the halo width 3"), std::string::npos) << e.what();
  }
}

TEST(Partition, TraceShowsEveryHaloExchangeOfEveryRank) {
  auto path = (std::filesystem::temp_directory_path() / "weft_trace_partition.json").string();
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", 2, Shape(12, 5));
  Partition p = g.add_partition("s", 3, [](int i) { return std::make_unique<Smooth>("s." + std::to_string(i), 1, 4); });
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  Executor ex({.trace_file = path});
  ex.run(g, spread_over_ranks(g, p)).wait();
  if (env->rank() != 0) return;
  std::ifstream file(path);
  auto doc = nlohmann::json::parse(file);
  int spans = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "halo") ++spans;
  EXPECT_EQ(spans, 2 * 3 * 4);  // tokens x slabs x exchanges
}

TEST(Partition, AutomaticMapperSpreadsSlabsOverRanks) {
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", 1, Shape(8, 4));
  Partition p = g.add_partition("s", 4, [](int i) { return std::make_unique<Smooth>("s." + std::to_string(i), 1, 1); });
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  AutoMapper automatic(DeviceChoice::cpu);
  Mapping m = map_graph(g, env->cluster(), {&automatic});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.at("s." + std::to_string(i)).rank, i % env->size());
}

namespace {

/// Exchanges arrays laid out over a coarser grid of the same parts (rows floor(first_row * 2/5)
/// of 2/5 as many rows, width 2) and a per-part row (width 1), each row holding its global index,
/// and puts its slab back with every owned value replaced by the number of halo values that held
/// the right neighbour's index (checked by the test).
class CoarseExchange final : public SlabTask {
 public:
  using SlabTask::SlabTask;
  void run_slab(Context& ctx, Halo& halo) override {
    Array slab = ctx.take(in);
    const Slab& s = halo.slab();
    auto coarse = [&](std::int64_t row) { return row * 2 / 5; };  // coarse boundary of a fine one
    const std::int64_t c0 = coarse(s.first_row), c1 = coarse(s.first_row + s.rows), w = 2;
    const std::int64_t before = s.part > 0 ? w : 0, after = s.part + 1 < s.parts ? w : 0;
    Slab layout{s.part, s.parts, c0, c1 - c0, before, after, coarse(s.global_rows)};
    Array a = Array::host(DType::f32, Shape(layout.total_rows(), 3));
    for (std::int64_t r = 0; r < a.shape()[0]; ++r)
      for (int x = 0; x < 3; ++x) a.data<float>()[r * 3 + x] = r >= before && r < before + layout.rows ? float(c0 + r - before) : -1.f;
    halo.exchange(a, layout);
    float right = 0;
    for (std::int64_t r = 0; r < a.shape()[0]; ++r)
      for (int x = 0; x < 3; ++x) right += a.data<float>()[r * 3 + x] == float(c0 + r - before) ? 1.f : 0.f;
    Array one = Array::host(DType::f32, Shape(1 + (s.part > 0) + (s.part + 1 < s.parts), 1));
    one.data<float>()[s.part > 0 ? 1 : 0] = float(s.part);
    halo.exchange(one, Slab{s.part, s.parts, s.part, 1, s.part > 0 ? 1 : 0, s.part + 1 < s.parts ? 1 : 0, s.parts});
    for (std::int64_t r = 0; r < one.shape()[0]; ++r) right += one.data<float>()[r] == float(s.part - (s.part > 0) + r) ? 1.f : 0.f;
    Array result = Array::host(DType::f32, slab.shape());
    for (std::int64_t i = 0; i < result.size(); ++i) result.data<float>()[i] = right;
    ctx.put(out, std::move(result));
  }
};

}  // namespace

TEST(Partition, ExchangesArraysOfAnotherLayoutThanTheSlab) {
  const Shape shape(40, 5);
  const int parts = 4;
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", 2, shape);
  Partition p = g.add_partition("coarse", parts, [](int i) {
    return std::make_unique<CoarseExchange>("coarse." + std::to_string(i), DType::f32);
  }, {.halo = 1});
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  Executor ex;
  ex.run(g, spread_over_ranks(g, p)).wait();
  if (env->rank() != 0) return;
  ASSERT_EQ(rec->arrays.size(), 2u);
  for (int i = 0; i < parts; ++i) {
    const std::int64_t first = partition_first_row(40, parts, i), rows = partition_rows(40, parts, i);
    const std::int64_t c_rows = (first + rows) * 2 / 5 - first * 2 / 5;
    const int halos = (i > 0) + (i + 1 < parts);
    // every row of the coarse array (owned and 2 halo rows per neighbour, 3 columns) and of the
    // per-part array (one row per neighbour and its own) held the expected global index
    EXPECT_EQ(rec->arrays[0][first * 5], float(3 * (c_rows + 2 * halos) + 1 + halos)) << "part " << i;
  }
}

namespace {
// Part 0 sends and expects 1 row, part 1 2 rows: a definition error the halo must report.
struct Mismatch final : SlabTask {
  using SlabTask::SlabTask;
  void run_slab(Context& ctx, Halo& halo) override {
    Array slab = ctx.take(in);
    const Slab& s = halo.slab();
    const std::int64_t w = s.part == 0 ? 1 : 2;  // part 0 sends 1 row, part 1 expects 2
    Slab layout{s.part, s.parts, s.first_row, s.rows, s.part > 0 ? w : 0, s.part + 1 < s.parts ? w : 0, s.global_rows};
    Array a = Array::host(DType::f32, Shape(layout.total_rows(), 4));
    halo.exchange(a, layout);
    ctx.put(out, std::move(slab));
  }
};

Graph mismatch_graph() {
  Graph g;
  auto& src = g.add<test::VolumeSource>("source", 1, Shape(10, 4));
  Partition p = g.add_partition("w", 2, [](int i) { return std::make_unique<Mismatch>("w." + std::to_string(i), DType::f32); });
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  return g;
}
}  // namespace

TEST(Partition, ExchangesOfDifferentWidthsAreAnError) {
  Graph g = mismatch_graph();
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));  // one process: the mailbox checks the width
  Executor ex;
  EXPECT_THROW(ex.run(g, m).wait(), Error);
}

TEST(Partition, ExchangesOfDifferentWidthsBetweenRanksAreAnErrorOnEveryRank) {
  if (env->size() < 2) GTEST_SKIP() << "needs two ranks";
  Graph g = mismatch_graph();
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  m.set("w.1", Place::host(1));  // the rows cross ranks: the receive's size is checked
  Executor ex;
  EXPECT_THROW(ex.run(g, m).wait(), Error) << "rank " << env->rank();
}
