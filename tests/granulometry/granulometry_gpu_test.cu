// GPU granulometry against the CPU path (itself tested against the definition): exact equality
// of curves, spectra and size maps (every value is an integer; tolerance 0).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>

#include "brute_force.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/threshold.hpp"

namespace weft {
namespace {

using morphology::Element;

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/// The test's own stream. Declare it before every device array ordered on it, so that it is
/// destroyed after them: an Array::device frees its bytes with cudaFreeAsync on that stream when
/// its last handle drops, and a destroyed stream handle there is undefined behaviour (a host
/// SIGSEGV inside the driver, with no CUDA error; CountedPlanesMatchCpu died of it when its
/// d_mask outlived a cudaStreamDestroy at the end of the test body).
class TestStream {
 public:
  TestStream() { WEFT_CUDA_CHECK(cudaStreamCreate(&stream_)); }
  ~TestStream() {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  operator cudaStream_t() const { return stream_; }  // NOLINT: used where a cudaStream_t is
 private:
  cudaStream_t stream_ = nullptr;
};

/// Overlapping balls of radii 1..max_radius, about `fill` of the volume.
Array balls(Shape shape, int max_radius, double fill, std::uint32_t seed) {
  Array a = Array::host(DType::u8, shape);
  a.zero();
  std::uint8_t* p = a.data<std::uint8_t>();
  std::mt19937 rng(seed);
  const std::int64_t Z = shape[0], Y = shape[1], X = shape[2];
  std::int64_t filled = 0;
  while (filled < fill * a.size()) {
    const int r = 1 + static_cast<int>(rng() % max_radius);
    const std::int64_t cz = rng() % Z, cy = rng() % Y, cx = rng() % X;
    for (std::int64_t z = std::max<std::int64_t>(0, cz - r); z <= std::min(Z - 1, cz + r); ++z)
      for (std::int64_t y = std::max<std::int64_t>(0, cy - r); y <= std::min(Y - 1, cy + r); ++y)
        for (std::int64_t x = std::max<std::int64_t>(0, cx - r); x <= std::min(X - 1, cx + r); ++x) {
          const std::int64_t d = (z - cz) * (z - cz) + (y - cy) * (y - cy) + (x - cx) * (x - cx);
          std::uint8_t& v = p[(z * Y + y) * X + x];
          if (d <= r * r && !v) { v = 1; ++filled; }
        }
  }
  return a;
}

void expect_same_as_cpu(const Array& mask, const morphology::GranulometryOptions& options, cudaStream_t stream) {
  Array d_mask = Array::device(DType::u8, mask.shape(), 0, stream);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(d_mask.raw(), mask.raw(), mask.bytes(), cudaMemcpyHostToDevice, stream));
  auto cpu = morphology::granulometry_cpu(mask, options);
  auto gpu = morphology::granulometry_gpu(d_mask, options, stream);
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::string what = std::string(morphology::element_name(options.element)) + " " + mask.shape().str() +
                           " size map " + std::string(dtype_name(options.size_map_form.dtype)) +
                           (options.size_map_form.diameter ? " diameter" : "");
  EXPECT_EQ(cpu.remaining, gpu.remaining) << what;
  EXPECT_EQ(cpu.spectrum, gpu.spectrum) << what;
  ASSERT_FALSE(gpu.size_map.empty());
  ASSERT_EQ(gpu.size_map.dtype(), options.size_map_form.dtype) << what;
  EXPECT_TRUE(test::same(cpu.size_map, gpu.size_map.to_host())) << what;
}

void expect_same_as_cpu(const Array& mask, Element e, int max_size, cudaStream_t stream) {
  expect_same_as_cpu(mask, morphology::GranulometryOptions{e, max_size, true, {}}, stream);
}

TEST(GranulometryGpu, MatchesCpuOnRandomVolumes) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  // Sizes around the row tile (1024 voxels) and odd sizes; dense enough to survive a few sizes.
  const Shape shapes[] = {Shape(1, 1, 1), Shape(3, 5, 7), Shape(2, 3, 1023), Shape(2, 3, 1024),
                          Shape(2, 3, 1025), Shape(9, 31, 33)};
  std::uint32_t seed = 1;
  for (const Shape& s : shapes)
    for (Element e : {Element::octahedron, Element::cube, Element::ball})
      expect_same_as_cpu(test::random_mask(s, 0.93, seed++), e, 6, stream);
}

TEST(GranulometryGpu, MatchesCpuOnBalls) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  Array mask = balls(Shape(96, 101, 128), 12, 0.4, 5);
  for (Element e : {Element::octahedron, Element::cube, Element::ball}) expect_same_as_cpu(mask, e, -1, stream);
}

// With --max-size N the GPU computes the erosion distances only up to the bound the sizes need
// (u8 for octahedra and cubes, u16 for balls, windowed passes; cubes when X % 4 == 0): the same
// curves and size maps as the exact CPU path, including sizes past the largest ball and X that
// take the packed (X % 4 == 0, X even) and scalar kernels.
TEST(GranulometryGpu, MatchesCpuWithMaxSize) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  const Shape shapes[] = {Shape(40, 37, 64), Shape(21, 66, 30), Shape(17, 29, 45)};
  std::uint32_t seed = 11;
  for (const Shape& s : shapes) {
    Array mask = balls(s, 9, 0.45, seed++);
    for (Element e : {Element::octahedron, Element::cube, Element::ball})
      for (int last : {0, 3, 12}) expect_same_as_cpu(mask, e, last, stream);
  }
}

// The size map narrowed on the GPU (before it leaves the device) equals the CPU's narrowed map.
TEST(GranulometryGpu, SizeMapFormsMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  Array mask = balls(Shape(33, 40, 52), 7, 0.45, 17);
  using morphology::SizeMapForm;
  for (Element e : {Element::octahedron, Element::cube, Element::ball})
    for (const SizeMapForm form : {SizeMapForm{DType::u8, false}, SizeMapForm{DType::u8, true},
                                   SizeMapForm{DType::u16, false}, SizeMapForm{DType::i32, true}})
      expect_same_as_cpu(mask, morphology::GranulometryOptions{e, 9, true, form}, stream);
}

// A slab with a halo (counted planes in the middle, each opening on the counted planes ± n):
// the same counts and size map as the CPU path, and the same as the whole volume's planes.
TEST(GranulometryGpu, CountedPlanesMatchCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  Array mask = balls(Shape(45, 38, 64), 8, 0.45, 21);
  Array d_mask = Array::device(DType::u8, mask.shape(), 0, stream);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(d_mask.raw(), mask.raw(), mask.bytes(), cudaMemcpyHostToDevice, stream));
  const std::pair<int, int> ranges[] = {{0, 45}, {10, 27}, {0, 5}, {40, 45}};  // the whole volume first
  const std::int64_t plane = mask.shape()[1] * mask.shape()[2];
  for (Element e : {Element::octahedron, Element::cube, Element::ball})
    for (int last : {3, 9, 300}) {  // 300: the unbounded (i32) paths
      Array whole;                  // the CPU size map of the whole volume
      for (auto [first, end] : ranges) {
        morphology::GranulometryOptions o{e, last, true, {}};
        o.first_plane = first;
        o.end_plane = end;
        auto cpu = morphology::granulometry_cpu(mask, o);
        auto gpu = morphology::granulometry_gpu(d_mask, o, stream);
        EXPECT_EQ(cpu.remaining, gpu.remaining) << morphology::element_name(e) << " " << first << ".." << end;
        EXPECT_TRUE(test::same(cpu.size_map, gpu.size_map.to_host()))
            << morphology::element_name(e) << " " << first << ".." << end;
        if (whole.empty()) {
          whole = cpu.size_map;
        } else {
          ASSERT_EQ(cpu.size_map.size(), (end - first) * plane);
          EXPECT_EQ(std::memcmp(whole.data<std::int32_t>() + first * plane, cpu.size_map.data<std::int32_t>(),
                                cpu.size_map.bytes()), 0)
              << "counted planes against the whole volume: " << morphology::element_name(e) << " " << first
              << ".." << end;
        }
      }
      EXPECT_EQ(morphology::max_distance_cpu(mask, e, 10, 27),
                morphology::max_distance_gpu(d_mask, e, 10, 27, stream)) << morphology::element_name(e);
    }
}

// Octahedra without a size map on volumes of X % 32 == 0 take the bit-packed openings for
// radii up to DistancePolicy::kBitMaxRadius (octahedron_bits_gpu.cu) and the distance passes
// beyond: the same curves as the CPU path, whole volumes and counted planes alike, with every
// fusion depth (1 to 4 cross steps per launch).
TEST(GranulometryGpu, BitPackedOctahedronMatchesCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  auto check = [&](const Array& mask, int last, std::int64_t first, std::int64_t end, const std::string& what,
                   int steps = 0) {
    Array d_mask = Array::device(DType::u8, mask.shape(), 0, stream);
    WEFT_CUDA_CHECK(cudaMemcpyAsync(d_mask.raw(), mask.raw(), mask.bytes(), cudaMemcpyHostToDevice, stream));
    morphology::GranulometryOptions o{Element::octahedron, last, false, {}};
    o.first_plane = first;
    o.end_plane = end;
    o.bit_steps = steps;
    const auto cpu = morphology::granulometry_cpu(mask, o);
    const auto gpu = morphology::granulometry_gpu(d_mask, o, stream);
    EXPECT_EQ(cpu.remaining, gpu.remaining)
        << what << " last " << last << " planes " << first << ".." << end << " steps " << steps;
    EXPECT_TRUE(gpu.size_map.empty());
  };
  std::uint32_t seed = 31;
  for (const Shape& s : {Shape(40, 37, 64), Shape(23, 17, 96), Shape(9, 5, 32), Shape(3, 4, 1024)}) {
    const Array mask = balls(s, 9, 0.5, seed++);
    for (int last : {-1, 1, 2, 3, 12, 300}) check(mask, last, 0, -1, s.str());
    const std::int64_t z = s[0];
    for (int last : {2, 5, 9})
      for (auto [first, end] : {std::pair<std::int64_t, std::int64_t>{0, z / 3}, {z / 3, 2 * z / 3}, {2 * z / 3, z}})
        check(mask, last, first, end, s.str());
    for (int steps : {1, 3, 4}) {  // fusion depths (bit_steps), the default being 1
      check(mask, 12, 0, -1, s.str(), steps);
      check(mask, 7, z / 3, 2 * z / 3, s.str(), steps);
    }
  }
  // One background voxel in a corner: L1 distances up to 181, across the bit/distance switch.
  Array solid = Array::host(DType::u8, Shape(60, 60, 64));
  std::memset(solid.raw(), 1, solid.bytes());
  solid.data<std::uint8_t>()[0] = 0;
  check(solid, -1, 0, -1, "corner");
}

// Balls with --max-size take the shell method (ball_shell_gpu.cu) for even X ≥ 32 and radii up
// to 63, the windowed passes otherwise: both give the CPU's curves and size maps. The shapes
// cut the row segment (1030), the bit words (34), the x tile (96) and the y and z tiles (> 128
// lines); the solid ball of radius 66 reaches every window radius up to 63 and beyond it.
TEST(GranulometryGpu, BallShellMatchesCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;  // before the arrays ordered on it (TestStream says why)
  auto check = [&](const Array& mask, int last, std::int64_t first, std::int64_t end, const std::string& what) {
    Array d_mask = Array::device(DType::u8, mask.shape(), 0, stream);
    WEFT_CUDA_CHECK(cudaMemcpyAsync(d_mask.raw(), mask.raw(), mask.bytes(), cudaMemcpyHostToDevice, stream));
    morphology::GranulometryOptions o{Element::ball, last, true, {}};
    o.first_plane = first;
    o.end_plane = end;
    const auto cpu = morphology::granulometry_cpu(mask, o);
    for (bool windowed : {false, true}) {
      o.ball_windowed = windowed;
      const auto gpu = morphology::granulometry_gpu(d_mask, o, stream);
      EXPECT_EQ(cpu.remaining, gpu.remaining)
          << what << " last " << last << " planes " << first << ".." << end << " windowed " << windowed;
      EXPECT_TRUE(test::same(cpu.size_map, gpu.size_map.to_host()))
          << "size map " << what << " last " << last << " windowed " << windowed;
    }
  };
  std::uint32_t seed = 71;
  for (const Shape& s : {Shape(70, 45, 96), Shape(20, 9, 1030), Shape(33, 17, 34), Shape(140, 20, 32),
                         Shape(9, 150, 64)}) {
    const Array mask = balls(s, 24, 0.4, seed++);
    check(mask, 30, 0, -1, s.str());
    const std::int64_t z = s[0];
    check(mask, 12, z / 3, 2 * z / 3, s.str());
  }
  Array solid = balls(Shape(135, 134, 136), 5, 0.05, seed++);
  std::uint8_t* p = solid.data<std::uint8_t>();
  for (std::int64_t zz = 0; zz < 135; ++zz)
    for (std::int64_t yy = 0; yy < 134; ++yy)
      for (std::int64_t xx = 0; xx < 136; ++xx) {
        const std::int64_t d = (zz - 67) * (zz - 67) + (yy - 67) * (yy - 67) + (xx - 68) * (xx - 68);
        if (d <= 66 * 66) p[(zz * 134 + yy) * 136 + xx] = 1;
      }
  check(solid, 68, 0, -1, "ball of radius 66");
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// curve.csv without its '#' lines (the provenance: command, date, devices differ between runs).
std::string curve_rows(const std::filesystem::path& p) {
  std::istringstream in(read_text(p));
  std::string rows;
  for (std::string line; std::getline(in, line);)
    if (line.empty() || line[0] != '#') rows += line + "\n";
  return rows;
}

// Foreground bits unpacked on the GPU equal the host's unpacking (planes whose bits end mid-byte,
// an output at an odd address so that the 8-byte stores fall back to bytes).
TEST(GranulometryGpu, UnpacksForegroundBitsLikeTheHost) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  TestStream stream;
  for (const Shape& shape : {Shape(3, 7, 5), Shape(4, 16, 16), Shape(2, 513, 517)})
    for (std::int64_t shift : {0, 1}) {
      const Array mask = test::random_mask(shape, 0.5, 7);
      const Array bits = morphology::foreground_bits(mask, {});
      const Array want = morphology::unpack_foreground(bits, shape[1], shape[2]);
      ASSERT_EQ(std::memcmp(want.raw(), mask.raw(), mask.bytes()), 0);
      void* d_bits = nullptr;
      std::uint8_t* d_out = nullptr;
      WEFT_CUDA_CHECK(cudaMalloc(&d_bits, bits.bytes()));
      WEFT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_out), mask.bytes() + 8));
      WEFT_CUDA_CHECK(cudaMemcpy(d_bits, bits.raw(), bits.bytes(), cudaMemcpyHostToDevice));
      morphology::unpack_foreground_gpu(d_bits, d_out + shift, shape[0], shape[1], shape[2],
                                        static_cast<cudaStream_t>(stream));
      std::vector<std::uint8_t> got(mask.bytes());
      WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
      WEFT_CUDA_CHECK(cudaMemcpy(got.data(), d_out + shift, got.size(), cudaMemcpyDeviceToHost));
      WEFT_CUDA_CHECK(cudaFree(d_bits));
      WEFT_CUDA_CHECK(cudaFree(d_out));
      EXPECT_EQ(std::memcmp(got.data(), mask.raw(), got.size()), 0) << shape.str() << " shift " << shift;
    }
}

/// The whole program on the GPU (automatic mapping and mapping/granulometry.yaml) writes the same
/// curve.csv as on the CPU.
TEST(GranulometryGpu, ProgramOnGpuMatchesCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/apps/weft";
  if (!std::filesystem::exists(weft)) GTEST_SKIP() << "weft program not built";
  const auto dir = std::filesystem::temp_directory_path() / ("weft-gran-gpu-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string sample = (dir / "sample.h5").string();
  ASSERT_EQ(std::system((weft + " granulometry --generate-sample " + sample + " --sample-size 96").c_str()), 0);
  for (const char* element : {"octahedron", "cube", "ball"}) {
    const std::string base = weft + " granulometry --input " + sample + ":/exchange/data --element " + element +
                             " --size-map --output ";
    const std::string cpu = (dir / (std::string(element) + "-cpu")).string();
    const std::string gpu = (dir / (std::string(element) + "-gpu")).string();
    const std::string mapped = (dir / (std::string(element) + "-mapped")).string();
    ASSERT_EQ(std::system((base + cpu + " --devices cpu").c_str()), 0);
    ASSERT_EQ(std::system((base + gpu + " --devices gpu").c_str()), 0);
    ASSERT_EQ(std::system((base + mapped + " --mapping " + WEFT_SOURCE_DIR + "/mapping/granulometry.yaml").c_str()), 0);
    // Out of core on the GPU: 96 planes as 12 slabs of 8 (and the first pass that finds N).
    const std::string slabs = (dir / (std::string(element) + "-slabs")).string();
    ASSERT_EQ(std::system((base + slabs + " --devices gpu --slab-planes 8").c_str()), 0);
    EXPECT_EQ(curve_rows(cpu + "/curve.csv"), curve_rows(gpu + "/curve.csv")) << element;
    EXPECT_EQ(curve_rows(cpu + "/curve.csv"), curve_rows(mapped + "/curve.csv")) << element;
    EXPECT_EQ(curve_rows(cpu + "/curve.csv"), curve_rows(slabs + "/curve.csv")) << element;
    // Slabs read in chunks of 3 planes of 96 x 96 voxels, assembled on the GPU by upload.i.
    const std::string chunks = (dir / (std::string(element) + "-chunks")).string();
    ASSERT_EQ(std::system((base + chunks + " --devices gpu --max-size 12 --slab-planes 40 --read-chunk 27648").c_str()), 0);
    const std::string whole = (dir / (std::string(element) + "-whole12")).string();
    ASSERT_EQ(std::system((base + whole + " --devices cpu --max-size 12").c_str()), 0);
    EXPECT_EQ(curve_rows(whole + "/curve.csv"), curve_rows(chunks + "/curve.csv")) << element;
  }
  std::filesystem::remove_all(dir);
}

/// The program on the GPUs of 1, 2 and 4 ranks writes the CPU's curve. Where two ranks or more
/// have a GPU, they read their slabs in turns (SlabReadTurns), and the log says so.
TEST(GranulometryGpu, ProgramOnTheGpusOfOneTwoFourRanksMatchesCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
#if defined(WEFT_MPIEXEC)
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/apps/weft";
  if (!std::filesystem::exists(weft)) GTEST_SKIP() << "weft program not built";
  int gpus = 0;
  ASSERT_EQ(cudaGetDeviceCount(&gpus), cudaSuccess);
  const auto dir = std::filesystem::temp_directory_path() / ("weft-gran-ranks-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string sample = (dir / "sample.h5").string();
  ASSERT_EQ(std::system((weft + " granulometry --generate-sample " + sample + " --sample-size 96").c_str()), 0);
  // N = 12 in one round of slabs; N = 3 in slabs of 20 own planes, several rounds whose halos
  // (8 planes) do not meet, read by both slabs or (WEFT_HALO_HANDOVER=1) handed over, so that
  // the halo slots between ranks are written again.
  for (const char* element : {"octahedron", "ball"})
    for (const auto& [sizes, handover] : {std::pair<std::string, bool>{" --max-size 12", false},
                                          {" --max-size 3 --slab-planes 20", false},
                                          {" --max-size 3 --slab-planes 20", true}}) {
      const std::string args = " granulometry --input " + sample + ":/exchange/data --element " + element +
                               sizes + " --output ";
      const std::string what = std::string(element) + sizes + (handover ? ", handed over" : "");
      const std::string cpu = (dir / (std::string(element) + "-cpu")).string();
      ASSERT_EQ(std::system((weft + args + cpu + " --devices cpu").c_str()), 0);
      for (int ranks : {1, 2, 4}) {
        if (handover && ranks == 1) continue;  // nothing between ranks
        const std::string out = (dir / (std::string(element) + "-" + std::to_string(ranks))).string();
        const std::string log = out + ".log";
        const std::string command = std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " +
                                    std::to_string(ranks) + (handover ? " -x WEFT_HALO_HANDOVER=1 " : " ") + weft +
                                    args + out + " --devices gpu > " + log + " 2>&1";
        ASSERT_EQ(std::system(command.c_str()), 0) << read_text(log);
        EXPECT_EQ(curve_rows(cpu + "/curve.csv"), curve_rows(out + "/curve.csv")) << what << ", " << ranks << " ranks";
        const bool turns = read_text(log).find("read their slabs in turns") != std::string::npos;
        EXPECT_EQ(turns, ranks > 1 && gpus > 1) << read_text(log);  // GPUs on two ranks or more
      }
    }
  std::filesystem::remove_all(dir);
#else
  GTEST_SKIP() << "no mpiexec";
#endif
}

}  // namespace
}  // namespace weft
