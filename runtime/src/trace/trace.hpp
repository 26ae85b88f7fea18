#pragma once
// Internal: records spans (task runs, copies, messages) for the Chrome/Perfetto timeline.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <set>
#include <vector>

#include "device/device.hpp"

namespace weft::detail {

struct Span {
  std::string name;
  const char* category;  // "task", "copy", "send", "recv"
  int lane;              // one row per task (tid in the trace)
  std::uint64_t token;
  double start_us;
  double duration_us;
  bool gpu_clock = false;  // times read from GPU events (a GpuSpan once resolved)
};

/// Work on a GPU stream (kernels of a firing, a copy, an NCCL transfer): its times are read
/// from the interval's events when the trace is written, so the timeline shows what the GPU did
/// and when, not only when the host queued it.
struct GpuSpan {
  std::string name;
  const char* category;
  int lane;  ///< a GPU lane: gpu_lane(host lane)
  std::uint64_t token;
  GpuInterval interval;
};

/// One end of an arrow from a token's send on one rank to its receive on another (a Chrome trace
/// flow event): bound to the span around `at_us` on `lane`, the send or the receive span.
struct FlowPoint {
  std::uint64_t id;  ///< the same at both ends: flow_id(edge, token, marker)
  int lane;
  std::uint64_t token;
  double at_us;
  bool start;  ///< the send's end (true) or the receive's (false)
};
/// Tells a token's two ends apart from every other token's of the run: the edge, the token and
/// whether it is a migration marker, never 0 and within the 53 bits a JSON number holds exactly.
[[nodiscard]] constexpr std::uint64_t flow_id(int edge, std::uint64_t token, bool marker) noexcept {
  return (static_cast<std::uint64_t>((edge & 0x7ffff) + 1) << 33) | (std::uint64_t{marker} << 32) |
         (token & 0xffffffffu);
}

/// The lane that shows a host lane's GPU work.
[[nodiscard]] constexpr int gpu_lane(int lane) noexcept { return 100000 + lane; }
/// The lane of a cross-rank edge's sender or receiver (its NCCL transfers on gpu_lane of it).
[[nodiscard]] constexpr int link_lane(int edge, bool receive) noexcept { return 200000 + 2 * edge + (receive ? 1 : 0); }
/// The lane of a rank's MPI progress thread (its slow MPI calls and long gaps between polls).
[[nodiscard]] constexpr int progress_lane() noexcept { return 199999; }

class TraceRecorder {
 public:
  TraceRecorder() : origin_(std::chrono::steady_clock::now()) {}
  void enable() { enabled_ = true; }
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  [[nodiscard]] double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
  }
  void add(Span span) {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    spans_.push_back(std::move(span));
  }
  void add_gpu(GpuSpan span) {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    gpu_spans_.push_back(std::move(span));
  }
  void add_flow(FlowPoint point) {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    flows_.push_back(point);
  }
  void name_lane(int lane, std::string name) {
    std::lock_guard lock(mutex_);
    if (named_.insert(lane).second) lanes_.emplace_back(lane, std::move(name));
  }
  /// Chrome trace JSON events of this rank (pid = rank), offset by `clock_offset_us`.
  [[nodiscard]] std::string events_json(int rank, double clock_offset_us) const;

 private:
  bool enabled_ = false;
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  mutable std::vector<Span> spans_;
  mutable std::vector<GpuSpan> gpu_spans_;  // resolved into spans_ (events released) when first written
  std::vector<FlowPoint> flows_;
  std::vector<std::pair<int, std::string>> lanes_;
  std::set<int> named_;
};

}  // namespace weft::detail
