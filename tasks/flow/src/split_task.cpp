// FlowStrip and the split flow's graph (weft/tasks/flow/split.hpp); the solver is split_cpu.hpp.
#include <utility>

#include "frames.hpp"
#include "split_cpu.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/split.hpp"

namespace weft::flow {
namespace {

// The strip's partition links: halo exchanges, and the stopping test's sum gathered through them
// (the runtime's reductions are tasks between firings; this sum is needed inside one, every
// iteration). Each round every strip passes what it knows of the parts' values to both
// neighbours, so after parts - 1 rounds every strip holds every value and adds them in part order.
class HaloStripLinks final : public detail::StripLinks {
 public:
  explicit HaloStripLinks(Halo& halo) : halo_(halo) {
    const Slab& s = halo.slab();
    layout_ = Slab{s.part, s.parts, s.part, 1, s.part > 0 ? 1 : 0, s.part + 1 < s.parts ? 1 : 0, s.parts};
    rows_ = Array::host(DType::f64, Shape(layout_.total_rows(), 2 * static_cast<std::int64_t>(s.parts)));
  }
  void exchange(const Array& a, const Slab& layout) override { halo_.exchange(a, layout); }
  double sum(double x) override {
    const int parts = layout_.parts, part = layout_.part;
    std::vector<double> value(static_cast<std::size_t>(parts), 0.0), known(static_cast<std::size_t>(parts), 0.0);
    value[part] = x;
    known[part] = 1;
    double* rows = rows_.data<double>();
    const std::int64_t width = 2 * static_cast<std::int64_t>(parts);
    for (int round = 0; round + 1 < parts; ++round) {
      double* own = rows + layout_.halo_before * width;
      for (int j = 0; j < parts; ++j) own[2 * j] = known[j], own[2 * j + 1] = value[j];
      halo_.exchange(rows_, layout_);
      for (std::int64_t r = 0; r < layout_.total_rows(); ++r)
        for (int j = 0; j < parts; ++j)
          if (r != layout_.halo_before && rows[r * width + 2 * j] != 0 && known[j] == 0)
            known[j] = 1, value[j] = rows[r * width + 2 * j + 1];
    }
    double total = 0;
    for (double v : value) total += v;
    return total;
  }

 private:
  Halo& halo_;
  Slab layout_;
  Array rows_;  // [1 + halo rows, 2 * parts]: (known, value) per part
};

}  // namespace

FlowStrip::FlowStrip(std::string name, FlowParams params) : SlabTask(std::move(name)), params_(params) {
  validate(params_);
  if (params_.method != Method::tvl1)
    throw ConfigError("flow split: --method " + std::string(method_name(params_.method)) +
                      " cannot be split (--split supports tvl1)");
}

void FlowStrip::run_slab(Context& ctx, Halo& halo) {
  (void)ctx.take(in);  // frame 0's rows of this slab: where it lies is in halo.slab()
  const Array a = ctx.take(frame0), b = ctx.take(frame1);
  check_frames(a, b);
  auto [i0, i1] = detail::normalised_planes<float>(a, b);
  HaloStripLinks links(halo);
  const detail::Flow<float> f = detail::solve_strip(std::move(i0), std::move(i1), params_, halo.slab(), links, true);
  Array flow = ctx.alloc(DType::f32, Shape(f.u.h, f.u.w, 2));
  float* o = flow.data<float>();
  for (std::int64_t i = 0; i < f.u.size(); ++i) o[2 * i] = f.u.v[i], o[2 * i + 1] = f.v.v[i];
  ctx.put(out, std::move(flow));
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
