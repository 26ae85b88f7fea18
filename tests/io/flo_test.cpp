// Middlebury .flo: round trip, malformed files, wrong arrays, the RubberWhale ground truth.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "io_test_util.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/util/error.hpp"

namespace {

using weft::Array;
using weft::DType;
using weft::Shape;
using namespace weft::io;
using namespace weft::io::test;

TEST(Flo, RoundTrip) {
  Array flow = Array::host(DType::f32, Shape(5, 7, 2));
  for (std::int64_t i = 0; i < flow.size(); ++i) flow.data<float>()[i] = 0.25f * static_cast<float>(i) - 3.0f;
  write_flo(scratch_file("a.flo"), flow);
  const Array back = read_flo(scratch_file("a.flo"));
  ASSERT_EQ(back.dtype(), DType::f32);
  ASSERT_EQ(back.shape(), Shape(5, 7, 2));
  for (std::int64_t i = 0; i < flow.size(); ++i) ASSERT_EQ(back.data<float>()[i], flow.data<float>()[i]);
  EXPECT_EQ(leftover_temporaries(), 0);
}

TEST(Flo, Errors) {
  EXPECT_THROW_WITH((void)read_flo(scratch_file("none.flo")), weft::IoError, "none.flo");
  write_text(scratch_file("text.flo"), "hello, not a flow file");  // "PIEH" itself is the valid tag
  write_text(scratch_file("huge.flo"), "PIEHxxxxxxxx");
  EXPECT_THROW_WITH((void)read_flo(scratch_file("huge.flo")), weft::IoError, "bad size");
  EXPECT_THROW_WITH((void)read_flo(scratch_file("text.flo")), weft::IoError, "not a .flo");
  Array flow = Array::host(DType::f32, Shape(4, 4, 2));
  flow.zero();
  write_flo(scratch_file("cut.flo"), flow);
  truncate_file(scratch_file("cut.flo"), 40);
  EXPECT_THROW_WITH((void)read_flo(scratch_file("cut.flo")), weft::IoError, "truncated");
  EXPECT_THROW_WITH(write_flo(scratch_file("b.flo"), Array::host(DType::f32, Shape(4, 4, 3))), weft::ConfigError,
                    "(H, W, 2)");
  EXPECT_THROW_WITH(write_flo(scratch_file("b.flo"), Array::host(DType::f64, Shape(4, 4, 2))), weft::ConfigError,
                    "f64");
  EXPECT_EQ(leftover_temporaries(), 0);
}

TEST(Flo, MiddleburyGroundTruth) {
  const std::string path = shared_file("flow/middlebury/RubberWhale/flow10.flo");
  if (path.empty()) GTEST_SKIP() << "shared data not found (WEFT_SHARED_DATA)";
  const Array flow = read_flo(path);
  ASSERT_EQ(flow.shape(), Shape(388, 584, 2));
  std::int64_t known = 0;
  for (std::int64_t i = 0; i < flow.size(); ++i) {
    const float v = flow.data<float>()[i];
    ASSERT_FALSE(std::isnan(v));
    if (std::fabs(v) < 1e9f) {  // Middlebury marks unknown flow with 1e9 or more
      ++known;
      ASSERT_LT(std::fabs(v), 100.0f) << "at " << i;
    }
  }
  EXPECT_GT(known, flow.size() / 2);
}

}  // namespace
