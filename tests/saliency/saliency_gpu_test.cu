// GPU static pathway against the CPU path (float, FFTW) stage by stage, each stage fed the same
// input; skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "frames.hpp"
#include "weft/cuda.hpp"
#include "weft/exec/executor.hpp"
#include "weft/graph/graph.hpp"
#include "weft/tasks/saliency/tasks.hpp"
#include "weft/tasks/saliency/bank.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"

namespace weft::saliency {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

Array to_device(const Array& host, cudaStream_t stream) {
  Array d = Array::device(host.dtype(), host.shape(), 0, stream);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(d.raw(), host.raw(), host.bytes(), cudaMemcpyHostToDevice, stream));
  return d;
}
Array to_host(const Array& device, cudaStream_t stream) {
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return device.to_host();
}
/// max |gpu − cpu| / max |cpu| over f32 or f64 arrays of one shape.
double relative_error(const Array& gpu, const Array& cpu) {
  EXPECT_EQ(gpu.shape(), cpu.shape());
  double err = 0, scale = 0;
  for (std::int64_t i = 0; i < cpu.size(); ++i) {
    const double a = gpu.dtype() == DType::f64 ? gpu.data<double>()[i] : gpu.data<float>()[i];
    const double b = cpu.dtype() == DType::f64 ? cpu.data<double>()[i] : cpu.data<float>()[i];
    err = std::max(err, std::abs(a - b));
    scale = std::max(scale, std::abs(b));
  }
  return scale > 0 ? err / scale : err;
}

/// Pixels where |gpu − cpu| > tolerance · max(cpu).
std::int64_t pixels_off(const Array& gpu, const Array& cpu, float tolerance) {
  const float* a = gpu.data<float>();
  const float* b = cpu.data<float>();
  const float top = *std::max_element(b, b + cpu.size());
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < cpu.size(); ++i) off += std::abs(a[i] - b[i]) > tolerance * top;
  return off;
}
/// Pixels allowed to differ because a map value sits at the threshold step: 1 %, at least one.
std::int64_t allowed_off(std::int64_t pixels) { return std::max<std::int64_t>(1, pixels / 100); }

class StaticGpu : public ::testing::TestWithParam<std::pair<int, int>> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    WEFT_CUDA_CHECK(cudaSetDevice(0));
    WEFT_CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

TEST_P(StaticGpu, StagesMatchTheCpuPath) {
  const auto [h, w] = GetParam();
  const Array frame = test::textured_frame(h, w, 2);
  // Retina: cuFFT vs FFTW in float, 1e-5 of the largest coefficient.
  RetinaGpu retina;
  const Array spectrum_cpu = retina_cpu(frame);
  EXPECT_LT(relative_error(to_host(retina.run(to_device(frame, stream_), 0, stream_), stream_), spectrum_cpu), 1e-5);
  // Gabor groups from the CPU spectrum: 1e-4 of the largest response (float gains and FFTs).
  const Array spectrum = to_device(spectrum_cpu, stream_);
  GaborGpu first(0, 3), second(3, 3);
  const Array g0 = first.run(spectrum, 0, stream_), g1 = second.run(spectrum, 0, stream_);
  const Array g0_cpu = gabor_cpu(spectrum_cpu, 0, 3), g1_cpu = gabor_cpu(spectrum_cpu, 3, 3);
  EXPECT_LT(relative_error(to_host(g0, stream_), g0_cpu), 1e-4);
  EXPECT_LT(relative_error(to_host(g1, stream_), g1_cpu), 1e-4);
  // Interactions from the CPU responses: maps 1e-5 (same float formula), statistics 1e-5.
  const Interacted inter_cpu = interactions_cpu({g0_cpu, g1_cpu});
  const Interacted inter =
      interactions_gpu({to_device(g0_cpu, stream_), to_device(g1_cpu, stream_)}, 0, stream_);
  EXPECT_LT(relative_error(to_host(inter.maps, stream_), inter_cpu.maps), 1e-5);
  const Array stats = to_host(inter.stats, stream_);
  for (int k = 0; k < kMaps; ++k)
    for (int s = 0; s < 3; ++s)
      EXPECT_NEAR(stats.data<double>()[3 * k + s], inter_cpu.stats.data<double>()[3 * k + s],
                  1e-5 * inter_cpu.stats.data<double>()[3 * k + 1]);
  // Normalisation from the CPU maps and statistics: 1e-5 of the maximum (same float formula), except
  // where a value within rounding (FMA contraction) of the threshold falls on the other side.
  const Array salient =
      to_host(normalize_gpu(to_device(inter_cpu.maps, stream_), to_device(inter_cpu.stats, stream_), 0, stream_), stream_);
  const Array salient_cpu = normalize_cpu(inter_cpu.maps, inter_cpu.stats);
  EXPECT_LE(pixels_off(salient, salient_cpu, 1e-5f), allowed_off(salient_cpu.size()));
}

TEST_P(StaticGpu, WholePathwayMatchesTheCpuPath) {
  const auto [h, w] = GetParam();
  const Array frame = test::textured_frame(h, w, 5);
  RetinaGpu retina;
  GaborGpu bank(0, 6);
  const Array spectrum = retina.run(to_device(frame, stream_), 0, stream_);
  const Interacted inter = interactions_gpu({bank.run(spectrum, 0, stream_)}, 0, stream_);
  const Array map = crop_width(to_host(normalize_gpu(inter.maps, inter.stats, 0, stream_), stream_), w);
  const Array cpu = static_map_cpu(frame);
  // Errors accumulate through the stages and the threshold is a step: 1e-3 of the maximum on
  // all but allowed_off pixels, and the same maximum up to near-ties.
  const float* a = map.data<float>();
  const float* b = cpu.data<float>();
  const float top = *std::max_element(b, b + cpu.size());
  EXPECT_LE(pixels_off(map, cpu, 1e-3f), allowed_off(cpu.size()));
  // The GPU map's maximum is where the CPU map's is, up to near-ties.
  const auto best = std::max_element(a, a + map.size()) - a;
  EXPECT_NEAR(b[best], top, 1e-3f * top);
}

INSTANTIATE_TEST_SUITE_P(Sizes, StaticGpu,
                         ::testing::Values(std::pair{48, 64}, std::pair{33, 45}, std::pair{1, 8}, std::pair{31, 33},
                                           std::pair{32, 32}, std::pair{65, 97}, std::pair{576, 720}));

TEST(StaticGpuPopOut, OddBarPopsOut) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream = nullptr;
  WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
  test::BarCentre odd;
  const Array field = test::popout_field(128, 3, 4, odd);
  RetinaGpu retina;
  GaborGpu bank(0, 6);
  {  // device arrays ordered on `stream` drop before the stream is destroyed
    const Interacted inter = interactions_gpu({bank.run(retina.run(to_device(field, stream), 0, stream), 0, stream)}, 0, stream);
    const Array map = to_host(normalize_gpu(inter.maps, inter.stats, 0, stream), stream);
    const float* s = map.data<float>();
    const auto best = std::max_element(s, s + map.size()) - s;
    EXPECT_LE(std::abs(best / 128 - odd.y), 6);
    EXPECT_LE(std::abs(best % 128 - odd.x), 6);
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
}

constexpr int kGraphFrames = 6;

class Frames final : public Task {
 public:
  Frames(std::int64_t h, std::int64_t w) : Task("read"), h_(h), w_(w) {}
  Out<Array> out = output<Array>("out", DType::u8, 2);
  void run(Context& ctx) override {
    if (next_ == kGraphFrames) return ctx.end_stream();
    ctx.put(out, test::textured_frame(h_, w_, next_++));
  }

 private:
  std::int64_t h_, w_;
  int next_ = 0;
};
class Collect final : public Task {
 public:
  explicit Collect(std::shared_ptr<std::vector<Array>> maps) : Task("write"), maps_(std::move(maps)) {}
  In<Array> in = input<Array>("in", DType::f32, 2);
  void run(Context& ctx) override { maps_->push_back(ctx.take(in)); }

 private:
  std::shared_ptr<std::vector<Array>> maps_;
};

/// Same criterion as WholePathwayMatchesTheCpuPath, frame by frame.
void expect_close_to_cpu(const std::vector<Array>& maps, std::int64_t h, std::int64_t w) {
  ASSERT_EQ(maps.size(), static_cast<std::size_t>(kGraphFrames));
  for (int t = 0; t < kGraphFrames; ++t) {
    const Array cpu = static_map_cpu(test::textured_frame(h, w, t));
    const Array got = crop_width(maps[t].memory().is_host() ? maps[t] : maps[t].to_host(), w);
    EXPECT_LE(pixels_off(got, cpu, 1e-3f), allowed_off(cpu.size())) << "frame " << t;
  }
}

TEST(StaticGpuGraph, StagedTasksOnTheGpuMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t kH = 72, kW = 90;
  for (int groups : {1, 3, 6}) {
    Graph g;
    auto& read = g.add<Frames>(kH, kW);
    const StaticPathway path = add_static_pathway(g, groups);
    auto maps = std::make_shared<std::vector<Array>>();
    auto& sink = g.add<Collect>(maps);
    g.connect(read.out, path.retina->in);
    g.connect(path.normalize->out, sink.in);
    Mapping m;
    int gpus = 0;
    cudaGetDeviceCount(&gpus);
    for (const auto& t : g.tasks()) m.set(t->name(), Place::cuda(0));
    // With two GPUs, every other Gabor group on the second one (peer copies).
    for (int i = 0; i < groups; ++i) m.set("gabor." + std::to_string(i), Place::cuda(gpus > 1 ? i % 2 : 0));
    m.set("read", Place::host());
    m.set("write", Place::host());
    Executor executor;
    executor.run(g, m).wait();
    expect_close_to_cpu(*maps, kH, kW);
  }
}

TEST(StaticGpuGraph, FrameFarmOnTheGpusMatchesTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  constexpr std::int64_t kH = 64, kW = 80;
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  Graph g;
  auto& read = g.add<Frames>(kH, kW);
  const Farm farm = g.add_farm("static", 2, [](int i) { return std::make_unique<StaticSaliency>("static." + std::to_string(i)); });
  auto maps = std::make_shared<std::vector<Array>>();
  auto& sink = g.add<Collect>(maps);
  g.connect(read.out, farm.in());
  g.connect(farm.out(), sink.in);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host());
  m.set("static.0", Place::cuda(0));
  m.set("static.1", Place::cuda(gpus > 1 ? 1 : 0));
  Executor executor;
  executor.run(g, m).wait();
  expect_close_to_cpu(*maps, kH, kW);
}

}  // namespace
}  // namespace weft::saliency
