#pragma once
// The source and sink of the split-flow test graphs (flow_split_test, flow_split_gpu_test): one
// frame pair, and every flow that reaches the sink, on the host.
#include <memory>
#include <utility>
#include <vector>

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

}  // namespace weft::flow::test
