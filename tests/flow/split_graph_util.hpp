#pragma once
// The source and sink of the split-flow test graphs (flow_split_test, flow_split_gpu_test): one
// frame pair, and every flow that reaches the sink, on the host.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "common/mpi_main.hpp"
#include "weft/tasks/flow/split.hpp"
#include "weft/weft.hpp"

namespace weft::flow::test {

/// Puts one pair (frame0, frame1), then ends the stream.
class PairOnce final : public Task {
 public:
  PairOnce(Array a, Array b) : Task("frames"), a_(std::move(a)), b_(std::move(b)) {}
  Out<Array> frame0 = output<Array>("frame0", std::nullopt, 2);
  Out<Array> frame1 = output<Array>("frame1", std::nullopt, 2);
  void run(Context& ctx) override {
    if (ctx.index() > 0) return ctx.end_stream();
    ctx.put(frame0, a_);
    ctx.put(frame1, b_);
  }

 private:
  Array a_, b_;
};

/// Keeps every flow it receives, copied to the host.
class Keep final : public Task {
 public:
  explicit Keep(std::shared_ptr<std::vector<Array>> seen) : Task("sink"), seen_(std::move(seen)) {}
  In<Array> flow = input<Array>("flow", DType::f32, 3);
  void run(Context& ctx) override {
    const Array f = ctx.take(flow);
    seen_->push_back(f.memory().is_host() ? f : f.to_host());
  }

 private:
  std::shared_ptr<std::vector<Array>> seen_;
};

/// The split flow of (f0, f1) over `parts` strips, strip i on places[i mod places.size()] and
/// everything else on rank 0's CPU; on rank 0 (empty elsewhere).
inline Array split_flow(const Array& f0, const Array& f1, const FlowParams& params, int parts,
                        const std::vector<Place>& places) {
  Graph g;
  auto& src = g.add<PairOnce>(f0, f1);
  SplitFlow split = add_split_flow(g, "flow", parts, params);
  connect_split_flow(g, split, src.frame0, src.frame1);
  auto seen = std::make_shared<std::vector<Array>>();
  auto& sink = g.add<Keep>(seen);
  g.connect(split.partition.out(), sink.flow);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host(0));
  for (int i = 0; i < parts; ++i)
    m.set(split.strips[i]->name(), places[static_cast<std::size_t>(i) % places.size()]);
  Executor ex({.channel_capacity = 2});
  ex.run(g, m).wait();
  if (weft::test::env->rank() != 0) return {};
  EXPECT_EQ(seen->size(), 1u);
  return seen->empty() ? Array() : seen->front();
}

}  // namespace weft::flow::test
