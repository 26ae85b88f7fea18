// Live migration and load balancing on two GPUs (run: mpirun -np 2, one GPU each; or one rank
// with two GPUs). Writes bench/results/migration.json.
//
// Part 1, imbalance: producer (CPU) -> s0 (GPU A) -> s1 (GPU B) -> consumer (CPU, last rank); each
// stage is a kernel of kStageMs on a few SMs, so a GPU can run both stages side by side. From
// token kSlowToken on, a competing kernel of kSlowMs runs before s0's work whenever s0 runs on A
// (GPU A "slowed"). The load balancer (--balance greedy, period WEFT_BALANCE_PERIOD_S, default
// 0.02 s) must move s0 to B. WEFT_MIGRATION_PARTS=1 runs this part only, =2 part 2 only (printed,
// no file).
// Throughput before, during and after, and the iterations from the imbalance to >= 90 % of the
// balanced throughput (target <= 10).
//
// Part 2, pause: a paced producer (one token per kPaceMs) -> a running sum on GPU A carrying S bytes
// of GPU-resident state -> consumer; at token 20 it is moved to GPU B. The pause is the largest gap
// between two outputs around the move (outputs 12 to 38 of 40) minus the pace; target: <= one iteration period (the pace)
// for S up to 256 MiB. The state travels as device arrays (Task::save_arrays): a peer copy in one
// process, CUDA IPC between ranks of one host, and for comparison (WEFT_STATE_IPC=0) pinned chunks
// over MPI as between hosts; the floor printed is S over the measured host<->device bandwidth,
// twice between ranks (out of one GPU, into the other), once in a process.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "result.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/demo/running_sum.hpp"
#include "weft/weft.hpp"
#include "weft/util/settings.hpp"

using namespace weft;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kTokens = 600;
constexpr int kSlowToken = 200;
constexpr double kStageMs = 4.0;
constexpr double kSlowMs = 12.0;
const double kPeriodS = [] {
  const char* v = std::getenv("WEFT_BALANCE_PERIOD_S");
  return v && *v ? std::atof(v) : 0.02;
}();
constexpr double kPaceMs = 20.0;
constexpr std::int64_t kFloats = 1 << 18;  // 1 MiB tokens

// (Place's defaulted comparison is not available to nvcc's host compiler pass here.)
bool same(const Place& x, const Place& y) { return x.kind == y.kind && x.device == y.device && x.rank == y.rank; }

__global__ void spin_kernel(long long cycles, float* out) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (out && threadIdx.x == 0) out[blockIdx.x] += 1.0f;
}

long long cycles_for(double ms) {
  int khz = 0, device = 0;
  WEFT_CUDA_CHECK(cudaGetDevice(&device));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return static_cast<long long>(ms * khz);
}

void spin(double ms, cudaStream_t s) {
  spin_kernel<<<4, 32, 0, s>>>(cycles_for(ms), nullptr);
  check_launch("spin_kernel", s);
}

class Source final : public Task {
 public:
  Source(int tokens, double pace_ms) : Task("producer"), tokens_(tokens), pace_ms_(pace_ms) {}
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    if (ctx.index() >= static_cast<std::uint64_t>(tokens_)) return ctx.end_stream();
    if (pace_ms_ > 0) {
      if (ctx.index() == 0) next_ = Clock::now();
      std::this_thread::sleep_until(next_);
      next_ += std::chrono::microseconds(static_cast<long>(pace_ms_ * 1e3));
    }
    Array a = Array::host(DType::f32, Shape(kFloats));
    std::fill(a.data<float>(), a.data<float>() + kFloats, static_cast<float>(ctx.index()));
    ctx.put(out, std::move(a));
  }

 private:
  int tokens_;
  double pace_ms_;
  Clock::time_point next_;
};

/// A GPU stage: kStageMs of kernel per token, plus a competing kernel on the slowed place.
class Stage final : public Task {
 public:
  Stage(std::string name, Place slowed) : Task(std::move(name)), slowed_(slowed) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context&) override { throw Error("stage runs on GPUs only"); }
  bool has_cpu() const override { return false; }
  bool has_cuda() const override { return true; }
  void run_cuda(Context& ctx) override {
    Array x = ctx.take(in);
    if (same(ctx.place(), slowed_) && ctx.index() >= kSlowToken) spin(kSlowMs, cuda_stream(ctx));
    spin(kStageMs, cuda_stream(ctx));
    ctx.put(out, ctx.alloc(DType::f32, x.shape()));  // contents do not matter here
  }

 private:
  Place slowed_;
};

class Consumer final : public Task {
 public:
  explicit Consumer(std::vector<double>* arrivals) : Task("consumer"), arrivals_(arrivals) {}
  In<Array> in = input<Array>("in", DType::f32);
  void run(Context& ctx) override {
    (void)ctx.take(in);
    arrivals_->push_back(std::chrono::duration<double>(Clock::now().time_since_epoch()).count());
  }

 private:
  std::vector<double>* arrivals_;
};

double rate(const std::vector<double>& t, int from, int to) {  // tokens per second over [from, to)
  from = std::max(from, 1);
  to = std::min<int>(to, static_cast<int>(t.size()));
  return to - from > 0 && t[to - 1] > t[from - 1] ? (to - from) / (t[to - 1] - t[from - 1]) : 0;
}

double h2d_bandwidth() {
  const std::size_t bytes = std::size_t(256) << 20;
  void *d = nullptr, *h = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&d, bytes));
  WEFT_CUDA_CHECK(cudaMallocHost(&h, bytes));
  std::vector<double> t;
  for (int i = 0; i < 4; ++i) {
    auto t0 = Clock::now();
    WEFT_CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    if (i) t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  WEFT_CUDA_CHECK(cudaFree(d));
  WEFT_CUDA_CHECK(cudaFreeHost(h));
  return bytes / bench::median(t);
}

// The last rank's arrival times, sent to rank 0 (which writes the result).
std::vector<double> to_rank0(const std::vector<double>& local, int rank, int size) {
  int last = size - 1;
  if (last == 0) return local;
  int n = static_cast<int>(local.size());
  if (rank == last) {
    MPI_Send(&n, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
    MPI_Send(local.data(), n, MPI_DOUBLE, 0, 78, MPI_COMM_WORLD);
    return {};
  }
  if (rank != 0) return {};
  MPI_Recv(&n, 1, MPI_INT, last, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::vector<double> all(n);
  MPI_Recv(all.data(), n, MPI_DOUBLE, last, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  int rank = env.rank(), size = env.size();
  bench::Result result("migration", argc, argv);
  std::vector<Place> gpus;
  for (const auto& r : env.cluster().ranks)
    for (const auto& g : r.gpus) gpus.push_back(Place::cuda(g.index, r.rank));
  if (gpus.size() < 2) {
    if (rank == 0) {
      std::printf("migration bench: needs two GPUs in the job, found %zu\n", gpus.size());
      result.metric("skipped", "fewer than two GPUs");
      result.write();
    }
    return 0;
  }
  Place a = gpus.front(), b = gpus.back();  // rank 0 and the last rank (or two GPUs of one rank)
  int last = size - 1;
  if (rank == 0) std::printf("migration bench: GPU A = %s, GPU B = %s, %d rank(s)\n", a.str().c_str(), b.str().c_str(), size);

  // Part 1: imbalance and recovery under the load balancer (WEFT_MIGRATION_PARTS=2: skipped, for a
  // look at the pauses alone, printed, no file).
  const char* parts = std::getenv("WEFT_MIGRATION_PARTS");
  const std::string only = parts ? parts : "";
  if (only != "2") try {
    std::vector<double> arrivals;
    Graph g;
    auto& src = g.add<Source>(kTokens, 0.0);
    auto& s0 = g.add<Stage>("s0", a);
    auto& s1 = g.add<Stage>("s1", a);
    auto& sink = g.add<Consumer>(&arrivals);
    g.connect(src.out, s0.in);
    g.connect(s0.out, s1.in);
    g.connect(s1.out, sink.in);
    g.migratable(s0, {a, b});
    g.migratable(s1, {a, b});
    Mapping m;
    m.set("producer", Place::host(0));
    m.set("s0", a);
    m.set("s1", b);
    m.set("consumer", Place::host(last));
    Executor ex({.channel_capacity = 4, .balance = "greedy", .balance_period = kPeriodS, .balance_threshold = 0.1});
    if (rank == 0) std::printf("part 1: %d tokens, stages of %.1f ms, +%.1f ms on A from token %d...\n", kTokens, kStageMs,
                               kSlowMs, kSlowToken);
    RunHandle run = ex.run(g, m);
    run.wait();
    auto t = to_rank0(arrivals, rank, size);
    if (rank == 0) {
      double balanced = rate(t, 50, kSlowToken);
      int recovered = -1;
      for (int k = kSlowToken; k + 10 <= static_cast<int>(t.size()); ++k)
        if (rate(t, k, k + 10) >= 0.9 * balanced) {
          recovered = k - kSlowToken;
          break;
        }
      int settle = recovered >= 0 ? kSlowToken + recovered : kSlowToken + 20;
      double during = rate(t, kSlowToken, std::max(settle, kSlowToken + 5));
      double after = rate(t, kTokens - 200, kTokens);
      nlohmann::json decisions = nlohmann::json::array();
      for (const auto& d : run.stats().balance)
        decisions.push_back({{"at_s", d.at_seconds}, {"task", d.task}, {"from", d.from.str()}, {"to", d.to.str()},
                             {"predicted_gain", d.predicted_gain},
                             {"measured_gain", std::isnan(d.measured_gain) ? nlohmann::json() : nlohmann::json(d.measured_gain)},
                             {"reason", d.reason}});
      std::printf("  throughput: balanced %.1f, during %.1f, after %.1f tokens/s (floor: %.1f tokens/s, one stage per GPU)\n",
                  balanced, during, after, 1e3 / kStageMs);
      std::printf("  recovered to >= 90 %% after %d iterations; %zu balancer decision(s)\n", recovered, decisions.size());
      for (const auto& d : decisions) std::printf("    %s\n", d.dump().c_str());
      result.metric("imbalance", {{"tokens", kTokens}, {"slow_from_token", kSlowToken}, {"stage_ms", kStageMs},
                                  {"competing_kernel_ms", kSlowMs}, {"balance_period_s", kPeriodS},
                                  {"throughput_balanced", balanced}, {"throughput_during", during},
                                  {"throughput_after", after}, {"floor_tokens_per_s", 1e3 / kStageMs},
                                  {"ratio_after_to_floor", after / (1e3 / kStageMs)},
                                  {"iterations_to_recovery", recovered}, {"decisions", decisions}});
      result.target("iterations_to_90_percent", recovered < 0 ? 1e9 : recovered, 10, false);
    }
  } catch (const Error& e) {
    if (rank == 0) std::printf("part 1 failed: %s\n", e.what());
    if (rank == 0) result.metric("imbalance_error", e.what());
  }

  if (only == "1") {
    if (rank == 0) std::printf("part 1 only: results printed, %s left as it was\n", "migration.json");
    return 0;
  }
  // Part 2: the pause of one migration against the size of GPU-resident state, from GPU A to
  // GPU B (another rank when there are two) and, where rank 0 has two GPUs, between those.
  double bandwidth = h2d_bandwidth();
  auto pause_sweep = [&](const Place& from, const Place& to, double& worst_upto_256) {
    nlohmann::json pauses = nlohmann::json::array();
    for (std::size_t mib : {1, 4, 16, 64, 256, 1024}) {
      try {
        std::vector<double> arrivals;
        Graph g;
        auto& src = g.add<Source>(40, kPaceMs);
        auto& sum = g.add<tasks::RunningSum>("sum", (mib << 20) - kFloats * sizeof(float));
        auto& sink = g.add<Consumer>(&arrivals);
        g.connect(src.out, sum.in);
        g.connect(sum.out, sink.in);
        g.migratable(sum, {from, to});
        Mapping m;
        m.set("producer", Place::host(0));
        m.set("sum", from);
        m.set("consumer", Place::host(last));
        ExecutorOptions options{.channel_capacity = 4};
        if (const char* dir = std::getenv("WEFT_MIGRATION_TRACE"); dir && *dir)  // a timeline of each move
          options.trace_file = std::string(dir) + "/pause_" + std::to_string(from.rank) + "_" + std::to_string(to.rank) +
                               (std::getenv("WEFT_STATE_IPC") ? "_host" : "") + "_" + std::to_string(mib) + "MiB.json";
        Executor ex(options);
        RunHandle run = ex.run(g, m);
        if (rank == 0) {
          // Token 20 leaves the paced producer after 20 paces: move then.
          std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(19.5 * kPaceMs * 1e3)));
          run.migrate("sum", to);
        }
        run.wait();
        auto t = to_rank0(arrivals, rank, size);
        if (rank == 0) {
          // The gaps around the move (token 20): outputs 12 to the one before last. The last output
          // waits for the task's stop() at the end of the stream (RunningSum copies its state back
          // to the host, from pageable memory, on the copy engine that also brings that output
          // back), with or without a migration: printed apart, not a pause of the move.
          double worst = 0;
          std::size_t at = 0;  // the output after the longest gap
          for (std::size_t k = 12; k + 1 < t.size(); ++k)
            if (t[k] - t[k - 1] > worst) worst = t[k] - t[k - 1], at = k;
          const double last_gap = t.size() >= 2 ? t.back() - t[t.size() - 2] - kPaceMs * 1e-3 : 0.0;
          double pause = std::max(0.0, worst - kPaceMs * 1e-3);
          // Floor: the state copied out of GPU A and into GPU B once each (between ranks), or once
          // GPU to GPU (peer copy at the host link's rate at worst).
          double floor = (from.rank == to.rank ? 1.0 : 2.0) * static_cast<double>(mib << 20) / bandwidth;
          bool moved = same(run.effective_mapping().at("sum"), to);
          const char* ipc = std::getenv("WEFT_STATE_IPC");
          std::printf("part 2: %s -> %s%s, state %5zu MiB: pause %8.2f ms (floor %7.2f ms, ratio %.1f) before output %zu, %s; "
                      "last output %+.2f ms late (end of stream)\n",
                      from.str().c_str(), to.str().c_str(), ipc && std::string(ipc) == "0" ? " via host" : "", mib, pause * 1e3, floor * 1e3, floor > 0 ? pause / floor : 0.0,
                      at, moved ? "moved" : "NOT MOVED", last_gap * 1e3);
          pauses.push_back({{"state_mib", mib}, {"pause_ms", pause * 1e3}, {"floor_ms", floor * 1e3},
                            {"period_ms", kPaceMs}, {"moved", moved}, {"longest_gap_before_output", at},
                            {"last_output_late_ms", last_gap * 1e3}});
          if (mib <= 256) worst_upto_256 = std::max(worst_upto_256, moved ? pause : 1e9);
        }
      } catch (const Error& e) {
        if (rank == 0) std::printf("part 2, %zu MiB failed: %s\n", mib, e.what());
        if (rank == 0) pauses.push_back({{"state_mib", mib}, {"error", e.what()}});
        if (mib <= 256) worst_upto_256 = 1e9;  // the target covers states up to 256 MiB
      }
    }
    return pauses;
  };
  double worst_ranks = 0, worst_process = 0, worst_staged = 0;
  nlohmann::json across = pause_sweep(a, b, worst_ranks);
  nlohmann::json staged;  // the same between ranks through the host (what another host would get)
  if (a.rank != b.rank) {
    setenv("WEFT_STATE_IPC", "0", 1);
    reload_settings();
    staged = pause_sweep(a, b, worst_staged);
    unsetenv("WEFT_STATE_IPC");
    reload_settings();
  }
  nlohmann::json within;
  if (a.rank != b.rank && env.cluster().ranks[0].gpus.size() >= 2)
    within = pause_sweep(a, Place::cuda(1, 0), worst_process);
  if (rank == 0) {
    const char* path = "save_arrays(): the device arrays themselves; between ranks of one host through CUDA IPC "
                       "(the receiver copies an exported copy GPU to GPU); in one process a peer copy";
    result.metric("pause", {{"host_device_bandwidth", bandwidth}, {"points", across}, {"from", a.str()},
                            {"to", b.str()}, {"path", path}});
    const std::string key = a.rank != b.rank ? "between_ranks" : "one_process";
    result.target("pause_upto_256MiB_over_period_" + key, worst_ranks / (kPaceMs * 1e-3), 1.0, false);
    if (!staged.is_null())
      result.metric("pause_between_ranks_through_host",
                    {{"points", staged}, {"path", "WEFT_STATE_IPC=0: 16 MiB chunks copied out to pinned buffers, MPI, "
                                                  "copied in, pipelined (the path between hosts)"},
                     {"worst_upto_256MiB_ms", worst_staged * 1e3}});
    if (!within.is_null()) {
      result.metric("pause_one_process", {{"points", within}, {"from", a.str()}, {"to", Place::cuda(1, 0).str()}});
      result.target("pause_upto_256MiB_over_period_one_process", worst_process / (kPaceMs * 1e-3), 1.0, false);
    }
    if (only == "2") std::printf("part 2 only: results printed, %s left as it was\n", "migration.json");
    else std::printf("wrote %s\n", result.write().c_str());
  }
  return 0;
}
