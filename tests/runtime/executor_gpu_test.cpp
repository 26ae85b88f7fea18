// GPU tests of the executor (label gpu): skipped where no GPU is present.
#include <gtest/gtest.h>

#include "executor_fixture.hpp"

using namespace weft;

namespace {

int gpus() { return local_devices(0).gpus.size(); }

}  // namespace

TEST(ExecutorGpu, TenThousandTokensCpuGpuCpuCompleteInOrderAndEqualToCpu) {
  if (gpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr std::uint64_t kTokens = 10000;
  constexpr std::int64_t kLength = 1000;
  for (bool overlap : {true, false}) {
    auto on_gpu = std::make_shared<tasks::Collect::Record>();
    Graph g = test::affine_chain(kTokens, kLength, on_gpu);
    Mapping m;
    m.set("source", Place::host());
    m.set("a", Place::cuda(0));
    m.set("b", Place::cuda(0));
    m.set("sink", Place::host());
    Executor ex({.channel_capacity = 4, .overlap = overlap});
    RunHandle run = ex.run(g, m);
    run.wait();
    ASSERT_EQ(on_gpu->indices.size(), kTokens);
    for (std::uint64_t k = 0; k < kTokens; ++k) {
      ASSERT_EQ(on_gpu->indices[k], k);
      for (std::int64_t i = 0; i < kLength; i += 37)  // CPU and GPU use the same fmaf: identical bits
        ASSERT_EQ(on_gpu->arrays[k][i], test::expected(k, i, kLength, 2.0f, 1.0f, 0.5f, -3.0f)) << k << " " << i;
    }
    EXPECT_LE(run.stats().max_in_flight, 4u);
  }
}

TEST(ExecutorGpu, FanOutFanInOverTwoPlaces) {
  if (gpus() == 0) GTEST_SKIP() << "no GPU";
  constexpr std::uint64_t kTokens = 10000;
  auto rec = std::make_shared<tasks::Collect::Record>();
  Graph g = test::fan_in(kTokens, 64, rec);
  Mapping m;
  m.set("source", Place::host());
  m.set("left", Place::cuda(0));
  m.set("right", Place::host());  // GPU and CPU branches meet on the GPU
  m.set("sum", Place::cuda(gpus() > 1 ? 1 : 0));
  m.set("sink", Place::host());
  Executor ex;
  ex.run(g, m).wait();
  ASSERT_EQ(rec->indices.size(), kTokens);
  for (std::uint64_t k = 0; k < kTokens; ++k) {
    ASSERT_EQ(rec->indices[k], k);
    for (int i = 0; i < 64; i += 7) {
      float x = tasks::ArraySource::value(k, i, 64);
      ASSERT_EQ(rec->arrays[k][i], std::fma(2.0f, x, 0.0f) + std::fma(-1.0f, x, 1.0f));
    }
  }
}

TEST(ExecutorGpu, DeviceArraysComeFromThePool) {
  if (gpus() == 0) GTEST_SKIP() << "no GPU";
  Array a = Array::device(DType::f32, Shape(1000), 0, nullptr);
  EXPECT_FALSE(a.memory().is_host());
  Array h = Array::host(DType::f32, Shape(1000));
  for (int i = 0; i < 1000; ++i) h.data<float>()[i] = static_cast<float>(i);
  EXPECT_EQ(h.to_host().data<float>()[999], 999.0f);
}
