// Halo exchange between GPU slabs on one GPU: per step, one small kernel on each slab (it writes
// the slab's rows) and halo.begin + halo.end, so a step costs a launch, the exchange's copies and
// events, and the handshake between the two slab threads. Writes bench/results/halo_gpu.json.
//
//   halo_gpu_bench [--slabs 2] [--steps 5000] [--rows 64]
//
// Floor: the same kernel launched `steps` times on one stream with nothing else (the launch
// rate of the GPU and driver), measured in the same run.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "result.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

using namespace weft;
using Clock = std::chrono::steady_clock;

namespace {

__global__ void touch(float* a, std::int64_t n) {
  const std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  if (i < n) a[i] += 1.0f;
}

void launch_touch(float* a, std::int64_t n, cudaStream_t stream) {
  touch<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(a, n);
}

/// `steps` times: a kernel over the slab, then one halo exchange of one row each way.
class GpuStepper final : public SlabTask {
 public:
  GpuStepper(std::string name, int steps) : SlabTask(std::move(name), DType::f32), steps_(steps) {}
  [[nodiscard]] bool has_cpu() const override { return false; }
  [[nodiscard]] bool has_cuda() const override { return true; }
  void run_slab(Context&, Halo&) override { throw Error("GPU only"); }
  void run_slab_cuda(Context& ctx, Halo& halo) override {
    Array u = ctx.take(in);
    for (int it = 0; it < steps_; ++it) {
      launch_touch(u.data<float>(), u.size(), cuda_stream(ctx));
      halo.begin(u);
      halo.end(u);
    }
    ctx.put(out, std::move(u));
  }

 private:
  int steps_;
};

/// Seconds per step of `slabs` GPU slabs on GPU 0, over `steps` steps (after a warm-up run).
double per_step(int slabs, int steps, std::int64_t rows) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", 1, rows * slabs);
  Partition p = g.add_partition("stencil", slabs, [&](int i) {
    return std::make_unique<GpuStepper>("stencil." + std::to_string(i), steps);
  }, {.halo = 1});
  auto& sink = g.add<tasks::Collect>("sink", std::make_shared<tasks::Collect::Record>(), false);
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  for (SlabTask* t : p.slabs) g.place(*t, Place::cuda(0));
  ApiMapper pinned;
  AutoMapper automatic(DeviceChoice::cpu);
  const Mapping m = map_graph(g, Cluster{{local_devices(0)}}, {&pinned, &automatic});
  Executor ex;
  const auto t0 = Clock::now();
  ex.run(g, m).wait();
  return std::chrono::duration<double>(Clock::now() - t0).count() / steps;
}

/// Seconds per launch of the same kernel on one stream, nothing else.
double launch_floor(int steps, std::int64_t elements) {
  float* a = nullptr;
  cudaStream_t stream = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&a, static_cast<std::size_t>(elements) * sizeof(float)));
  WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < 100; ++i) launch_touch(a, elements, stream);
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) launch_touch(a, elements, stream);
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / steps;
  WEFT_CUDA_CHECK(cudaStreamDestroy(stream));
  WEFT_CUDA_CHECK(cudaFree(a));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they are printed
  Environment env(argc, argv);
  if (cuda_device_count() == 0) {
    std::printf("halo_gpu_bench: no GPU\n");
    return 0;
  }
  int slabs = 2, steps = 5000;
  std::int64_t rows = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--slabs")) slabs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
  }
  bench::Result result("halo_gpu", argc, argv);
  std::printf("warm-up run\n");
  (void)per_step(slabs, 100, rows);  // warm-up: pools, streams, the kernel's module
  std::vector<double> runs, floors;
  for (int r = 0; r < 5; ++r) {
    runs.push_back(per_step(slabs, steps, rows) * 1e6);
    floors.push_back(launch_floor(steps, rows + 2) * 1e6);
    std::printf("run %d: %.3f us per step, launch floor %.3f us\n", r + 1, runs.back(), floors.back());
  }
  const double step_us = bench::median(runs), floor_us = bench::median(floors);
  std::printf("halo exchange between %d GPU slabs on GPU 0, %lld floats each, one kernel per slab and step\n",
              slabs, static_cast<long long>(rows));
  std::printf("%-34s %10s %10s %8s\n", "measurement", "us/step", "floor us", "ratio");
  std::printf("%-34s %10.3f %10.3f %8.2f\n", "kernel + exchange per step", step_us, floor_us, step_us / floor_us);
  result.metric("slabs", slabs);
  result.metric("rows_per_slab", rows);
  result.metric("steps", steps);
  result.metric("step_us", step_us);
  result.metric("step_runs_us", runs);
  result.metric("launch_floor_us", floor_us);
  result.metric("launch_floor_runs_us", floors);
  result.target("GPU slabs on one GPU, per step with the kernels' launch <= 10 us", step_us, 10.0, false);
  std::printf("wrote %s\n", result.write().c_str());
  return 0;
}
