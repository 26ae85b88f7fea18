// Overlap of communication with computation across two ranks (run: mpirun -np 2, one GPU each).
// producer (CPU, rank 0) -> inc (GPU, rank 0) -> inc (GPU, rank 1) -> consumer (CPU, rank 1),
// 16 MiB float tokens; the increments' compute time is swept by a loop count. For each point:
// iteration time (steady state) with --overlap on and off, and the bound max(compute, each transfer).
// Also NCCL send/recv bandwidth between the two GPUs for 256 MiB. Writes bench/results/overlap.json.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "result.hpp"
#include "weft/cuda.hpp"
#include "weft/weft.hpp"
#ifdef WEFT_BENCH_NCCL
#include <nccl.h>
#endif

using namespace weft;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::int64_t kFloats = 4 << 20;  // 16 MiB

__global__ void increment_kernel(float* __restrict__ y, const float* __restrict__ x, std::int64_t n, int loops) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    float v = x[i];
    for (int k = 0; k < loops; ++k) v = v * 1.0000001f + 1e-7f;  // `loops` dependent FMAs
    y[i] = v + 1.0f;
  }
}

void launch_increment(float* y, const float* x, std::int64_t n, int loops, cudaStream_t s) {
  // One element per thread: many short blocks, so that communication kernels (NCCL) and other
  // streams' work can take SMs between them instead of waiting for the whole kernel.
  increment_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(y, x, n, loops);
  check_launch("increment_kernel", s);
}

class Producer final : public Task {
 public:
  Producer(int tokens) : Task("producer"), tokens_(tokens) {}
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    if (ctx.index() >= static_cast<std::uint64_t>(tokens_)) return ctx.end_stream();
    Array a = Array::host(DType::f32, Shape(kFloats));  // pooled: contents only stamped
    a.data<float>()[0] = static_cast<float>(ctx.index());
    ctx.put(out, std::move(a));
  }

 private:
  int tokens_;
};

class Increment final : public Task {
 public:
  Increment(std::string name, int loops) : Task(std::move(name)), loops_(loops) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context&) override { throw Error("increment runs on GPUs only"); }
  bool has_cpu() const override { return false; }
  bool has_cuda() const override { return true; }
  void run_cuda(Context& ctx) override {
    Array x = ctx.take(in);
    Array y = ctx.alloc(DType::f32, x.shape());
    launch_increment(y.data<float>(), x.data<float>(), x.size(), loops_, cuda_stream(ctx));
    ctx.put(out, std::move(y));
  }

 private:
  int loops_;
};

class Consumer final : public Task {
 public:
  Consumer() : Task("consumer") {}
  In<Array> in = input<Array>("in", DType::f32);
  void run(Context& ctx) override {
    last_ = ctx.take(in).data<float>()[0];
    arrivals.push_back(Clock::now());
  }
  float last_ = 0;
  std::vector<Clock::time_point> arrivals;  // when each token was consumed
};

double seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Timing {
  double per_token = 0;  // the whole run (start-up, filling and draining the pipeline included) / tokens
  double iteration = 0;  // steady state: time between consecutive tokens at the consumer, after the first fifth
};

Timing run_pipeline(int tokens, int loops, bool overlap, int gpu_rank1, const std::string& trace = "") {
  Graph g;
  auto& p = g.add<Producer>(tokens);
  auto& a = g.add<Increment>("inc0", loops);
  auto& b = g.add<Increment>("inc1", loops);
  auto& c = g.add<Consumer>();
  g.connect(p.out, a.in);
  g.connect(a.out, b.in);
  g.connect(b.out, c.in);
  Mapping m;
  m.set("producer", Place::host(0));
  m.set("inc0", Place::cuda(0, 0));
  m.set("inc1", Place::cuda(gpu_rank1, 1));
  m.set("consumer", Place::host(1));
  // Pools kept between runs: the warm-up run grows them, the timed run only reuses them.
  static const int capacity = std::getenv("WEFT_OVERLAP_CAPACITY") ? std::atoi(std::getenv("WEFT_OVERLAP_CAPACITY")) : 2;
  Executor ex({.channel_capacity = capacity, .overlap = overlap, .trace_file = trace, .trim_pools = false});
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = Clock::now();
  ex.run(g, m).wait();
  double t = seconds(t0);
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  double iteration = 0;  // measured on rank 1, where the consumer runs
  const auto& at = c.arrivals;
  if (at.size() >= 10) {
    const std::size_t first = at.size() / 5;
    iteration = std::chrono::duration<double>(at.back() - at[first]).count() / static_cast<double>(at.size() - 1 - first);
  }
  MPI_Allreduce(MPI_IN_PLACE, &iteration, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return {t / tokens, iteration};
}

// Times one increment kernel on this rank's GPU (events, median of 5).
double kernel_seconds(int loops) {
  float *x, *y;
  WEFT_CUDA_CHECK(cudaMalloc(&x, kFloats * 4));
  WEFT_CUDA_CHECK(cudaMalloc(&y, kFloats * 4));
  WEFT_CUDA_CHECK(cudaMemset(x, 0, kFloats * 4));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    cudaEventRecord(e0);
    launch_increment(y, x, kFloats, loops, nullptr);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i) t.push_back(ms / 1e3);
  }
  cudaFree(x);
  cudaFree(y);
  return bench::median(t);
}

double copy_seconds(cudaMemcpyKind kind) {
  float* d;
  float* h;
  WEFT_CUDA_CHECK(cudaMalloc(&d, kFloats * 4));
  WEFT_CUDA_CHECK(cudaMallocHost(&h, kFloats * 4));
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) {
    auto t0 = Clock::now();
    if (kind == cudaMemcpyHostToDevice) cudaMemcpy(d, h, kFloats * 4, kind);
    else cudaMemcpy(h, d, kFloats * 4, kind);
    if (i) t.push_back(seconds(t0));
  }
  cudaFree(d);
  cudaFreeHost(h);
  return bench::median(t);
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  if (env.size() != 2) {
    if (env.rank() == 0) std::fprintf(stderr, "overlap_bench: run with mpirun -np 2 (one GPU per rank)\n");
    return 2;
  }
  int gpus1 = static_cast<int>(env.cluster().ranks[1].gpus.size());
  if (env.cluster().ranks[0].gpus.empty() || gpus1 == 0) {
    if (env.rank() == 0) std::fprintf(stderr, "overlap_bench: both ranks need a GPU\n");
    return 2;
  }
  // Rank 1 uses its second GPU when it sees two (both ranks on one host with 2 GPUs visible).
  int gpu_rank1 = gpus1 > 1 ? 1 : 0;
  WEFT_CUDA_CHECK(cudaSetDevice(env.rank() == 1 ? gpu_rank1 : 0));
  bool distinct = env.cluster().ranks[0].gpus[0].uuid != env.cluster().ranks[1].gpus[gpu_rank1].uuid;

  double h2d = copy_seconds(cudaMemcpyHostToDevice), d2h = copy_seconds(cudaMemcpyDeviceToHost);
  double nccl_gbps = 0, nccl_16mib = 0;
#ifdef WEFT_BENCH_NCCL
  if (distinct) {
    ncclUniqueId id;
    if (env.rank() == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    ncclCommInitRank(&comm, 2, id, env.rank());
    for (std::size_t bytes : {std::size_t(256) << 20, std::size_t(kFloats) * 4}) {
      void* buf;
      WEFT_CUDA_CHECK(cudaMalloc(&buf, bytes));
      std::vector<double> t;
      for (int i = 0; i < 6; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        auto t0 = Clock::now();
        if (env.rank() == 0) ncclSend(buf, bytes, ncclUint8, 1, comm, nullptr);
        else ncclRecv(buf, bytes, ncclUint8, 0, comm, nullptr);
        cudaStreamSynchronize(nullptr);
        double s = seconds(t0);
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i) t.push_back(s);
      }
      if (bytes == (std::size_t(256) << 20)) nccl_gbps = bytes / bench::median(t) / 1e9;
      else nccl_16mib = bench::median(t);
      cudaFree(buf);
    }
    ncclCommDestroy(comm);
  }
#endif

  bench::Result result("overlap", argc, argv);
  std::vector<int> sweep = {1, 200, 800, 1600, 1800, 2400, 3200, 6400};
  if (const char* only = std::getenv("WEFT_OVERLAP_LOOPS")) {  // a few points only (diagnosis)
    sweep.clear();
    for (const char* c = only; *c;) {
      char* end = nullptr;
      sweep.push_back(static_cast<int>(std::strtol(c, &end, 10)));
      c = *end ? end + 1 : end;
    }
  }
  const bool verbose = std::getenv("WEFT_OVERLAP_VERBOSE") != nullptr;
  nlohmann::json points = nlohmann::json::array();
  double worst_ratio = 0, best_speedup_fraction = 0;
  if (env.rank() == 0)
    std::printf("%8s %10s %10s %10s %10s %10s %10s %8s %8s\n", "loops", "kernel ms", "bound ms", "on ms", "on run ms",
                "off ms", "on/bound", "speedup", "of max");
  double balanced_fraction = 0, balanced_gap = 1e30;
  for (int loops : sweep) {
    double k = kernel_seconds(loops);
    MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double link = distinct && nccl_16mib > 0 ? nccl_16mib : h2d + d2h;  // rank to rank
    double bound = std::max({k, h2d, d2h, link});
    // Overlap off does one transfer or computation at a time on each rank (ranks still work at
    // once): rank 0 copies in, increments and sends; rank 1 increments and copies out (its
    // receive is the sender's transfer). Overlap on can at best run at the slowest stage.
    double serial_rank = std::max(h2d + k + link, k + d2h);
    double serial_chain = k * 2 + h2d + d2h + link;  // everything one after the other (for reference)
    const int tokens = 100;
    // Warm-up with as many tokens: the pinned and device pools grow to the run's working set
    // here, not inside the timed run.
    run_pipeline(tokens, loops, true, gpu_rank1);
    run_pipeline(tokens, loops, false, gpu_rank1);
    // Three runs each, the median kept: one stall of a few milliseconds (another process, the OS)
    // in a run of 100 tokens would otherwise move the steady-state figure by several percent.
    auto median_of_3 = [&](bool overlap) {
      std::vector<Timing> t;
      for (int i = 0; i < 3; ++i) t.push_back(run_pipeline(tokens, loops, overlap, gpu_rank1));
      if (verbose && env.rank() == 0)
        std::printf("  %d loops, overlap %s: steady %.3f %.3f %.3f ms, whole run %.3f %.3f %.3f ms\n", loops,
                    overlap ? "on" : "off", t[0].iteration * 1e3, t[1].iteration * 1e3, t[2].iteration * 1e3,
                    t[0].per_token * 1e3, t[1].per_token * 1e3, t[2].per_token * 1e3);
      std::sort(t.begin(), t.end(), [](const Timing& a, const Timing& b) { return a.iteration < b.iteration; });
      return t[1];
    };
    Timing on = median_of_3(true);
    Timing off = median_of_3(false);
    double speedup = off.iteration / on.iteration, max_speedup = serial_rank / bound;
    if (env.rank() == 0)
      std::printf("%8d %10.3f %10.3f %10.3f %10.3f %10.3f %10.2f %8.2f %8.2f\n", loops, k * 1e3, bound * 1e3,
                  on.iteration * 1e3, on.per_token * 1e3, off.iteration * 1e3, on.iteration / bound, speedup,
                  speedup / max_speedup);
    points.push_back({{"loops", loops}, {"kernel_ms", k * 1e3}, {"bound_ms", bound * 1e3},
                      {"overlap_on_ms", on.iteration * 1e3}, {"overlap_on_per_token_whole_run_ms", on.per_token * 1e3},
                      {"overlap_off_ms", off.iteration * 1e3}, {"overlap_off_per_token_whole_run_ms", off.per_token * 1e3},
                      {"on_over_bound", on.iteration / bound}, {"whole_run_on_over_bound", on.per_token / bound},
                      {"speedup", speedup}, {"max_speedup", max_speedup},
                      {"serial_per_rank_ms", serial_rank * 1e3}, {"serial_chain_ms", serial_chain * 1e3},
                      {"speedup_over_serial_chain", serial_chain / on.iteration}});
    worst_ratio = std::max(worst_ratio, on.iteration / bound);
    best_speedup_fraction = std::max(best_speedup_fraction, speedup / max_speedup);
    // "Balanced": the point where the kernel is closest to the slowest transfer.
    double gap = std::abs(k - std::max({h2d, d2h, link}));
    if (gap < balanced_gap) {
      balanced_gap = gap;
      balanced_fraction = speedup / max_speedup;
    }
  }
  // WEFT_OVERLAP_TRACE=FILE: one more run with overlap on at the balanced point, traced (the
  // merged timeline shows which copy, kernel or send each iteration waits for).
  if (const char* trace = std::getenv("WEFT_OVERLAP_TRACE"); trace && *trace) {
    const char* n = std::getenv("WEFT_OVERLAP_TRACE_TOKENS");
    const char* l = std::getenv("WEFT_OVERLAP_TRACE_LOOPS");
    const int tokens = n ? std::atoi(n) : 20, loops = l ? std::atoi(l) : 1800;
    const char* r = std::getenv("WEFT_OVERLAP_TRACE_RUNS");
    const int runs = r ? std::atoi(r) : 1;
    for (int i = 0; i < runs; ++i) {
      const std::string file = runs == 1 ? std::string(trace) : std::string(trace) + "." + std::to_string(i) + ".json";
      Timing t = run_pipeline(tokens, loops, true, gpu_rank1, file);
      if (env.rank() == 0)
        std::printf("trace of %d tokens at %d loops, overlap on (steady %.3f ms, traced): %s\n", tokens, loops,
                    t.iteration * 1e3, file.c_str());
    }
  }
  if (env.rank() == 0) {
    result.metric("points", points);
    result.metric("h2d_16MiB_ms", h2d * 1e3);
    result.metric("d2h_16MiB_ms", d2h * 1e3);
    result.metric("nccl_256MiB_GBps", nccl_gbps);
    result.metric("nccl_16MiB_ms", nccl_16mib * 1e3);
    result.metric("distinct_gpus", distinct);
    result.target("overlap on within 1.1x of max(compute, transfers) at every point", worst_ratio, 1.1, false);
    result.metric("best_speedup_fraction_of_max", best_speedup_fraction);
    result.metric("iteration_time", "steady state: time between consecutive tokens at the consumer, after the first fifth "
                                    "of 100 tokens, median of 3 runs; whole-run figures (of that run) beside it");
    result.metric("overlap_off", "one transfer or computation at a time on each rank; maximum speed-up = "
                                 "max(h2d + kernel + link, kernel + d2h) / bound");
    result.target("speed-up over overlap off reaches 0.95 of its maximum where compute and transfers are balanced",
                  balanced_fraction, 0.95, true);
    result.write();
  }
  return 0;
}
