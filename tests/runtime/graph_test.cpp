#include <gtest/gtest.h>

#include <cmath>

#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

using namespace weft;

TEST(Graph, ConnectsMatchingPortsAndValidates) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("src", 3, 4);
  auto& f = g.add<tasks::Affine>("f", 1, 0);
  auto rec = std::make_shared<tasks::Collect::Record>();
  auto& sink = g.add<tasks::Collect>("sink", rec);
  g.connect(src.out, f.in);
  g.connect("f.out", "sink.in");
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(g.edges().size(), 2u);
  EXPECT_EQ(g.in_edges(sink).size(), 1u);
}

TEST(Graph, RejectsDuplicateNamesUnconnectedInputsAndBadPorts) {
  Graph g;
  g.add<tasks::ArraySource>("src", 3, 4);
  EXPECT_THROW(g.add<tasks::ArraySource>("src", 3, 4), ConfigError);
  auto& f = g.add<tasks::Affine>("f", 1, 0);
  EXPECT_THROW(g.validate(), ConfigError);  // f.in and src.out unconnected
  EXPECT_THROW(g.connect("src.nope", "f.in"), ConfigError);
  EXPECT_THROW(g.connect("nobody.out", "f.in"), ConfigError);
  g.connect("src.out", "f.in");
  EXPECT_THROW(g.connect("src.out", "f.in"), ConfigError);  // input already connected
  (void)f;
}

TEST(Graph, RejectsMismatchedPortTypes) {
  Graph g;
  auto& c = g.add<tasks::Counter>("count", 3);
  auto& f = g.add<tasks::Affine>("f", 1, 0);
  (void)c;
  (void)f;
  EXPECT_THROW(g.connect("count.out", "f.in"), ConfigError);  // int64 -> array
}

TEST(Place, ParsesAndPrints) {
  EXPECT_EQ(Place::parse("cpu").str(), "cpu");
  EXPECT_EQ(Place::parse("gpu:1").str(), "gpu:1");
  Place p = Place::parse("rank:2/gpu:3");
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.device, 3);
  EXPECT_TRUE(p.is_gpu());
  EXPECT_EQ(p.str(), "rank:2/gpu:3");
  EXPECT_THROW((void)Place::parse("tpu:0"), ConfigError);
  EXPECT_THROW((void)Place::parse("gpu:x"), ConfigError);
  EXPECT_THROW((void)Place::parse("rank:1gpu:0"), ConfigError);
}

TEST(DType, HalfRoundTripsExactlyRepresentableValues) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f})
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_EQ(parse_dtype("f32"), DType::f32);
  EXPECT_THROW((void)parse_dtype("f128"), ConfigError);
}

TEST(Array, HostPoolReusesStorage) {
  void* first;
  {
    Array a = Array::host(DType::f32, Shape(7, 9));
    EXPECT_EQ(a.bytes(), 7u * 9 * 4);
    EXPECT_EQ(a.shape().str(), "7x9");
    first = a.raw();
  }
  Array b = Array::host(DType::f32, Shape(7, 9));
  EXPECT_EQ(b.raw(), first);
  EXPECT_THROW((void)b.data<double>(), Error);
}
