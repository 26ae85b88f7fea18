#include "weft/tasks/flow/task.hpp"

#include "weft/tasks/flow/flow.hpp"

namespace weft::flow {

OpticalFlow::OpticalFlow(FlowParams params, std::string name) : Task(std::move(name)), params_(params) {
  validate(params_);
}

void OpticalFlow::run(Context& ctx) {
  const Array a = ctx.take(frame0), b = ctx.take(frame1);
  ctx.put(flow, compute(a, b, params_));
}

bool OpticalFlow::has_cuda() const { return have_cuda(); }

void OpticalFlow::run_cuda(Context& ctx) {
  const Array a = ctx.take(frame0), b = ctx.take(frame1);
  ctx.put(flow, compute_cuda(a, b, params_, ctx.stream()));
}

double OpticalFlow::cost_hint() const { return 10.0 * params_.warps * params_.scales; }

}  // namespace weft::flow
