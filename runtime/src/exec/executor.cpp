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
#include "migration/balancer.hpp"
#include "transport/channel.hpp"
#include "exec/control_file.hpp"
#include "device/device.hpp"
#include "exec/halo.hpp"
#include "cluster/liveness.hpp"
#include "cluster/mpi_check.hpp"
#include "migration/migration.hpp"
#include "transport/remote.hpp"
#include "exec/actor.hpp"
#include "exec/firing.hpp"
#include "exec/run_state.hpp"
#include "migration/state_transfer.hpp"
#include "device/stream_timer.hpp"
#include "cluster/tags.hpp"
#include "transport/transports.hpp"
#include "transport/nccl.hpp"
#include "trace/nvtx.hpp"
#include "trace/trace.hpp"
#include "weft/exec/control.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/output.hpp"
#include "weft/util/settings.hpp"

namespace weft {

using detail::Channel;
using detail::Event;
using detail::Node;
using detail::Token;
using State = RunHandle::State;

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
      detail::nccl_init(detail::run_communicator(), chosen.device_of_rank[run.rank]);
    transports = std::move(chosen.links);
  }
  if (distributed) run.remote = std::make_unique<detail::RemoteLinks>(
        run.rank, detail::LinkOptions{options_.channel_capacity, options_.overlap});  // also error notices, trace
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
      if (node->role == detail::Vertex::plain || node->role == detail::Vertex::instance) return detail::Actor(run, *node).drive();
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
        detail::watch_control_file(*state, file);
      });
  }
  if (run.options.balance != "off" && !run.migrations->empty())
    run.helpers.emplace_back([state] { detail::run_balancer(*state); });
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
