// The thread of one task of a run (actor.hpp).
#include "exec/actor.hpp"

#include <chrono>
#include <string>

#include "cluster/liveness.hpp"
#include "data/buffer.hpp"
#include "trace/nvtx.hpp"
#include "transport/remote.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {

Actor::Actor(RunHandle::State& run, Node& node)
    : run_(run), node_(node), task_(*node.task), ctx_(run, node), gpu_(node.place.is_gpu()),
      forwards_(!node.task->moves_data()), serial_(!run.options.overlap) {}

void Actor::drive() noexcept {
  try {
    loop();
  } catch (...) {
    run_.fail(std::current_exception(), &node_);
  }
}

void Actor::loop() {
  if (gpu_) {
    bind_device(node_.place.device);
    home_ = device_streams(node_.place.device).compute;
  }
  if (node_.active) task_.start(ctx_);
  if (gpu_ && run_.options.balance != "off") timer_.emplace(node_.place.device);
  for (std::uint64_t firing = 0;; ++firing) {
    std::uint64_t index = firing;  // sources number their tokens; others take their inputs'
    ctx_.begin(index);
    const Inputs inputs = pop_inputs(firing, index);
    if (inputs == Inputs::cancelled) return;
    if (inputs == Inputs::moved) continue;  // handed over at a marker: the next epoch, if any
    if (inputs == Inputs::ended) break;
    SerialLock one_at_a_time(serial_);  // overlap off: this rank does only this firing
    for (auto& [p, t] : deferred_)
      ctx_.values()[p] = fetch_array(run_, node_, ctx_.stream(), std::move(std::get<Array>(t.value)), t.ready, t.index,
                                     pending_);
    deferred_.clear();
    fire(index);
    if (ctx_.ended()) break;
    const std::shared_ptr<Event> ready = settle();
    one_at_a_time.release();
    bound_queued_firings(ready);
    if (!push_outputs(index, ready)) return;
    if (!pending_.empty()) retire(false);
  }
  finish();
}

Actor::Inputs Actor::pop_inputs(std::uint64_t firing, std::uint64_t& index) {
  if (node_.inputs.empty()) return run_.cancelled ? Inputs::cancelled : Inputs::ready;
  bool end = false;
  std::vector<bool> ended(node_.inputs.size(), false);
  std::vector<int> ports = task_.inputs_for_firing(firing);
  const bool routed = !ports.empty();  // inputs_after may add ports once the first is read
  if (ports.empty())
    for (std::size_t p = 0; p < node_.inputs.size(); ++p) ports.push_back(static_cast<int>(p));
  bool first = true;
  used_device_arrays_ = false;
  deferred_.clear();
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const int p = ports[i];
    Token t;
    if (!node_.inputs[p]->pop(t)) return Inputs::cancelled;
    if (node_.migration && !node_.active && (!t.end || t.index == 1) && !take_over(run_, node_, ctx_))
      return Inputs::cancelled;
    if (t.marker > 0) return move_away(std::move(t), ports, p);
    if (t.end) {
      end = ended[p] = true;
      continue;
    }
    if (t.copied) {  // copied to the host by its producer, for this task
      node_.stats.bytes_in += t.copied;
      node_.bytes_in += t.copied;
    }
    if (first) {
      index = t.index;
      ctx_.begin(index);
      first = false;
    } else if (t.index != index) {
      throw Error("internal: token " + std::to_string(t.index) + " arrived with token " + std::to_string(index) +
                  " on input '" + task_.inputs()[p].name + "'");
    }
    auto* a = std::get_if<Array>(&t.value);
    if (a && forwards_) {
      ctx_.values()[p] = std::move(t.value);
      ctx_.readies()[p] = std::move(t.ready);
    } else if (a && serial_) {  // fetched by the loop, once this rank does nothing else
      deferred_.push_back({p, std::move(t)});
      used_device_arrays_ = gpu_;
    } else if (a) {
      ctx_.values()[p] = fetch_array(run_, node_, ctx_.stream(), std::move(*a), t.ready, t.index, pending_);
      used_device_arrays_ = gpu_;
    } else {
      ctx_.values()[p] = std::move(t.value);
    }
    if (routed && i == 0)
      for (int q : task_.inputs_after(ctx_.values()[p])) {
        if (q < 0 || q >= static_cast<int>(node_.inputs.size()) || q == p)
          throw Error("task '" + task_.name() + "' asked for input " + std::to_string(q) + " after input " +
                      std::to_string(p) + " (it has " + std::to_string(node_.inputs.size()) + ")");
        ports.push_back(q);
      }
  }
  if (!end) return Inputs::ready;
  // Every input ends after the same token in a well-formed graph; drain the others.
  for (std::size_t p = 0; p < node_.inputs.size(); ++p) {
    Token t;
    while (!ended[p] && node_.inputs[p]->pop(t) && !t.end) {
    }
  }
  return Inputs::ended;
}

Actor::Inputs Actor::move_away(Token t, const std::vector<int>& ports, int p) {
  for (int q : ports)  // the router moved the task: every input carries the marker
    if (q != p && !node_.inputs[q]->pop(t)) return Inputs::cancelled;
  if (gpu_) synchronize_stream(node_.place.device, ctx_.stream());
  if (timer_) collect_gpu_time();  // every firing done here is counted before the task leaves
  retire(true);
  outstanding_.clear();
  return hand_over(run_, node_, ctx_, t.index, t.marker - 1) ? Inputs::moved : Inputs::cancelled;
}

void Actor::fire(std::uint64_t index) {
  if (used_device_arrays_)  // keep the inputs until the home stream waits for this firing
    for (auto& v : ctx_.values())
      if (auto* a = std::get_if<Array>(&v)) held_.push_back(*a);
  const double t0 = run_.trace.enabled() ? run_.trace.now_us() : 0;
  const auto c0 = std::chrono::steady_clock::now();
  {
    const Firing firing;  // counted by the liveness watch (cluster/liveness.hpp)
    const NvtxRange range(task_.name().c_str());
    if (gpu_) {
      if (timer_) timer_->start(ctx_.stream());
      GpuInterval interval;
      if (run_.trace.enabled()) gpu_interval_start(interval, node_.place.device, ctx_.stream());
      task_.run_cuda(ctx_);
      if (run_.trace.enabled()) {
        gpu_interval_stop(interval, ctx_.stream());
        run_.trace.name_lane(gpu_lane(node_.lane),
                             task_.name() + " (on gpu:" + std::to_string(node_.place.device) + ")");
        run_.trace.add_gpu({task_.name(), "gpu", gpu_lane(node_.lane), index, interval});
      }
      if (timer_) {
        timer_->stop(ctx_.stream());
        collect_gpu_time();
      }
    } else {
      task_.run(ctx_);
    }
  }
  const auto c1 = std::chrono::steady_clock::now();
  node_.stats.busy_seconds += std::chrono::duration<double>(c1 - c0).count();
  if (node_.stats.first_start < 0) node_.stats.first_start = std::chrono::duration<double>(c0 - run_.start).count();
  node_.stats.last_end = std::chrono::duration<double>(c1 - run_.start).count();
  node_.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(c1 - c0).count();
  if (run_.trace.enabled()) run_.trace.add({task_.name(), "task", node_.lane, index, t0, run_.trace.now_us() - t0});
}

std::shared_ptr<Event> Actor::settle() {
  ++node_.stats.tokens;
  ++node_.done;
  std::shared_ptr<Event> ready;
  for (std::size_t p = 0; p < node_.outputs.size(); ++p) {
    auto& v = ctx_.outputs()[p];
    if (!v) {
      if (task_.routes()) continue;
      throw Error("task '" + task_.name() + "' did not put a value on output '" + task_.outputs()[p].name + "'");
    }
    if (const auto* a = std::get_if<Array>(&*v); a && !a->empty() && !a->memory().is_host() && !ready && gpu_)
      ready = Event::record(node_.place.device, ctx_.stream());
  }
  if (used_device_arrays_) {
    // Inputs are freed (on the home stream) once this firing's work on them is done.
    auto done = ready ? ready : Event::record(node_.place.device, ctx_.stream());
    done->make_wait(home_);
  }
  for (auto& v : ctx_.values()) v = Value{};
  held_.clear();
  if (gpu_ && serial_) synchronize_stream(node_.place.device, ctx_.stream());
  return ready;
}

void Actor::bound_queued_firings(const std::shared_ptr<Event>& ready) {
  if (!ready) return;
  // Device memory in flight stays bounded however fast the host side runs.
  outstanding_.push_back(ready);
  if (outstanding_.size() > static_cast<std::size_t>(run_.options.channel_capacity)) {
    outstanding_.front()->synchronize();
    outstanding_.pop_front();
  }
}

bool Actor::push_outputs(std::uint64_t index, const std::shared_ptr<Event>& ready) {
  if (task_.renumbers()) {  // the tokens this firing sends take the next number
    bool sends = false;
    for (const auto& v : ctx_.outputs()) sends = sends || v.has_value();
    if (sends) index = renumbered_++;
  }
  for (std::size_t p = 0; p < node_.outputs.size(); ++p) {
    if (!ctx_.outputs()[p]) continue;
    // A forwarding task passes on the event that came with the value.
    std::shared_ptr<Event> event = ready;
    if (forwards_)
      for (std::size_t i = 0; i < ctx_.readies().size() && !event; ++i) event = ctx_.readies()[i];
    if (const auto* a = std::get_if<Array>(&*ctx_.outputs()[p]); a && !a->memory().is_host()) release_on_home(*a);
    auto& consumers = node_.outputs[p];
    std::optional<Token> on_host;  // one copy for this output's consumers on CPUs of this rank
    for (std::size_t c = 0; c < consumers.size(); ++c) {
      const auto* a = std::get_if<Array>(&*ctx_.outputs()[p]);
      if (node_.to_host[p][c] && a && !a->empty() && !a->memory().is_host()) {
        if (!on_host) on_host = copy_for_host(run_, node_, *a, event, index, pending_);
        if (!consumers[c]->push(*on_host)) return false;
        continue;
      }
      Token t{index, false, c + 1 == consumers.size() ? std::move(*ctx_.outputs()[p]) : *ctx_.outputs()[p], event};
      if (!consumers[c]->push(std::move(t))) return false;
    }
  }
  if (forwards_)
    for (auto& r : ctx_.readies()) r.reset();
  return true;
}

// The balancer divides GPU time by the firings it covers: both counted when the GPU is done.
void Actor::collect_gpu_time() {
  std::uint64_t completed = 0;
  node_.gpu_ns += static_cast<std::int64_t>(timer_->collect(completed) * 1e9);
  node_.gpu_done += completed;
}

void Actor::retire(bool all) {
  while (!pending_.empty() && (all || pending_.front().first->done())) {
    if (all) pending_.front().first->synchronize();
    pending_.pop_front();
  }
}

void Actor::finish() {
  if (gpu_) synchronize_stream(node_.place.device, ctx_.stream());
  retire(true);
  if (node_.active) task_.stop(ctx_);
  if (gpu_) synchronize_stream(node_.place.device, ctx_.stream());
  for (auto& consumers : node_.outputs)
    for (auto* c : consumers) c->push(Token{0, true, {}, {}});
}

}  // namespace weft::detail
