// GPU dynamic pathway and fusion against the CPU path, stage by stage (each stage fed the same
// input), the moving patch under a pan found on the GPU, and the fused graph on GPU 0 through the
// executor against the CPU chain; skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <vector>

#include "motion_frames.hpp"
#include "weft/cuda.hpp"
#include "weft/exec/executor.hpp"
#include "weft/graph/graph.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/tasks/saliency/tasks.hpp"

namespace weft::saliency {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
Array to_host(const Array& device, cudaStream_t stream) {
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return device.to_host();
}
/// max |a − b| over f32 or f64 arrays of one shape.
double max_difference(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double err = 0;
  for (std::int64_t i = 0; i < b.size(); ++i) {
    const double x = a.dtype() == DType::f64 ? a.data<double>()[i] : a.data<float>()[i];
    const double y = b.dtype() == DType::f64 ? b.data<double>()[i] : b.data<float>()[i];
    err = std::max(err, std::abs(x - y));
  }
  return err;
}
float max_of(const Array& a) { return *std::max_element(a.data<float>(), a.data<float>() + a.size()); }

class DynamicGpu : public ::testing::TestWithParam<std::pair<int, int>> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    WEFT_CUDA_CHECK(cudaSetDevice(0));
    WEFT_CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }
  Array up(const Array& a) { return upload_gpu(a, 0, stream_); }
  cudaStream_t stream_ = nullptr;
};

TEST_P(DynamicGpu, StagesMatchTheCpuPath) {
  const auto [h, w] = GetParam();
  {  // device arrays drop before the stream is destroyed
    const Array f0 = test::moving_patch_frame(h, w, 0, 1.5, -0.5, 2.0, 1.0, h / 3.0, w / 3.0, h / 5.0 + 2);
    const Array f1 = test::moving_patch_frame(h, w, 1, 1.5, -0.5, 2.0, 1.0, h / 3.0, w / 3.0, h / 5.0 + 2);
    for (int k : {1, 2}) {
      // Working frames: same float sums in the same order, 1e-6.
      EXPECT_LT(max_difference(to_host(motion_frame_gpu(up(f1), k, 0, stream_), stream_), motion_frame_cpu(f1, k)), 1e-6);
    }
    const Array cur = motion_frame_cpu(f1, 1), prev = motion_frame_cpu(f0, 1);
    // Dominant motion: float block sums on the GPU vs row-major double sums: 2e-3 pixels.
    const Array theta_cpu = dominant_motion_cpu(cur, prev, MotionParams{});
    const Array theta = to_host(dominant_motion_gpu(up(cur), up(prev), MotionParams{}, 0, stream_), stream_);
    EXPECT_LT(max_difference(theta, theta_cpu), 2e-3);
    EXPECT_NEAR(theta_cpu.data<double>()[0], 1.5, 0.1);  // the pan, measured at frame 1 towards frame 0
    // Compensation from the CPU θ: same formula, 1e-5 (FMA contraction).
    EXPECT_LT(max_difference(to_host(compensate_gpu(up(cur), up(prev), up(theta_cpu), 0, stream_), stream_),
                             compensate_cpu(cur, prev, theta_cpu)),
              1e-5);
    // Temporal median of 1..5 flows: 1e-6.
    std::vector<Array> flows_cpu, flows_gpu;
    for (int f = 0; f < 5; ++f) {
      Array fl = Array::host(DType::f32, Shape(h, w, 2));
      for (std::int64_t i = 0; i < fl.size(); ++i) fl.data<float>()[i] = static_cast<float>(std::sin(0.37 * i + 1.3 * f));
      flows_cpu.push_back(fl);
      flows_gpu.push_back(up(fl));
      EXPECT_LT(max_difference(to_host(temporal_median_gpu(flows_gpu, 0, stream_), stream_), temporal_median_cpu(flows_cpu)),
                1e-6);
    }
    // Dynamic map from the CPU median: 1e-5 of its maximum except values at the threshold (1 %).
    const Array median = temporal_median_cpu(flows_cpu);
    for (int k : {1, 2}) {
      const Array md_cpu = dynamic_map_cpu(median, h * k, w * k, k);
      const Array md = to_host(dynamic_map_gpu(up(median), h * k, w * k, k, 0, stream_), stream_);
      std::int64_t off = 0;
      for (std::int64_t i = 0; i < md.size(); ++i)
        off += std::abs(md.data<float>()[i] - md_cpu.data<float>()[i]) > 1e-5f * std::max(1.0f, max_of(md_cpu));
      EXPECT_LE(off, std::max<std::int64_t>(1, md.size() / 100)) << "k " << k;
    }
    // Fusion: α exact, β from double moments, 1e-5 relative to the largest fused value.
    const Array ms = static_map_cpu(f1), md = dynamic_map_cpu(median, h, w, 1);
    const Array mf_cpu = fusion_cpu(ms, md);
    const Array mf = to_host(fusion_gpu(up(ms), up(md), 0, stream_), stream_);
    EXPECT_LT(max_difference(mf, mf_cpu), 1e-5 * std::max(1.0f, max_of(mf_cpu)));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, DynamicGpu,
                         ::testing::Values(std::pair{48, 64}, std::pair{33, 45}, std::pair{31, 33}, std::pair{96, 130}));

TEST(DynamicGpuMotion, MovingPatchUnderAPanPeaksOnThePatch) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream = nullptr;
  WEFT_CUDA_CHECK(cudaSetDevice(0));
  WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    constexpr std::int64_t kH = 64, kW = 80;
    const MotionParams prm;
    std::deque<Array> flows;
    Array last, md;
    double py = 0, px = 0;
    for (int t = 0; t < 6; ++t) {
      const Array frame = test::moving_patch_frame(kH, kW, t, 2.0, -1.0, 1.5, 1.0, 18, 20, 12, &py, &px);
      const Array cur = motion_frame_gpu(upload_gpu(frame, 0, stream), 1, 0, stream);
      const Array prev = last.empty() ? cur : last;
      last = cur;
      flows.push_back(residual_flow_gpu(cur, prev, prm, 0, stream));
      if (static_cast<int>(flows.size()) > prm.median_frames) flows.pop_front();
      md = dynamic_map_gpu(temporal_median_gpu({flows.begin(), flows.end()}, 0, stream), kH, kW, 1, 0, stream);
    }
    const Array map = to_host(md, stream);
    const float* d = map.data<float>();
    const auto best = std::max_element(d, d + map.size()) - d;
    const double by = static_cast<double>(best / kW), bx = static_cast<double>(best % kW);
    EXPECT_GE(by, py - 7.0);
    EXPECT_LE(by, py + 14.0);
    EXPECT_GE(bx, px - 9.5);
    EXPECT_LE(bx, px + 14.0);
  }
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
}

class Frames final : public Task {
 public:
  explicit Frames(std::vector<Array> frames) : Task("read"), frames_(std::move(frames)) {}
  Out<Array> out = output<Array>("out", DType::u8, 2);
  void run(Context& ctx) override {
    if (next_ == frames_.size()) return ctx.end_stream();
    ctx.put(out, frames_[next_++]);
  }

 private:
  std::vector<Array> frames_;
  std::size_t next_ = 0;
};
class Collect final : public Task {
 public:
  explicit Collect(std::shared_ptr<std::vector<Array>> maps) : Task("write"), maps_(std::move(maps)) {}
  In<Array> in = input<Array>("in", DType::f32, 2);
  void run(Context& ctx) override { maps_->push_back(ctx.take(in)); }

 private:
  std::shared_ptr<std::vector<Array>> maps_;
};

TEST(DynamicGpuGraph, FusedGraphOnGpuMatchesTheCpuChain) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t kH = 72, kW = 96;
  std::vector<Array> frames;
  for (int t = 0; t < 6; ++t) frames.push_back(test::moving_patch_frame(kH, kW, t, 1.0, 0.5, 2.0, -1.0, 20, 30, 14));
  const MotionParams prm;
  const test::ChainMaps want = test::chain_cpu(frames, prm);
  for (int farm = 0; farm < 2; ++farm) {
    Graph g;
    auto& read = g.add<Frames>(frames);
    auto maps = std::make_shared<std::vector<Array>>();
    auto& sink = g.add<Collect>(maps);
    auto& fusion = g.add<Fusion>("fusion");
    Mapping m;
    if (!farm) {
      const StaticPathway s = add_static_pathway(g, 6);
      const DynamicPathway d = add_dynamic_pathway(g, prm, kH, kW);
      g.connect(read.out, s.retina->in);
      g.connect(read.out, d.input->in);
      g.connect(s.normalize->out, fusion.static_map);
      g.connect(d.map->out, fusion.dynamic_map);
    } else {
      auto& input = g.add<MotionInput>("motion.input", 1);
      const Farm f = g.add_farm("frame", 2, [&](int i) {
        return std::make_unique<FrameSaliency>("frame." + std::to_string(i), true, true, prm);
      });
      auto& median = g.add<TemporalMedian>("motion.median", prm.median_frames);
      auto& map = g.add<DynamicMap>("motion.map", kH, kW, 1);
      g.connect(read.out, input.in);
      g.connect(read.out, f.in(0));
      g.connect(input.cur, f.in(1));
      g.connect(input.prev, f.in(2));
      g.connect(f.out(0), fusion.static_map);
      g.connect(f.out(1), median.in);
      g.connect(median.out, map.in);
      g.connect(map.out, fusion.dynamic_map);
      m.set("frame.scatter", Place::host(0));
      m.set("frame.gather", Place::host(0));
    }
    g.connect(fusion.out, sink.in);
    for (const auto& t : g.tasks())
      if (t->name() != "read" && t->name() != "write" && t->name().find("scatter") == std::string::npos &&
          t->name().find("gather") == std::string::npos)
        m.set(t->name(), Place::cuda(0, 0));
    m.set("read", Place::host(0));
    m.set("write", Place::host(0));
    Executor executor(ExecutorOptions{});
    executor.run(g, m).wait();
    ASSERT_EQ(maps->size(), frames.size());
    for (std::size_t t = 0; t < frames.size(); ++t) {
      const Array got = (*maps)[t].memory().is_host() ? (*maps)[t] : (*maps)[t].to_host();
      const Array& cpu = want.fused[t];
      // GPU flow and cuFFT differ from the CPU in rounding; the fused maps agree to 5 % of their
      // maximum on 95 % of the pixels, and peak in the same place to 5 %.
      const float top = max_of(cpu);
      std::int64_t off = 0;
      for (std::int64_t i = 0; i < cpu.size(); ++i) off += std::abs(got.data<float>()[i] - cpu.data<float>()[i]) > 0.05f * top;
      EXPECT_LE(off, cpu.size() / 20) << "farm " << farm << " frame " << t;
      const auto best = std::max_element(got.data<float>(), got.data<float>() + got.size()) - got.data<float>();
      EXPECT_NEAR(cpu.data<float>()[best], top, 0.05f * top) << "farm " << farm << " frame " << t;
    }
  }
}

}  // namespace
}  // namespace weft::saliency
