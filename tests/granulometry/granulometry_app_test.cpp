// `weft granulometry` end to end: outputs, agreement with the library, 1 vs 2 vs 4 ranks, bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/run_weft.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/granulometry.hpp"

namespace weft {
namespace {

namespace fs = std::filesystem;

const std::string kWeft = std::string(WEFT_BINARY_DIR) + "/apps/weft";

using ::weft::test::Outcome;

Outcome run(const std::string& args, const std::string& prefix = "") { return ::weft::test::run_weft("granulometry", args, prefix); }

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// curve.csv's columns size, remaining and spectrum as "size,remaining,spectrum\n0,336,0\n...":
/// the numbers a run must reproduce (the '#' lines carry the provenance, which differs).
std::string curve_text(const fs::path& p) {
  std::istringstream in(read_text(p));
  std::string out, line;
  std::vector<int> pick;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (pick.empty()) {  // the header
      for (const char* name : {"size", "remaining", "spectrum"})
        pick.push_back(static_cast<int>(std::find(cells.begin(), cells.end(), name) - cells.begin()));
    }
    for (std::size_t k = 0; k < pick.size(); ++k)
      out += (k ? "," : "") + (pick[k] < static_cast<int>(cells.size()) ? cells[static_cast<std::size_t>(pick[k])] : "?");
    out += '\n';
  }
  return out;
}

/// The size map of an output folder as bytes.
std::string size_map_bytes(const std::string& out) {
  const Array m = io::read_dataset(io::parse_dataset_ref(out + "/granulometry.h5:/size_map"));
  return std::string(static_cast<const char*>(m.raw()), m.bytes());
}

class GranulometryApp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kWeft)) GTEST_SKIP() << "weft program not built at " << kWeft;
    dir_ = fs::temp_directory_path() / ("weft-gran-app-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(GranulometryApp, WritesCurveMatchingTheLibrary) {
  const std::string sample = path("sample.h5");
  ASSERT_EQ(run("--generate-sample " + sample + " --sample-size 40").code, 0);
  const Array volume = io::read_dataset(io::parse_dataset_ref(sample + ":/exchange/data"));
  for (const char* element : {"octahedron", "cube", "ball"}) {
    const std::string out = path(std::string("out-") + element);
    const Outcome o = run("--input " + sample + ":/exchange/data --element " + element + " --devices cpu --output " +
                          out + " --size-map");
    ASSERT_EQ(o.code, 0) << o.output;
    auto expected = morphology::granulometry_cpu(volume, {morphology::parse_element(element), -1, false, {}});
    std::stringstream csv;
    csv << "size,remaining,spectrum\n";
    for (std::size_t n = 0; n < expected.remaining.size(); ++n)
      csv << n << ',' << expected.remaining[n] << ',' << expected.spectrum[n] << '\n';
    EXPECT_EQ(curve_text(fs::path(out) / "curve.csv"), csv.str()) << element;
    EXPECT_NE(read_text(fs::path(out) / "curve.svg").find("</svg>"), std::string::npos);
    const auto info = io::dataset_info(io::parse_dataset_ref(out + "/granulometry.h5:/size_map"));
    EXPECT_EQ(info.shape, (std::vector<std::int64_t>{40, 40, 40}));
    EXPECT_FALSE(info.chunk.empty());
    const Array curve = io::read_dataset(io::parse_dataset_ref(out + "/granulometry.h5:/curve"));
    ASSERT_EQ(curve.size(), static_cast<std::int64_t>(expected.remaining.size()));
    EXPECT_EQ(curve.data<double>()[1], static_cast<double>(expected.remaining[1]));
  }
}

TEST_F(GranulometryApp, SameCurveOnOneTwoFourRanks) {
#if defined(WEFT_MPIEXEC)
  const std::string sample = path("sample.h5");
  ASSERT_EQ(run("--generate-sample " + sample + " --sample-size 32").code, 0);
  std::string first, first_map;
  for (const char* slabs : {"", " --slab-planes 3"}) {
    for (int ranks : {1, 2, 4}) {
      const std::string out = path("ranks-" + std::to_string(ranks));
      const Outcome o = run("--input " + sample + ":/exchange/data --element cube --devices cpu --size-map --output " +
                                out + slabs,
                            std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ");
      ASSERT_EQ(o.code, 0) << ranks << " ranks: " << o.output;
      const std::string csv = curve_text(fs::path(out) / "curve.csv"), map = size_map_bytes(out);
      if (first.empty()) first = csv, first_map = map;
      EXPECT_EQ(csv, first) << ranks << " ranks" << slabs;
      EXPECT_EQ(map, first_map) << ranks << " ranks" << slabs;
      fs::remove_all(out);
    }
  }
#else
  GTEST_SKIP() << "no mpiexec";
#endif
}

TEST_F(GranulometryApp, ManySlabsOutOfCoreGiveTheSameCurveAndSizeMap) {
  const std::string sample = path("sample.h5");
  ASSERT_EQ(run("--generate-sample " + sample + " --sample-size 36").code, 0);
  const Array volume = io::read_dataset(io::parse_dataset_ref(sample + ":/exchange/data"));
  for (const char* element : {"octahedron", "ball"}) {
    const std::string base = "--input " + sample + ":/exchange/data --element " + element +
                             " --devices cpu --size-map --output ";
    // Without --max-size a first pass finds N, then 9 slabs of 4 planes; with N = 6 (a halo of 14
    // planes), 650000 bytes at 15 per voxel hold 33 planes of 36²: 8 slabs of 5 own planes.
    // Then chunks of 2 planes (36² bytes each) read at a time and assembled by upload.i.
    const std::vector<std::pair<std::string, std::string>> variants = {
        {"", "--slab-planes 4"}, {"--max-size 7", "--slab-planes 4"}, {"--max-size 6", "--device-memory 650000"},
        {"--max-size 6", "--slab-planes 4 --read-chunk 2592"}};
    for (const auto& [common, slabs] : variants) {
      const Outcome whole = run(base + path("whole") + " " + common);
      ASSERT_EQ(whole.code, 0) << whole.output;
      const Outcome o = run(base + path("slabs") + " " + common + " " + slabs);
      ASSERT_EQ(o.code, 0) << slabs << ": " << o.output;
      const bool many = o.output.find(" 9 slab(s)") != std::string::npos || o.output.find(" 8 slab(s)") != std::string::npos;
      EXPECT_TRUE(many) << o.output;
      EXPECT_EQ(curve_text(path("slabs") + "/curve.csv"), curve_text(path("whole") + "/curve.csv"))
          << element << " " << common << " " << slabs;
      EXPECT_EQ(size_map_bytes(path("slabs")), size_map_bytes(path("whole"))) << element << " " << common << " " << slabs;
    }
  }
  // A mapping file written for the job's main graph also serves its first pass (which has other
  // tasks: a rule that matches none of them there is not an error), and places the main graph.
  {
    std::ofstream f(path("cpu.yaml"));
    f << "places:\n  \"volume.*\": {rank: 0, device: cpu}\n  \"openings.*\": {rank: 0, device: cpu}\n"
         "  curve: {rank: 0, device: cpu}\n  report: {rank: 0, device: cpu}\n";
  }
  const std::string base = "--input " + sample + ":/exchange/data --element ball --slab-planes 4 --output ";
  const Outcome automatic = run(base + path("auto") + " --devices cpu");
  ASSERT_EQ(automatic.code, 0) << automatic.output;
  const Outcome mapped = run(base + path("mapped") + " --mapping " + path("cpu.yaml"));
  ASSERT_EQ(mapped.code, 0) << mapped.output;
  EXPECT_EQ(curve_text(path("mapped") + "/curve.csv"), curve_text(path("auto") + "/curve.csv"));
  // Too small a budget for one plane and its halo: a clear error, no output.
  const Outcome o = run("--input " + sample + ":/exchange/data --devices cpu --max-size 6 --device-memory 1000 "
                        "--output " + path("none"));
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--device-memory"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(path("none") + "/curve.csv"));
  const Outcome chunk = run("--input " + sample + ":/exchange/data --devices cpu --max-size 6 --read-chunk 0 "
                            "--output " + path("none"));
  EXPECT_EQ(chunk.code, 2) << chunk.output;
  EXPECT_NE(chunk.output.find("--read-chunk"), std::string::npos) << chunk.output;
  EXPECT_FALSE(fs::exists(path("none") + "/curve.csv"));
}

TEST_F(GranulometryApp, BadInputGivesOneClearError) {
  {
    io::H5Writer h5(path("bad.h5"));
    Array flat = Array::host(DType::u8, Shape(8, 8));
    flat.zero();
    h5.write("/flat", flat);
    Array half = Array::host(DType::f16, Shape(4, 4, 4));  // the one number type granulometry does not take
    half.zero();
    h5.write("/f16", half);
    Array full = Array::host(DType::u8, Shape(6, 7, 8));
    std::fill_n(full.data<std::uint8_t>(), full.size(), std::uint8_t{1});
    h5.write("/full", full);
    h5.create("/empty", DType::u8, Shape(0, 4, 4));
    h5.commit();
  }
  const std::string out = " --devices cpu --output " + path("out");
  struct Case { std::string args, expect; };
  const std::vector<Case> cases = {
      {"--input " + path("missing.h5") + ":/exchange/data", "does not exist"},
      {"--input " + path("bad.h5") + ":/nothing", "nothing"},
      {"--input " + path("bad.h5") + ":/flat", "3D"},
      {"--input " + path("bad.h5") + ":/f16", "f16"},
      {"--input " + path("bad.h5") + ":/full", "--max-size"},
      {"--input " + path("bad.h5") + ":/empty", "empty"},
      {"--input " + path("bad.h5") + ":/full --element sphere", "sphere"},
      {"--input " + path("bad.h5") + ":/full --threshold abc", "--threshold"},
      {"--input " + path("bad.h5") + " --shape 4x4x4 --dtype u8", "bytes"},
  };
  for (const auto& c : cases) {
    const Outcome o = run(c.args + out);
    EXPECT_EQ(o.code, 2) << c.args << ": " << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.args << ": " << o.output;
  }
  // All foreground with --max-size: the trivial curve.
  const Outcome o = run("--input " + path("bad.h5") + ":/full --max-size 2" + out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(curve_text(path("out") + "/curve.csv"), "size,remaining,spectrum\n0,336,0\n1,336,0\n2,336,0\n");
}

// The direct readers (pread by pieces on every core, packed to bits as they come: a RAW file, a
// contiguous HDF5 dataset, an unfiltered chunked one) give the curve of the library's read of the
// chunked, compressed sample, whole and as slabs read in chunks of 5 planes.
TEST_F(GranulometryApp, DirectReadsGiveTheSameCurve) {
  const std::string sample = path("sample.h5");
  ASSERT_EQ(run("--generate-sample " + sample + " --sample-size 40").code, 0);
  const Array volume = io::read_dataset(io::parse_dataset_ref(sample + ":/exchange/data"));
  ASSERT_EQ(volume.dtype(), DType::u8);
  {
    io::H5Writer w(path("flat.h5"));
    w.write("/v", volume);
    w.write("/chunked", volume, {6, 16, 8});  // read by chunks
    w.write("/odd", volume, {6, 16, 5});      // chunks 5 wide: through H5Dread
    w.commit();
  }
  ASSERT_TRUE(io::raw_extent({path("flat.h5"), "/v"}).has_value());
  ASSERT_TRUE(io::raw_chunks({path("flat.h5"), "/chunked"}, 0, 40).has_value());
  {
    std::ofstream f(path("v.raw"), std::ios::binary);
    f.write(static_cast<const char*>(volume.raw()), static_cast<std::streamsize>(volume.bytes()));
  }
  for (const char* element : {"octahedron", "ball"}) {
    const std::string common = std::string(" --element ") + element + " --devices cpu --max-size 6 --size-map --output ";
    const Outcome ref = run("--input " + sample + ":/exchange/data" + common + path("ref"));
    ASSERT_EQ(ref.code, 0) << ref.output;
    for (const std::string& input : {path("flat.h5") + ":/v", path("flat.h5") + ":/chunked", path("flat.h5") + ":/odd",
                                    path("v.raw") + " --shape 40x40x40 --dtype u8"})
      for (const char* slabs : {"", " --slab-planes 7 --read-chunk 8000"}) {
        const Outcome o = run("--input " + input + common + path("direct") + slabs);
        ASSERT_EQ(o.code, 0) << o.output;
        EXPECT_EQ(curve_text(path("direct") + "/curve.csv"), curve_text(path("ref") + "/curve.csv")) << input << slabs;
        EXPECT_EQ(size_map_bytes(path("direct")), size_map_bytes(path("ref"))) << input << slabs;
        fs::remove_all(path("direct"));
      }
  }
}

TEST_F(GranulometryApp, RawInputAndOtsu) {
  // Two grey levels: Otsu keeps the bright block only.
  std::vector<std::uint16_t> v(10 * 11 * 12, 100);
  for (int z = 2; z < 8; ++z)
    for (int y = 2; y < 9; ++y)
      for (int x = 3; x < 9; ++x) v[(z * 11 + y) * 12 + x] = 3000;
  {
    std::ofstream f(path("grey.raw"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 2));
  }
  const Outcome o = run("--input " + path("grey.raw") + " --shape 10x11x12 --dtype u16 --threshold otsu "
                        "--element cube --devices cpu --output " + path("grey"));
  ASSERT_EQ(o.code, 0) << o.output;
  // A 6x7x6 box: cube openings keep it whole up to n = 2 (side 5), remove it at 3 (side 7).
  const std::string want = "size,remaining,spectrum\n0,252,0\n1,252,0\n2,252,252\n3,0,0\n";
  EXPECT_EQ(curve_text(path("grey") + "/curve.csv"), want);
  // The same volume as gzip chunks 5 × 4 × 6 (the whole volume read by chunks for Otsu's histogram)
  // and as a contiguous dataset.
  {
    Array grey = Array::host(DType::u16, Shape(10, 11, 12));
    std::memcpy(grey.raw(), v.data(), grey.bytes());
    io::H5Writer w(path("grey.h5"));
    w.write("/gz", grey, {5, 4, 6}, true);
    w.write("/flat", grey);
    w.commit();
  }
  ASSERT_TRUE(io::raw_chunks({path("grey.h5"), "/gz"}, 0, 10).has_value());
  for (const char* dataset : {":/gz", ":/flat"}) {
    const Outcome h = run("--input " + path("grey.h5") + dataset + " --threshold otsu --element cube --devices cpu --output " +
                          path("grey-h5"));
    ASSERT_EQ(h.code, 0) << h.output;
    EXPECT_EQ(curve_text(path("grey-h5") + "/curve.csv"), want) << dataset;
    fs::remove_all(path("grey-h5"));
  }
}

}  // namespace
}  // namespace weft
