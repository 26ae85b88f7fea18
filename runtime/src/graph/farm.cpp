// Farms: a scatter and a gather around replicas of one task. Both only route values: they never
// copy arrays, so a farm of GPU tasks fed by a GPU task keeps its data on the devices.
#include <algorithm>
#include <chrono>

#include "weft/graph/graph.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

PortSpec route_port() { return {"route", ValueKind<std::int64_t>::index, std::nullopt, 0}; }

// Least loaded: the gather's input arrivals (shared with the scatter) say how many results came
// back from each replica (`results`: the gather's inputs per replica). Each replica's time per
// result while it had work out is tracked (moving average); a token goes to the replica that
// would finish it first, (tokens out + 1) × time per result, or to the one with the fewest out
// while some replica has no estimate yet.
class Scatter final : public Task {
 public:
  Scatter(std::string name, const std::vector<PortSpec>& ports, int replicas, std::shared_ptr<InputArrivals> back,
          int results)
      : Task(std::move(name)), ports_(static_cast<int>(ports.size())), replicas_(replicas), back_(std::move(back)),
        results_(results), load_(static_cast<std::size_t>(replicas)) {
    for (const auto& p : ports) add_input(p);
    for (int r = 0; r < replicas; ++r)
      for (const auto& p : ports) add_output({p.name + "." + std::to_string(r), p.kind, p.dtype, p.ndim});
    if (back_) add_output(route_port());  // output replicas * ports
  }
  void run(Context& ctx) override {
    const int r = back_ ? choose() : static_cast<int>(ctx.index() % static_cast<std::uint64_t>(replicas_));
    if (back_) ctx.put_value_at(replicas_ * ports_, Value(static_cast<std::int64_t>(r)));
    for (int p = 0; p < ports_; ++p) ctx.put_value_at(r * ports_ + p, ctx.take_value(p));
  }
  // A graph may run again (a benchmark's warm-up, a cancelled run): counts start afresh.
  void start(Context&) override {
    if (!back_) return;
    for (std::size_t c = 0; c < load_.size(); ++c) load_[c] = Load{.base = arrived(c)};
    last_ = -1;
  }
  bool has_cuda() const override { return false; }
  bool routes() const override { return true; }
  bool moves_data() const override { return false; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Load {                  // one replica, this run
    std::uint64_t sent = 0;      // tokens sent to it
    std::uint64_t seen = 0;      // results back at the last look
    std::uint64_t base = 0;      // results counted before this run
    Clock::time_point since{};   // when the last look saw a result (or it was handed work while idle)
    double per_result = 0;       // seconds per result while busy (0: not known yet)
    std::uint64_t out = 0;       // sent, result not back yet (at the last look)
  };
  // Results back at the gather from replica c, all runs (its first output's edge).
  std::uint64_t arrived(std::size_t c) const {
    return results_ > 0 ? back_->count(static_cast<int>(c) * results_) : 0;
  }

  int choose() {
    const auto now = Clock::now();
    bool estimated = true;
    for (std::size_t c = 0; c < load_.size(); ++c) {
      Load& l = load_[c];
      const std::uint64_t back = results_ > 0 ? std::min(arrived(c) - l.base, l.sent) : l.sent;
      if (back > l.seen) {  // results since the last look: a sample of the time per result
        if (l.seen < l.sent && l.since != Clock::time_point{}) {
          const double sample = std::chrono::duration<double>(now - l.since).count() / static_cast<double>(back - l.seen);
          l.per_result = l.per_result > 0 ? 0.7 * l.per_result + 0.3 * sample : sample;
        }
        l.seen = back;
        l.since = now;
      }
      l.out = l.sent - back;
      estimated = estimated && l.per_result > 0;
    }
    int best = 0;
    double best_cost = 1e300;
    for (int i = 1; i <= replicas_; ++i) {  // the next in turn first
      const Load& l = load_[static_cast<std::size_t>((last_ + i) % replicas_)];
      const double cost = static_cast<double>(l.out + 1) * (estimated ? l.per_result : 1.0);
      if (cost < best_cost) best_cost = cost, best = (last_ + i) % replicas_;
    }
    Load& chosen = load_[static_cast<std::size_t>(best)];
    if (chosen.out == 0) chosen.since = now;  // idle until now: its next result's time starts here
    ++chosen.sent;
    last_ = best;
    return best;
  }

  int ports_, replicas_;
  std::shared_ptr<InputArrivals> back_;  // null: round robin
  int results_;
  std::vector<Load> load_;
  int last_ = -1;  // the replica chosen last
};

class Gather final : public Task {
 public:
  Gather(std::string name, const std::vector<PortSpec>& ports, int replicas, std::shared_ptr<InputArrivals> arrivals)
      : Task(std::move(name)), ports_(static_cast<int>(ports.size())), replicas_(replicas), arrivals_(std::move(arrivals)) {
    for (int r = 0; r < replicas; ++r)
      for (const auto& p : ports) add_input({p.name + "." + std::to_string(r), p.kind, p.dtype, p.ndim});
    if (arrivals_) add_input(route_port());  // input replicas * ports
    for (const auto& p : ports) add_output(p);
  }
  // Round robin: the replica follows from the firing. Least loaded: the route first, then the
  // replica it names.
  std::vector<int> inputs_for_firing(std::uint64_t firing) const override {
    if (arrivals_) return {replicas_ * ports_};
    return replica_ports(static_cast<int>(firing % static_cast<std::uint64_t>(replicas_)));
  }
  std::vector<int> inputs_after(const Value& route) const override {
    return arrivals_ ? replica_ports(replica_of(route)) : std::vector<int>{};
  }
  std::shared_ptr<InputArrivals> input_arrivals() const override { return arrivals_; }
  void run(Context& ctx) override {
    int r = static_cast<int>(ctx.index() % static_cast<std::uint64_t>(replicas_));
    if (arrivals_) r = replica_of(ctx.take_value(replicas_ * ports_));
    for (int p = 0; p < ports_; ++p) ctx.put_value_at(p, ctx.take_value(r * ports_ + p));
  }
  bool has_cuda() const override { return false; }
  bool moves_data() const override { return false; }

 private:
  std::vector<int> replica_ports(int r) const {
    std::vector<int> ports;
    for (int p = 0; p < ports_; ++p) ports.push_back(r * ports_ + p);
    return ports;
  }
  int replica_of(const Value& route) const {
    const auto* r = std::get_if<std::int64_t>(&route);
    if (!r || *r < 0 || *r >= replicas_) throw Error("farm gather '" + name() + "': bad route");
    return static_cast<int>(*r);
  }
  int ports_, replicas_;
  std::shared_ptr<InputArrivals> arrivals_;  // null: round robin
};

}  // namespace

Farm Graph::add_farm(const std::string& name, int replicas, const std::function<std::unique_ptr<Task>(int)>& make,
                     FarmOptions options) {
  if (replicas < 1) throw ConfigError("farm '" + name + "': needs at least one replica, got " + std::to_string(replicas));
  Farm farm;
  for (int r = 0; r < replicas; ++r) {
    auto task = make(r);
    if (task->stateful()) throw ConfigError("farm '" + name + "': task '" + task->name() + "' is stateful");
    farm.replicas.push_back(&add_task(std::move(task)));
  }
  const Task& model = *farm.replicas.front();
  int in_ports = static_cast<int>(model.inputs().size()), out_ports = static_cast<int>(model.outputs().size());
  std::shared_ptr<InputArrivals> back;  // least loaded: results back at the gather, per input
  if (options.dispatch == Dispatch::least_loaded) back = std::make_shared<InputArrivals>(replicas * out_ports + 1);
  farm.scatter = &add_task(std::make_unique<Scatter>(name + ".scatter", model.inputs(), replicas, back, out_ports));
  farm.gather = &add_task(std::make_unique<Gather>(name + ".gather", model.outputs(), replicas, back));
  for (int r = 0; r < replicas; ++r) {
    for (int p = 0; p < in_ports; ++p) connect_ports(farm.scatter, r * in_ports + p, farm.replicas[r], p);
    for (int q = 0; q < out_ports; ++q) connect_ports(farm.replicas[r], q, farm.gather, r * out_ports + q);
  }
  if (back)  // the scatter's choices, in token order
    connect_ports(farm.scatter, replicas * in_ports, farm.gather, replicas * out_ports);
  return farm;
}

}  // namespace weft
