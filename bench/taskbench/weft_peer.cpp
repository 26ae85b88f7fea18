// The Weft peer: each pattern as a Weft user would write it with today's API.
//
//  trivial     a farm (Graph::add_farm) of `width` replicas fed by a source of width x steps
//              tokens: every task is one firing, dispatched round robin by the farm's scatter and
//              collected in order by its gather.
//  no_comm     `width` chains: point i is a source that fires once per step, reading its own
//              previous value (task state); a reduction (Graph::add_reduce) sums the points'
//              values per step into one sink. Every task is one firing.
//  the others  a partition (Graph::add_partition) of `width` slabs of one 16-byte row each, halo 1,
//              one firing per slab that loops over the steps (as bench/runtime/halo_bench.cpp and
//              `weft flow --split` do): each step exchanges the previous values, then computes.
//              stencil_1d is exactly one halo exchange of the slab per step. A halo only reaches
//              the next slab, so a pattern reading points farther away (nearest radius 2,
//              spread, fft, tree, all_to_all) relays: exchange k passes on what exchange k - 1
//              brought from each side, over a 2-row layout (Halo::exchange(a, layout)), until the
//              step's farthest dependency (Graph::reach) has arrived. Every slab makes the same
//              number of exchanges, as halos require, and the tree's idle points exchange too.
// What a closer expression would need from the API is in the header of taskbench.cpp.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pattern.hpp"
#include "weft/weft.hpp"

namespace taskbench {
namespace {

using Clock = std::chrono::steady_clock;

Payload row(const weft::Array& a, std::int64_t r) {
  Payload p;
  std::memcpy(&p, static_cast<const char*>(a.raw()) + r * sizeof(Payload), sizeof p);
  return p;
}
void set_row(const weft::Array& a, std::int64_t r, const Payload& p) {
  std::memcpy(static_cast<char*>(a.raw()) + r * sizeof(Payload), &p, sizeof p);
}

/// Adds every int64 token it sees.
class SumSink final : public weft::Task {
 public:
  SumSink(std::string name, std::uint64_t* sum) : Task(std::move(name)), sum_(sum) {}
  weft::In<std::int64_t> in = input<std::int64_t>("in");
  void run(weft::Context& ctx) override { *sum_ += static_cast<std::uint64_t>(ctx.take(in)); }

 private:
  std::uint64_t* sum_;
};

// --- trivial: a farm --------------------------------------------------------------------------

class Tokens final : public weft::Task {
 public:
  Tokens(std::string name, std::int64_t count) : Task(std::move(name)), count_(count) {}
  weft::Out<std::int64_t> out = output<std::int64_t>("out");
  void run(weft::Context& ctx) override {
    if (next_ == count_) return ctx.end_stream();
    ctx.put(out, next_++);
  }

 private:
  std::int64_t count_, next_ = 0;
};

/// Token k is task (k / width, k % width); round robin gives replica r the point r.
class Independent final : public weft::Task {
 public:
  Independent(std::string name, const Graph& g) : Task(std::move(name)), g_(g) {}
  weft::In<std::int64_t> in = input<std::int64_t>("in");
  weft::Out<std::int64_t> out = output<std::int64_t>("out");
  void run(weft::Context& ctx) override {
    const std::int64_t k = ctx.take(in);
    busy(g_.work_us);
    ctx.put(out, static_cast<std::int64_t>(mix(static_cast<int>(k / g_.width), static_cast<int>(k % g_.width), nullptr, 0)));
  }

 private:
  const Graph& g_;
};

// --- no_comm: one chain per point -------------------------------------------------------------

class Chain final : public weft::Task {
 public:
  Chain(std::string name, const Graph& g, int point) : Task(std::move(name)), g_(g), point_(point) {}
  weft::Out<std::int64_t> out = output<std::int64_t>("out");
  void run(weft::Context& ctx) override {
    if (t_ == g_.steps) return ctx.end_stream();
    const std::uint64_t in = prev_;  // the dependency on (t - 1, i): this task's own state
    busy(g_.work_us);
    prev_ = mix(t_, point_, &in, t_ > 0 ? 1 : 0);
    ++t_;
    ctx.put(out, static_cast<std::int64_t>(prev_));
  }

 private:
  const Graph& g_;
  int point_;
  int t_ = 0;
  std::uint64_t prev_ = 0;
};

// --- dependence patterns: a partition -----------------------------------------------------------

class Whole final : public weft::Task {  // the one array the partition splits: width rows of 16 bytes
 public:
  Whole(std::string name, int width) : Task(std::move(name)), width_(width) {}
  weft::Out<weft::Array> out = output<weft::Array>("out");
  void run(weft::Context& ctx) override {
    if (done_) return ctx.end_stream();
    weft::Array a = ctx.alloc(weft::DType::f64, weft::Shape(width_, 2));
    a.zero();
    done_ = true;
    ctx.put(out, std::move(a));
  }

 private:
  int width_;
  bool done_ = false;
};

class ArraySink final : public weft::Task {  // sums the value field of every row
 public:
  ArraySink(std::string name, std::uint64_t* sum) : Task(std::move(name)), sum_(sum) {}
  weft::In<weft::Array> in = input<weft::Array>("in");
  void run(weft::Context& ctx) override {
    const weft::Array a = ctx.take(in);
    for (std::int64_t r = 0; r < a.shape()[0]; ++r) *sum_ += row(a, r).value;
  }

 private:
  std::uint64_t* sum_;
};

class Point final : public weft::SlabTask {
 public:
  Point(std::string name, const Graph& g, const std::vector<int>& reach)
      : SlabTask(std::move(name), weft::DType::f64), g_(g), reach_(reach) {}
  void run_slab(weft::Context& ctx, weft::Halo& halo) override {
    const weft::Array u = ctx.take(in);
    const weft::Slab& s = halo.slab();
    const int i = s.part, w = g_.width;
    const std::int64_t hb = s.halo_before, ha = s.halo_after;
    bool relay = false;
    for (int r : reach_) relay = relay || r > 1;
    // The relay's layout: 2 owned rows, the first sent to the previous slab, the last to the next.
    weft::Slab layout{i, w, 2LL * i, 2, hb, ha, 2LL * w};
    const weft::Array a = relay ? ctx.alloc(weft::DType::f64, weft::Shape(hb + 2 + ha, 2)) : weft::Array();
    std::vector<Payload> known(2 * static_cast<std::size_t>(w) + 1);  // point j at known[j - i + w]
    auto at = [&](int j) -> Payload& { return known[static_cast<std::size_t>(j - i + w)]; };
    Payload mine{0, ~0ull};
    std::uint64_t sum = 0;
    std::vector<std::uint64_t> in;
    for (int t = 0; t < g_.steps; ++t) {
      if (reach_[t] > 0 && !relay) {  // one exchange of the slab itself: the previous values of i ± 1
        set_row(u, hb, mine);
        halo.exchange(u);
        if (hb) at(i - 1) = row(u, 0);
        if (ha) at(i + 1) = row(u, hb + 1);
      }
      Payload to_prev = mine, to_next = mine;
      for (int k = 1; relay && k <= reach_[t]; ++k) {  // exchange k brings points i - k and i + k
        set_row(a, hb, to_prev);
        set_row(a, hb + 1, to_next);
        halo.exchange(a, layout);
        if (hb) to_next = row(a, 0);
        if (ha) to_prev = row(a, hb + 2);
        if (i - k >= 0) at(i - k) = to_next;
        if (i + k < w) at(i + k) = to_prev;
      }
      at(i) = mine;
      if (i >= g_.width_at(t)) continue;  // a tree point not yet reached: relays only
      in.clear();
      for (int j : g_.deps(t, i)) {
        if (at(j).step != static_cast<std::uint64_t>(t - 1)) throw std::runtime_error("taskbench: a missed dependency");
        in.push_back(at(j).value);
      }
      busy(g_.work_us);
      mine = {mix(t, i, in.data(), in.size()), static_cast<std::uint64_t>(t)};
      sum += mine.value;
    }
    set_row(u, hb, {sum, 0});  // the join keeps the owned row: the sink adds the slabs' sums
    ctx.put(out, u);
  }

 private:
  const Graph& g_;
  const std::vector<int>& reach_;
};

weft::Mapping on_cpu(const weft::Graph& g) {
  weft::AutoMapper automatic(weft::DeviceChoice::cpu);
  return weft::map_graph(g, weft::Cluster{{weft::local_devices(0)}}, {&automatic});
}

}  // namespace

Run run_weft(const Graph& pattern) {
  weft::Graph g;
  std::uint64_t sum = 0;
  std::vector<int> reach;
  if (pattern.pattern == Pattern::trivial) {
    auto& src = g.add<Tokens>("tokens", pattern.tasks());
    const weft::Farm farm = g.add_farm("point", pattern.width, [&](int i) {
      return std::make_unique<Independent>("point." + std::to_string(i), pattern);
    });
    auto& sink = g.add<SumSink>("sink", &sum);
    g.connect(src.out, farm.in());
    g.connect(farm.out(), sink.in);
  } else if (pattern.pattern == Pattern::no_comm) {
    std::vector<std::pair<weft::Task*, int>> chains;
    for (int i = 0; i < pattern.width; ++i)
      chains.emplace_back(&g.add<Chain>("point." + std::to_string(i), pattern, i), 0);
    auto& sink = g.add<SumSink>("sink", &sum);
    g.connect(g.add_reduce("sum", chains, weft::ReduceOp::sum).out(), sink.in);
  } else {
    for (int t = 0; t < pattern.steps; ++t) reach.push_back(pattern.reach(t));
    auto& src = g.add<Whole>("whole", pattern.width);
    const weft::Partition p = g.add_partition("point", pattern.width, [&](int i) {
      return std::make_unique<Point>("point." + std::to_string(i), pattern, reach);
    }, {.halo = 1});
    auto& sink = g.add<ArraySink>("sink", &sum);
    g.connect(src.out, p.in());
    g.connect(p.out(), sink.in);
  }
  const weft::Mapping m = on_cpu(g);
  weft::Executor executor;
  const auto t0 = Clock::now();
  executor.run(g, m).wait();
  Run r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.checksum = sum;
  return r;
}

}  // namespace taskbench
