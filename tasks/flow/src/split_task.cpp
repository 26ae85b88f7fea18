// FlowStrip and the split flow's graph (weft/tasks/flow/split.hpp); the solver is split_cpu.hpp.
#include <utility>

#include "frames.hpp"
#include "split_cpu.hpp"
#include "split_gpu.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/split.hpp"

namespace weft::flow {
namespace {

// The strip's partition links on a CPU place: halo exchanges, and the stopping test's sum
// gathered through them (the runtime's reductions are tasks between firings; this sum is needed
// inside one, every iteration).
class HaloStripLinks final : public detail::StripLinks {
 public:
  explicit HaloStripLinks(Halo& halo)
      : halo_(halo), layout_(detail::sum_layout(halo.slab().part, halo.slab().parts)),
        rows_(Array::host(DType::f64, Shape(layout_.total_rows(), 2 * static_cast<std::int64_t>(layout_.parts)))) {}
  void exchange(const Array& a, const Slab& layout) override { halo_.exchange(a, layout); }
  double sum(double x) override {
    return detail::gathered_sum(x, layout_, rows_.data<double>(), [&] { halo_.exchange(rows_, layout_); });
  }

 private:
  Halo& halo_;
  Slab layout_;
  Array rows_;
};

}  // namespace

FlowStrip::FlowStrip(std::string name, FlowParams params) : SlabTask(std::move(name)), params_(params) {
  validate(params_);
}

void FlowStrip::run_slab(Context& ctx, Halo& halo) {
  (void)ctx.take(in);  // frame 0's rows of this slab: where it lies is in halo.slab()
  const Array a = ctx.take(frame0), b = ctx.take(frame1);
  check_frames(a, b);
  auto [i0, i1] = detail::normalised_planes<float>(a, b);
  HaloStripLinks links(halo);
  const detail::Flow<float> f = detail::solve_strip(std::move(i0), std::move(i1), params_for_pair(a, b, params_), halo.slab(), links, true);
  Array flow = ctx.alloc(DType::f32, Shape(f.u.h, f.u.w, 2));
  float* o = flow.data<float>();
  for (std::int64_t i = 0; i < f.u.size(); ++i) o[2 * i] = f.u.v[i], o[2 * i + 1] = f.v.v[i];
  ctx.put(out, std::move(flow));
}

bool FlowStrip::has_cuda() const { return have_cuda(); }

void FlowStrip::run_slab_cuda(Context& ctx, Halo& halo) {
  (void)ctx.take(in);
  const Array a = ctx.take(frame0), b = ctx.take(frame1);
  check_frames(a, b);
  // The texture rule is measured on the GPU (convert_frames), over the whole frames every strip converts.
  ctx.put(out, detail::solve_strip_cuda(a, b, params_, halo, ctx));
}

double FlowStrip::cost_hint() const { return 10.0 * params_.warps * params_.scales; }

int split_halo_rows() noexcept { return detail::kStripHalo; }

SplitFlow add_split_flow(Graph& g, const std::string& name, int parts, const FlowParams& params) {
  if (parts < 1) throw ConfigError("flow split '" + name + "': needs at least one strip, got " + std::to_string(parts));
  SplitFlow f;
  f.partition = g.add_partition(name, parts, [&](int i) {
    auto strip = std::make_unique<FlowStrip>(name + "." + std::to_string(i), params);
    f.strips.push_back(strip.get());
    return strip;
  }, {.halo = detail::kStripHalo});
  return f;
}

void connect_split_flow(Graph& g, const SplitFlow& flow, Out<Array> frame0, Out<Array> frame1) {
  g.connect(frame0, flow.partition.in());
  for (FlowStrip* s : flow.strips) {
    g.connect(frame0, s->frame0);
    g.connect(frame1, s->frame1);
  }
}

}  // namespace weft::flow
