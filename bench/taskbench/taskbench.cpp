// Task Bench (Slaughter et al., SC20) patterns on Weft, StarPU and raw threads, side by side in one
// run: for each pattern and task duration d, the three peers run alternately (the order rotating
// per repetition) and the median of the repetitions counts. Efficiency is the ideal time
// (tasks x d / width) over the measured one; METG is the smallest d at which a peer keeps 50 %
// (interpolated in log d between the measured durations). Writes bench/results/taskbench.json.
//
//   taskbench_bench [--width N] [--steps 1000] [--min-run-ms 50] [--reps 5] [--d 1,2,5,...]
//                   [--patterns a,b] [--starpu-sched eager] [--no-starpu] [--no-quiet-check] [--quick]
//
// Steps: --steps, raised at small d so that every run holds at least --min-run-ms of ideal time
// (1000 steps at 1 µs last 1 ms, and on the 2-core development VM one preemption of a millisecond
// then halves a run's efficiency; at 20 ms a scheduler tick of 4 ms still showed). The cost of starting a Weft
// run, inside every Weft time, is measured apart (a one-step run) so that it can be judged.
// A repetition during which other processes used the CPU is done again (quiet.hpp).
//
// Each task spins d µs and reads its inputs' 16-byte payloads (checked: each carries the step that
// wrote it, and every peer's checksum must equal the sequential one). How each peer expresses the
// graph: weft_peer.cpp, starpu_peer.cpp, threads_peer.cpp.
//
// What Weft's API lacks for these graphs. Weft's graphs are streams: a task fires once per token,
// an edge carries a token of step k to a firing of step k, and the graph must be acyclic. A
// dependency from step t - 1 of point j to step t of point i, for every t, is an edge j -> i
// carrying step t - 1 to step t: with both j -> i and i -> j it is a cycle, so no firing-per-task
// expression exists for any pattern with cross-point dependencies. What remains:
//  - halos (partitions) link neighbouring slabs inside one firing; stencil_1d fits them exactly.
//  - nearest (radius 2), spread, fft, tree, all_to_all read farther than the next slab, so the
//    partition relays through its neighbours: `reach` exchanges per step instead of one message per
//    dependency (all_to_all: width - 1 exchanges a step; tree and spread about width / 2; fft
//    2^(step mod log2 width)). What they would need: halo links to arbitrary slabs (a per-slab list
//    of peers, or an all-gather of one row per slab), or better, a repeating per-step DAG: a graph
//    whose edges may go from token t of a task to token t + 1 of another (a "next-step" edge, which
//    breaks no stream order because it points forward in tokens), so that every (step, point) is a
//    firing and the runtime, not the user's loop, carries the dependencies.
//  - trivial and no_comm have firing-per-task expressions (a farm; one chain per point), and they
//    pay what a firing costs: a channel push, a pop and a wake-up per task, plus the farm's central
//    scatter and gather.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

#include "pattern.hpp"
#include "quiet.hpp"
#include "result.hpp"
#include "weft/weft.hpp"

using namespace taskbench;

namespace {

struct Options {
  int width = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int steps = 1000;  // 1000 x 200 µs: 0.2 s a run at the largest default d
  double min_run_ms = 50;
  int reps = 5;
  std::vector<double> d{1, 2, 5, 10, 20, 50, 100, 200};
  std::vector<Pattern> patterns = all_patterns();
  std::string sched = "eager";
  bool starpu = true;
  bool quiet_check = true;
};

// A repetition during which other processes took this share of the machine is done again (after
// waiting for quiet), up to kAttempts times. 10 %: one 10 ms clock tick of 2 cores over a short
// repetition is 7 %, which the kernel's own threads sometimes take.
constexpr double kForeignLimit = 0.10;
constexpr int kAttempts = 10;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--width") o.width = std::stoi(value());
    else if (a == "--steps") o.steps = std::stoi(value());
    else if (a == "--min-run-ms") o.min_run_ms = std::stod(value());
    else if (a == "--reps") o.reps = std::stoi(value());
    else if (a == "--d") {
      o.d.clear();
      for (const auto& x : split(value())) o.d.push_back(std::stod(x));
    } else if (a == "--patterns") {
      o.patterns.clear();
      for (const auto& x : split(value())) {
        auto it = std::find_if(all_patterns().begin(), all_patterns().end(), [&](Pattern p) { return name(p) == x; });
        if (it == all_patterns().end()) throw std::runtime_error("unknown pattern " + x);
        o.patterns.push_back(*it);
      }
    } else if (a == "--starpu-sched") o.sched = value();
    else if (a == "--no-starpu") o.starpu = false;
    else if (a == "--no-quiet-check") o.quiet_check = false;
    else if (a == "--quick") {  // the test's size: two durations, a few steps, once
      o.d = {5, 50};
      o.steps = 40;
      o.min_run_ms = 0;
      o.quiet_check = false;  // ctest runs tests side by side
      o.reps = 1;
    } else throw std::runtime_error("unknown option " + a);
  }
  if (o.width < 1 || o.width > 64) throw std::runtime_error("--width must be 1 .. 64");
  if (o.steps < 1 || o.reps < 1 || o.d.empty()) throw std::runtime_error("--steps, --reps, --d must be positive");
  std::sort(o.d.begin(), o.d.end());
  return o;
}

/// METG from an efficiency curve over ascending d: the smallest d from which every efficiency is
/// at least 50 %, interpolated in log d with the point below. Empty when even the largest d falls
/// short; `at_or_below` when the smallest d already reaches it (METG <= d[0]).
struct Metg {
  std::optional<double> us;
  bool at_or_below = false;
};
Metg metg(const std::vector<double>& d, const std::vector<double>& eff) {
  std::size_t k = d.size();
  while (k > 0 && eff[k - 1] >= 0.5) --k;
  if (k == d.size()) return {};
  if (k == 0) return {d[0], true};
  const double x0 = std::log(d[k - 1]), x1 = std::log(d[k]);
  const double f = (0.5 - eff[k - 1]) / (eff[k] - eff[k - 1]);
  return {std::exp(x0 + f * (x1 - x0)), false};
}

std::string show(const Metg& m) {
  char buf[32];
  if (!m.us) return "   >max";
  std::snprintf(buf, sizeof buf, m.at_or_below ? "  <=%-4.3g" : "%8.3g", *m.us);
  return buf;
}
nlohmann::json to_json(const Metg& m) {
  if (!m.us) return {{"us", nullptr}, {"note", "efficiency under 50 % at every d measured"}};
  return {{"us", *m.us}, {"note", m.at_or_below ? "at or below the smallest d measured" : "interpolated"}};
}

/// The 1-minute load average: the development machine's two cores are shared, and a busy
/// neighbour shows in the efficiencies, so the record keeps it.
double load_average() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  weft::Environment env(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows in logs as it comes
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "taskbench: %s\n", e.what());
    return 2;
  }
  weft::bench::Result result("taskbench", argc, argv);
  const double load_before = load_average();
  bool have_starpu = false;
  if (o.starpu) have_starpu = starpu_start(o.width, o.sched);
  std::printf("Task Bench patterns, width %d, %d steps (more where d < %g µs), %d repetitions, d = ", o.width,
              o.steps, o.min_run_ms * 1e3 / o.steps, o.reps);
  for (double d : o.d) std::printf("%g ", d);
  std::printf("µs\nStarPU peer: %s\n", o.starpu ? starpu_description().c_str() : "off (--no-starpu)");

  const std::vector<std::string> peers{"weft", "starpu", "threads"};
  auto run_peer = [&](int peer, const Graph& g) {
    return peer == 0 ? run_weft(g) : peer == 1 ? run_starpu(g) : run_threads(g);
  };
  auto active = [&](int peer) { return peer != 1 || have_starpu; };

  nlohmann::json per_pattern = nlohmann::json::object(), ratios = nlohmann::json::object();
  bool all_checks = true;
  int redone = 0, kept_disturbed = 0;
  double worst_foreign = 0;
  std::optional<Metg> stencil;
  for (Pattern p : o.patterns) {
    Graph g{p, o.width, o.steps, 0};
    for (int peer = 0; peer < 3; ++peer)  // warm-up: thread pools, page faults, StarPU's first tasks
      if (active(peer)) (void)run_peer(peer, g);
    // What a Weft run costs besides its steps (threads started and joined, the split, the join):
    // the time of a one-step graph at d = 0, included in every Weft run (the other peers start
    // their workers before the clock).
    std::vector<double> start;
    for (int k = 0; k < 5; ++k) start.push_back(run_weft(Graph{p, o.width, 1, 0}).seconds);
    const double start_us = weft::bench::median(start) * 1e6;
    std::vector<std::vector<double>> eff(3), secs(3);
    std::vector<int> steps;
    for (double d : o.d) {
      g.work_us = d;
      g.steps = std::max(o.steps, static_cast<int>(std::ceil(o.min_run_ms * 1e3 / d)));
      steps.push_back(g.steps);
      const std::uint64_t expected = reference_checksum(g);
      std::vector<std::vector<double>> t(3);
      for (int rep = 0; rep < o.reps; ++rep) {
        for (int attempt = 0;; ++attempt) {  // a repetition beside foreign work is done again
          CpuShare share;
          double s[3] = {NAN, NAN, NAN};
          for (int k = 0; k < 3; ++k) {
            const int peer = (k + rep) % 3;
            if (!active(peer)) continue;
            const Run r = run_peer(peer, g);
            if (r.checksum != expected) {
              std::fprintf(stderr, "taskbench: %s on %s at d = %g: checksum %llu, expected %llu\n",
                           peers[peer].c_str(), name(p).c_str(), d, static_cast<unsigned long long>(r.checksum),
                           static_cast<unsigned long long>(expected));
              all_checks = false;
            }
            s[peer] = r.seconds;
          }
          const double foreign = share.foreign();
          if (!o.quiet_check || foreign < kForeignLimit || attempt == kAttempts - 1) {
            if (foreign >= kForeignLimit) ++kept_disturbed;
            worst_foreign = std::max(worst_foreign, foreign);
            for (int peer = 0; peer < 3; ++peer)
              if (active(peer)) t[peer].push_back(s[peer]);
            break;
          }
          ++redone;
          (void)CpuShare::wait_quiet(120);
        }
      }
      const double ideal = static_cast<double>(g.tasks()) * d * 1e-6 / o.width;
      for (int peer = 0; peer < 3; ++peer) {
        const double s = active(peer) ? weft::bench::median(t[peer]) : NAN;
        secs[peer].push_back(s);
        eff[peer].push_back(ideal / s);
      }
    }
    Metg m[3];
    for (int peer = 0; peer < 3; ++peer)
      if (active(peer)) m[peer] = metg(o.d, eff[peer]);
    if (p == Pattern::stencil_1d) stencil = m[0];

    std::printf("\n%s: METG (µs, d at 50 %% efficiency): weft %s  starpu %s  threads %s", name(p).c_str(), show(m[0]).c_str(), have_starpu ? show(m[1]).c_str() : "absent",
                show(m[2]).c_str());
    const bool free_of_comm = p == Pattern::trivial || p == Pattern::no_comm;
    std::printf("\n  floor: %s", free_of_comm ? "the busy work alone (METG ~ 0)" : "the threads peer (a spinning barrier)");
    std::printf("; a one-step Weft run: %.0f µs", start_us);
    std::optional<double> ratio;
    if (have_starpu && m[0].us && m[1].us) {
      ratio = *m[0].us / *m[1].us;
      std::printf("; weft / starpu METG %.2f%s", *ratio, m[0].at_or_below || m[1].at_or_below ? " (bounds)" : "");
    }
    std::printf("\n  efficiency\n  %8s %8s %10s %10s %10s\n", "d (µs)", "steps", "weft", "starpu", "threads");
    for (std::size_t k = 0; k < o.d.size(); ++k) {
      std::printf("  %8g %8d", o.d[k], steps[k]);
      for (int peer = 0; peer < 3; ++peer)
        active(peer) ? std::printf(" %10.3f", eff[peer][k]) : std::printf(" %10s", "absent");
      std::printf("\n");
    }

    nlohmann::json j = {{"d_us", o.d}, {"steps", steps}};
    for (int peer = 0; peer < 3; ++peer) {
      if (!active(peer)) continue;
      j["metg"][peers[peer]] = to_json(m[peer]);
      j["efficiency"][peers[peer]] = eff[peer];
      j["seconds"][peers[peer]] = secs[peer];
      // What the peer adds to each task: measured time x width / tasks - d. Steadier than METG,
      // which hinges on the two points around 50 %.
      std::vector<double> over;
      for (std::size_t k = 0; k < o.d.size(); ++k) over.push_back(o.d[k] / eff[peer][k] - o.d[k]);
      j["overhead_per_task_us"][peers[peer]] = over;
    }
    j["weft_one_step_run_us"] = start_us;
    j["floor"] = free_of_comm ? "busy work alone: METG ~ 0" : "threads peer";
    per_pattern[name(p)] = j;
    ratios[name(p)] = ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr);
  }
  starpu_stop();

  result.set_device("cpu only (" + std::to_string(weft::local_devices(0).cpu_cores) + " cores)");
  result.metric("width", o.width);
  result.metric("steps", o.steps);
  result.metric("repetitions", o.reps);
  result.metric("starpu", o.starpu ? starpu_description() : "off");
  result.metric("checksums_match", all_checks);
  result.metric("load_average_1min", {{"before", load_before}, {"after", load_average()}});
  result.metric("foreign_cpu", {{"check", o.quiet_check},
                                {"limit", kForeignLimit},
                                {"repetitions_redone", redone},
                                {"repetitions_kept_disturbed", kept_disturbed},
                                {"worst_share_kept", worst_foreign}});
  result.metric("patterns", per_pattern);
  result.metric("weft_vs_starpu_metg", ratios);
  if (stencil) {
    // Issue 50: half of StarPU's 14 µs. Out of range counts as not met (value: twice the largest d).
    const double value = stencil->us ? *stencil->us : 2 * o.d.back();
    result.target("stencil_1d_metg_us", value, 7.0, false);
  }
  (void)result.write();  // prints where it wrote
  if (!all_checks) std::fprintf(stderr, "taskbench: some peer computed a different graph (see above)\n");
  return all_checks ? 0 : 1;
}
