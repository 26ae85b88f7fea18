// The streaming executor. Every task mapped to this rank is an actor driven by its own thread:
// it pops one token from each input channel, brings arrays to its place (host or GPU, copies on
// the copy streams), fires, and pushes one token on each output channel. Channels are bounded,
// so a fast producer is held back, several tokens are in flight at once, and nothing waits on a
// global barrier. A task thread may block in I/O or in a synchronous copy without stalling
// others; GPU tasks only enqueue on their own stream and pass on an event. Memory is freed on the
// device's compute stream, which waits for a task's stream after each firing that used arrays.
#include "weft/exec/executor.hpp"

#include <chrono>
#include <deque>
#include <fstream>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include "data/buffer.hpp"
#include "exec/channel.hpp"
#include "exec/device.hpp"
#include "exec/halo.hpp"
#include "exec/remote.hpp"
#include "transport/nccl.hpp"
#include "trace/trace.hpp"
#include "weft/exec/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

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
  TaskStats stats;
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
  detail::TraceRecorder trace;
  std::chrono::steady_clock::time_point start;
  double seconds = 0;
  bool waited = false;

  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> cancelled{false};
  int nccl_edges = 0;

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
        if (remote) {
          std::string text = "unknown error";
          try {
            std::rethrow_exception(error);
          } catch (const Error& err) {
            text = err.describe();
          } catch (const std::exception& err) {
            text = err.what();
          } catch (...) {
          }
          remote->abort(text);
        }
      }
    }
    cancel();
  }
  void cancel() {
    cancelled = true;
    for (auto& c : channels) c->cancel();
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

  void begin(std::uint64_t index) {
    index_ = index;
    for (auto& o : outputs_) o.reset();
  }
  [[nodiscard]] bool ended() const { return ended_; }
  std::vector<Value>& values() { return values_; }
  std::vector<std::shared_ptr<Event>>& readies() { return readies_; }
  std::vector<std::optional<Value>>& outputs() { return outputs_; }

 protected:
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
};

// Brings an array to the node's place. Copies to a GPU are asynchronous: the source stays
// alive in `pending` until its copy event completed.
Array fetch_array(State& run, Node& node, void* stream, Array a, const std::shared_ptr<Event>& ready,
                  std::deque<std::pair<std::shared_ptr<Event>, Array>>& pending) {
  Memory m = a.memory();
  const Place& p = node.place;
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  Array out;
  std::shared_ptr<Event> done;
  if (!p.is_gpu()) {
    if (m.is_host()) return a;
    out = detail::copy_to_host(a, ready.get());
  } else if (m.is_host()) {
    out = detail::copy_to_device(a, p.device, stream, done);
  } else if (m.device_index != p.device) {
    out = detail::copy_between_devices(a, p.device, stream, ready.get(), done);
  } else {
    // Same GPU: produced on another task's stream, or received by NCCL on its own stream.
    if (ready) ready->make_wait(stream);
    detail::release_on_home(a);
    return a;
  }
  if (!out.memory().is_host()) detail::release_on_home(out);
  node.stats.bytes_in += a.bytes();
  if (done) {
    if (!run.options.overlap) done->synchronize();
    pending.emplace_back(std::move(done), std::move(a));
  }
  if (run.trace.enabled())
    run.trace.add({"copy to " + p.str(), "copy", node.lane, 0, t0, run.trace.now_us() - t0});
  return out;
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
    task.start(ctx);
    const bool forwards = !task.moves_data();
    std::deque<std::shared_ptr<Event>> outstanding;  // completion of this task's queued firings
    bool used_device_arrays = false;  // this firing took arrays on its GPU: free them in order
    std::vector<Array> held;
    void* home = gpu ? detail::device_streams(node.place.device).compute : nullptr;
    for (std::uint64_t firing = 0;; ++firing) {
      std::uint64_t index = firing;  // sources number their tokens; others take their inputs'
      ctx.begin(index);
      if (node.inputs.empty()) {
        if (run.cancelled) return;
      } else {
        bool end = false;
        std::vector<bool> ended(node.inputs.size(), false);
        std::vector<int> ports = task.inputs_for_firing(firing);
        if (ports.empty())
          for (std::size_t p = 0; p < node.inputs.size(); ++p) ports.push_back(static_cast<int>(p));
        bool first = true;
        used_device_arrays = false;
        for (int p : ports) {
          Token t;
          if (!node.inputs[p]->pop(t)) return;  // cancelled
          if (t.end) {
            end = ended[p] = true;
            continue;
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
          } else if (a) {
            ctx.values()[p] = fetch_array(run, node, ctx.stream(), std::move(*a), t.ready, pending);
            used_device_arrays = gpu;
          } else {
            ctx.values()[p] = std::move(t.value);
          }
        }
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
      if (used_device_arrays)  // keep the inputs until the home stream waits for this firing
        for (auto& v : ctx.values())
          if (auto* a = std::get_if<Array>(&v)) held.push_back(*a);
      double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
      auto c0 = std::chrono::steady_clock::now();
      if (gpu) task.run_cuda(ctx);
      else task.run(ctx);
      node.stats.busy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      if (run.trace.enabled()) run.trace.add({task.name(), "task", node.lane, index, t0, run.trace.now_us() - t0});
      if (ctx.ended()) break;
      ++node.stats.tokens;
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
      if (gpu && !run.options.overlap) detail::synchronize_stream(node.place.device, ctx.stream());
      if (ready) {
        // Back-pressure on the GPU too: a task keeps at most `channel_capacity` firings queued on
        // its stream, so device memory in flight stays bounded however fast the host side runs.
        outstanding.push_back(ready);
        if (outstanding.size() > static_cast<std::size_t>(run.options.channel_capacity)) {
          outstanding.front()->synchronize();
          outstanding.pop_front();
        }
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
        for (std::size_t c = 0; c < consumers.size(); ++c) {
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
    task.stop(ctx);
    if (gpu) detail::synchronize_stream(node.place.device, ctx.stream());
    for (auto& consumers : node.outputs)
      for (auto* c : consumers) c->push(Token{0, true, {}, {}});
  } catch (...) {
    run.fail(std::current_exception(), &node);
  }
}

// Which cross-rank edges NCCL carries: both ends on GPUs, distinct physical GPUs, one device per
// rank for the communicator, every rank with a GPU (NCCL's bootstrap is collective), and no
// cycle between ranks (sends and receives share one NCCL stream per rank).
std::set<std::ptrdiff_t> choose_nccl_edges(const Graph& graph, const Mapping& mapping, const Cluster& cluster,
                                           std::vector<int>& device_of_rank) {
  std::set<std::ptrdiff_t> chosen;
  device_of_rank.assign(cluster.size(), -1);
  const char* off = std::getenv("WEFT_NCCL");
  if (!detail::nccl_compiled() || (off && std::string(off) == "0")) return chosen;
  for (const auto& r : cluster.ranks)
    if (r.gpus.empty()) return chosen;
  std::map<std::pair<int, int>, bool> links;
  for (std::size_t i = 0; i < graph.edges().size(); ++i) {
    const Edge& e = graph.edges()[i];
    Place a = mapping.at(e.from->name()), b = mapping.at(e.to->name());
    if (!a.is_gpu() || !b.is_gpu() || a.rank == b.rank) continue;
    if (!e.from->moves_data() || !e.to->moves_data()) continue;
    const auto& ga = cluster.ranks[a.rank].gpus.at(a.device);
    const auto& gb = cluster.ranks[b.rank].gpus.at(b.device);
    if (ga.uuid == gb.uuid && cluster.ranks[a.rank].host == cluster.ranks[b.rank].host) continue;  // one GPU, two ranks
    auto bind = [&](int rank, int device) {
      if (device_of_rank[rank] < 0) device_of_rank[rank] = device;
      return device_of_rank[rank] == device;
    };
    if (!bind(a.rank, a.device) || !bind(b.rank, b.device)) continue;
    chosen.insert(static_cast<std::ptrdiff_t>(i));
    links[{a.rank, b.rank}] = true;
  }
  // No cycle between ranks (depth-first search over the rank graph).
  std::vector<int> colour(cluster.size(), 0);
  std::function<bool(int)> cyclic = [&](int r) {
    colour[r] = 1;
    for (const auto& [link, _] : links)
      if (link.first == r && (colour[link.second] == 1 || (colour[link.second] == 0 && cyclic(link.second)))) return true;
    colour[r] = 2;
    return false;
  };
  for (int r = 0; r < cluster.size(); ++r)
    if (colour[r] == 0 && cyclic(r)) {
      chosen.clear();
      break;
    }
  return chosen;
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
    if (const char* t = std::getenv("WEFT_TRACE"); t && *t) {
      static std::atomic<int> runs{0};
      run.options.trace_file = t;  // a '%' in the name becomes the run's number
      if (auto pct = run.options.trace_file.find('%'); pct != std::string::npos)
        run.options.trace_file.replace(pct, 1, std::to_string(runs++));
    }
  if (!run.options.trace_file.empty()) run.trace.enable();

  // Edges between GPUs of different ranks go through NCCL where it can carry them; every rank
  // makes the same choice from the same graph, mapping and cluster.
  std::set<std::ptrdiff_t> nccl_edges;
  if (env && env->distributed() && env->size() > 1) {
    std::vector<int> device_of_rank;
    nccl_edges = choose_nccl_edges(graph, mapping, env->cluster(), device_of_rank);
    run.nccl_edges = static_cast<int>(nccl_edges.size());
    if (!nccl_edges.empty())
      detail::nccl_init(detail::RemoteLinks::communicator(), device_of_rank[run.rank] < 0 ? 0 : device_of_rank[run.rank]);
  }

  std::map<const Task*, Node*> local;
  for (const auto& t : graph.tasks()) {
    Place p = mapping.at(t->name());
    if (p.rank != run.rank) continue;
    auto node = std::make_unique<Node>();
    node->task = t.get();
    node->place = p;
    node->lane = static_cast<int>(run.nodes.size());
    node->inputs.resize(t->inputs().size(), nullptr);
    node->outputs.resize(t->outputs().size());
    node->stats.task = t->name();
    node->stats.place = p;
    local[t.get()] = node.get();
    run.nodes.push_back(std::move(node));
  }
  for (const Edge& e : graph.edges()) {
    Node* from = local.count(e.from) ? local[e.from] : nullptr;
    Node* to = local.count(e.to) ? local[e.to] : nullptr;
    if (!from && !to) continue;
    run.channels.push_back(std::make_unique<Channel>(options_.channel_capacity));
    Channel* ch = run.channels.back().get();
    if (from) from->outputs[e.from_port].push_back(ch);
    if (to) to->inputs[e.to_port] = ch;
    if (!from || !to) {
      if (!run.remote) run.remote = std::make_unique<detail::RemoteLinks>(run.rank, options_);
      Place other = mapping.at((from ? e.to : e.from)->name());
      bool nccl = nccl_edges.count(&e - graph.edges().data()) != 0;
      if (from) run.remote->add_sender(e, ch, other.rank, graph, nccl);
      else run.remote->add_receiver(e, ch, other.rank, graph, nccl);
    }
  }
  if (env && env->distributed() && env->size() > 1 && !run.remote)
    run.remote = std::make_unique<detail::RemoteLinks>(run.rank, options_);  // error notices, trace
  if (!graph.partitions().empty())
    run.halos = std::make_unique<detail::HaloLinks>(graph, mapping, run.rank, run.remote.get(), run.options, run.trace,
                                                    [&](const Task& t) { return local.at(&t)->lane; });
  for (auto& n : run.nodes) run.trace.name_lane(n->lane, n->task->name() + " @ " + n->place.str());
  run.start = std::chrono::steady_clock::now();
  if (run.remote) run.remote->start([state](std::exception_ptr e) { state->fail(e, nullptr); });
  for (auto& n : run.nodes) {
    Node* node = n.get();
    run.threads.emplace_back([state, node] { drive(*state, *node); });
  }
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
    if (run.remote) {
      run.remote->finish();
      // Every rank ends the run knowing whether any rank failed (ranks without work too).
      std::string local;
      if (run.error) {
        try {
          std::rethrow_exception(run.error);
        } catch (const Error& e) {
          local = e.describe();
        } catch (const std::exception& e) {
          local = e.what();
        } catch (...) {
          local = "unknown error";
        }
      }
      std::string first = run.remote->agree(local);
      if (!first.empty() && !run.error) run.error = std::make_exception_ptr(RemoteError(first));
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
    run.waited = true;
    if (run.options.trim_pools) detail::trim_device_pools();
    if (!run.options.trace_file.empty()) {
      std::string local = run.trace.events_json(run.rank, 0);
      std::string all = run.remote ? run.remote->gather_trace(local, run.trace) : local;
      if (run.rank == 0) {
        std::string tmp = run.options.trace_file + ".tmp";
        {
          std::ofstream f(tmp);
          if (!f) throw IoError("cannot write trace file '" + run.options.trace_file + "'");
          f << "{\"traceEvents\":[\n" << all << "\n],\"displayTimeUnit\":\"ms\"}\n";
        }
        std::rename(tmp.c_str(), run.options.trace_file.c_str());
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
  for (const auto& n : state_->nodes) s.tasks.push_back(n->stats);
  for (const auto& c : state_->channels) s.max_in_flight = std::max<std::uint64_t>(s.max_in_flight, c->max_size());
  return s;
}

void RunHandle::cancel() {
  if (state_) state_->cancel();
}

}  // namespace weft
