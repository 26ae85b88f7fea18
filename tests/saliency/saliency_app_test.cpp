// `weft saliency` end to end: HDF5 and PNG-sequence inputs, agreement with the library, heat
// maps, the mapping files, 1 vs 2 vs 4 ranks (CPU places), clear errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_weft.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"
#include "motion_frames.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"

namespace weft {
namespace {

namespace fs = std::filesystem;

const std::string kWeft = std::string(WEFT_BINARY_DIR) + "/apps/weft";
const std::string kMappings = std::string(WEFT_SOURCE_DIR) + "/mapping";

using ::weft::test::Outcome;

Outcome run(const std::string& args, const std::string& prefix = "") { return ::weft::test::run_weft("saliency", args, prefix); }

class SaliencyApp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kWeft)) GTEST_SKIP() << "weft program not built at " << kWeft;
    dir_ = fs::temp_directory_path() / ("weft-sal-app-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    video_ = path("video.h5");
    const Outcome o = run("--generate-sample " + video_ + " --sample-size 64x48 --sample-frames 4");
    ASSERT_EQ(o.code, 0) << o.output;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// Checks out.h5:/saliency against the library on every frame of the sample, bit for bit.
  void expect_library_maps(const std::string& out) const {
    const Array frames = io::read_dataset(io::parse_dataset_ref(video_ + ":/frames"));
    const Array maps = io::read_dataset(io::parse_dataset_ref(out + ":/saliency"));
    ASSERT_EQ(maps.shape(), Shape(4, 48, 64));
    for (int t = 0; t < 4; ++t) {
      Array frame = Array::host(DType::u8, Shape(48, 64));
      std::copy_n(frames.data<std::uint8_t>() + t * 48 * 64, 48 * 64, frame.data<std::uint8_t>());
      const Array want = saliency::static_map_cpu(frame);
      for (std::int64_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(maps.data<float>()[t * 48 * 64 + i], want.data<float>()[i]) << out << " frame " << t << " pixel " << i;
    }
  }
  fs::path dir_;
  std::string video_;
};

TEST_F(SaliencyApp, HdfVideoMatchesTheLibrary) {
  const Outcome o = run("--input " + video_ + ":/frames --output " + path("sal.h5") + " --pathway static --devices cpu --all-maps");
  ASSERT_EQ(o.code, 0) << o.output;
  expect_library_maps(path("sal.h5"));
  const auto info = io::dataset_info(io::parse_dataset_ref(path("sal.h5") + ":/static"));
  EXPECT_EQ(info.shape, (std::vector<std::int64_t>{4, 48, 64}));
}

TEST_F(SaliencyApp, PngSequenceAndHeatMaps) {
  const Array frames = io::read_dataset(io::parse_dataset_ref(video_ + ":/frames"));
  for (int t = 0; t < 4; ++t) {
    Array frame = Array::host(DType::u8, Shape(48, 64));
    std::copy_n(frames.data<std::uint8_t>() + t * 48 * 64, 48 * 64, frame.data<std::uint8_t>());
    char name[32];
    std::snprintf(name, sizeof name, "frame%03d.png", t + 1);
    io::write_png(path(name), frame);
  }
  const Outcome o = run("--input " + path("frame%03d.png") + " --output " + path("png.h5") + " --pathway static --devices cpu --png " +
                        path("heat"));
  ASSERT_EQ(o.code, 0) << o.output;
  expect_library_maps(path("png.h5"));
  for (int t = 0; t < 4; ++t) {
    char name[32];
    std::snprintf(name, sizeof name, "saliency_%04d.png", t);
    const Array rgb = io::read_image_rgb(path("heat/") + name);
    // The frame's 48 rows, then a strip of 8 with the colour bar: jet from the lowest saliency
    // (left, dark blue) to the highest (right, dark red), on white.
    ASSERT_EQ(rgb.shape(), Shape(48 + 8, 64, 3));
    const std::uint8_t* px = rgb.data<std::uint8_t>();
    const std::int64_t row = 48 + 4;
    std::int64_t first = 0, last = 63;
    auto colour = [&](std::int64_t x) {
      return std::vector<int>{px[(row * 64 + x) * 3], px[(row * 64 + x) * 3 + 1], px[(row * 64 + x) * 3 + 2]};
    };
    auto white = [&](std::int64_t x) { return colour(x) == std::vector<int>{255, 255, 255}; };
    while (first < 64 && white(first)) ++first;
    while (last >= 0 && white(last)) --last;
    ASSERT_LT(first + 32, last) << "a bar along the strip";
    EXPECT_EQ(colour(first), (std::vector<int>{0, 0, 128})) << "jet(0)";
    EXPECT_EQ(colour(last), (std::vector<int>{128, 0, 0})) << "jet(1)";
    EXPECT_EQ(colour((first + last) / 2)[1], 255) << "green in the middle";
  }
  // A list of files is the same sequence.
  const Outcome list = run("--input " + path("frame001.png") + "," + path("frame002.png") + " " + path("frame003.png") +
                           " " + path("frame004.png") + " --output " + path("list.h5") + " --pathway static --devices cpu");
  ASSERT_EQ(list.code, 0) << list.output;
  expect_library_maps(path("list.h5"));
}

TEST_F(SaliencyApp, MappingFileAndGaborGroups) {
  const Outcome o = run("--input " + video_ + ":/frames --output " + path("map.h5") + " --mapping " + kMappings +
                        "/saliency-cpu.yaml --gabor-groups 2 --pathway static");
  ASSERT_EQ(o.code, 0) << o.output;
  expect_library_maps(path("map.h5"));
}

TEST_F(SaliencyApp, SameMapsOnOneTwoFourRanks) {
#if defined(WEFT_MPIEXEC)
  for (int ranks : {1, 2, 4}) {
    // Stages spread over the ranks, CPU places.
    const std::string mapping = path("ranks-" + std::to_string(ranks) + ".yaml");
    {
      std::ofstream f(mapping);
      f << "ranks: " << ranks << "\nplaces:\n  read: {rank: 0, device: cpu}\n  retina: {rank: " << 1 % ranks
        << ", device: cpu}\n";
      for (int g = 0; g < 6; ++g) f << "  gabor." << g << ": {rank: " << g % ranks << ", device: cpu}\n";
      f << "  interactions: {rank: " << 2 % ranks << ", device: cpu}\n  normalize: {rank: " << 3 % ranks
        << ", device: cpu}\n  write: {rank: " << ranks - 1 << ", device: cpu}\n";
    }
    const std::string out = path("ranks-" + std::to_string(ranks) + ".h5");
    const Outcome o = run("--input " + video_ + ":/frames --output " + out + " --pathway static --mapping " + mapping,
                          std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ");
    ASSERT_EQ(o.code, 0) << ranks << " ranks: " << o.output;
    expect_library_maps(out);
  }
#else
  GTEST_SKIP() << "no mpiexec";
#endif
}

TEST_F(SaliencyApp, FrameFarmOnOneTwoFourRanks) {
  // Without a mapping: every replica on the CPU of rank 0.
  const Outcome local = run("--input " + video_ + ":/frames --output " + path("farm.h5") + " --pathway static --devices cpu --farm 3");
  ASSERT_EQ(local.code, 0) << local.output;
  expect_library_maps(path("farm.h5"));
#if defined(WEFT_MPIEXEC)
  for (int ranks : {1, 2, 4}) {
    const std::string mapping = path("farm-" + std::to_string(ranks) + ".yaml");
    {
      std::ofstream f(mapping);
      f << "ranks: " << ranks << "\nplaces:\n  read: {rank: 0, device: cpu}\n  write: {rank: 0, device: cpu}\n"
        << "  static.scatter: {rank: 0, device: cpu}\n  static.gather: {rank: 0, device: cpu}\n";
      for (int i = 0; i < 3; ++i) f << "  static." << i << ": {rank: " << i % ranks << ", device: cpu}\n";
    }
    const std::string out = path("farm-" + std::to_string(ranks) + ".h5");
    const Outcome o = run("--input " + video_ + ":/frames --output " + out + " --pathway static --farm 3 --mapping " + mapping,
                          std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ");
    ASSERT_EQ(o.code, 0) << ranks << " ranks: " << o.output;
    expect_library_maps(out);
  }
#endif
}

/// The sample's frames, and the library's maps for them (direct CPU calls).
saliency::test::ChainMaps library_chain(const std::string& video) {
  const Array frames = io::read_dataset(io::parse_dataset_ref(video + ":/frames"));
  std::vector<Array> list;
  for (int t = 0; t < 4; ++t) {
    Array frame = Array::host(DType::u8, Shape(48, 64));
    std::copy_n(frames.data<std::uint8_t>() + t * 48 * 64, 48 * 64, frame.data<std::uint8_t>());
    list.push_back(frame);
  }
  return saliency::test::chain_cpu(list, saliency::MotionParams{});
}
void expect_maps(const std::string& file, const std::string& dataset, const std::vector<Array>& want) {
  const Array maps = io::read_dataset(io::parse_dataset_ref(file + ":" + dataset));
  ASSERT_EQ(maps.shape(), Shape(4, 48, 64)) << file << ":" << dataset;
  for (int t = 0; t < 4; ++t)
    for (std::int64_t i = 0; i < 48 * 64; ++i)
      ASSERT_EQ(maps.data<float>()[t * 48 * 64 + i], want[t].data<float>()[i]) << file << ":" << dataset << " frame " << t
                                                                                << " pixel " << i;
}

TEST_F(SaliencyApp, FusedByDefaultWithAllMapsOnOneTwoFourRanksAndAFarm) {
  const auto want = library_chain(video_);
  const Outcome o = run("--input " + video_ + ":/frames --output " + path("fused.h5") + " --devices cpu --all-maps");
  ASSERT_EQ(o.code, 0) << o.output;
  expect_maps(path("fused.h5"), "/saliency", want.fused);
  expect_maps(path("fused.h5"), "/static", want.statics);
  expect_maps(path("fused.h5"), "/dynamic", want.dynamics);
  const Outcome dyn = run("--input " + video_ + ":/frames --output " + path("dyn.h5") + " --devices cpu --pathway dynamic");
  ASSERT_EQ(dyn.code, 0) << dyn.output;
  expect_maps(path("dyn.h5"), "/saliency", want.dynamics);
  const Outcome farm = run("--input " + video_ + ":/frames --output " + path("ffarm.h5") + " --devices cpu --farm 2");
  ASSERT_EQ(farm.code, 0) << farm.output;
  expect_maps(path("ffarm.h5"), "/saliency", want.fused);
#if defined(WEFT_MPIEXEC)
  for (int ranks : {2, 4}) {
    // Static stages on rank 0, dynamic ones spread over the others, fusion and write on the last.
    const std::string mapping = path("fused-" + std::to_string(ranks) + ".yaml");
    {
      std::ofstream f(mapping);
      f << "ranks: " << ranks << "\nplaces:\n  read: {rank: 0, device: cpu}\n  retina: {rank: 0, device: cpu}\n"
        << "  \"gabor.*\": {rank: 0, device: cpu}\n  interactions: {rank: 0, device: cpu}\n  normalize: {rank: 0, device: cpu}\n";
      int r = 1;
      for (const char* t : {"motion.input", "motion.dominant", "motion.compensate", "motion.flow", "motion.median", "motion.map"})
        f << "  " << t << ": {rank: " << (r++ % ranks) << ", device: cpu}\n";
      f << "  fusion: {rank: " << ranks - 1 << ", device: cpu}\n  write: {rank: " << ranks - 1 << ", device: cpu}\n";
    }
    const std::string out = path("fused-" + std::to_string(ranks) + ".h5");
    const Outcome m = run("--input " + video_ + ":/frames --output " + out + " --mapping " + mapping,
                          std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ");
    ASSERT_EQ(m.code, 0) << ranks << " ranks: " << m.output;
    expect_maps(out, "/saliency", want.fused);
    // No mapping, --farm auto: the automatic mapper's farm, one replica per rank, same maps.
    const std::string automatic = path("fauto-" + std::to_string(ranks) + ".h5");
    const Outcome a = run("--input " + video_ + ":/frames --output " + automatic + " --devices cpu",
                          std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ");
    ASSERT_EQ(a.code, 0) << ranks << " ranks: " << a.output;
    EXPECT_NE(a.output.find("farm of " + std::to_string(ranks)), std::string::npos) << a.output;
    expect_maps(automatic, "/saliency", want.fused);
  }
#endif
}

TEST_F(SaliencyApp, ClearErrors) {
  struct Case {
    std::string args, expect;
  };
  const std::string out = " --devices cpu --output " + path("bad.h5");
  const std::vector<Case> cases = {
      {"--input " + video_ + ":/frames --median-frames 12", "--median-frames"},
      {"--input " + video_ + ":/frames --motion-scale 3", "--motion-scale"},
      {"--input " + video_ + ":/frames --flow-method lk", "--flow-method"},
      {"--input " + video_ + ":/frames --pathway other", "--pathway"},
      {"--input " + path("missing.h5") + ":/frames", "does not exist"},
      {"--input " + video_ + ":/nothing", "nothing"},
      {"--input " + path("none%03d.png"), "no file matches"},
      {"--input " + video_ + ":/frames --gabor-groups 4", "--gabor-groups"},
      {"--input " + video_ + ":/frames --farm -1", "--farm"},
      {"--input " + video_ + ":/frames --farm many", "--farm"},
  };
  for (const auto& c : cases) {
    const Outcome o = run(c.args + out);
    EXPECT_EQ(o.code, 2) << c.args << ": " << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.args << ": " << o.output;
  }
  EXPECT_FALSE(fs::exists(path("bad.h5")));
}

}  // namespace
}  // namespace weft
