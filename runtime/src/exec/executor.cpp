// The streaming executor. Every task mapped to this rank is an actor driven by its own thread:
// it pops one token from each input channel, brings arrays to its place (host or GPU, copies on
// the copy streams), fires, and pushes one token on each output channel. Channels are bounded,
// so a fast producer is held back, several tokens are in flight at once, and nothing waits on a
// global barrier. A task thread may block in I/O or in a synchronous copy without stalling
// others; GPU tasks only enqueue on their own stream and pass on an event. Memory is freed on the
// device's compute stream, which waits for a task's stream after each firing that used arrays.
#include "weft/exec/executor.hpp"

#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <optional>
#include <thread>

#include "data/buffer.hpp"
#include "exec/balancer.hpp"
#include "exec/channel.hpp"
#include "exec/control_file.hpp"
#include "exec/device.hpp"
#include "exec/halo.hpp"
#include "exec/liveness.hpp"
#include "exec/migration.hpp"
#include "exec/remote.hpp"
#include "exec/state_transfer.hpp"
#include "exec/stream_timer.hpp"
#include "transport/tags.hpp"
#include "exec/transports.hpp"
#include "transport/nccl.hpp"
#include "trace/trace.hpp"
#include "weft/exec/control.hpp"
#include "weft/exec/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/output.hpp"
#include "weft/util/settings.hpp"

namespace weft {

using detail::Channel;
using detail::Event;
using detail::Token;

namespace {

struct Node {
  Task* task = nullptr;
  Place place;
  int lane = 0;
  std::vector<Channel*> inputs;                // one per input port
  std::vector<std::vector<Channel*>> outputs;  // per output port, one per consumer
  // Per output port and consumer: a task on a CPU of this rank that reads the arrays (overlap on:
  // this GPU task issues the copy to the host with its firing instead of the consumer after it).
  std::vector<std::vector<bool>> to_host;
  TaskStats stats;
  // Migratable tasks (exec/migration.hpp): the role of this actor, its task's run-time migration
  // state, and for an instance its candidate index and whether the task runs here now.
  detail::Vertex::Role role = detail::Vertex::plain;
  detail::Migration* migration = nullptr;
  int instance = -1;
  bool active = true;
  // Counters the load balancer reads while the run goes on (the stats above are the task's own).
  int vertex = 0;
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::int64_t> busy_ns{0};  // in run()/run_cuda() (host side)
  std::atomic<std::int64_t> gpu_ns{0};   // GPU time of its firings (GPU tasks)
  std::atomic<std::uint64_t> gpu_done{0};  // firings whose GPU time is in gpu_ns (GPU tasks)
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> state_bytes{0};
};


}  // namespace

struct RunHandle::State {
  ExecutorOptions options;
  Graph* graph = nullptr;
  Mapping mapping;
  int rank = 0;
  std::vector<std::unique_ptr<Channel>> channels;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::thread> threads;
  std::unique_ptr<detail::RemoteLinks> remote;
  std::unique_ptr<detail::HaloLinks> halos;  // partitions' halo exchanges (after `remote`: it uses it)
  std::unique_ptr<detail::Migrations> migrations;
  std::vector<Place> final_places;  // per migratable task, known on every rank after wait()
  std::vector<std::thread> helpers;  // control-file watcher, load balancer
  std::atomic<bool> finished{false};
  detail::RunPlan plan;
  std::mutex balance_mutex;
  std::map<int, detail::RankReport> reports;  // rank 0: the latest report of every other rank
  std::vector<BalanceDecision> decisions;      // rank 0
  detail::TraceRecorder trace;
  std::chrono::steady_clock::time_point start;
  double seconds = 0;
  bool waited = false;

  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> cancelled{false};
  int nccl_edges = 0;
  int peer_edges = 0;

  void fail(std::exception_ptr e, const Node* node) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) {
        if (node) {
          try {
            std::rethrow_exception(e);
          } catch (Error& err) {
            if (err.task().empty()) err.set_context(node->task->name(), node->place.str());
            e = std::current_exception();
          } catch (...) {
          }
        }
        error = e;
        if (remote) remote->abort(encode_failure(error));
      }
    }
    cancel();
  }
  void deliver_report(std::vector<std::byte> bytes) {
    if (bytes.size() < sizeof(std::int32_t)) return;
    std::int32_t from = 0;
    std::memcpy(&from, bytes.data(), sizeof from);
    bytes.erase(bytes.begin(), bytes.begin() + sizeof from);
    auto report = detail::RankReport::decode(bytes);
    std::lock_guard lock(balance_mutex);
    reports[from] = std::move(report);
  }
  void cancel() {
    cancelled = true;
    for (auto& c : channels) c->cancel();
    if (migrations) migrations->cancel();
    if (remote) remote->cancel();
    if (halos) halos->cancel();
  }
};

namespace {

using State = RunHandle::State;

class FiringContext final : public Context {
 public:
  FiringContext(State& run, Node& node) : run_(run), node_(node) {
    values_.resize(node.task->inputs().size());
    readies_.resize(node.task->inputs().size());
    outputs_.resize(node.task->outputs().size());
    if (node.place.is_gpu()) stream_ = detail::acquire_task_stream(node.place.device);
  }
  ~FiringContext() override {
    if (stream_) detail::release_task_stream(node_.place.device, stream_);
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
    if (stream_) detail::gpu_interval_start(p.interval, node_.place.device, stream_);
    return static_cast<int>(phases_.size()) - 1;
  }
  void end_phase(int id) override {
    if (id < 0 || id >= static_cast<int>(phases_.size()) || phases_[static_cast<std::size_t>(id)].ended) return;
    OpenPhase& p = phases_[static_cast<std::size_t>(id)];
    p.ended = true;
    run_.trace.add({p.name, "phase", node_.lane, index_, p.start_us, run_.trace.now_us() - p.start_us});
    if (stream_) {
      detail::gpu_interval_stop(p.interval, stream_);
      run_.trace.add_gpu({std::move(p.name), "phase", detail::gpu_lane(node_.lane), index_, p.interval});
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
    detail::GpuInterval interval;
    bool ended = false;
  };
  std::vector<OpenPhase> phases_;
};

// Brings an array to the node's place. Copies to a GPU are asynchronous: the source stays
// alive in `pending` until its copy event completed.
Array fetch_array(State& run, Node& node, void* stream, Array a, const std::shared_ptr<Event>& ready, std::uint64_t token,
                  std::deque<std::pair<std::shared_ptr<Event>, Array>>& pending) {
  Memory m = a.memory();
  const Place& p = node.place;
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  Array out;
  std::shared_ptr<Event> done;
  detail::GpuInterval interval;
  detail::GpuInterval* timing = run.trace.enabled() ? &interval : nullptr;
  if (!p.is_gpu()) {
    if (m.is_host()) {
      if (ready) ready->synchronize();  // a copy the producer queued, or its work on a pinned array
      return a;
    }
    out = detail::copy_to_host(a, ready.get(), timing);
  } else if (m.is_host()) {
    out = detail::copy_to_device(a, p.device, stream, done, timing);
  } else if (m.device_index != p.device) {
    out = detail::copy_between_devices(a, p.device, stream, ready.get(), done, timing);
  } else {
    // Same GPU: produced on another task's stream, or received by NCCL on its own stream.
    if (ready) ready->make_wait(stream);
    detail::release_on_home(a);
    return a;
  }
  if (!out.memory().is_host()) detail::release_on_home(out);
  node.stats.bytes_in += a.bytes();
  node.bytes_in += a.bytes();
  if (done) {
    if (!run.options.overlap) done->synchronize();
    pending.emplace_back(std::move(done), std::move(a));
  }
  if (run.trace.enabled()) {
    run.trace.add({"copy to " + p.str(), "copy", node.lane, token, t0, run.trace.now_us() - t0});
    if (interval.alloc_us > 0) {  // the host side of a copy to a GPU, when it takes long
      run.trace.add({"allocate on " + p.str(), "copy", node.lane, token, t0, interval.alloc_us});
      run.trace.add({"cudaMemcpyAsync", "copy", node.lane, token, t0 + interval.alloc_us, interval.call_us});
    }
    const int device = p.is_gpu() ? p.device : m.device_index;
    run.trace.name_lane(detail::gpu_lane(node.lane), node.task->name() + " (on gpu:" + std::to_string(device) + ")");
    run.trace.add_gpu({"copy to " + p.str(), "copy", detail::gpu_lane(node.lane), token, interval});
  }
  return out;
}

// A GPU task's output for a task on a CPU of this rank: the copy to the host is queued at once,
// behind the firing, so that the copy of token k+1 is under way while the consumer works on token k.
Token copy_for_host(State& run, Node& node, const Array& a, const std::shared_ptr<Event>& ready, std::uint64_t token,
                    std::deque<std::pair<std::shared_ptr<Event>, Array>>& pending) {
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  detail::GpuInterval interval;
  std::shared_ptr<Event> done;
  Array host = detail::copy_to_host_async(a, ready.get(), done, run.trace.enabled() ? &interval : nullptr);
  pending.emplace_back(done, a);  // the device array lives until its copy completed
  if (run.trace.enabled()) {
    run.trace.add({"copy to host", "copy", node.lane, token, t0, run.trace.now_us() - t0});
    run.trace.add_gpu({"copy to host", "copy", detail::gpu_lane(node.lane), token, interval});
  }
  Token t{token, false, std::move(host), std::move(done)};
  t.copied = a.bytes();
  return t;
}

// A migratable task's instance takes the task over: it waits for the state the previous place
// handed over, starts and loads it. False if the run was cancelled first.
bool take_over(State& run, Node& node, FiringContext& ctx) {
  const auto waited = std::chrono::steady_clock::now();
  detail::Handover state;
  if (!node.migration->handover(node.instance).take(state)) return false;
  const auto arrived = std::chrono::steady_clock::now();
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  std::vector<Array> arrays;
  if (state.wire) {  // from another rank: the arrays' data follows the message
    std::vector<std::byte> bytes;
    std::vector<detail::StateArrayInfo> infos;
    int from = 0;
    detail::decode_handover(state.bytes, bytes, infos, from);
    state.bytes = std::move(bytes);
    if (!infos.empty() && !detail::receive_state_arrays(*run.remote, infos, from,
                                                        detail::state_channel(node.migration->id()), node.place, arrays))
      return false;
  } else {
    arrays = detail::move_state_arrays(std::move(state.arrays), node.place);
  }
  const auto copied = std::chrono::steady_clock::now();
  node.task->start(ctx);
  if (node.task->stateful()) {
    node.task->load(state.bytes);
    node.task->load_arrays(std::move(arrays));
  }
  node.active = true;
  logger("migration")->debug("{}: took over on {}: state waited for {:.2f} ms, its arrays in {:.2f} ms, started and "
                             "loaded in {:.2f} ms", node.task->name(), node.place.str(),
                             detail::ms_between(waited, arrived), detail::ms_between(arrived, copied),
                             detail::ms_between(copied, std::chrono::steady_clock::now()));
  if (run.trace.enabled()) run.trace.add({"take over", "migration", node.lane, 0, t0, run.trace.now_us() - t0});
  return true;
}

// The end of this instance's epoch (after its last token, whose work is complete): save the
// state, stop, hand the state to candidate `to` and pass the marker on to the merger.
bool hand_over(State& run, Node& node, FiringContext& ctx, std::uint64_t index, int to) {
  const auto begun = std::chrono::steady_clock::now();
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  std::vector<std::byte> state;
  std::vector<Array> arrays;
  if (node.task->stateful()) {
    node.task->save(state);
    node.task->save_arrays(arrays);
  }
  node.task->stop(ctx);
  if (node.place.is_gpu()) detail::synchronize_stream(node.place.device, ctx.stream());
  std::size_t bytes = state.size();
  for (const Array& a : arrays) {
    bytes += a.bytes();
    if (!a.memory().is_host()) detail::release_on_home(a);  // the task's stream is not theirs any more
  }
  const Place& target = node.migration->places()[to];
  logger("migration")->debug("{}: {} hands over to {} before token {} ({} bytes of state, {} arrays)", node.task->name(),
                             node.place.str(), target.str(), index, bytes, arrays.size());
  node.state_bytes = bytes;
  const auto saved = std::chrono::steady_clock::now();
  if (target.rank != run.rank && run.remote) {
    // To a rank of this host, device arrays are offered through CUDA IPC (WEFT_STATE_IPC=0: never).
    std::optional<detail::StateExport> exports;
    const Environment* env = Environment::current();
    if (env && target.is_gpu() && settings().state_ipc &&
        env->cluster().ranks.at(target.rank).host == env->cluster().ranks.at(run.rank).host)
      exports.emplace(arrays);
    const auto exported = std::chrono::steady_clock::now();
    const detail::StateExport* offered = exports ? &*exports : nullptr;
    auto message = detail::encode_handover(state, arrays, run.rank, offered);
    run.migrations->hand_over(node.migration->id(), to, detail::Handover{std::move(message), {}, true});
    if (!arrays.empty() && !detail::send_state_arrays(*run.remote, arrays, target.rank,
                                                      detail::state_channel(node.migration->id()), offered))
      return false;
    logger("migration")->debug("{}: handed over to {}: saved and stopped in {:.2f} ms, exported in {:.2f} ms, sent "
                               "(or copied by the peer) in {:.2f} ms", node.task->name(), target.str(),
                               detail::ms_between(begun, saved), detail::ms_between(saved, exported),
                               detail::ms_between(exported, std::chrono::steady_clock::now()));
  } else {
    run.migrations->hand_over(node.migration->id(), to, detail::Handover{std::move(state), std::move(arrays), false});
  }
  node.active = false;
  for (auto& consumers : node.outputs)
    for (auto* c : consumers)
      if (!c->push(Token{index, false, {}, {}, to + 1})) return false;
  if (run.trace.enabled()) run.trace.add({"hand over", "migration", node.lane, index, t0, run.trace.now_us() - t0});
  return true;
}

void drive(State& run, Node& node) {
  Task& task = *node.task;
  FiringContext ctx(run, node);
  std::deque<std::pair<std::shared_ptr<Event>, Array>> pending;
  const bool gpu = node.place.is_gpu();
  auto retire = [&](bool all) {
    while (!pending.empty() && (all || pending.front().first->done())) {
      if (all) pending.front().first->synchronize();
      pending.pop_front();
    }
  };
  try {
    if (gpu) detail::bind_device(node.place.device);
    if (node.active) task.start(ctx);
    std::optional<detail::StreamTimer> timer;  // GPU time, for the load balancer only (two events per firing)
    if (gpu && run.options.balance != "off") timer.emplace(node.place.device);
    // The balancer divides GPU time by the firings it covers: both counted when the GPU is done.
    auto collect_gpu_time = [&] {
      std::uint64_t completed = 0;
      node.gpu_ns += static_cast<std::int64_t>(timer->collect(completed) * 1e9);
      node.gpu_done += completed;
    };
    const bool forwards = !task.moves_data();
    std::deque<std::shared_ptr<Event>> outstanding;  // completion of this task's queued firings
    bool used_device_arrays = false;  // this firing took arrays on its GPU: free them in order
    std::vector<Array> held;
    const bool serial = !run.options.overlap;
    std::vector<std::pair<int, Token>> deferred;  // overlap off: inputs fetched under the lock
    void* home = gpu ? detail::device_streams(node.place.device).compute : nullptr;
    std::uint64_t renumbered = 0;  // tokens sent so far by a task that renumbers()
    for (std::uint64_t firing = 0;; ++firing) {
      std::uint64_t index = firing;  // sources number their tokens; others take their inputs'
      ctx.begin(index);
      if (node.inputs.empty()) {
        if (run.cancelled) return;
      } else {
        bool end = false;
        std::vector<bool> ended(node.inputs.size(), false);
        std::vector<int> ports = task.inputs_for_firing(firing);
        const bool routed = !ports.empty();  // inputs_after may add ports once the first is read
        if (ports.empty())
          for (std::size_t p = 0; p < node.inputs.size(); ++p) ports.push_back(static_cast<int>(p));
        bool first = true;
        bool epoch_ended = false;
        used_device_arrays = false;
        deferred.clear();
        for (std::size_t i = 0; i < ports.size(); ++i) {
          const int p = ports[i];
          Token t;
          if (!node.inputs[p]->pop(t)) return;  // cancelled
          if (node.migration && !node.active && (!t.end || t.index == 1) && !take_over(run, node, ctx)) return;
          if (t.marker > 0) {  // the router moved the task: every input carries the marker
            for (int q : ports)
              if (q != p && !node.inputs[q]->pop(t)) return;
            if (gpu) detail::synchronize_stream(node.place.device, ctx.stream());
            if (timer) collect_gpu_time();  // every firing done here is counted before the task leaves
            retire(true);
            outstanding.clear();
            if (!hand_over(run, node, ctx, t.index, t.marker - 1)) return;
            epoch_ended = true;
            break;
          }
          if (t.end) {
            end = ended[p] = true;
            continue;
          }
          if (t.copied) {  // copied to the host by its producer, for this task
            node.stats.bytes_in += t.copied;
            node.bytes_in += t.copied;
          }
          if (first) {
            index = t.index;
            ctx.begin(index);
            first = false;
          } else if (t.index != index) {
            throw Error("internal: token " + std::to_string(t.index) + " arrived with token " + std::to_string(index) +
                        " on input '" + task.inputs()[p].name + "'");
          }
          auto* a = std::get_if<Array>(&t.value);
          if (a && forwards) {
            ctx.values()[p] = std::move(t.value);
            ctx.readies()[p] = std::move(t.ready);
          } else if (a && serial) {  // fetched below, once this rank does nothing else
            deferred.push_back({p, std::move(t)});
            used_device_arrays = gpu;
          } else if (a) {
            ctx.values()[p] = fetch_array(run, node, ctx.stream(), std::move(*a), t.ready, t.index, pending);
            used_device_arrays = gpu;
          } else {
            ctx.values()[p] = std::move(t.value);
          }
          if (routed && i == 0)
            for (int q : task.inputs_after(ctx.values()[p])) {
              if (q < 0 || q >= static_cast<int>(node.inputs.size()) || q == p)
                throw Error("task '" + task.name() + "' asked for input " + std::to_string(q) + " after input " +
                            std::to_string(p) + " (it has " + std::to_string(node.inputs.size()) + ")");
              ports.push_back(q);
            }
        }
        if (epoch_ended) continue;
        if (end) {
          // Every input ends after the same token in a well-formed graph; drain the others.
          for (std::size_t p = 0; p < node.inputs.size(); ++p) {
            Token t;
            while (!ended[p] && node.inputs[p]->pop(t) && !t.end) {
            }
          }
          break;
        }
      }
      detail::SerialLock one_at_a_time(serial);  // overlap off: this rank does only this firing
      for (auto& [p, t] : deferred)
        ctx.values()[p] = fetch_array(run, node, ctx.stream(), std::move(std::get<Array>(t.value)), t.ready, t.index, pending);
      deferred.clear();
      if (used_device_arrays)  // keep the inputs until the home stream waits for this firing
        for (auto& v : ctx.values())
          if (auto* a = std::get_if<Array>(&v)) held.push_back(*a);
      double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
      auto c0 = std::chrono::steady_clock::now();
      {
      const detail::Firing firing;  // counted by the liveness watch (exec/liveness.hpp)
      if (gpu) {
        if (timer) timer->start(ctx.stream());
        detail::GpuInterval interval;
        if (run.trace.enabled()) detail::gpu_interval_start(interval, node.place.device, ctx.stream());
        task.run_cuda(ctx);
        if (run.trace.enabled()) {
          detail::gpu_interval_stop(interval, ctx.stream());
          run.trace.name_lane(detail::gpu_lane(node.lane), node.task->name() + " (on gpu:" + std::to_string(node.place.device) + ")");
          run.trace.add_gpu({task.name(), "gpu", detail::gpu_lane(node.lane), index, interval});
        }
        if (timer) {
          timer->stop(ctx.stream());
          collect_gpu_time();
        }
      } else {
        task.run(ctx);
      }
      }
      auto c1 = std::chrono::steady_clock::now();
      node.stats.busy_seconds += std::chrono::duration<double>(c1 - c0).count();
      if (node.stats.first_start < 0) node.stats.first_start = std::chrono::duration<double>(c0 - run.start).count();
      node.stats.last_end = std::chrono::duration<double>(c1 - run.start).count();
      node.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(c1 - c0).count();
      if (run.trace.enabled()) run.trace.add({task.name(), "task", node.lane, index, t0, run.trace.now_us() - t0});
      if (ctx.ended()) break;
      ++node.stats.tokens;
      ++node.done;
      std::shared_ptr<Event> ready;
      for (std::size_t p = 0; p < node.outputs.size(); ++p) {
        auto& v = ctx.outputs()[p];
        if (!v) {
          if (task.routes()) continue;
          throw Error("task '" + task.name() + "' did not put a value on output '" + task.outputs()[p].name + "'");
        }
        if (const auto* a = std::get_if<Array>(&*v); a && !a->empty() && !a->memory().is_host() && !ready && gpu)
          ready = Event::record(node.place.device, ctx.stream());
      }
      if (used_device_arrays) {
        // Inputs are freed (on the home stream) once this firing's work on them is done.
        auto done = ready ? ready : Event::record(node.place.device, ctx.stream());
        done->make_wait(home);
      }
      for (auto& v : ctx.values()) v = Value{};
      held.clear();
      if (gpu && serial) detail::synchronize_stream(node.place.device, ctx.stream());
      one_at_a_time.release();
      if (ready) {
        // Back-pressure on the GPU too: a task keeps at most `channel_capacity` firings queued on
        // its stream, so device memory in flight stays bounded however fast the host side runs.
        outstanding.push_back(ready);
        if (outstanding.size() > static_cast<std::size_t>(run.options.channel_capacity)) {
          outstanding.front()->synchronize();
          outstanding.pop_front();
        }
      }
      if (task.renumbers()) {  // the tokens this firing sends take the next number
        bool sends = false;
        for (const auto& v : ctx.outputs()) sends = sends || v.has_value();
        if (sends) index = renumbered++;
      }
      for (std::size_t p = 0; p < node.outputs.size(); ++p) {
        if (!ctx.outputs()[p]) continue;
        // A forwarding task passes on the event that came with the value.
        std::shared_ptr<Event> event = ready;
        if (forwards)
          for (std::size_t i = 0; i < ctx.readies().size() && !event; ++i) event = ctx.readies()[i];
        if (const auto* a = std::get_if<Array>(&*ctx.outputs()[p]); a && !a->memory().is_host())
          detail::release_on_home(*a);
        auto& consumers = node.outputs[p];
        std::optional<Token> on_host;  // one copy for this output's consumers on CPUs of this rank
        for (std::size_t c = 0; c < consumers.size(); ++c) {
          const auto* a = std::get_if<Array>(&*ctx.outputs()[p]);
          if (node.to_host[p][c] && a && !a->empty() && !a->memory().is_host()) {
            if (!on_host) on_host = copy_for_host(run, node, *a, event, index, pending);
            if (!consumers[c]->push(*on_host)) return;
            continue;
          }
          Token t{index, false, c + 1 == consumers.size() ? std::move(*ctx.outputs()[p]) : *ctx.outputs()[p], event};
          if (!consumers[c]->push(std::move(t))) return;
        }
      }
      if (forwards)
        for (auto& r : ctx.readies()) r.reset();
      if (!pending.empty()) retire(false);
    }
    if (gpu) detail::synchronize_stream(node.place.device, ctx.stream());
    retire(true);
    if (node.active) task.stop(ctx);
    if (gpu) detail::synchronize_stream(node.place.device, ctx.stream());
    for (auto& consumers : node.outputs)
      for (auto* c : consumers) c->push(Token{0, true, {}, {}});
  } catch (...) {
    run.fail(std::current_exception(), &node);
  }
}

// Rank 0 follows the control file (`weft ctl` appends one command per line): "migrate TASK PLACE",
// "drain PLACE", "undrain PLACE". The run follows what is sent while it runs; a bad line is logged
// (escaped) and skipped, since a typo must not stop a running job.
void watch_control_file(State& run, std::shared_ptr<detail::ControlFile> file) {
  auto log = logger("migration");
  file->skip_to_end();
  while (!run.finished && !run.cancelled) {
    int dropped = 0;
    for (const std::string& line : file->new_lines(dropped)) {
      try {
        const auto command = detail::parse_control_command(line);
        if (!command) continue;
        if (command->verb == "migrate") run.migrations->migrate(command->task, command->place);
        else run.migrations->drain(command->place, command->verb == "drain");
        log->info("control file {}: {}", file->path(), escaped(line));
      } catch (const Error& e) {
        log->warn("control file {}: '{}' ignored: {}", file->path(), escaped(line), escaped(e.what()));
      }
    }
    if (dropped)
      log->warn("control file {}: {} line(s) longer than {} characters ignored", file->path(), dropped,
                kMaxControlCommand);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

detail::RankReport local_report(State& run) {
  detail::RankReport r;
  for (const auto& n : run.nodes) {
    if (n->role == detail::Vertex::router || n->role == detail::Vertex::merger) continue;
    // A GPU task's cost is the GPU time of its firings; its host side only enqueues. Its tokens are
    // the firings that GPU time covers (the host runs ahead of the GPU by a few firings).
    const bool gpu = n->place.is_gpu();
    double busy = static_cast<double>(gpu ? n->gpu_ns.load() : n->busy_ns.load()) * 1e-9;
    const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
    r.actors.push_back(
        {n->vertex, gpu ? n->gpu_done.load() : n->done.load(), busy, n->bytes_in.load(), n->state_bytes.load(), at});
  }
  for (const auto& g : run.migrations->groups())
    if (g->router_rank() == run.rank) r.current.emplace_back(g->id(), g->current());
  return r;
}

// Sleeps until `until` or the end of the run; false at the end.
bool sleep_until(State& run, std::chrono::steady_clock::time_point until) {
  while (!run.finished && !run.cancelled) {
    auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(10)));
  }
  return false;
}

// Every rank reports its counters each period; rank 0 decides (exec/balancer.hpp) and logs.
void run_balancer(State& run) {
  auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(run.options.balance_period));
  auto next = run.start + period;
  if (run.rank != 0) {
    while (sleep_until(run, next)) {
      next += period;
      auto bytes = local_report(run).encode();
      std::int32_t rank = run.rank;
      std::vector<std::byte> message(sizeof rank);
      std::memcpy(message.data(), &rank, sizeof rank);
      message.insert(message.end(), bytes.begin(), bytes.end());
      run.remote->post(0, detail::tags::kReportBox, std::move(message));
    }
    return;
  }
  auto log = logger("balance");
  detail::BalanceModel model(run.plan, run.options.balance, run.options.balance_threshold, run.options.balance_period);
  // A decision's measured gain: the moved task's tokens per second on its old place over the two
  // periods up to the decision, against those on its new place over kAfterPeriods periods from the
  // second after the move (the first holds the move's pause). Each rate is taken between two
  // samples of one rank, on that rank's clock: reports of other ranks arrive late and unevenly.
  constexpr int kAfterPeriods = 5;
  struct Pending {
    std::size_t decision;
    int vertex;  // the new instance
    double before;
    int skip = 2;  // periods still to wait before the window
    bool started = false, done = false;
    detail::ActorSample first;
  };
  std::vector<Pending> pending;
  std::map<int, std::deque<detail::ActorSample>> history;  // per vertex: its last distinct samples
  auto rate = [](const detail::ActorSample& a, const detail::ActorSample& b) {
    return b.at > a.at ? static_cast<double>(b.tokens - a.tokens) / (b.at - a.at) : 0.0;
  };
  try {
    while (sleep_until(run, next)) {
      next += period;
      detail::RankReport all = local_report(run);
      {
        std::lock_guard lock(run.balance_mutex);
        for (const auto& [rank, r] : run.reports) {
          all.actors.insert(all.actors.end(), r.actors.begin(), r.actors.end());
          all.current.insert(all.current.end(), r.current.begin(), r.current.end());
        }
      }
      std::map<int, int> current(all.current.begin(), all.current.end());
      std::map<int, const detail::ActorSample*> latest;
      for (const auto& a : all.actors) {
        latest[a.vertex] = &a;
        auto& h = history[a.vertex];
        if (h.empty() || a.at > h.back().at) h.push_back(a);
        if (h.size() > 3) h.pop_front();
      }
      double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
      auto moves = model.step(all.actors, current, now);
      if (log->should_log(spdlog::level::debug))
        log->debug("t={:.3f} s: {:.1f} tokens/s; {}", now, model.throughput(), model.view());
      std::lock_guard lock(run.balance_mutex);
      for (auto& p : pending) {
        if (p.skip > 0) {
          --p.skip;
          continue;
        }
        auto it = latest.find(p.vertex);
        if (it == latest.end()) continue;
        const detail::ActorSample& now_there = *it->second;
        if (!p.started) {
          p.first = now_there;
          p.started = true;
          continue;
        }
        if (now_there.at - p.first.at < kAfterPeriods * run.options.balance_period * 0.999) continue;
        const double after = rate(p.first, now_there);
        BalanceDecision& d = run.decisions[p.decision];
        d.measured_gain = p.before > 0 && after > 0 ? 1 - p.before / after : 0;
        log->info("{} {} -> {}: measured gain {:.1f} % (predicted {:.1f} %), {:.1f} -> {:.1f} tokens/s (over {:.3f} s)",
                  d.task, d.from.str(), d.to.str(), 100 * d.measured_gain, 100 * d.predicted_gain, p.before, after,
                  now_there.at - p.first.at);
        p.done = true;
      }
      std::erase_if(pending, [](const Pending& p) { return p.done; });
      for (const auto& m : moves) {
        const auto& g = run.plan.groups[m.group];
        int from = current.count(m.group) ? current[m.group] : g.initial;
        BalanceDecision d{now, g.task->name(), g.places[from], g.places[m.to], m.predicted_gain,
                          std::numeric_limits<double>::quiet_NaN(), m.reason};
        log->info("{} {} -> {}: predicted gain {:.1f} % ({})", d.task, d.from.str(), d.to.str(), 100 * d.predicted_gain,
                  d.reason);
        run.migrations->migrate(d.task, d.to);
        const auto& old_samples = history[g.instances[from]];  // one sample: since the start (counters at 0)
        const double before = old_samples.empty()       ? 0.0
                               : old_samples.size() == 1 ? rate(detail::ActorSample{}, old_samples.back())
                                                         : rate(old_samples.front(), old_samples.back());
        pending.push_back({run.decisions.size(), g.instances[m.to], before});
        run.decisions.push_back(std::move(d));
      }
    }
  } catch (...) {
    run.fail(std::current_exception(), nullptr);
  }
}

}  // namespace

Executor::Executor(ExecutorOptions options) : options_(std::move(options)) {
  if (options_.channel_capacity < 1)
    throw ConfigError("channel capacity must be at least 1, got " + std::to_string(options_.channel_capacity));
}
Executor::~Executor() = default;

RunHandle Executor::run(Graph& graph, const Mapping& mapping) {
  graph.validate();
  auto state = std::make_shared<State>();
  State& run = *state;
  run.options = options_;
  run.graph = &graph;
  run.mapping = mapping;
  const Environment* env = Environment::current();
  run.rank = env ? env->rank() : 0;
  if (run.options.trace_file.empty())  // WEFT_TRACE=FILE traces every run of a program
    if (const std::string& t = settings().trace_file; !t.empty()) {
      static std::atomic<int> runs{0};
      run.options.trace_file = t;  // a '%' in the name becomes the run's number
      if (auto pct = run.options.trace_file.find('%'); pct != std::string::npos)
        run.options.trace_file.replace(pct, 1, std::to_string(runs++));
    }
  if (!run.options.trace_file.empty()) run.trace.enable();

  Cluster single;
  if (!env) single.ranks.push_back(local_devices(0));
  const Cluster& cluster = env ? env->cluster() : single;
  run.plan = detail::plan_run(graph, mapping, run.options.migratable, cluster);
  const detail::RunPlan& plan = run.plan;
  if (run.options.balance != "off" && run.options.balance != "greedy" && run.options.balance != "refine")
    throw ConfigError("balance: expected off, greedy or refine, got '" + run.options.balance + "'");
  if (run.options.balance_period <= 0)
    throw ConfigError("balance period: must be positive, got " + std::to_string(run.options.balance_period));

  // Links between GPUs of different ranks go through NCCL or CUDA IPC where they can carry them;
  // every rank makes the same choice from the same graph, mapping and cluster.
  const bool distributed = env && env->distributed() && env->size() > 1;
  std::vector<detail::EdgeTransport> transports;  // per link, the same on every rank
  if (distributed) {
    detail::LinkTransports chosen = detail::plan_transports(plan, env->cluster());
    run.nccl_edges = chosen.nccl_edges;
    run.peer_edges = chosen.peer_edges;
    if (chosen.nccl_edges > 0)
      detail::nccl_init(detail::RemoteLinks::communicator(), chosen.device_of_rank[run.rank]);
    transports = std::move(chosen.links);
  }
  if (distributed) run.remote = std::make_unique<detail::RemoteLinks>(run.rank, options_);  // also error notices, trace
  if (run.remote) run.remote->set_trace(&run.trace);
  detail::Migrations::Post post;
  if (distributed && !plan.groups.empty()) {
    detail::RemoteLinks* remote = run.remote.get();
    post = [remote](int to, int box, std::vector<std::byte> bytes) { remote->post(to, box, std::move(bytes)); };
    State* raw = state.get();  // the links belong to the state: no cycle through a shared_ptr
    remote->enable_messages([raw](int box, std::vector<std::byte> bytes) {
      if (box == detail::tags::kReportBox) return raw->deliver_report(std::move(bytes));
      raw->migrations->deliver(box, std::move(bytes));
    });
  }
  run.migrations = std::make_unique<detail::Migrations>(plan, run.rank, std::move(post));

  std::vector<Node*> local(plan.vertices.size(), nullptr);
  for (std::size_t v = 0; v < plan.vertices.size(); ++v) {
    const detail::Vertex& vx = plan.vertices[v];
    if (vx.place.rank != run.rank) continue;
    auto node = std::make_unique<Node>();
    node->task = vx.task;
    node->place = vx.place;
    node->lane = static_cast<int>(run.nodes.size());
    node->role = vx.role;
    node->vertex = static_cast<int>(v);
    std::size_t candidates = 1;
    if (vx.group >= 0) {
      node->migration = &run.migrations->group(vx.group);
      node->instance = vx.candidate;
      node->active = vx.role != detail::Vertex::instance || vx.candidate == plan.groups[vx.group].initial;
      candidates = plan.groups[vx.group].places.size();
    }
    std::size_t nin = vx.task->inputs().size(), nout = vx.task->outputs().size();
    node->inputs.resize(vx.role == detail::Vertex::merger ? nout * candidates : nin, nullptr);
    node->outputs.resize(vx.role == detail::Vertex::router ? nin * candidates : nout);
    node->to_host.resize(node->outputs.size());
    node->stats.task = vx.task->name();
    node->stats.place = vx.place;
    local[v] = node.get();
    run.nodes.push_back(std::move(node));
  }
  for (std::size_t id = 0; id < plan.links.size(); ++id) {
    const detail::Link& l = plan.links[id];
    Node* from = local[l.from];
    Node* to = local[l.to];
    if (!from && !to) continue;
    run.channels.push_back(std::make_unique<Channel>(options_.channel_capacity));
    Channel* ch = run.channels.back().get();
    if (from) {
      from->outputs[l.from_port].push_back(ch);
      from->to_host[l.from_port].push_back(options_.overlap && to && from->place.is_gpu() &&
                                           from->role == detail::Vertex::plain && to->role == detail::Vertex::plain &&
                                           !to->place.is_gpu() && to->task->moves_data());
    }
    if (to) to->inputs[l.to_port] = ch;
    if (to && to->role == detail::Vertex::plain)
      if (auto arrivals = to->task->input_arrivals())
        ch->on_push([arrivals, port = l.to_port] { arrivals->arrived(port); });
    if (!from || !to) {
      int other = plan.vertices[from ? l.to : l.from].place.rank;
      if (from) run.remote->add_sender(static_cast<int>(id), ch, other, transports[id]);
      else run.remote->add_receiver(static_cast<int>(id), ch, other, transports[id]);
    }
  }
  if (!graph.partitions().empty())  // slab tasks are plain vertices (never migratable)
    run.halos = std::make_unique<detail::HaloLinks>(graph, mapping, run.rank, run.remote.get(), run.options, run.trace,
                                                    [&](const Task& t) {
                                                      for (std::size_t v = 0; v < plan.vertices.size(); ++v)
                                                        if (local[v] && plan.vertices[v].task == &t &&
                                                            plan.vertices[v].role == detail::Vertex::plain)
                                                          return local[v]->lane;
                                                      throw Error("partition: slab task '" + t.name() +
                                                                  "' has no actor on this rank");
                                                    });
  for (std::size_t v = 0; v < plan.vertices.size(); ++v)
    if (local[v]) run.trace.name_lane(local[v]->lane, plan.vertices[v].name + " @ " + local[v]->place.str());
  {
    std::set<int> devices;  // this rank's GPUs in the run, those of migration candidates included
    for (auto& n : run.nodes)
      if (n->place.is_gpu()) devices.insert(n->place.device);
    for (int d : devices) detail::warm_device(d);
  }
  run.start = std::chrono::steady_clock::now();
  detail::active_runs().fetch_add(1);  // until wait(): the liveness watch knows a run is on
  if (run.remote) run.remote->start([state](std::exception_ptr e) { state->fail(e, nullptr); });
  for (auto& n : run.nodes) {
    Node* node = n.get();
    run.threads.emplace_back([state, node] {
      State& run = *state;
      if (node->role == detail::Vertex::plain || node->role == detail::Vertex::instance) return drive(run, *node);
      try {
        if (node->role == detail::Vertex::router) {
          std::vector<Channel*> outputs;
          for (auto& o : node->outputs) outputs.push_back(o.at(0));
          detail::route_tokens(*node->migration, node->inputs, outputs);
        } else {
          detail::merge_tokens(*node->migration, node->inputs, node->outputs);
        }
      } catch (...) {
        run.fail(std::current_exception(), node);
      }
    });
  }
  if (run.rank == 0) {
    for (const Place& p : run.options.drain) run.migrations->drain(p);
    if (!run.options.control_file.empty() && !run.migrations->empty())
      run.helpers.emplace_back([state, file = detail::ControlFile::open(run.options.control_file)] {
        watch_control_file(*state, file);
      });
  }
  if (run.options.balance != "off" && !run.migrations->empty())
    run.helpers.emplace_back([state] { run_balancer(*state); });
  RunHandle handle;
  handle.state_ = state;
  return handle;
}

RunHandle::RunHandle() = default;
RunHandle::~RunHandle() {
  if (state_ && !state_->waited) {
    try {
      cancel();
      wait();
    } catch (...) {
    }
  }
}
RunHandle::RunHandle(RunHandle&&) noexcept = default;
RunHandle& RunHandle::operator=(RunHandle&&) noexcept = default;

void RunHandle::wait() {
  if (!state_) return;
  State& run = *state_;
  if (!run.waited) {
    for (auto& t : run.threads) t.join();
    // The run counts as on (for the liveness watch) until its end-of-run agreement and trace are
    // done: ranks that wait in it for a rank that still waits for tokens are stalled, not idle.
    const struct Ended {
      ~Ended() { detail::active_runs().fetch_sub(1); }
    } ended;
    run.finished = true;
    for (auto& t : run.helpers) t.join();
    // Where each migratable task ended: its router's rank knows, every rank learns it below.
    std::vector<int> last;
    for (const auto& g : run.migrations->groups()) last.push_back(g->router_rank() == run.rank ? g->current() : -1);
    if (run.remote) {
      run.remote->finish();
      // Every rank ends the run knowing whether any rank failed (ranks without work too).
      const std::string first = run.remote->agree(run.error ? encode_failure(run.error) : std::string());
      if (!first.empty() && !run.error) {
        const DecodedFailure failure = decode_failure(first);
        run.error = std::make_exception_ptr(RemoteError(failure.message, failure.exit_code));
      }
      if (first.empty()) run.remote->max_all(last);  // collective: every rank agreed there was no error
    }
    for (std::size_t i = 0; i < last.size(); ++i) {
      const auto& g = *run.migrations->groups()[i];
      run.final_places.push_back(g.places()[last[i] < 0 ? g.initial() : last[i]]);
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
    run.waited = true;
    if (run.options.trim_pools) detail::trim_device_pools();
    if (!run.options.trace_file.empty()) {
      std::string local = run.trace.events_json(run.rank, 0);
      std::string all = run.remote ? run.remote->gather_trace(local, run.trace) : local;
      if (run.rank == 0) {
        OutputStage stage(run.options.trace_file, OutputKind::file, "--trace");
        {
          std::ofstream f(stage.path());
          f << "{\"traceEvents\":[\n" << all << "\n],\"displayTimeUnit\":\"ms\"}\n";
          if (!f.flush()) throw IoError("--trace " + run.options.trace_file + ": cannot write the trace");
        }
        stage.commit();
      }
    }
  }
  if (run.error) std::rethrow_exception(run.error);
}

RunStats RunHandle::stats() const {
  RunStats s;
  if (!state_) return s;
  s.seconds = state_->seconds;
  s.nccl_edges = state_->nccl_edges;
  s.peer_edges = state_->peer_edges;
  for (const auto& g : state_->migrations->groups())
    if (g->router_rank() == state_->rank) s.migrations += g->moves();
  {
    std::lock_guard lock(state_->balance_mutex);
    s.balance = state_->decisions;
  }
  for (const auto& n : state_->nodes) {
    if (n->role == detail::Vertex::router || n->role == detail::Vertex::merger) continue;
    if (n->role == detail::Vertex::instance && n->stats.tokens == 0 && n->instance != n->migration->initial()) continue;
    s.tasks.push_back(n->stats);
  }
  for (const auto& c : state_->channels) s.max_in_flight = std::max<std::uint64_t>(s.max_in_flight, c->max_size());
  return s;
}

void RunHandle::cancel() {
  if (state_) state_->cancel();
}

void RunHandle::migrate(const std::string& task, const Place& to) {
  if (!state_) throw ConfigError("migrate: the run has not started");
  if (state_->finished) return;
  state_->migrations->migrate(task, to);
}

void RunHandle::drain(const Place& place, bool drained) {
  if (!state_) throw ConfigError("drain: the run has not started");
  if (state_->finished) return;
  state_->migrations->drain(place, drained);
}

Mapping RunHandle::effective_mapping() const {
  Mapping m;
  if (!state_) return m;
  m = state_->mapping;
  const auto& groups = state_->migrations->groups();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = *groups[i];
    if (i < state_->final_places.size()) m.set(g.task(), state_->final_places[i]);
    else if (g.router_rank() == state_->rank) m.set(g.task(), g.places()[g.current()]);
  }
  return m;
}

}  // namespace weft
