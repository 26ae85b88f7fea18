#include "trace/trace.hpp"

#include <nlohmann/json.hpp>

namespace weft::detail {

std::string TraceRecorder::events_json(int rank, double clock_offset_us) const {
  std::lock_guard lock(mutex_);
  const double origin_us = std::chrono::duration<double, std::micro>(origin_.time_since_epoch()).count();
  for (GpuSpan& g : gpu_spans_) {  // GPU times, on this recorder's clock
    double start = 0, duration = 0;
    if (gpu_interval_times(g.interval, start, duration))
      spans_.push_back({std::move(g.name), g.category, g.lane, g.token, start - origin_us, duration, true});
  }
  gpu_spans_.clear();
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
  for (const auto& [lane, name] : lanes_)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", lane}, {"args", {{"name", name}}}});
  for (const Span& s : spans_) {
    nlohmann::json args = {{"token", s.token}};
    if (s.gpu_clock) args["clock"] = "gpu";
    events.push_back({{"name", s.name}, {"cat", s.category}, {"ph", "X"}, {"pid", rank}, {"tid", s.lane},
                      {"ts", s.start_us + clock_offset_us}, {"dur", s.duration_us}, {"args", args}});
  }
  // "bp": "e" binds each end to the span that encloses it (the send's, the receive's), which a
  // viewer draws the arrow between; without it the receive's end would bind to the next span.
  for (const FlowPoint& f : flows_)
    events.push_back({{"name", "token"}, {"cat", "flow"}, {"ph", f.start ? "s" : "f"}, {"bp", "e"},
                      {"id", f.id}, {"pid", rank}, {"tid", f.lane}, {"ts", f.at_us + clock_offset_us},
                      {"args", {{"token", f.token}}}});
  std::string text;
  for (const auto& e : events) text += (text.empty() ? "" : ",\n") + e.dump();
  return text;
}

}  // namespace weft::detail
