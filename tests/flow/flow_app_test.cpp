// `weft flow` end to end on CPU places: the HDF5 layout [T-1, H, W, 2], agreement with the library,
// the frame farm on one rank and under mpiexec with 1, 2 and 4 ranks (identical output), errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_weft.hpp"
#include "flow_test_util.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"

namespace weft::flow {
namespace {

namespace fs = std::filesystem;

const std::string kWeft = std::string(WEFT_BINARY_DIR) + "/apps/weft";
constexpr int kFrames = 5, kWidth = 40, kHeight = 32;
// Fixed iteration counts (epsilon 0): the stopping test sums over threads in no fixed order.
const char* const kSettings = " --method tvl1 --scales 2 --warps 2 --iterations 20 --epsilon 0";

FlowParams settings() {
  FlowParams p = default_params(Method::tvl1);
  p.scales = 2, p.warps = 2, p.iterations = 20, p.epsilon = 0;
  return p;
}

using ::weft::test::Outcome;

Outcome run(const std::string& args, const std::string& prefix = "") { return ::weft::test::run_weft("flow", args, prefix); }

// Frame t of the sample: the test pattern moved by (0.7 t, -0.4 t), as u8.
Array frame(int t) {
  const Array p = test::pattern(kWidth, kHeight, 0.7 * t, -0.4 * t);
  Array a = Array::host(DType::u8, Shape(kHeight, kWidth));
  for (std::int64_t i = 0; i < a.size(); ++i) a.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(p.data<double>()[i]);
  return a;
}

class FlowApp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kWeft)) GTEST_SKIP() << "weft program not built at " << kWeft;
    dir_ = fs::temp_directory_path() / ("weft-flow-app-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    Array video = Array::host(DType::u8, Shape(kFrames, kHeight, kWidth));
    for (int t = 0; t < kFrames; ++t) std::memcpy(video.data<std::uint8_t>() + t * kWidth * kHeight, frame(t).raw(), kWidth * kHeight);
    io::H5Writer w(path("video.h5"));
    w.write("/frames", video);
    w.commit();
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // out.h5:/flow is [T-1, H, W, 2] and each pair's flow equals the library's, bit for bit.
  static void expect_library_flows(const std::string& out) {
    const io::DatasetRef ref{out, "/flow"};
    ASSERT_EQ(io::dataset_info(ref).shape, (std::vector<std::int64_t>{kFrames - 1, kHeight, kWidth, 2}));
    for (int t = 0; t + 1 < kFrames; ++t) {
      const Array got = io::read_slab(ref, t, 1), want = compute(frame(t), frame(t + 1), settings());
      ASSERT_EQ(got.shape(), Shape(kHeight, kWidth, 2));
      ASSERT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << out << " pair " << t;
    }
  }
  fs::path dir_;
};

TEST_F(FlowApp, SequenceIsWrittenAsFourDimensionalFlows) {
  const Outcome o = run("--input " + path("video.h5") + ":/frames --output " + path("f.h5") + " --devices cpu" + kSettings);
  ASSERT_EQ(o.code, 0) << o.output;
  expect_library_flows(path("f.h5"));
}

TEST_F(FlowApp, PairIsWrittenAsFlo) {
  for (int t : {0, 1}) ASSERT_NO_THROW(io::write_png(path("f" + std::to_string(t) + ".png"), frame(t)));
  const Outcome o = run("--frames " + path("f0.png") + " " + path("f1.png") + " --output " + path("f.flo") +
                        " --devices cpu" + kSettings);
  ASSERT_EQ(o.code, 0) << o.output;
  const Array got = io::read_flo(path("f.flo")), want = compute(frame(0), frame(1), settings());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0);
}

TEST_F(FlowApp, FarmOnOneRankKeepsOrder) {
  const Outcome o = run("--input " + path("video.h5") + ":/frames --output " + path("farm.h5") +
                        " --devices cpu --farm 3" + kSettings);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("3 replica(s)"), std::string::npos) << o.output;
  expect_library_flows(path("farm.h5"));
}

// The automatic farm puts one replica on every rank (CPU places); frames are read and flows
// written on rank 0; the output is the same as on one rank.
TEST_F(FlowApp, FarmOverOneTwoFourRanks) {
#if defined(WEFT_MPIEXEC)
  for (int ranks : {1, 2, 4}) {
    const std::string out = path("ranks-" + std::to_string(ranks) + ".h5");
    const Outcome o = run("--input " + path("video.h5") + ":/frames --output " + out + " --devices cpu" + kSettings,
                          std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ");
    ASSERT_EQ(o.code, 0) << ranks << " ranks: " << o.output;
    EXPECT_NE(o.output.find(std::to_string(ranks) + " replica(s)"), std::string::npos) << o.output;
    expect_library_flows(out);
  }
#else
  GTEST_SKIP() << "no mpiexec";
#endif
}

// --split: one pair in row strips (3 in one process; one per rank under mpiexec -n 2 and -n 4),
// the library's single-device flow bit for bit.
TEST_F(FlowApp, SplitPairIsTheUnsplitFlow) {
  for (int t : {0, 1}) ASSERT_NO_THROW(io::write_png(path("f" + std::to_string(t) + ".png"), frame(t)));
  const Array want = compute(frame(0), frame(1), settings());
  const std::string pair = "--frames " + path("f0.png") + " " + path("f1.png") + " --devices cpu --split" + kSettings;
  // (options, launcher); OpenMP threads wait passively: ranks share few cores (flow_split_test).
  std::vector<std::pair<std::string, std::string>> runs = {{" --strips 3", "OMP_WAIT_POLICY=passive "}};
#if defined(WEFT_MPIEXEC)
  for (int ranks : {2, 4})
    runs.emplace_back("", "OMP_WAIT_POLICY=passive " + std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " +
                              std::to_string(ranks) + " ");
#endif
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto& [options, launcher] = runs[k];
    const std::string out = path("split" + std::to_string(k) + ".flo");
    const Outcome o = run(pair + options + " --output " + out, launcher);
    ASSERT_EQ(o.code, 0) << launcher << options << ": " << o.output;
    const Array got = io::read_flo(out);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << launcher << options;
  }
}

// --split --method hs and clg over 3 strips in one process: the single-device flow bit for bit.
TEST_F(FlowApp, SplitHornSchunckAndClgAreTheUnsplitFlow) {
  for (int t : {0, 1}) ASSERT_NO_THROW(io::write_png(path("f" + std::to_string(t) + ".png"), frame(t)));
  for (Method m : {Method::hs, Method::clg}) {
    FlowParams p = default_params(m);
    p.scales = 2, p.warps = 2, p.iterations = 20;
    const Array want = compute(frame(0), frame(1), p);
    const std::string name(method_name(m)), out = path("split_" + name + ".flo");
    const Outcome o = run("--frames " + path("f0.png") + " " + path("f1.png") + " --devices cpu --split --strips 3 --method " +
                              name + " --scales 2 --warps 2 --iterations 20 --output " + out,
                          "OMP_WAIT_POLICY=passive ");
    ASSERT_EQ(o.code, 0) << name << ": " << o.output;
    const Array got = io::read_flo(out);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << name;
  }
}

TEST_F(FlowApp, ClearErrorsAndNoPartialOutput) {
  Array small = Array::host(DType::u8, Shape(kHeight - 2, kWidth));
  std::memset(small.raw(), 7, small.bytes());
  ASSERT_NO_THROW(io::write_png(path("small.png"), small));
  ASSERT_NO_THROW(io::write_png(path("f0.png"), frame(0)));
  ASSERT_NO_THROW(io::write_png(path("f1.png"), frame(1)));
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--frames " + path("f0.png") + " " + path("f1.png") + " " + path("small.png") + " --output " + path("bad.h5"),
       "different sizes"},
      {"--frames " + path("f0.png") + " " + path("missing.png") + " --output " + path("bad.h5"), "missing.png"},
      {"--frames " + path("f0.png") + " " + path("f1.png") + " " + path("f0.png") + " --output " + path("bad.flo"),
       "needs an HDF5 output"},
      {"--input " + path("video.h5") + ":/frames --output " + path("bad.h5") + " --farm -1", "--farm"},
      {"--input " + path("video.h5") + ":/frames --output " + path("bad.h5") + " --zoom 1.5", "zoom"},
      {"--frames " + path("f0.png") + " " + path("f1.png") + " --output " + path("bad.flo") + " --split --strips 20",
       "32 rows cannot be split over 20 strips"},
      {"--input " + path("video.h5") + ":/frames --output " + path("bad.h5") + " --split", "one frame pair"},
  };
  for (const auto& c : cases) {
    const Outcome o = run(c.args + " --devices cpu");
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.args << "\n" << o.output;
    EXPECT_FALSE(fs::exists(path("bad.h5")));
    EXPECT_FALSE(fs::exists(path("bad.flo")));
  }
}

}  // namespace
}  // namespace weft::flow
