// Runtime overhead per task: a long chain of empty CPU tasks, and of GPU tasks launching one
// empty kernel each. Writes bench/results/runtime-overhead.json.
//
// Measures, for a chain Counter → L × PassThrough → CountSink over T integer tokens:
//   cost per task firing = wall time / (T × L)   (the chain is pipelined: tasks run concurrently)
// Floors, measured on the same machine: a CPU firing cannot cost less than handing a token
// through one channel (push + pop on one thread); a GPU firing cannot cost less than one kernel
// launch (measured in a tight loop on one stream).
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "result.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"
#ifdef WEFT_HAVE_CUDA
#include "weft/cuda.hpp"
#endif

using namespace weft;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct ChainResult {
  double per_task_us;
  double wall_s;
  bool complete;
};

ChainResult run_chain(int length, std::int64_t tokens, bool gpu, int capacity) {
  Graph g;
  auto& src = g.add<tasks::Counter>("source", tokens);
  auto seen = std::make_shared<std::atomic<std::int64_t>>(0);
  auto ordered = std::make_shared<std::atomic<bool>>(true);
  Out<std::int64_t> prev = src.out;
  Mapping m;
  m.set("source", Place::host());
  for (int i = 0; i < length; ++i) {
    auto& t = g.add<tasks::PassThrough>("pass" + std::to_string(i), true);
    g.connect(prev, t.in);
    prev = t.out;
    m.set(t.name(), gpu ? Place::cuda(0) : Place::host());
  }
  auto& sink = g.add<tasks::CountSink>("sink", seen, ordered);
  g.connect(prev, sink.in);
  m.set("sink", Place::host());
  Executor ex({.channel_capacity = capacity});
  auto t0 = Clock::now();
  ex.run(g, m).wait();
  double wall = seconds_since(t0);
  return {wall * 1e6 / (static_cast<double>(tokens) * length), wall, *seen == tokens && *ordered};
}

double channel_floor_us() {
  // One push and one pop through a bounded channel on one thread, the least a firing costs.
  constexpr int kIters = 1000000;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::int64_t> q;
  auto t0 = Clock::now();
  for (int i = 0; i < kIters; ++i) {
    {
      std::lock_guard lock(mu);
      q.push_back(i);
    }
    cv.notify_one();
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return !q.empty(); });
      q.pop_front();
    }
    cv.notify_one();
  }
  return seconds_since(t0) * 1e6 / kIters;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Result result("runtime-overhead", argc, argv);
  const int kLength = 8;
  const std::int64_t kCpuTokens = std::getenv("WEFT_BENCH_QUICK") ? 20000 : 200000;
  double floor_cpu = channel_floor_us();
  run_chain(kLength, kCpuTokens / 10, false, 16);  // warm-up
  ChainResult cpu = run_chain(kLength, kCpuTokens, false, 16);
  ChainResult cpu_cap1 = run_chain(kLength, kCpuTokens / 4, false, 1);
  std::printf("%-44s %12s %12s %10s\n", "measurement", "us/task", "floor us", "ratio");
  std::printf("%-44s %12.3f %12.3f %10.2f\n", "CPU chain of 8 empty tasks (capacity 16)", cpu.per_task_us, floor_cpu,
              cpu.per_task_us / floor_cpu);
  std::printf("%-44s %12.3f %12.3f %10.2f\n", "CPU chain of 8 empty tasks (capacity 1)", cpu_cap1.per_task_us,
              floor_cpu, cpu_cap1.per_task_us / floor_cpu);
  result.metric("cpu_chain_length", kLength);
  result.metric("cpu_tokens", kCpuTokens);
  result.metric("cpu_us_per_task", cpu.per_task_us);
  result.metric("cpu_us_per_task_capacity1", cpu_cap1.per_task_us);
  result.metric("cpu_floor_us_channel_handoff", floor_cpu);
  result.metric("cpu_complete_and_ordered", cpu.complete && cpu_cap1.complete);
  result.target("CPU task dispatch <= 2 us", cpu.per_task_us, 2.0, false);
  int gpus = static_cast<int>(local_devices(0).gpus.size());
#ifdef WEFT_HAVE_CUDA
  if (gpus > 0) {
    const std::int64_t kGpuTokens = std::getenv("WEFT_BENCH_QUICK") ? 5000 : 50000;
    // Floor: empty kernels launched back to back on one stream.
    cudaStream_t s;
    WEFT_CUDA_CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < 1000; ++i) tasks::cuda::empty(s);
    WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
    constexpr int kLaunches = 100000;
    auto t0 = Clock::now();
    for (int i = 0; i < kLaunches; ++i) tasks::cuda::empty(s);
    WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
    double floor_gpu = seconds_since(t0) * 1e6 / kLaunches;
    // How launches from several threads share the driver: 8 threads, one stream or one each.
    for (bool own_stream : {false, true}) {
      std::vector<cudaStream_t> streams(kLength, s);
      if (own_stream)
        for (auto& st : streams) WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      constexpr int kPerThread = 20000;
      auto t1 = Clock::now();
      std::vector<std::thread> threads;
      for (int t = 0; t < kLength; ++t)
        threads.emplace_back([&, t] {
          WEFT_CUDA_CHECK(cudaSetDevice(0));
          for (int i = 0; i < kPerThread; ++i) tasks::cuda::empty(streams[t]);
        });
      for (auto& th : threads) th.join();
      WEFT_CUDA_CHECK(cudaDeviceSynchronize());
      double us = seconds_since(t1) * 1e6 / (kPerThread * kLength);
      std::printf("%-44s %12.3f\n", own_stream ? "8 threads, own streams: us per launch" : "8 threads, one stream: us per launch", us);
      result.metric(own_stream ? "gpu_us_per_launch_8threads_own_streams" : "gpu_us_per_launch_8threads_one_stream", us);
      // Each task launches on its own stream from its own thread: the fastest launch rate seen
      // is the floor of a task firing.
      floor_gpu = std::min(floor_gpu, us);
    }
    run_chain(kLength, kGpuTokens / 10, true, 16);  // warm-up (streams, pools)
    ChainResult gpu = run_chain(kLength, kGpuTokens, true, 16);
    std::printf("%-44s %12.3f %12.3f %10.2f\n", "GPU chain of 8 empty-kernel tasks", gpu.per_task_us, floor_gpu,
                gpu.per_task_us / floor_gpu);
    result.metric("gpu_tokens", kGpuTokens);
    result.metric("gpu_us_per_task", gpu.per_task_us);
    result.metric("gpu_floor_us_kernel_launch", floor_gpu);
    result.metric("gpu_complete_and_ordered", gpu.complete);
    result.target("GPU task (kernel launch included) <= 5 us", gpu.per_task_us, 5.0, false);
  }
#endif
  if (gpus == 0) std::printf("no GPU: GPU chain not measured\n");
  result.metric("cpu_cores", local_devices(0).cpu_cores);
  result.write();
  return 0;
}
