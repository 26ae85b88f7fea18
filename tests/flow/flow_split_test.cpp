// `weft flow --split` on CPU places: one frame pair's flow (TV-L1, Horn–Schunck, CLG) computed in
// row strips (halo exchange, stopping test summed over the strips) must equal the single-device
// CPU flow bit for bit. Runs alone (every strip in one process) and under mpiexec -n 2 and -n 4 (strips spread
// over the ranks, frames and result on rank 0).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/mpi_main.hpp"
#include "flow_test_util.hpp"
#include "split_graph_util.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/split.hpp"
#include "weft/weft.hpp"

using namespace weft;
using namespace weft::flow;
using weft::test::env;
namespace ft = weft::flow::test;

namespace {

// Few iterations: the test is about the split, not convergence (the median filter still runs,
// at each warp's start and every 7 iterations, and the stopping test with epsilon 0.01 ends warps
// early on the coarse levels).
FlowParams quick(Method method = Method::tvl1) {
  FlowParams p = default_params(method);
  p.warps = 3;
  p.iterations = 25;
  p.median_interval = 7;
  return p;
}

// The split flow over `parts` strips (strip i on rank i mod ranks), on rank 0; empty elsewhere.
Array split_flow(const Array& f0, const Array& f1, const FlowParams& params, int parts) {
  std::vector<Place> ranks;
  for (int r = 0; r < env->size(); ++r) ranks.push_back(Place::host(r));
  return ft::split_flow(f0, f1, params, parts, ranks);
}

// `motion`: how far the mean interior flow may be from the frames' translation (1.4, -0.6).
void expect_split_equals_whole(int w, int h, const FlowParams& params, std::vector<int> strips, double motion = 0.15) {
  const Array f0 = ft::pattern(w, h), f1 = ft::pattern(w, h, 1.4, -0.6);
  const Array whole = env->rank() == 0 ? compute(f0, f1, params) : Array();
  for (int parts : strips) {
    const Array split = split_flow(f0, f1, params, parts);
    if (env->rank() != 0) continue;
    ASSERT_EQ(split.shape(), whole.shape()) << parts << " strips";
    std::int64_t differ = 0, first = -1;
    for (std::int64_t i = 0; i < whole.size(); ++i)
      if (std::memcmp(split.data<float>() + i, whole.data<float>() + i, sizeof(float)) != 0) {
        if (first < 0) first = i;
        ++differ;
      }
    EXPECT_EQ(differ, 0) << w << "x" << h << " over " << parts << " strips: first difference at row "
                         << (first / 2) / w << ", column " << (first / 2) % w << ": split "
                         << (first >= 0 ? split.data<float>()[first] : 0.f) << ", whole "
                         << (first >= 0 ? whole.data<float>()[first] : 0.f);
    // and the flow is the translation, not zeros (the equality is of a real result)
    double u = 0, v = 0;
    bool finite = false;
    ft::mean_interior(split, 8, u, v, finite);
    EXPECT_TRUE(finite);
    EXPECT_NEAR(u, 1.4, motion) << method_name(params.method) << ", " << parts << " strips";
    EXPECT_NEAR(v, -0.6, motion) << method_name(params.method) << ", " << parts << " strips";
  }
}

}  // namespace

TEST(FlowSplit, TwoThreeAndFourStripsGiveTheWholeFlowBitForBit) {
  expect_split_equals_whole(64, 48, quick(), {1, 2, 3, 4});
}

TEST(FlowSplit, OddSizesGiveTheWholeFlowBitForBit) {
  expect_split_equals_whole(61, 47, quick(), {2, 3, 4});
}

TEST(FlowSplit, DefaultParametersGiveTheWholeFlowBitForBit) {
  expect_split_equals_whole(53, 41, default_params(Method::tvl1), {2, 3});
}

TEST(FlowSplit, TexturePartGivesTheWholeFlowBitForBit) {
  FlowParams p = default_params(Method::tvl1);
  p.texture_threshold = 0;  // the split on for every pair, as it is for pairs whose brightness changes
  expect_split_equals_whole(53, 41, p, {2, 3});
}

TEST(FlowSplit, WithoutStoppingTestOrMedianGivesTheWholeFlowBitForBit) {
  FlowParams p = quick();
  p.epsilon = 0;
  p.median = 1;
  p.texture = 0;
  p.zoom = 0.7;  // levels of 41, 29, 20 rows: other strip boundaries
  expect_split_equals_whole(59, 41, p, {2, 4});
}

// 70 rows over 12 strips: 5 or 6 rows at level 0, 2 or 3 at level 1 (35 rows), 1 or 2 at level 2
// (18 rows), thinner than the halo: every strip computes that level whole, then splits the next.
TEST(FlowSplit, LevelsThinnerThanTheHaloAreComputedWholeByEveryStrip) {
  expect_split_equals_whole(64, 70, quick(), {12});
}

// 2 rows per strip at level 0 (the halo width) still works; 1 row is refused by the split.
TEST(FlowSplit, TwoRowsPerStripWorkAndOneRowIsAnError) {
  expect_split_equals_whole(40, 20, quick(), {10});
  const Array f0 = ft::pattern(40, 20), f1 = ft::pattern(40, 20, 1.4, -0.6);
  try {
    (void)split_flow(f0, f1, quick(), 20);
    FAIL() << "20 rows over 20 strips gave no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than the halo width 2"), std::string::npos) << e.what();
  }
}

// Horn–Schunck and CLG: Jacobi steps over the 4 neighbours, exchanged every iteration; CLG's
// strips hold 5 rows of each neighbour (its tensor's Gaussian, rho 1.5, has radius 5).
TEST(FlowSplit, HornSchunckAndClgGiveTheWholeFlowBitForBit) {
  for (Method m : {Method::hs, Method::clg}) {
    expect_split_equals_whole(64, 48, quick(m), {1, 2, 3, 4}, 0.3);
    expect_split_equals_whole(61, 47, quick(m), {2, 3, 4}, 0.3);
  }
}

TEST(FlowSplit, HornSchunckAndClgWithDefaultParametersGiveTheWholeFlowBitForBit) {
  for (Method m : {Method::hs, Method::clg}) expect_split_equals_whole(53, 41, default_params(m), {2, 3}, 0.3);
}

// 70 rows over 12 strips: 5 or 6 rows at level 0 (split for both: CLG's halo is 5), 2 or 3 at
// level 1 (split for hs, whole for CLG), 1 or 2 at level 2 (whole for both).
TEST(FlowSplit, HornSchunckAndClgLevelsThinnerThanTheHaloAreComputedWhole) {
  for (Method m : {Method::hs, Method::clg}) expect_split_equals_whole(64, 70, quick(m), {12}, 0.3);
}

TEST(FlowSplit, NoStripsIsAnError) {
  Graph g;
  EXPECT_THROW((void)add_split_flow(g, "flow", 0, quick()), ConfigError);
}
