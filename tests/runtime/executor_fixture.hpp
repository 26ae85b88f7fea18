#pragma once
// Graphs shared by the executor tests (CPU, GPU and multi-rank).
#include <atomic>
#include <cmath>
#include <set>
#include <chrono>
#include <thread>

#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

namespace weft::test {

/// y = a·x + b like tasks::Affine, taking `delay` per token (an uneven farm replica).
class SlowAffine final : public Task {
 public:
  SlowAffine(std::string name, float a, float b, std::chrono::microseconds delay)
      : Task(std::move(name)), a_(a), b_(b), delay_(delay) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    Array x = ctx.take(in);
    Array y = Array::host(DType::f32, x.shape());
    for (std::int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = std::fma(a_, x.data<float>()[i], b_);
    std::this_thread::sleep_for(delay_);
    ctx.put(out, std::move(y));
  }

 private:
  float a_, b_;
  std::chrono::microseconds delay_;
};

/// A farm of `replicas` SlowAffine (y = 3x − 1) between an ArraySource of `tokens` 8-float arrays
/// and a Collect: replica 0 takes `slow` per token, the others `fast`.
inline Graph uneven_farm(std::uint64_t tokens, int replicas, Dispatch dispatch, std::chrono::microseconds slow,
                         std::chrono::microseconds fast, std::shared_ptr<tasks::Collect::Record> rec) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", tokens, 8);
  Farm farm = g.add_farm("work", replicas, [slow, fast](int i) {
    return std::make_unique<SlowAffine>("work." + std::to_string(i), 3.0f, -1.0f, i == 0 ? slow : fast);
  }, {.dispatch = dispatch});
  auto& sink = g.add<tasks::Collect>("sink", std::move(rec));
  g.connect(src.out, farm.in());
  g.connect(farm.out(), sink.in);
  return g;
}

/// A source that counts what it produced, and a sink that checks how far ahead the source is.
struct FlightLog {
  std::atomic<std::int64_t> produced{0}, consumed{0}, worst_gap{0};
};

class CountingSource final : public Task {
 public:
  CountingSource(std::string name, std::uint64_t count, std::shared_ptr<FlightLog> log)
      : Task(std::move(name)), count_(count), log_(std::move(log)) {}
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    if (ctx.index() >= count_) return ctx.end_stream();
    Array a = Array::host(DType::f32, Shape(8));
    for (int i = 0; i < 8; ++i) a.data<float>()[i] = static_cast<float>(ctx.index()) + i;
    ++log_->produced;
    ctx.put(out, std::move(a));
  }

 private:
  std::uint64_t count_;
  std::shared_ptr<FlightLog> log_;
};

class SlowSink final : public Task {
 public:
  SlowSink(std::string name, std::shared_ptr<FlightLog> log) : Task(std::move(name)), log_(std::move(log)) {}
  In<Array> in = input<Array>("in", DType::f32);
  void run(Context& ctx) override {
    (void)ctx.take(in);
    std::int64_t gap = log_->produced - log_->consumed;
    if (gap > log_->worst_gap) log_->worst_gap = gap;
    ++log_->consumed;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }

 private:
  std::shared_ptr<FlightLog> log_;
};

/// Fails at a given token.
class FailAt final : public Task {
 public:
  FailAt(std::string name, std::uint64_t at) : Task(std::move(name)), at_(at) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    if (ctx.index() == at_) throw Error("planted failure at token " + std::to_string(at_));
    ctx.put(out, ctx.take(in));
  }

 private:
  std::uint64_t at_;
};

/// source -> a (2x+1) -> b (0.5x-3) -> sink, the chain most executor tests run.
inline Graph affine_chain(std::uint64_t tokens, std::int64_t length, std::shared_ptr<tasks::Collect::Record> rec) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", tokens, length);
  auto& a = g.add<tasks::Affine>("a", 2.0f, 1.0f);
  auto& b = g.add<tasks::Affine>("b", 0.5f, -3.0f);
  auto& sink = g.add<tasks::Collect>("sink", std::move(rec));
  g.connect(src.out, a.in);
  g.connect(a.out, b.in);
  g.connect(b.out, sink.in);
  return g;
}

/// source -> {left (2x), right (1-x)} -> sum -> sink: fan-out and fan-in joined by token index.
inline Graph fan_in(std::uint64_t tokens, std::int64_t length, std::shared_ptr<tasks::Collect::Record> rec) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", tokens, length);
  auto& left = g.add<tasks::Affine>("left", 2.0f, 0.0f);
  auto& right = g.add<tasks::Affine>("right", -1.0f, 1.0f);
  auto& sum = g.add<tasks::Add>("sum");
  auto& sink = g.add<tasks::Collect>("sink", std::move(rec));
  g.connect(src.out, left.in);
  g.connect(src.out, right.in);
  g.connect(left.out, sum.lhs);
  g.connect(right.out, sum.rhs);
  g.connect(sum.out, sink.in);
  return g;
}

/// Expected checksum content of token k after Affine(a1,b1) then Affine(a2,b2).
inline float expected(std::uint64_t k, std::int64_t i, std::int64_t n, float a1, float b1, float a2, float b2) {
  float x = tasks::ArraySource::value(k, i, n);
  return std::fma(a2, std::fma(a1, x, b1), b2);
}

}  // namespace weft::test
