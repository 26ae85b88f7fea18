#include "trace/trace.hpp"

#include <nlohmann/json.hpp>

namespace weft::detail {

std::string TraceRecorder::events_json(int rank, double clock_offset_us) const {
  std::lock_guard lock(mutex_);
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
  for (const auto& [lane, name] : lanes_)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", lane}, {"args", {{"name", name}}}});
  for (const Span& s : spans_)
    events.push_back({{"name", s.name}, {"cat", s.category}, {"ph", "X"}, {"pid", rank}, {"tid", s.lane},
                      {"ts", s.start_us + clock_offset_us}, {"dur", s.duration_us}, {"args", {{"token", s.token}}}});
  const double origin_us = std::chrono::duration<double, std::micro>(origin_.time_since_epoch()).count();
  for (GpuSpan& g : gpu_spans_) {
    double start = 0, duration = 0;
    if (!gpu_interval_times(g.interval, start, duration)) continue;
    events.push_back({{"name", g.name}, {"cat", g.category}, {"ph", "X"}, {"pid", rank}, {"tid", g.lane},
                      {"ts", start - origin_us + clock_offset_us}, {"dur", duration},
                      {"args", {{"token", g.token}, {"clock", "gpu"}}}});
  }
  gpu_spans_.clear();
  std::string text;
  for (const auto& e : events) text += (text.empty() ? "" : ",\n") + e.dump();
  return text;
}

}  // namespace weft::detail
