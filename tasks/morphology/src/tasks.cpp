#include "weft/tasks/morphology/tasks.hpp"

#include <cstdlib>
#include <utility>

#include "size_phases.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"

namespace weft::morphology {

ThresholdRule ThresholdRule::parse(const std::string& text) {
  if (text.empty() || text == "nonzero") return {};
  if (text == "otsu") return {otsu, 0, {}};
  Foreground exact;
  try {
    exact = Foreground::parse(text, "--threshold");
  } catch (const ConfigError&) {
    throw ConfigError("--threshold: expected a finite number or 'otsu', got '" + text + "'");
  }
  return {value, exact.value(), exact};
}

Threshold::Threshold(std::string name, ThresholdRule rule, std::function<void(double)> on_threshold)
    : Task(std::move(name)), rule_(rule), on_threshold_(std::move(on_threshold)) {}

void Threshold::run(Context& ctx) {
  Array volume = ctx.take(in);
  Array mask;
  if (rule_.kind == ThresholdRule::nonzero) {
    mask = nonzero_mask(volume);
    if (on_threshold_) on_threshold_(0.0);
  } else {
    ThresholdRule rule = rule_;
    if (rule.kind == ThresholdRule::otsu) rule.threshold = otsu_threshold(volume);
    const double t = rule.threshold;
    mask = threshold_mask(volume, rule.foreground());
    if (on_threshold_) on_threshold_(t);
  }
  ctx.put(out, std::move(mask));
}

Granulometry::Granulometry(std::string name, GranulometryOptions options)
    : Task(std::move(name)), size_map(output<Array>("size_map", options.size_map_form.dtype)),
      options_(std::move(options)) {}

void Granulometry::put(Context& ctx, GranulometryResult result) {
  ctx.put(remaining, std::move(result.remaining));
  ctx.put(spectrum, std::move(result.spectrum));
  if (result.size_map.empty()) {
    result.size_map = ctx.alloc(options_.size_map_form.dtype, Shape(1));
    if (result.size_map.memory().is_host()) result.size_map.zero();
  }
  ctx.put(size_map, std::move(result.size_map));
}

void Granulometry::run(Context& ctx) {
  const Array mask = ctx.take(in);
  put(ctx, detail::with_size_phases(ctx, options_, [&](const GranulometryOptions& o) { return granulometry_cpu(mask, o); }));
}

#if defined(WEFT_HAVE_CUDA)
bool Granulometry::has_cuda() const { return true; }
void Granulometry::run_cuda(Context& ctx) {
  const Array mask = ctx.take(in);
  put(ctx, detail::with_size_phases(
               ctx, options_, [&](const GranulometryOptions& o) { return granulometry_gpu(mask, o, ctx.stream()); }));
}
#else
bool Granulometry::has_cuda() const { return false; }
void Granulometry::run_cuda(Context& ctx) { Task::run_cuda(ctx); }
#endif

}  // namespace weft::morphology
