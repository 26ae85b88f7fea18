#include "weft/tasks/saliency/dynamic_tasks.hpp"

#include <cstring>
#include <utility>

#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

// State of the stateful tasks: arrays as (ndim, extents, f32 values), copied to the host.
void save_array(const Array& a, std::vector<std::byte>& out) {
  const Array h = a.memory().is_host() ? a : a.to_host();
  const std::int64_t header[4] = {h.shape().ndim(), h.shape().ndim() > 0 ? h.shape()[0] : 0,
                                  h.shape().ndim() > 1 ? h.shape()[1] : 0, h.shape().ndim() > 2 ? h.shape()[2] : 0};
  const auto* hb = reinterpret_cast<const std::byte*>(header);
  out.insert(out.end(), hb, hb + sizeof header);
  const auto* data = static_cast<const std::byte*>(h.raw());
  out.insert(out.end(), data, data + h.bytes());
}
[[noreturn]] void corrupt(const std::string& task, const std::string& what) {
  throw Error(task + " state: " + what);
}
std::int64_t load_word(std::span<const std::byte>& in, const std::string& task) {
  std::int64_t word = 0;
  if (in.size() < sizeof word) corrupt(task, "truncated");
  std::memcpy(&word, in.data(), sizeof word);
  in = in.subspan(sizeof word);
  return word;
}
/// An array written by save_array, of `ndim` dimensions. The header is checked before anything is
/// allocated: every extent at least 1 and the values all there (no product that overflows).
Array load_array(std::span<const std::byte>& in, int ndim, const std::string& task) {
  std::int64_t header[4];
  if (in.size() < sizeof header) corrupt(task, "truncated");
  std::memcpy(header, in.data(), sizeof header);
  if (header[0] != ndim)
    corrupt(task, "an array of " + std::to_string(header[0]) + " dimensions where " + std::to_string(ndim) + " belong");
  const auto values = static_cast<std::int64_t>((in.size() - sizeof header) / sizeof(float));
  std::int64_t elements = 1;
  for (int d = 0; d < ndim; ++d) {
    const std::int64_t e = header[1 + d];
    if (e < 1) corrupt(task, "array extent " + std::to_string(e));
    if (e > values / elements) corrupt(task, "truncated");
    elements *= e;
  }
  in = in.subspan(sizeof header);
  const Shape shape = ndim == 2 ? Shape(header[1], header[2]) : Shape(header[1], header[2], header[3]);
  Array a = Array::host(DType::f32, shape);
  std::memcpy(a.raw(), in.data(), a.bytes());
  in = in.subspan(a.bytes());
  return a;
}
void expect_end(std::span<const std::byte> in, const std::string& task) {
  if (!in.empty()) corrupt(task, std::to_string(in.size()) + " bytes left over");
}
#if defined(WEFT_HAVE_CUDA)
/// An array of a stateful task restored on the host, moved to the GPU the task now runs on.
Array on_device(const Array& a, Context& ctx) {
  return a.memory().is_host() ? upload_gpu(a, ctx.place().device, ctx.stream()) : a;
}
#endif

}  // namespace

// ---- motion.input ----
MotionInput::MotionInput(std::string name, int k) : Task(std::move(name)), k_(k) {}
void MotionInput::emit(Context& ctx, Array frame) {
  Array previous = last_.empty() ? frame : last_;
  last_ = frame;
  ctx.put(cur, std::move(frame));
  ctx.put(prev, std::move(previous));
}
void MotionInput::run(Context& ctx) {
  if (!last_.empty() && !last_.memory().is_host()) last_ = last_.to_host();
  emit(ctx, motion_frame_cpu(ctx.take(in), k_));
}
void MotionInput::stop(Context&) { last_ = Array(); }
void MotionInput::save(std::vector<std::byte>& out) const {
  const std::int64_t has = last_.empty() ? 0 : 1;
  const auto* b = reinterpret_cast<const std::byte*>(&has);
  out.insert(out.end(), b, b + sizeof has);
  if (has) save_array(last_, out);
}
void MotionInput::load(std::span<const std::byte> in) {
  const std::int64_t has = load_word(in, name());
  if (has != 0 && has != 1) corrupt(name(), "frame flag " + std::to_string(has));
  Array last = has ? load_array(in, 2, name()) : Array();
  expect_end(in, name());
  last_ = std::move(last);
}

// ---- motion.dominant, motion.compensate ----
DominantMotion::DominantMotion(std::string name, MotionParams params) : Task(std::move(name)), params_(params) {}
void DominantMotion::run(Context& ctx) {
  const Array c = ctx.take(cur), p = ctx.take(prev);
  ctx.put(theta, dominant_motion_cpu(c, p, params_));
}
Compensate::Compensate(std::string name) : Task(std::move(name)) {}
void Compensate::run(Context& ctx) {
  const Array c = ctx.take(cur), p = ctx.take(prev), t = ctx.take(theta);
  ctx.put(out, compensate_cpu(c, p, t));
}

// ---- motion.median ----
TemporalMedian::TemporalMedian(std::string name, int frames) : Task(std::move(name)), frames_(frames) {}
void TemporalMedian::push(Array flow) {
  last_.push_back(std::move(flow));
  while (static_cast<int>(last_.size()) > frames_) last_.pop_front();
}
void TemporalMedian::run(Context& ctx) {
  for (Array& a : last_)
    if (!a.memory().is_host()) a = a.to_host();
  push(ctx.take(in));
  ctx.put(out, temporal_median_cpu({last_.begin(), last_.end()}));
}
void TemporalMedian::stop(Context&) { last_.clear(); }
void TemporalMedian::save(std::vector<std::byte>& out) const {
  const auto count = static_cast<std::int64_t>(last_.size());
  const auto* b = reinterpret_cast<const std::byte*>(&count);
  out.insert(out.end(), b, b + sizeof count);
  for (const Array& a : last_) save_array(a, out);
}
void TemporalMedian::load(std::span<const std::byte> in) {
  const std::int64_t count = load_word(in, name());
  if (count < 0 || count > frames_)
    corrupt(name(), std::to_string(count) + " flows for a median over " + std::to_string(frames_));
  std::deque<Array> last;
  for (std::int64_t i = 0; i < count; ++i) {
    last.push_back(load_array(in, 3, name()));
    if (last.back().shape()[2] != 2) corrupt(name(), "a flow of shape " + last.back().shape().str());
    if (last.back().shape() != last.front().shape())
      corrupt(name(), "a flow of shape " + last.back().shape().str() + " after " + last.front().shape().str());
  }
  expect_end(in, name());
  last_ = std::move(last);
}

// ---- motion.map, fusion ----
DynamicMap::DynamicMap(std::string name, std::int64_t height, std::int64_t width, int k)
    : Task(std::move(name)), height_(height), width_(width), k_(k) {}
void DynamicMap::run(Context& ctx) { ctx.put(out, dynamic_map_cpu(ctx.take(in), height_, width_, k_)); }
Fusion::Fusion(std::string name) : Task(std::move(name)) {}
void Fusion::run(Context& ctx) {
  const Array s = ctx.take(static_map), d = ctx.take(dynamic_map);
  ctx.put(out, fusion_cpu(s, d));
}

// ---- frame.<i> (farm replica) ----
FrameSaliency::FrameSaliency(std::string name, bool with_static, bool with_dynamic, MotionParams params)
    : Task(std::move(name)), static_(with_static), dynamic_(with_dynamic), params_(params) {
  if (!static_ && !dynamic_) throw ConfigError("frame saliency " + this->name() + ": no pathway");
  if (static_) {
    frame_ = add_input({"frame", ValueKind<Array>::index, std::nullopt, 2});
    static_out_ = add_output({"static", ValueKind<Array>::index, DType::f32, 2});
  }
  if (dynamic_) {
    cur_ = add_input({"cur", ValueKind<Array>::index, DType::f32, 2});
    prev_ = add_input({"prev", ValueKind<Array>::index, DType::f32, 2});
    flow_out_ = add_output({"flow", ValueKind<Array>::index, DType::f32, 3});
  }
}
FrameSaliency::~FrameSaliency() = default;
void FrameSaliency::run(Context& ctx) {
  if (static_) {
    const Array frame = std::get<Array>(ctx.take_value(frame_));
    const Interacted i = interactions_cpu({gabor_cpu(retina_cpu(frame), 0, kOrientations)});
    ctx.put_value_at(static_out_, normalize_cpu(i.maps, i.stats));
  }
  if (dynamic_) {
    const Array c = std::get<Array>(ctx.take_value(cur_)), p = std::get<Array>(ctx.take_value(prev_));
    ctx.put_value_at(flow_out_, residual_flow_cpu(c, p, params_));
  }
}

#if defined(WEFT_HAVE_CUDA)
bool MotionInput::has_cuda() const { return true; }
void MotionInput::run_cuda(Context& ctx) {
  if (!last_.empty()) last_ = on_device(last_, ctx);
  emit(ctx, motion_frame_gpu(ctx.take(in), k_, ctx.place().device, ctx.stream()));
}
bool DominantMotion::has_cuda() const { return true; }
void DominantMotion::run_cuda(Context& ctx) {
  const Array c = ctx.take(cur), p = ctx.take(prev);
  ctx.put(theta, dominant_motion_gpu(c, p, params_, ctx.place().device, ctx.stream()));
}
bool Compensate::has_cuda() const { return true; }
void Compensate::run_cuda(Context& ctx) {
  const Array c = ctx.take(cur), p = ctx.take(prev), t = ctx.take(theta);
  ctx.put(out, compensate_gpu(c, p, t, ctx.place().device, ctx.stream()));
}
bool TemporalMedian::has_cuda() const { return true; }
void TemporalMedian::run_cuda(Context& ctx) {
  for (Array& a : last_) a = on_device(a, ctx);
  push(ctx.take(in));
  ctx.put(out, temporal_median_gpu({last_.begin(), last_.end()}, ctx.place().device, ctx.stream()));
}
bool DynamicMap::has_cuda() const { return true; }
void DynamicMap::run_cuda(Context& ctx) {
  ctx.put(out, dynamic_map_gpu(ctx.take(in), height_, width_, k_, ctx.place().device, ctx.stream()));
}
bool Fusion::has_cuda() const { return true; }
void Fusion::run_cuda(Context& ctx) {
  const Array s = ctx.take(static_map), d = ctx.take(dynamic_map);
  ctx.put(out, fusion_gpu(s, d, ctx.place().device, ctx.stream()));
}
bool FrameSaliency::has_cuda() const { return true; }
void FrameSaliency::run_cuda(Context& ctx) {
  const int device = ctx.place().device;
  void* stream = ctx.stream();
  if (static_) {
    if (!retina_) retina_ = std::make_unique<RetinaGpu>();
    if (!bank_) bank_ = std::make_unique<GaborGpu>(0, kOrientations);
    const Array frame = std::get<Array>(ctx.take_value(frame_));
    const Array spectrum = retina_->run(frame, device, stream);
    const Interacted i = interactions_gpu({bank_->run(spectrum, device, stream)}, device, stream);
    ctx.put_value_at(static_out_, normalize_gpu(i.maps, i.stats, device, stream));
  }
  if (dynamic_) {
    const Array c = std::get<Array>(ctx.take_value(cur_)), p = std::get<Array>(ctx.take_value(prev_));
    ctx.put_value_at(flow_out_, residual_flow_gpu(c, p, params_, device, stream));
  }
}
#else
bool MotionInput::has_cuda() const { return false; }
void MotionInput::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool DominantMotion::has_cuda() const { return false; }
void DominantMotion::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool Compensate::has_cuda() const { return false; }
void Compensate::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool TemporalMedian::has_cuda() const { return false; }
void TemporalMedian::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool DynamicMap::has_cuda() const { return false; }
void DynamicMap::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool Fusion::has_cuda() const { return false; }
void Fusion::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
bool FrameSaliency::has_cuda() const { return false; }
void FrameSaliency::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
#endif

void validate(const MotionParams& p) {
  auto require = [](bool ok, const std::string& what, int value, const char* range) {
    if (!ok) throw ConfigError(what + " = " + std::to_string(value) + ": must be " + range);
  };
  require(p.scale == 0 || p.scale == 1 || p.scale == 2 || p.scale == 4 || p.scale == 8, "--motion-scale", p.scale,
          "0 (auto), 1, 2, 4 or 8");
  require(p.levels >= 1 && p.levels <= 8, "--motion-levels", p.levels, "in [1, 8]");
  require(p.iterations >= 1 && p.iterations <= 50, "--motion-iterations", p.iterations, "in [1, 50]");
  require(p.median_frames >= 1 && p.median_frames <= kMaxMedianFrames, "--median-frames", p.median_frames, "in [1, 9]");
  flow::validate(p.flow);
}

DynamicPathway add_dynamic_pathway(Graph& graph, const MotionParams& params, std::int64_t height, std::int64_t width) {
  validate(params);
  const int k = motion_scale(params, width);
  DynamicPathway d;
  d.input = &graph.add<MotionInput>("motion.input", k);
  d.dominant = &graph.add<DominantMotion>("motion.dominant", params);
  d.compensate = &graph.add<Compensate>("motion.compensate");
  d.flow = &graph.add<flow::OpticalFlow>(params.flow, "motion.flow");
  d.median = &graph.add<TemporalMedian>("motion.median", params.median_frames);
  d.map = &graph.add<DynamicMap>("motion.map", height, width, k);
  graph.connect(d.input->cur, d.dominant->cur);
  graph.connect(d.input->prev, d.dominant->prev);
  graph.connect(d.input->cur, d.compensate->cur);
  graph.connect(d.input->prev, d.compensate->prev);
  graph.connect(d.dominant->theta, d.compensate->theta);
  graph.connect(d.input->cur, d.flow->frame0);
  graph.connect(d.compensate->out, d.flow->frame1);
  graph.connect(d.flow->flow, d.median->in);
  graph.connect(d.median->out, d.map->in);
  return d;
}

}  // namespace weft::saliency
