// Farms: a scatter and a gather around replicas of one task. Both only route values: they never
// copy arrays, so a farm of GPU tasks fed by a GPU task keeps its data on the devices.
#include "weft/graph/graph.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

class Scatter final : public Task {
 public:
  Scatter(std::string name, const std::vector<PortSpec>& ports, int replicas)
      : Task(std::move(name)), ports_(static_cast<int>(ports.size())), replicas_(replicas) {
    for (const auto& p : ports) add_input(p);
    for (int r = 0; r < replicas; ++r)
      for (const auto& p : ports) add_output({p.name + "." + std::to_string(r), p.kind, p.dtype, p.ndim});
  }
  void run(Context& ctx) override {
    int r = static_cast<int>(ctx.index() % static_cast<std::uint64_t>(replicas_));
    for (int p = 0; p < ports_; ++p) ctx.put_value_at(r * ports_ + p, ctx.take_value(p));
  }
  bool has_cuda() const override { return false; }
  bool routes() const override { return true; }
  bool moves_data() const override { return false; }

 private:
  int ports_, replicas_;
};

class Gather final : public Task {
 public:
  Gather(std::string name, const std::vector<PortSpec>& ports, int replicas)
      : Task(std::move(name)), ports_(static_cast<int>(ports.size())), replicas_(replicas) {
    for (int r = 0; r < replicas; ++r)
      for (const auto& p : ports) add_input({p.name + "." + std::to_string(r), p.kind, p.dtype, p.ndim});
    for (const auto& p : ports) add_output(p);
  }
  std::vector<int> inputs_for_firing(std::uint64_t firing) const override {
    int r = static_cast<int>(firing % static_cast<std::uint64_t>(replicas_));
    std::vector<int> ports;
    for (int p = 0; p < ports_; ++p) ports.push_back(r * ports_ + p);
    return ports;
  }
  void run(Context& ctx) override {
    int r = static_cast<int>(ctx.index() % static_cast<std::uint64_t>(replicas_));
    for (int p = 0; p < ports_; ++p) ctx.put_value_at(p, ctx.take_value(r * ports_ + p));
  }
  bool has_cuda() const override { return false; }
  bool moves_data() const override { return false; }

 private:
  int ports_, replicas_;
};

}  // namespace

Farm Graph::add_farm(const std::string& name, int replicas, const std::function<std::unique_ptr<Task>(int)>& make) {
  if (replicas < 1) throw ConfigError("farm '" + name + "': needs at least one replica, got " + std::to_string(replicas));
  Farm farm;
  for (int r = 0; r < replicas; ++r) {
    auto task = make(r);
    if (task->stateful()) throw ConfigError("farm '" + name + "': task '" + task->name() + "' is stateful");
    farm.replicas.push_back(&add_task(std::move(task)));
  }
  const Task& model = *farm.replicas.front();
  farm.scatter = &add_task(std::make_unique<Scatter>(name + ".scatter", model.inputs(), replicas));
  farm.gather = &add_task(std::make_unique<Gather>(name + ".gather", model.outputs(), replicas));
  int in_ports = static_cast<int>(model.inputs().size()), out_ports = static_cast<int>(model.outputs().size());
  for (int r = 0; r < replicas; ++r) {
    for (int p = 0; p < in_ports; ++p) connect_ports(farm.scatter, r * in_ports + p, farm.replicas[r], p);
    for (int q = 0; q < out_ports; ++q) connect_ports(farm.replicas[r], q, farm.gather, r * out_ports + q);
  }
  return farm;
}

}  // namespace weft
