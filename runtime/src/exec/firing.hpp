#pragma once
// What an actor of the executor uses around its firings: the Context its task sees, the arrays it
// brings to its place (fetch.cpp), and a migratable task's hand-over between places
// (handover.cpp).
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/device_copy.hpp"
#include "device/stream_timer.hpp"
#include "exec/run_state.hpp"
#include "weft/graph/task.hpp"

namespace weft::detail {

using State = RunHandle::State;
/// Arrays whose asynchronous copies are under way, kept alive until their events completed.
using PendingCopies = std::deque<std::pair<std::shared_ptr<Event>, Array>>;

class FiringContext final : public Context {
 public:
  FiringContext(State& run, Node& node) : run_(run), node_(node) {
    values_.resize(node.task->inputs().size());
    readies_.resize(node.task->inputs().size());
    outputs_.resize(node.task->outputs().size());
    if (node.place.is_gpu()) stream_ = acquire_task_stream(node.place.device);
  }
  ~FiringContext() override {
    if (stream_) release_task_stream(node_.place.device, stream_);
  }
  Array alloc(DType type, Shape shape) override {
    return node_.place.is_gpu() ? Array::device(type, shape, node_.place.device, stream_) : Array::host(type, shape);
  }
  void end_stream() override {
    if (!node_.task->inputs().empty())
      throw Error("task '" + node_.task->name() + "' called end_stream() but only sources may");
    ended_ = true;
  }
  std::uint64_t index() const override { return index_; }
  const Place& place() const override { return node_.place; }
  void* stream() const override { return stream_; }
  const Task& task() const override { return *node_.task; }
  bool cancelled() const override { return run_.cancelled.load(); }

  void begin(std::uint64_t index) {
    index_ = index;
    for (auto& o : outputs_) o.reset();
  }
  [[nodiscard]] bool ended() const { return ended_; }
  std::vector<Value>& values() { return values_; }
  std::vector<std::shared_ptr<Event>>& readies() { return readies_; }
  std::vector<std::optional<Value>>& outputs() { return outputs_; }

 protected:
  // A phase's span lies on the task's lane; on a GPU, its stream's work between the two calls
  // also on the task's GPU lane.
  int begin_phase(std::string name) override {
    if (!run_.trace.enabled()) return -1;
    OpenPhase& p = phases_.emplace_back();
    p.name = std::move(name);
    p.start_us = run_.trace.now_us();
    if (stream_) gpu_interval_start(p.interval, node_.place.device, stream_);
    return static_cast<int>(phases_.size()) - 1;
  }
  void end_phase(int id) override {
    if (id < 0 || id >= static_cast<int>(phases_.size()) || phases_[static_cast<std::size_t>(id)].ended) return;
    OpenPhase& p = phases_[static_cast<std::size_t>(id)];
    p.ended = true;
    run_.trace.add({p.name, "phase", node_.lane, index_, p.start_us, run_.trace.now_us() - p.start_us});
    if (stream_) {
      gpu_interval_stop(p.interval, stream_);
      run_.trace.add_gpu({std::move(p.name), "phase", gpu_lane(node_.lane), index_, p.interval});
    }
    while (!phases_.empty() && phases_.back().ended) phases_.pop_back();  // ids of open phases stay
  }
  Value& input_value(int index) override { return values_.at(index); }
  void put_value(int index, Value value) override {
    if (index < 0 || index >= static_cast<int>(outputs_.size()))
      throw Error("task '" + node_.task->name() + "' put to an output it does not have");
    const PortSpec& spec = node_.task->outputs()[index];
    if (static_cast<int>(value.index()) != spec.kind)
      throw Error("task '" + node_.task->name() + "' put a " + value_kind_name(static_cast<int>(value.index())) +
                  " on output '" + spec.name + "' of type " + value_kind_name(spec.kind));
    if (outputs_[index]) throw Error("task '" + node_.task->name() + "' put twice on output '" + spec.name + "'");
    outputs_[index] = std::move(value);
  }

 private:
  State& run_;
  Node& node_;
  std::vector<Value> values_;
  std::vector<std::shared_ptr<Event>> readies_;  // forwarding tasks: events of the values taken
  std::vector<std::optional<Value>> outputs_;
  void* stream_ = nullptr;
  std::uint64_t index_ = 0;
  bool ended_ = false;
  struct OpenPhase {
    std::string name;
    double start_us = 0;
    GpuInterval interval;
    bool ended = false;
  };
  std::vector<OpenPhase> phases_;
};

/// Brings an array to the node's place. Copies to a GPU are asynchronous: the source stays
/// alive in `pending` until its copy event completed.
Array fetch_array(State& run, Node& node, void* stream, Array a, const std::shared_ptr<Event>& ready,
                  std::uint64_t token, PendingCopies& pending);
/// A GPU task's output for a task on a CPU of this rank: the copy to the host is queued at once,
/// behind the firing, so that the copy of token k+1 is under way while the consumer works on token k.
Token copy_for_host(State& run, Node& node, const Array& a, const std::shared_ptr<Event>& ready,
                    std::uint64_t token, PendingCopies& pending);

/// A migratable task's instance takes the task over: it waits for the state the previous place
/// handed over, starts and loads it. False if the run was cancelled first.
bool take_over(State& run, Node& node, FiringContext& ctx);
/// The end of this instance's epoch (after its last token, whose work is complete): save the
/// state, stop, hand the state to candidate `to` and pass the marker on to the merger.
bool hand_over(State& run, Node& node, FiringContext& ctx, std::uint64_t index, int to);

}  // namespace weft::detail
