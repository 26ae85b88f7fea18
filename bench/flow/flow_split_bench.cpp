// Split flow benchmark (`weft flow --split`): one large synthetic frame pair (u8, default 8192 x
// 8192) through the split graph with 1 strip on GPU 0 and with one strip per GPU of this process:
// ms per pair (steady state over 3 pairs), speed-up, and the largest difference of the split flow
// to compute_cuda on one GPU. TV-L1 defaults (epsilon 0.01: the one-iteration kernels), then the
// same without the texture part (which every strip computes on the whole frame). Also the time of
// one compute_cuda call on GPU 0 (host frames, after a warm-up call), the split graph's baseline.
// Writes bench/results/flow_split.json. No target: the issue names none for --split.
// Usage: flow_split_bench [SIZE]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "result.hpp"
#include "weft/cuda.hpp"
#include "weft/exec/executor.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/split.hpp"

namespace {
using namespace weft;
using flow::FlowParams;
using Clock = std::chrono::steady_clock;

// flow_bench's texture (128 + 50 sin(0.31 X + 0.13 Y) + 40 cos(0.23 Y - 0.17 X), X, Y scaled to
// 640 x 480) through the angle-sum formulas: tables per column and row, for 8192^2 frames.
Array texture(int w, int h, double dx, double dy) {
  std::vector<double> sa(w), ca(w), sc(w), cc(w), sb(h), cb(h), sd(h), cd(h);
  for (int x = 0; x < w; ++x) {
    const double X = (x - dx) * 640.0 / w;
    sa[x] = std::sin(0.31 * X), ca[x] = std::cos(0.31 * X), sc[x] = std::sin(-0.17 * X), cc[x] = std::cos(-0.17 * X);
  }
  for (int y = 0; y < h; ++y) {
    const double Y = (y - dy) * 480.0 / h;
    sb[y] = std::sin(0.13 * Y), cb[y] = std::cos(0.13 * Y), sd[y] = std::sin(0.23 * Y), cd[y] = std::cos(0.23 * Y);
  }
  Array a = Array::host(DType::u8, Shape(h, w));
  auto* p = a.data<std::uint8_t>();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      p[static_cast<long>(y) * w + x] = static_cast<std::uint8_t>(128 + 50 * (sa[x] * cb[y] + ca[x] * sb[y]) +
                                                                  40 * (cd[y] * cc[x] - sd[y] * sc[x]));
  return a;
}

class RepeatPair final : public Task {
 public:
  RepeatPair(Array a, Array b, int pairs) : Task("frames"), a_(std::move(a)), b_(std::move(b)), pairs_(pairs) {}
  Out<Array> frame0 = output<Array>("frame0", std::nullopt, 2);
  Out<Array> frame1 = output<Array>("frame1", std::nullopt, 2);
  void run(Context& ctx) override {
    if (ctx.index() >= static_cast<std::uint64_t>(pairs_)) return ctx.end_stream();
    ctx.put(frame0, a_);
    ctx.put(frame1, b_);
  }

 private:
  Array a_, b_;
  int pairs_;
};

class Arrivals final : public Task {
 public:
  Arrivals(std::shared_ptr<std::vector<Clock::time_point>> times, std::shared_ptr<Array> last)
      : Task("sink"), times_(std::move(times)), last_(std::move(last)) {}
  In<Array> flow = input<Array>("flow", DType::f32, 3);
  void run(Context& ctx) override {
    const Array f = ctx.take(flow);
    times_->push_back(Clock::now());
    *last_ = f.memory().is_host() ? f : f.to_host();
  }

 private:
  std::shared_ptr<std::vector<Clock::time_point>> times_;
  std::shared_ptr<Array> last_;
};

// Seconds per pair between the first and the last of `pairs` flows, strips on GPUs 0..strips-1.
double split_seconds_per_pair(const Array& a, const Array& b, const FlowParams& p, int strips, int pairs, Array& flow) {
  Graph g;
  auto& src = g.add<RepeatPair>(a, b, pairs);
  auto times = std::make_shared<std::vector<Clock::time_point>>();
  auto last = std::make_shared<Array>();
  auto& sink = g.add<Arrivals>(times, last);
  const flow::SplitFlow split = flow::add_split_flow(g, "flow", strips, p);
  flow::connect_split_flow(g, split, src.frame0, src.frame1);
  g.connect(split.partition.out(), sink.flow);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host());
  for (int i = 0; i < strips; ++i) m.set(split.strips[i]->name(), Place::cuda(i));
  m.set("flow.split", Place::cuda(0));
  m.set("flow.join", Place::cuda(0));
  Executor ex({.channel_capacity = 2});
  ex.run(g, m).wait();
  flow = *last;
  return std::chrono::duration<double>(times->back() - times->front()).count() / double(times->size() - 1);
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 8192;
  bench::Result result("flow_split", argc, argv);
  int gpus = 0;
  WEFT_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  const Array a = texture(size, size, 0, 0), b = texture(size, size, 1.5, 0.7);
  result.metric("size", std::to_string(size) + "x" + std::to_string(size));
  result.metric("gpus", gpus);
  result.metric("setting", "tvl1 fp32 u8 frames from host memory; strips flow.<i> on gpu:i, split and join on gpu:0; "
                           "ms per pair between the first and third of 3 pairs");
  nlohmann::json rows = nlohmann::json::array();
  for (double texture_part : {0.95, 0.0}) {
    FlowParams p = flow::default_params(flow::Method::tvl1);
    p.texture = texture_part;
    const std::string name = texture_part > 0 ? "defaults" : "defaults, texture 0";
    cudaStream_t s;
    WEFT_CUDA_CHECK(cudaSetDevice(0));
    WEFT_CUDA_CHECK(cudaStreamCreate(&s));
    (void)flow::compute_cuda(a, b, p, s).to_host();  // warm-up
    const auto t0 = Clock::now();
    const Array whole = flow::compute_cuda(a, b, p, s).to_host();
    WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
    const double direct = std::chrono::duration<double>(Clock::now() - t0).count();
    WEFT_CUDA_CHECK(cudaStreamDestroy(s));
    Array one_flow, split_flow;
    const double one = split_seconds_per_pair(a, b, p, 1, 3, one_flow);
    const double all = gpus > 1 ? split_seconds_per_pair(a, b, p, gpus, 3, split_flow) : one;
    if (gpus <= 1) split_flow = one_flow;
    double max_diff = 0;
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < whole.size(); ++i) {
      const double d = std::fabs(double(split_flow.data<float>()[i]) - whole.data<float>()[i]);
      max_diff = std::max(max_diff, d);
      differ += d != 0;
    }
    std::printf("%s %dx%d: compute_cuda %.1f ms; 1 GPU %.1f ms per pair, %d GPUs %.1f ms (%.2fx); split vs one GPU: max |diff| %.3g, %lld "
                "values differ\n",
                name.c_str(), size, size, 1e3 * direct, 1e3 * one, gpus, 1e3 * all, one / all, max_diff, static_cast<long long>(differ));
    std::fflush(stdout);
    rows.push_back({{"setting", name}, {"ms_compute_cuda_1gpu", 1e3 * direct}, {"ms_per_pair_1gpu", 1e3 * one}, {"ms_per_pair_split", 1e3 * all},
                    {"split_gpus", gpus}, {"speedup", one / all}, {"max_abs_diff_vs_one_gpu", max_diff},
                    {"values_differing", differ}});
  }
  result.metric("split", rows);
  std::printf("wrote %s\n", result.write().c_str());
  return 0;
}
