// CPU tests of the optical flow methods: analytic cases, float path against the double reference,
// bad input, colour coding, the task, and EPE on the shared Middlebury/Sintel pairs.
#include <gtest/gtest.h>

#include <cmath>

#include "flow_test_util.hpp"
#include "weft/tasks/flow/colour.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/task.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"

namespace weft::flow {
namespace {

using test::pattern;

// Small, quick settings for the synthetic cases.
FlowParams small(Method m) {
  FlowParams p = default_params(m);
  p.scales = 3;
  p.warps = 3;
  p.iterations = 60;
  return p;
}

class Methods : public ::testing::TestWithParam<Method> {};
INSTANTIATE_TEST_SUITE_P(Flow, Methods, ::testing::Values(Method::hs, Method::tvl1, Method::clg),
                         [](const auto& info) { return std::string(method_name(info.param)); });

TEST_P(Methods, ZeroMotionGivesZeroFlow) {
  const Array a = pattern(64, 48);
  const Array f = compute(a, a, small(GetParam()));
  ASSERT_EQ(f.shape(), Shape(48, 64, 2));
  for (std::int64_t i = 0; i < f.size(); ++i) ASSERT_NEAR(f.data<float>()[i], 0.f, 1e-3f) << i;
}

TEST_P(Methods, ConstantImageGivesZeroFlowWithoutNaN) {
  const Array a = test::constant(40, 30, 77), b = test::constant(40, 30, 77);
  for (const Array& f : {compute(a, b, small(GetParam())), compute_reference(a, b, small(GetParam()))})
    for (std::int64_t i = 0; i < f.size(); ++i) ASSERT_EQ(f.data<float>()[i], 0.f) << i;
}

// Pure translation by (1.6, -0.9) pixels: the interior mean flow is within 0.05 px of it.
TEST_P(Methods, RecoversPureTranslation) {
  const Array a = pattern(96, 72), b = pattern(96, 72, 1.6, -0.9);
  double u, v;
  bool finite;
  test::mean_interior(compute(a, b, small(GetParam())), 12, u, v, finite);
  EXPECT_TRUE(finite);
  EXPECT_NEAR(u, 1.6, 0.05);
  EXPECT_NEAR(v, -0.9, 0.05);
}

// The multi-threaded float path follows the double reference: mean |difference| <= 1e-5 px and
// max <= 1e-3 px (measured: mean <= 6e-7, max <= 3e-5; TV-L1 thresholding is discontinuous, so
// single pixels may differ more than the mean).
TEST_P(Methods, FloatPathMatchesDoubleReference) {
  const Array a = pattern(64, 48), b = pattern(64, 48, 2.3, 1.1);
  const FlowParams p = small(GetParam());
  const test::Diff d = test::diff(compute(a, b, p), compute_reference(a, b, p));
  EXPECT_LE(d.mean, 1e-5) << "max " << d.max;
  EXPECT_LE(d.max, 1e-3);
  EXPECT_GT(d.scale, 1.0);
}

TEST(FlowInput, FramesOfDifferentSizesAreRejected) {
  EXPECT_THROW((void)compute(pattern(32, 24), pattern(32, 25), FlowParams{}), ConfigError);
}

TEST(FlowInput, OnePixelImageIsRejected) {
  try {
    (void)compute(pattern(1, 1), pattern(1, 1), FlowParams{});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
  }
}

TEST(FlowInput, ColourOrVolumeArraysAreRejected) {
  const Array rgb = Array::host(DType::u8, Shape(8, 8, 3));
  EXPECT_THROW((void)compute(rgb, rgb, FlowParams{}), ConfigError);
}

TEST(FlowInput, MissingFileIsAnIoError) {
  EXPECT_THROW((void)io::read_image("/nonexistent/frame.png"), IoError);
}

TEST(FlowParams, BadValuesNameTheParameter) {
  FlowParams p;
  p.zoom = 1.5;
  try {
    validate(p);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("zoom"), std::string::npos);
  }
  EXPECT_THROW((void)parse_method("lucas"), ConfigError);
  EXPECT_THROW((void)parse_precision("fp8"), ConfigError);
  EXPECT_EQ(parse_method("clg"), Method::clg);
}

TEST(FlowColour, ZeroFlowIsWhiteAndRightIsRed) {
  Array f = Array::host(DType::f32, Shape(1, 2, 2));
  float* p = f.data<float>();
  p[0] = p[1] = 0;
  p[2] = 1, p[3] = 0;  // motion to the right, at full scale
  const auto rgb = flow_to_color(f, 1.0);
  EXPECT_EQ(rgb[0], 255);
  EXPECT_EQ(rgb[1], 255);
  EXPECT_EQ(rgb[2], 255);
  EXPECT_EQ(rgb[3], 255);  // red
  EXPECT_LT(rgb[4], 10);
  EXPECT_LT(rgb[5], 10);
}

// A minimal context to fire the task outside a graph.
class FakeContext : public Context {
 public:
  std::vector<Value> in, out{Value{}};
  Array alloc(DType t, Shape s) override { return Array::host(t, s); }
  void end_stream() override {}
  std::uint64_t index() const override { return 0; }
  const Place& place() const override { return place_; }
  void* stream() const override { return nullptr; }
  const Task& task() const override { return *task_; }
  Task* task_ = nullptr;

 protected:
  Value& input_value(int i) override { return in[i]; }
  void put_value(int i, Value v) override { out[i] = std::move(v); }

 private:
  Place place_{};
};

TEST(FlowTask, FiresOncePerPair) {
  OpticalFlow task(small(Method::tvl1));
  FakeContext ctx;
  ctx.task_ = &task;
  ctx.in = {Value(pattern(48, 32)), Value(pattern(48, 32, 1, 0))};
  task.run(ctx);
  const Array f = std::get<Array>(ctx.out[0]);
  EXPECT_EQ(f.shape(), Shape(32, 48, 2));
  EXPECT_EQ(task.outputs()[0].dtype, DType::f32);
}

// EPE on the shared pairs with the CPU float path at each method's defaults. tvl1: the issue's
// 0.17 on RubberWhale and Hydrangea (measured 0.122 and 0.148; OpenCV DualTVL1 0.156 and 0.194),
// Sintel easy within its 0.75 (measured 0.229; OpenCV 0.696), bounded here at 0.24. hs and clg on
// RubberWhale: measured 0.212 and 0.210, bounded at 0.235.
struct EpeCase {
  Method method;
  int pair;
  double bound;
};
class SharedPairs : public ::testing::TestWithParam<EpeCase> {};
INSTANTIATE_TEST_SUITE_P(Flow, SharedPairs,
                         ::testing::Values(EpeCase{Method::tvl1, 0, 0.17}, EpeCase{Method::tvl1, 1, 0.17},
                                           EpeCase{Method::tvl1, 2, 0.24}, EpeCase{Method::hs, 0, 0.235},
                                           EpeCase{Method::clg, 0, 0.235}),
                         [](const auto& info) {
                           return std::string(method_name(info.param.method)) + "_" + test::kPairs[info.param.pair].name;
                         });

TEST_P(SharedPairs, EndPointErrorWithinBound) {
  if (!test::have_shared_data()) GTEST_SKIP() << "no shared data at " << test::shared_flow_data();
  const auto& pr = test::kPairs[GetParam().pair];
  const std::string root = test::shared_flow_data() + "/";
  const Array f = compute(io::read_image(root + pr.frame0), io::read_image(root + pr.frame1), default_params(GetParam().method));
  const double epe = endpoint_error(f, io::read_flo(root + pr.truth));
  RecordProperty("epe", std::to_string(epe));
  std::printf("%s %s EPE %.4f\n", std::string(method_name(GetParam().method)).c_str(), pr.name, epe);
  EXPECT_LE(epe, GetParam().bound);
}

}  // namespace
}  // namespace weft::flow
