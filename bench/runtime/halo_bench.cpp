// Halo exchange between the slabs of one process: per step, the time of halo.begin + halo.end
// between CPU slabs that compute nothing else (a 1D stencil's exchange at zero work), and with
// busy work of d µs per step to see where the exchange stops mattering. Writes
// bench/results/halo.json.
//
//   halo_bench [--slabs 2] [--steps 20000] [--rows 64]
//
// Floor: copying a neighbour's rows (a few hundred bytes) costs tens of nanoseconds; the rest is
// the handshake between the two threads.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "result.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

using namespace weft;
using Clock = std::chrono::steady_clock;

namespace {

void busy(double us) {
  if (us <= 0) return;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
  while (Clock::now() < until) {
  }
}

/// `steps` exchanges of one halo row each way, with `work_us` of busy work per step.
class Stepper final : public SlabTask {
 public:
  Stepper(std::string name, int steps, double work_us) : SlabTask(std::move(name), DType::f32), steps_(steps), work_(work_us) {}
  void run_slab(Context& ctx, Halo& halo) override {
    Array u = ctx.take(in);
    for (int it = 0; it < steps_; ++it) {
      busy(work_);
      halo.begin(u);
      halo.end(u);
    }
    ctx.put(out, std::move(u));
  }

 private:
  int steps_;
  double work_;
};

/// Seconds per step of `slabs` slabs exchanging `steps` times.
double per_step(int slabs, int steps, std::int64_t rows, double work_us) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 1, rows * slabs);
  Partition p = g.add_partition("stencil", slabs, [&](int i) {
    return std::make_unique<Stepper>("stencil." + std::to_string(i), steps, work_us);
  }, {.halo = 1});
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  AutoMapper automatic(DeviceChoice::cpu);
  const Mapping m = map_graph(g, Cluster{{local_devices(0)}}, {&automatic});
  Executor ex;
  const auto t0 = Clock::now();
  ex.run(g, m).wait();
  return std::chrono::duration<double>(Clock::now() - t0).count() / steps;
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  int slabs = 2, steps = 20000;
  std::int64_t rows = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--slabs")) slabs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
  }
  bench::Result result("halo", argc, argv);
  std::vector<double> zero;
  for (int r = 0; r < 5; ++r) zero.push_back(per_step(slabs, steps, rows, 0.0));
  const double exchange_us = bench::median(zero) * 1e6;
  std::printf("halo exchange between %d CPU slabs of one process, %lld floats each\n", slabs,
              static_cast<long long>(rows));
  std::printf("%-34s %10s %10s %8s\n", "measurement", "us/step", "floor us", "ratio");
  const double floor_us = 0.05;  // two row copies of a few hundred bytes
  std::printf("%-34s %10.3f %10.3f %8.1f\n", "exchange, no work", exchange_us, floor_us, exchange_us / floor_us);
  nlohmann::json curve = nlohmann::json::array();
  for (double d : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0}) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) t.push_back(per_step(slabs, std::max(200, steps / 4), rows, d));
    const double us = bench::median(t) * 1e6;
    const double efficiency = d / us;
    std::printf("%-34s %10.3f %10.3f %8.2f\n", ("work " + std::to_string(int(d)) + " us per step").c_str(), us, d,
                efficiency);
    curve.push_back({{"work_us", d}, {"step_us", us}, {"efficiency", efficiency}});
  }
  result.set_device("cpu only (" + std::to_string(local_devices(0).cpu_cores) + " cores)");
  result.metric("slabs", slabs);
  result.metric("rows_per_slab", rows);
  result.metric("exchange_us", exchange_us);
  result.metric("exchange_runs_us", zero);
  result.metric("efficiency_curve", curve);
  result.target("in-process CPU halo exchange per step <= 2 us", exchange_us, 2.0, false);
  (void)result.write();
  return 0;
}
