// The helpers of a run beside its actors: the control-file watcher and the load balancer's loop.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <thread>

#include "exec/run_state.hpp"
#include "cluster/tags.hpp"
#include "weft/exec/control.hpp"
#include "weft/util/log.hpp"

namespace weft::detail {

using State = RunHandle::State;

namespace {

RankReport local_report(State& run) {
  RankReport r;
  for (const auto& n : run.nodes) {
    if (n->role == Vertex::router || n->role == Vertex::merger) continue;
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

}  // namespace

// Rank 0 follows the control file (`weft ctl` appends one command per line): "migrate TASK PLACE",
// "drain PLACE", "undrain PLACE". The run follows what is sent while it runs; a bad line is logged
// (escaped) and skipped, since a typo must not stop a running job.
void watch_control_file(State& run, std::shared_ptr<ControlFile> file) {
  auto log = logger("migration");
  file->skip_to_end();
  while (!run.finished && !run.cancelled) {
    int dropped = 0;
    for (const std::string& line : file->new_lines(dropped)) {
      try {
        const auto command = parse_control_command(line);
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

// Every rank reports its counters each period; rank 0 decides (migration/balancer.hpp) and logs.
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
      run.remote->post(0, tags::kReportBox, std::move(message));
    }
    return;
  }
  auto log = logger("migration");
  BalanceModel model(run.plan, run.options.balance, run.options.balance_threshold, run.options.balance_period);
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
    ActorSample first;
  };
  std::vector<Pending> pending;
  std::map<int, std::deque<ActorSample>> history;  // per vertex: its last distinct samples
  auto rate = [](const ActorSample& a, const ActorSample& b) {
    return b.at > a.at ? static_cast<double>(b.tokens - a.tokens) / (b.at - a.at) : 0.0;
  };
  try {
    while (sleep_until(run, next)) {
      next += period;
      RankReport all = local_report(run);
      {
        std::lock_guard lock(run.balance_mutex);
        for (const auto& [rank, r] : run.reports) {
          all.actors.insert(all.actors.end(), r.actors.begin(), r.actors.end());
          all.current.insert(all.current.end(), r.current.begin(), r.current.end());
        }
      }
      std::map<int, int> current(all.current.begin(), all.current.end());
      std::map<int, const ActorSample*> latest;
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
        const ActorSample& now_there = *it->second;
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
                               : old_samples.size() == 1 ? rate(ActorSample{}, old_samples.back())
                                                         : rate(old_samples.front(), old_samples.back());
        pending.push_back({run.decisions.size(), g.instances[m.to], before});
        run.decisions.push_back(std::move(d));
      }
    }
  } catch (...) {
    run.fail(std::current_exception(), nullptr);
  }
}

}  // namespace weft::detail
