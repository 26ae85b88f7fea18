#pragma once
/// OpticalFlow task: two frames in, f32 [H,W,2] flow out, on a CPU or a GPU.
#include "weft/graph/task.hpp"
#include "weft/tasks/flow/params.hpp"

namespace weft::flow {

/// Fires once per pair: takes frame0 and frame1 (2D grey arrays of one shape), puts the flow
/// from frame0 to frame1. The CPU path is the fast float solver; the CUDA path honours precision.
class OpticalFlow : public Task {
 public:
  explicit OpticalFlow(FlowParams params, std::string name = "flow");
  In<Array> frame0 = input<Array>("frame0", std::nullopt, 2);
  In<Array> frame1 = input<Array>("frame1", std::nullopt, 2);
  Out<Array> flow = output<Array>("flow", DType::f32, 3);

  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] double cost_hint() const override;
  [[nodiscard]] const FlowParams& params() const noexcept { return params_; }

 private:
  FlowParams params_;
};

}  // namespace weft::flow
