// `weft filter` end to end through the `weft` program: PNG and HDF5 in and out, results equal to the
// library's, dtype kept, colour filtered per channel, correlate and convolve against scipy.ndimage,
// the unnormalised-kernel warning and --normalize, bad input → exit code 2 with a message naming
// the option and value.
#include <gtest/gtest.h>
#include <png.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <iterator>
#include <string>
#include <vector>

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

// The library's convolve() is a correlation: `weft filter correlate` passes the kernel as read,
// `weft filter convolve` flips it in both axes first (a separable kernel: reversed, for rows and
// columns alike).
TEST_F(FilterApp, CorrelateAndConvolveReadFullAndSeparableKernelFiles) {
  const Array img = test::random_array(DType::u16, Shape(30, 33), 60000.0, 3);
  io::write_png(path("in.png"), img);
  std::ofstream(path("k3.txt")) << "# not symmetric\n0 0.1 0.2\n0.05 0.3 0.1\n0 0.15 0.1\n";
  std::ofstream(path("k1.txt")) << "0.2 0.5 0.3\n";
  const std::vector<float> k3 = {0, 0.1f, 0.2f, 0.05f, 0.3f, 0.1f, 0, 0.15f, 0.1f};
  const std::vector<float> k3_flipped(k3.rbegin(), k3.rend());
  const std::vector<float> k1 = {0.2f, 0.5f, 0.3f}, k1_flipped = {0.3f, 0.5f, 0.2f};
  const std::string in = " --input " + path("in.png");
  Outcome r = run("correlate" + in + " --kernel " + path("k3.txt") + " --output " + path("a.pgm"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("a.pgm")), convolve(img, k3, 3));
  r = run("convolve" + in + " --kernel " + path("k3.txt") + " --output " + path("b.pgm"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("b.pgm")), convolve(img, k3_flipped, 3));
  r = run("correlate" + in + " --kernel " + path("k1.txt") + " --output " + path("c.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("c.png")), convolve_separable(img, k1, k1));
  r = run("convolve" + in + " --kernel " + path("k1.txt") + " --output " + path("d.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("d.png")), convolve_separable(img, k1_flipped, k1_flipped));
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << "kernels summing to 1 are not warned about\n" << r.output;
}

// ---- Colour ----

Array random_rgb(int h, int w, std::uint32_t seed) {
  const Array flat = test::random_array(DType::u8, Shape(h * w * 3), 256.0, seed);
  Array rgb = Array::host(DType::u8, Shape(h, w, 3));
  std::copy_n(flat.data<std::uint8_t>(), h * w * 3, rgb.data<std::uint8_t>());
  return rgb;
}

Array channel(const Array& rgb, int c) {
  const std::int64_t h = rgb.shape()[0], w = rgb.shape()[1];
  Array out = Array::host(DType::u8, Shape(h, w));
  for (std::int64_t i = 0; i < h * w; ++i) out.data<std::uint8_t>()[i] = rgb.data<std::uint8_t>()[3 * i + c];
  return out;
}

void write_rgb(const std::string& file, const Array& rgb) {
  io::write_png_rgb(file, rgb.data<std::uint8_t>(), static_cast<int>(rgb.shape()[0]), static_cast<int>(rgb.shape()[1]));
}

// A 16-bit RGB PNG (the io library writes colour at 8 bits only), samples big-endian.
void write_rgb16_png(const std::string& file, int h, int w) {
  std::FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, w, h, 16, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  std::vector<unsigned char> row(static_cast<std::size_t>(w) * 6);
  for (int y = 0; y < h; ++y) {
    for (std::size_t i = 0; i < row.size(); ++i) row[i] = static_cast<unsigned char>(i * 37 + y * 11);
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

TEST_F(FilterApp, ColourPngIsFilteredChannelByChannel) {
  const Array rgb = random_rgb(29, 34, 11);
  write_rgb(path("in.png"), rgb);
  const std::string in = " --input " + path("in.png");

  // Median: each channel exactly the library's median of that channel.
  Outcome r = run("median" + in + " --size 5 --border mirror --output " + path("median.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("RGB"), std::string::npos) << "the summary line says colour was kept\n" << r.output;
  ASSERT_EQ(io::image_info(path("median.png")).channels, 3);
  const Array median_rgb = io::read_image_rgb(path("median.png"));
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE("channel " + std::to_string(c));
    expect_equal(channel(median_rgb, c), median(channel(rgb, c), 5, Border::mirror));
  }

  // Correlation: each channel equals what the program gives for that channel as a grey image.
  std::ofstream(path("k.txt")) << "0 1 2\n1 -1 0\n0 1 1\n";  // sums to 5: warned about, not refused
  r = run("correlate" + in + " --kernel " + path("k.txt") + " --border zero --output " + path("corr.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  const Array corr_rgb = io::read_image_rgb(path("corr.png"));
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE("channel " + std::to_string(c));
    const std::string grey = path("grey" + std::to_string(c) + ".png");
    io::write_png(grey, channel(rgb, c));
    const Outcome g = run("correlate --input " + grey + " --kernel " + path("k.txt") + " --border zero --output " +
                          path("grey_out.png"));
    ASSERT_EQ(g.code, 0) << g.output;
    expect_equal(channel(corr_rgb, c), io::read_image(path("grey_out.png")));
  }

  // HDF5: an [H, W, 3] u8 dataset, channels last.
  r = run("gaussian" + in + " --sigma 1.3 --output " + path("g.h5") + ":/blur");
  ASSERT_EQ(r.code, 0) << r.output;
  const Array blurred = io::read_dataset({path("g.h5"), "/blur"});
  ASSERT_EQ(blurred.shape(), Shape(29, 34, 3));
  for (int c = 0; c < 3; ++c) expect_equal(channel(blurred, c), gaussian_blur(channel(rgb, c), 1.3));
}

TEST_F(FilterApp, ColourToAGreyOutputIsRefusedUnlessGreyIsAsked) {
  const Array rgb = random_rgb(16, 19, 12);
  write_rgb(path("in.png"), rgb);
  const std::string in = " --input " + path("in.png");
  Outcome r = run("median" + in + " --size 3 --output " + path("out.pgm"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--output"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--colour grey"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("out.pgm")));

  // --colour grey: the luminance, filtered and written grey (to a PGM or a PNG).
  for (const std::string out : {"out.pgm", "out.png"}) {
    r = run("median" + in + " --size 3 --colour grey --output " + path(out));
    ASSERT_EQ(r.code, 0) << r.output;
    ASSERT_EQ(io::image_info(path(out)).channels, 1);
    expect_equal(io::read_image(path(out)), median(io::read_image(path("in.png")), 3));
  }

  // A 16-bit colour PNG would lose its low bits per channel: refused, and fine as grey.
  write_rgb16_png(path("in16.png"), 9, 7);
  r = run("median --input " + path("in16.png") + " --size 3 --output " + path("o16.png"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("16-bit colour"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("o16.png")));
  r = run("median --input " + path("in16.png") + " --size 3 --colour grey --output " + path("o16.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  expect_equal(io::read_image(path("o16.png")), median(io::read_image(path("in16.png")), 3));
}

// ---- Correlate and convolve against scipy.ndimage ----

// Debian's Python, which has numpy and scipy (a python3 earlier on PATH may lack them).
const char* const kPython = "/usr/bin/python3";

bool have_scipy() {
  const std::string cmd = std::string(kPython) + " -c 'import numpy, scipy.ndimage' > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

std::vector<std::uint8_t> read_bytes(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// On u8 images with integer kernels every sum is an integer well within fp32's exact range, so
// the program and scipy (in float64, then clipped to 0..255) agree exactly. Our --border is
// scipy's mode: clamp = "nearest", mirror = "mirror", zero = "constant" with cval 0.
TEST_F(FilterApp, CorrelateAndConvolveEqualScipyNdimage) {
  if (!have_scipy()) GTEST_SKIP() << kPython << " has no numpy or scipy: correlate and convolve not compared with scipy";
  const int h = 23, w = 31;
  const Array img = test::random_array(DType::u8, Shape(h, w), 256.0, 21);
  io::write_png(path("in.png"), img);
  std::ofstream(path("img.u8"), std::ios::binary).write(reinterpret_cast<const char*>(img.data<std::uint8_t>()), h * w);
  // Not symmetric in either axis, so that correlate and convolve differ; negative and positive
  // responses both reach the clipping.
  const std::string full = "0 1 0 0 2\n-1 0 3 0 0\n0 0 1 -2 0\n2 0 0 0 1\n0 -1 0 1 0\n";
  std::ofstream(path("full.txt")) << full;
  std::ofstream(path("sep.txt")) << "1 0 2 -1 0\n";  // separable: the outer product of this row with itself
  std::ofstream(path("ndimage_reference.py")) << R"(import sys
import numpy as np
from scipy import ndimage
h, w, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
img = np.fromfile(folder + "/img.u8", dtype=np.uint8).reshape(h, w).astype(np.float64)
kernels = {"full": np.loadtxt(folder + "/full.txt"), "sep": np.outer(*[np.loadtxt(folder + "/sep.txt")] * 2)}
modes = {"clamp": "nearest", "mirror": "mirror", "zero": "constant"}
for kname, k in kernels.items():
    for border, mode in modes.items():
        for op in ("correlate", "convolve"):
            r = getattr(ndimage, op)(img, k, mode=mode, cval=0.0)
            np.clip(np.rint(r), 0, 255).astype(np.uint8).tofile(f"{folder}/scipy_{op}_{kname}_{border}.u8")
)";
  const std::string cmd = std::string(kPython) + " " + path("ndimage_reference.py") + " " + std::to_string(h) + " " +
                          std::to_string(w) + " " + dir_.string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const std::string kname : {"full", "sep"}) {
    for (const std::string border : {"clamp", "mirror", "zero"}) {
      std::vector<std::uint8_t> ours[2];
      int i = 0;
      for (const std::string op : {"correlate", "convolve"}) {
        SCOPED_TRACE(op + " " + kname + " --border " + border);
        const Outcome r = run(op + " --input " + path("in.png") + " --kernel " + path(kname + ".txt") + " --border " +
                              border + " --output " + path("out.png"));
        ASSERT_EQ(r.code, 0) << r.output;
        const Array out = io::read_image(path("out.png"));
        ours[i] = std::vector<std::uint8_t>(out.data<std::uint8_t>(), out.data<std::uint8_t>() + h * w);
        const std::vector<std::uint8_t> theirs = read_bytes(path("scipy_" + op + "_" + kname + "_" + border + ".u8"));
        ASSERT_EQ(theirs.size(), static_cast<std::size_t>(h * w));
        for (int p = 0; p < h * w; ++p)
          ASSERT_EQ(int(ours[i][p]), int(theirs[p])) << "at y " << p / w << ", x " << p % w;
        ++i;
      }
      EXPECT_NE(ours[0], ours[1]) << "correlate and convolve of a non-symmetric kernel should differ";
    }
  }
}

// ---- Kernel sums ----

TEST_F(FilterApp, AnUnnormalisedKernelWarnsOnceAndNormalizeDividesItBySum) {
  const Array img = test::random_array(DType::u8, Shape(20, 24), 256.0, 31);
  io::write_png(path("in.png"), img);
  const std::string in = " --input " + path("in.png");
  std::ofstream(path("box.txt")) << "1 1 1\n1 1 1\n1 1 1\n";
  std::ofstream(path("row.txt")) << "1 1 1\n";
  std::ofstream(path("sobel.txt")) << "-1 0 1\n-2 0 2\n-1 0 1\n";

  Outcome r = run("correlate" + in + " --kernel " + path("box.txt") + " --output " + path("o.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: filter correlate: the kernel in '" + path("box.txt") + "' sums to 9, not 1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("clipped to 0..255"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--normalize"), std::string::npos) << r.output;
  std::size_t count = 0;
  for (std::size_t at = r.output.find("warning"); at != std::string::npos; at = r.output.find("warning", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << r.output;

  r = run("convolve" + in + " --kernel " + path("row.txt") + " --output " + path("o.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("separable kernel in '" + path("row.txt") + "' sums to 3 (9 as a 2D kernel)"),
            std::string::npos)
      << r.output;

  // --normalize: no warning, and the kernel divided by its sum (a separable one by its 1D sum).
  r = run("correlate" + in + " --kernel " + path("box.txt") + " --normalize --output " + path("n.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  expect_equal(io::read_image(path("n.png")), convolve(img, std::vector<float>(9, static_cast<float>(1.0 / 9)), 3));
  r = run("convolve" + in + " --kernel " + path("row.txt") + " --normalize --output " + path("n.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  const std::vector<float> third(3, static_cast<float>(1.0 / 3));
  expect_equal(io::read_image(path("n.png")), convolve_separable(img, third, third));

  // A kernel summing to 0 cannot be normalised; on u8 its negative responses clip, which is said.
  r = run("correlate" + in + " --kernel " + path("sobel.txt") + " --normalize --output " + path("z.png"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--normalize"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sums to 0"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("z.png")));
  r = run("correlate" + in + " --kernel " + path("sobel.txt") + " --output " + path("z.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("sums to 0: its negative responses are clipped to 0"), std::string::npos) << r.output;

  // --log-level error silences the warning like any other.
  r = run("correlate" + in + " --kernel " + path("box.txt") + " --log-level error --output " + path("o.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
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
      {"correlate" + in + " --kernel " + path("nope.txt") + out, "nope.txt"},
      {"correlate" + in + out, "--kernel"},
      {"median" + in + " --size 3 --border wrap" + out, "wrap"},
      {"median" + in + " --size 3 --colour rgb" + out, "--colour"},
      {"median" + in + " --size 3 --normalize" + out, "--normalize"},
      {"gaussian" + in + " --sigma 1 --normalize" + out, "--normalize"},
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
