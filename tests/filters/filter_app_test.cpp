// `weft filter` end to end through the `weft` program: PNG and HDF5 in and out, results equal to the
// library's, dtype kept, bad input → exit code 2 with a message naming the option and value.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "reference.hpp"
#include "weft/tasks/filters/filters.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"

namespace weft::filters {
namespace {

namespace fs = std::filesystem;

const std::string kWeft = std::string(WEFT_BINARY_DIR) + "/apps/weft";

struct Outcome {
  int code = -1;
  std::string output;
};

class FilterApp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weft-filter-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Outcome run(const std::string& args) {
    const fs::path log = dir_ / "log.txt";
    const std::string cmd = kWeft + " filter " + args + " --devices cpu > " + log.string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

void expect_equal(const Array& a, const Array& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  for (std::int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(test::get(a, i), test::get(b, i)) << "at " << i;
}

TEST_F(FilterApp, MedianOfAPngEqualsTheLibrary) {
  const Array img = test::random_array(DType::u8, Shape(41, 37), 256.0, 1);
  io::write_png(path("in.png"), img);
  const Outcome r = run("median --input " + path("in.png") + " --size 5 --border mirror --output " + path("out.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("out.png")), median(img, 5, Border::mirror));
}

TEST_F(FilterApp, VolumesInHdf5KeepTheirDtype) {
  const Array vol = test::random_array(DType::f32, Shape(6, 9, 11), 1.0, 2);
  {
    io::H5Writer w(path("vol.h5"));
    w.write("/data", vol);
    w.commit();
  }
  Outcome r = run("median --input " + path("vol.h5") + ":/data --size 3 --output " + path("out.h5") + ":/median");
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_dataset({path("out.h5"), "/median"}), median(vol, 3));
  r = run("gaussian --input " + path("vol.h5") + ":/data --sigma 1.5 --output " + path("g.h5") + ":/blur");
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_dataset({path("g.h5"), "/blur"}), gaussian_blur(vol, 1.5));
}

TEST_F(FilterApp, ConvolveReadsFullAndSeparableKernelFiles) {
  const Array img = test::random_array(DType::u16, Shape(30, 33), 60000.0, 3);
  io::write_png(path("in.png"), img);
  std::ofstream(path("k3.txt")) << "# box\n1 2 1\n2 4 2\n1 2 1\n";
  std::ofstream(path("k1.txt")) << "0.25 0.5 0.25\n";
  Outcome r = run("convolve --input " + path("in.png") + " --kernel " + path("k3.txt") + " --output " + path("a.pgm"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("a.pgm")), convolve(img, {1, 2, 1, 2, 4, 2, 1, 2, 1}, 3));
  r = run("convolve --input " + path("in.png") + " --kernel " + path("k1.txt") + " --output " + path("b.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("b.png")), convolve_separable(img, {0.25f, 0.5f, 0.25f}, {0.25f, 0.5f, 0.25f}));
}

TEST_F(FilterApp, BadInputIsAConfigErrorNamingTheOption) {
  const Array img = test::random_array(DType::u8, Shape(8, 8), 256.0, 4);
  io::write_png(path("in.png"), img);
  const std::string in = " --input " + path("in.png");
  const std::string out = " --output " + path("o.png");
  const struct {
    std::string args, expect;
  } cases[] = {
      {"median --input " + path("missing.png") + " --size 3" + out, "--input"},
      {"median" + in + " --size 4" + out, "--size"},
      {"median" + in + " --size 3 --output " + path("o.tiff"), "--output"},
      {"blur" + in + " --size 3" + out, "blur"},
      {"gaussian" + in + out, "--sigma"},
      {"convolve" + in + " --kernel " + path("nope.txt") + out, "--kernel"},
      {"median" + in + " --size 3 --border wrap" + out, "wrap"},
  };
  for (const auto& c : cases) {
    const Outcome r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(path("o.png")));
}

}  // namespace
}  // namespace weft::filters
