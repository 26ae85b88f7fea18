#include "weft/tasks/saliency/tasks.hpp"

#include <utility>

#include "weft/tasks/saliency/bank.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {

Retina::Retina(std::string name) : Task(std::move(name)) {}
Retina::~Retina() = default;
void Retina::run(Context& ctx) { ctx.put(out, retina_cpu(ctx.take(in))); }

GaborGroup::GaborGroup(std::string name, int first_orientation, int orientations)
    : Task(std::move(name)), first_(first_orientation), count_(orientations) {
  if (first_ < 0 || count_ < 1 || first_ + count_ > kOrientations)
    throw ConfigError("gabor group " + this->name() + ": orientations " + std::to_string(first_) + "+" +
                      std::to_string(count_) + " outside 0.." + std::to_string(kOrientations - 1));
}
GaborGroup::~GaborGroup() = default;
void GaborGroup::run(Context& ctx) { ctx.put(out, gabor_cpu(ctx.take(in), first_, count_)); }

Interactions::Interactions(std::string name, int groups) : Task(std::move(name)) {
  for (int g = 0; g < groups; ++g) in.push_back(input<Array>("in" + std::to_string(g), DType::f32, 3));
}
namespace {
std::vector<Array> take_all(Context& ctx, const std::vector<In<Array>>& ports) {
  std::vector<Array> v;
  v.reserve(ports.size());
  for (const auto& p : ports) v.push_back(ctx.take(p));
  return v;
}
}  // namespace
void Interactions::run(Context& ctx) {
  Interacted r = interactions_cpu(take_all(ctx, in));
  ctx.put(maps, std::move(r.maps));
  ctx.put(stats, std::move(r.stats));
}

Normalize::Normalize(std::string name) : Task(std::move(name)) {}
void Normalize::run(Context& ctx) {
  const Array m = ctx.take(maps);
  const Array s = ctx.take(stats);
  ctx.put(out, normalize_cpu(m, s));
}

StaticSaliency::StaticSaliency(std::string name) : Task(std::move(name)) {}
StaticSaliency::~StaticSaliency() = default;
void StaticSaliency::run(Context& ctx) {
  const Interacted i = interactions_cpu({gabor_cpu(retina_cpu(ctx.take(in)), 0, kOrientations)});
  ctx.put(out, normalize_cpu(i.maps, i.stats));
}

#if defined(WEFT_HAVE_CUDA)
bool StaticSaliency::has_cuda() const { return true; }
void StaticSaliency::run_cuda(Context& ctx) {
  if (!retina_) retina_ = std::make_unique<RetinaGpu>();
  if (!bank_) bank_ = std::make_unique<GaborGpu>(0, kOrientations);
  const int device = ctx.place().device;
  void* stream = ctx.stream();
  const Array spectrum = retina_->run(ctx.take(in), device, stream);
  const Interacted i = interactions_gpu({bank_->run(spectrum, device, stream)}, device, stream);
  ctx.put(out, normalize_gpu(i.maps, i.stats, device, stream));
}
bool Retina::has_cuda() const { return true; }
void Retina::run_cuda(Context& ctx) {
  if (!gpu_) gpu_ = std::make_unique<RetinaGpu>();
  ctx.put(out, gpu_->run(ctx.take(in), ctx.place().device, ctx.stream()));
}
bool GaborGroup::has_cuda() const { return true; }
void GaborGroup::run_cuda(Context& ctx) {
  if (!gpu_) gpu_ = std::make_unique<GaborGpu>(first_, count_);
  ctx.put(out, gpu_->run(ctx.take(in), ctx.place().device, ctx.stream()));
}
bool Interactions::has_cuda() const { return true; }
void Interactions::run_cuda(Context& ctx) {
  Interacted r = interactions_gpu(take_all(ctx, in), ctx.place().device, ctx.stream());
  ctx.put(maps, std::move(r.maps));
  ctx.put(stats, std::move(r.stats));
}
bool Normalize::has_cuda() const { return true; }
void Normalize::run_cuda(Context& ctx) {
  const Array m = ctx.take(maps);
  const Array s = ctx.take(stats);
  ctx.put(out, normalize_gpu(m, s, ctx.place().device, ctx.stream()));
}
#else
bool StaticSaliency::has_cuda() const { return false; }
void StaticSaliency::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool Retina::has_cuda() const { return false; }
void Retina::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool GaborGroup::has_cuda() const { return false; }
void GaborGroup::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool Interactions::has_cuda() const { return false; }
void Interactions::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool Normalize::has_cuda() const { return false; }
void Normalize::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
#endif

StaticPathway add_static_pathway(Graph& graph, int groups, const std::string& option) {
  if (groups != 1 && groups != 2 && groups != 3 && groups != 6)
    throw ConfigError(option + ": expected 1, 2, 3 or 6 Gabor groups (dividing the 6 orientations), got " +
                      std::to_string(groups));
  StaticPathway p;
  p.retina = &graph.add<Retina>("retina");
  const int per = kOrientations / groups;
  p.interactions = &graph.add<Interactions>("interactions", groups);
  for (int g = 0; g < groups; ++g) {
    auto& gabor = graph.add<GaborGroup>("gabor." + std::to_string(g), g * per, per);
    graph.connect(p.retina->out, gabor.in);
    graph.connect(gabor.out, p.interactions->in[g]);
    p.gabor.push_back(&gabor);
  }
  p.normalize = &graph.add<Normalize>("normalize");
  graph.connect(p.interactions->maps, p.normalize->maps);
  graph.connect(p.interactions->stats, p.normalize->stats);
  return p;
}

}  // namespace weft::saliency
