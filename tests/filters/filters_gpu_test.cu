// CUDA filters against the independent references (same tolerances as filters_test.cpp:
// medians exact; convolutions within tolerance.hpp's fp32 accumulation bound and f16 rounding).
// Sizes sweep 1, tile − 1, tile, tile + 1 (tiles are 32 wide, 16/32 rows high), odd and larger.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "reference.hpp"
#include "tolerance.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/filters/cuda.hpp"
#include "weft/tasks/filters/filters.hpp"

namespace weft::filters {
namespace {

using test::get;

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

class FiltersGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    WEFT_CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_) WEFT_CUDA_CHECK(cudaStreamDestroy(stream_));
  }
  Array to_device(const Array& h) {
    Array d = Array::device(h.dtype(), h.shape(), 0, stream_);
    WEFT_CUDA_CHECK(cudaMemcpyAsync(d.raw(), h.raw(), h.bytes(), cudaMemcpyHostToDevice, stream_));
    return d;
  }
  Array to_host(const Array& d) {
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return d.to_host();
  }
  /// `in` convolved by the raw launcher with `method` (3D arrays plane by plane), back on the host.
  Array convolve_with(const Array& in, const std::vector<float>& k, int size, Border b, std::string_view method) {
    const Shape& s = in.shape();
    const Array d_in = to_device(in);
    const Array d_k =
        to_device(Array::wrap(DType::f32, Shape(static_cast<std::int64_t>(k.size())), const_cast<float*>(k.data())));
    Array d_out = Array::device(in.dtype(), s, 0, stream_);
    const bool planar3 = s.ndim() == 3;
    gpu::launch_convolve(d_in.raw(), d_out.raw(), in.dtype(), planar3 ? s[0] : 1, s[planar3 ? 1 : 0],
                         s[planar3 ? 2 : 1], k.data(), d_k.data<float>(), size, b, stream_, method);
    return to_host(d_out);
  }
  cudaStream_t stream_ = nullptr;
};

const Border kBorders[] = {Border::clamp, Border::mirror, Border::zero};
const Shape kImages[] = {Shape(1, 1), Shape(15, 31), Shape(16, 32), Shape(17, 33), Shape(33, 65), Shape(101, 77)};

std::string describe(const Array& a, int size, Border b) {
  return std::string(dtype_name(a.dtype())) + " " + a.shape().str() + " size " + std::to_string(size) + " " +
         std::string(border_name(b));
}

TEST_F(FiltersGpu, Median2DIsExact) {
  std::uint32_t seed = 1;
  for (DType t : {DType::u8, DType::u16, DType::f32})
    for (const Shape& s : kImages)
      for (int size : {3, 5, 7, 9})
        for (Border b : kBorders) {
          const Array in = test::random_array(t, s, t == DType::u8 ? 8.0 : 1000.0, seed++);
          const Array out = to_host(gpu::median(to_device(in), size, b, stream_));
          const std::vector<double> ref = test::median_reference(in, size, b);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(get(out, i), ref[i]) << describe(in, size, b) << " at " << i;
        }
}

// The packed u8/u16 3×3 and 5×5 kernel (strips of 16 bytes × 4 or 2 rows, blocks of 32 × 4 strips):
// widths whose rows are 16-byte aligned take the vector path inside and the gathering path at the
// edges; heights sweep a block of strips (16 and 8 rows) ±1; 4-level images make ties frequent.
TEST_F(FiltersGpu, PackedMedianIsExactOnAlignedWidths) {
  std::uint32_t seed = 200;
  for (DType t : {DType::u8, DType::u16})
    for (const Shape& s : {Shape(1, 64), Shape(7, 48), Shape(15, 80), Shape(16, 512), Shape(17, 528),
                           Shape(33, 1040), Shape(9, 4096)})
      for (int size : {3, 5})
        for (Border b : kBorders)
          for (double range : {4.0, 65536.0}) {
            const Array in = test::random_array(t, s, t == DType::u8 ? std::min(range, 256.0) : range, seed++);
            const Array out = to_host(gpu::median(to_device(in), size, b, stream_));
            const std::vector<double> ref = test::median_reference(in, size, b);
            for (std::int64_t i = 0; i < in.size(); ++i)
              ASSERT_EQ(get(out, i), ref[i]) << describe(in, size, b) << " at " << i;
          }
}

TEST_F(FiltersGpu, Median3DIsExact) {
  std::uint32_t seed = 50;
  for (DType t : {DType::u8, DType::u16, DType::f32})
    for (const Shape& s : {Shape(1, 1, 1), Shape(5, 9, 33), Shape(12, 17, 40)})
      for (int size : {3, 5})
        for (Border b : kBorders) {
          const Array in = test::random_array(t, s, 300.0, seed++);
          const Array out = to_host(gpu::median(to_device(in), size, b, stream_));
          const std::vector<double> ref = test::median_reference(in, size, b);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(get(out, i), ref[i]) << describe(in, size, b) << " at " << i;
        }
}

TEST_F(FiltersGpu, ConvolveWithinTolerance) {
  std::uint32_t seed = 9;
  for (DType t : {DType::f32, DType::u8, DType::u16, DType::f16})
    for (const Shape& s : kImages)
      for (int size : {1, 3, 5, 7, 9, 15, 31, 63})
        for (Border b : kBorders) {
          if (size > 15 && s[0] < 100 && s[0] != 1) continue;  // large kernels: the largest image and 1x1
          std::mt19937 rng(seed);
          std::uniform_real_distribution<float> u(t == DType::f32 ? -1.0f : 0.0f, 1.0f);
          std::vector<float> k(static_cast<std::size_t>(size) * size);
          float sum = 0;
          for (float& v : k) sum += std::abs(v = u(rng));
          for (float& v : k) v /= sum;
          const Array in = test::random_array(t, s, t == DType::u8 ? 256.0 : 1000.0, seed++);
          const Array out = to_host(gpu::convolve(to_device(in), k, size, b, stream_));
          std::vector<double> l1;
          const std::vector<double> ref = test::convolve_reference(in, {k.begin(), k.end()}, size, b, &l1);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                << describe(in, size, b) << " at " << i << ": " << get(out, i) << " vs " << ref[i];
        }
}

// The blocked kernel (radius ≤ 5): blocks of 128 × 32 outputs, so these shapes give blocks wholly
// inside the image (gathered without borders) next to edge blocks, widths a multiple of 4 (float4
// stores) or not, and the tile −1/0/+1.
TEST_F(FiltersGpu, BlockedConvolutionMatchesOnInteriorAndEdgeBlocks) {
  std::uint32_t seed = 300;
  for (DType t : {DType::f32, DType::u8, DType::f16})
    for (const Shape& s : {Shape(31, 127), Shape(32, 128), Shape(33, 129), Shape(70, 300), Shape(101, 517),
                           Shape(2, 40, 260)})
      for (int size : {1, 3, 5, 7, 9, 11})
        for (Border b : kBorders) {
          std::mt19937 rng(seed);
          std::uniform_real_distribution<float> u(-1.0f, 1.0f);
          std::vector<float> k(static_cast<std::size_t>(size) * size);
          float sum = 0;
          for (float& v : k) sum += std::abs(v = u(rng));
          for (float& v : k) v /= sum;
          const Array in = test::random_array(t, s, t == DType::u8 ? 256.0 : 1000.0, seed++);
          const Array out = to_host(gpu::convolve(to_device(in), k, size, b, stream_));
          std::vector<double> l1;
          const std::vector<double> ref = test::convolve_reference(in, {k.begin(), k.end()}, size, b, &l1);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                << describe(in, size, b) << " at " << i << ": " << get(out, i) << " vs " << ref[i];
        }
}

/// Random kernel of size² weights with Σ|w| = 1 (signed for f32 images).
std::vector<float> random_kernel(int size, bool is_signed, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(is_signed ? -1.0f : 0.0f, 1.0f);
  std::vector<float> k(static_cast<std::size_t>(size) * size);
  float sum = 0;
  for (float& v : k) sum += std::abs(v = u(rng));
  for (float& v : k) v /= sum;
  return k;
}

// Every median method forced through the raw launcher (names from median_methods): strips of
// 16 u8 / 8 u16 pixels × 1..8 rows in blocks of 32 strips, so widths sweep the strip and the
// 16-byte fast path (aligned widths) ±1 and the block of strips, heights the row groups ±1, odd.
TEST_F(FiltersGpu, EveryMedianMethodIsExact) {
  std::uint32_t seed = 500;
  for (DType t : {DType::u8, DType::u16})
    for (int size : {3, 5, 7})
      for (const std::string& method : gpu::median_methods(t, size, false))
        for (const Shape& s : {Shape(1, 1), Shape(2, 17), Shape(9, 48), Shape(17, 33), Shape(16, 528), Shape(33, 1040),
                               Shape(3, 7, 64)})
          for (Border b : kBorders) {
            const Array in = test::random_array(t, s, seed % 2 ? 4.0 : (t == DType::u8 ? 256.0 : 65536.0), seed);
            ++seed;
            const Array d_in = to_device(in);
            Array d_out = Array::device(t, s, 0, stream_);
            const bool planar3 = s.ndim() == 3;
            gpu::launch_median(d_in.raw(), d_out.raw(), t, planar3 ? s[0] : 1, s[planar3 ? 1 : 0], s[planar3 ? 2 : 1],
                               size, false, b, stream_, method);
            const Array out = to_host(d_out);
            for (std::int64_t z = 0; z < (planar3 ? s[0] : 1); ++z) {  // 3D arrays: plane by plane
              const std::int64_t plane = s[s.ndim() - 2] * s[s.ndim() - 1];
              Array one = Array::host(t, Shape(s[s.ndim() - 2], s[s.ndim() - 1]));
              std::memcpy(one.raw(), static_cast<const char*>(in.raw()) + z * plane * dtype_size(t), one.bytes());
              const std::vector<double> ref = test::median_reference(one, size, b);
              for (std::int64_t i = 0; i < plane; ++i)
                ASSERT_EQ(get(out, z * plane + i), ref[i])
                    << describe(in, size, b) << " method " << method << " at " << z * plane + i;
            }
          }
}

// Every convolution method (tile, blocked, streaming with 4/8/16 rows, rolling strips, cuFFT): warps of 128
// columns, so widths sweep the warp ±1, the ±r halo of the shuffle path (inside warps need
// r ≤ x, x + 128 + r ≤ nx, widths multiple of 4) and unaligned widths; heights the row groups
// (5 × 264: inside warps whose strip runs more than R rows past the image, mirrored back into it).
TEST_F(FiltersGpu, EveryConvolutionMethodMatches) {
  std::uint32_t seed = 700;
  for (DType t : {DType::f32, DType::u8, DType::u16, DType::f16})
    for (int size : {1, 3, 5, 7, 9, 21})
      for (const std::string& method : gpu::convolve_methods(size, t))
        for (const Shape& s : {Shape(1, 1), Shape(5, 127), Shape(16, 128), Shape(17, 129), Shape(33, 260),
                               Shape(70, 388), Shape(5, 264), Shape(2, 19, 264)})
          for (Border b : kBorders) {
            if (size > 9 && s[s.ndim() - 1] < 200) continue;  // large kernels: the wide images
            const std::vector<float> k = random_kernel(size, t == DType::f32, seed);
            const Array in = test::random_array(t, s, t == DType::u8 ? 256.0 : 1000.0, seed++);
            const Array out = convolve_with(in, k, size, b, method);
            std::vector<double> l1;
            const std::vector<double> ref = test::convolve_reference(in, {k.begin(), k.end()}, size, b, &l1);
            for (std::int64_t i = 0; i < in.size(); ++i)
              ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                  << describe(in, size, b) << " method " << method << " at " << i << ": " << get(out, i) << " vs "
                  << ref[i];
          }
}

// Rolling strips on an image large enough that one wave of resident warps gives strips of 16 rows
// or more (6001 rows: up to 375 strips per wave): the launcher then splits the rows into even
// strips, every other one streamed upwards (the kernel's rows flipped); "rollp" pairs them, the
// neighbours exchanging their boundary sums. Both directions, their meeting rows and the image's
// top and bottom under every border must match the double reference within the fp32 bound, as the
// fixed 16-row strips (all downwards) must; u8 and f16 images (7×7, clamp) within their rounding.
TEST_F(FiltersGpu, RollingStripsSplitEvenlyMatchTheReference) {
  std::uint32_t seed = 900;
  const Shape s(6001, 2944);  // rows 4-element aligned (the rolling path), no whole number of strips
  for (DType t : {DType::f32, DType::u8, DType::f16})
    for (int size : {3, 7})
      for (Border b : kBorders) {
        if ((size == 3 || t != DType::f32) && b != Border::clamp) continue;
        if (t != DType::f32 && size != 7) continue;
        const std::vector<float> k = random_kernel(size, t == DType::f32, seed);
        const Array in = test::random_array(t, s, t == DType::u8 ? 256.0 : 1000.0, seed++);
        std::vector<double> l1;
        const std::vector<double> ref = test::convolve_reference(in, {k.begin(), k.end()}, size, b, &l1);
        for (const std::string method : {"roll", "rolls", "rollq", "rollp", "rollq16"}) {
          const Array out = convolve_with(in, k, size, b, method);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                << describe(in, size, b) << " method " << method << " at " << i << ": " << get(out, i) << " vs "
                << ref[i];
        }
      }
}

// The tensor-core method (u8, f16): every ring size (Kp = 16, 32, 64 with 1 to 4 k-steps) at its
// smallest and largest kernel, signed and positive weights, strips of 32·MT columns cut by the
// image edge at both parities of the radius, rows per strip shorter and longer than the kernel.
TEST_F(FiltersGpu, TensorConvolutionMatches) {
  std::uint32_t seed = 900;
  for (DType t : {DType::u8, DType::f16})
    for (int size : {1, 3, 9, 15, 17, 31, 33, 47, 49, 63})
      for (const Shape& s : {Shape(1, 1), Shape(3, 5), Shape(40, 33), Shape(70, 200), Shape(2, 90, 131)})
        for (Border b : kBorders) {
          const std::vector<float> k = random_kernel(size, seed % 2 == 1, seed);
          const Array in = test::random_array(t, s, t == DType::u8 ? 256.0 : 1000.0, seed++);
          const Array out = convolve_with(in, k, size, b, "tensor");
          std::vector<double> l1;
          const std::vector<double> ref = test::convolve_reference(in, {k.begin(), k.end()}, size, b, &l1);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                << describe(in, size, b) << " at " << i << ": " << get(out, i) << " vs " << ref[i];
        }
  const Array d = to_device(test::random_array(DType::f32, Shape(8, 8), 1.0, 1));
  Array out = Array::device(DType::f32, Shape(8, 8), 0, stream_);
  const std::vector<float> w(81, 1.0f / 81);
  EXPECT_THROW(gpu::launch_convolve(d.raw(), out.raw(), DType::f32, 1, 8, 8, w.data(), nullptr, 9, Border::clamp,
                                    stream_, "tensor"),
               ConfigError);
}

// Every separable method; the fused streaming kernels round exactly as the two-pass kernels
// (same fma chains, convolve_stream.cuh), so their outputs are also compared bit for bit.
TEST_F(FiltersGpu, EverySeparableMethodMatchesAndFusedEqualsTwoPass) {
  for (DType t : {DType::f32, DType::u8, DType::u16, DType::f16})
    for (int size : {1, 3, 5, 9, 15})
      for (const Shape& s : {Shape(1, 1), Shape(17, 129), Shape(33, 260), Shape(2, 19, 264)})
        for (Border b : kBorders) {
          const std::vector<float> k = gaussian_kernel(size / 3.0 + 0.5, size);
          const Array in = test::random_array(t, s, 200.0, 11);
          const Array d_in = to_device(in);
          const Array d_k = to_device(Array::wrap(DType::f32, Shape(static_cast<std::int64_t>(k.size())),
                                                  const_cast<float*>(k.data())));
          Array d_scratch = Array::device(DType::f32, s, 0, stream_);
          const bool planar3 = s.ndim() == 3;
          std::vector<double> full(k.size() * k.size());
          for (std::size_t i = 0; i < k.size(); ++i)
            for (std::size_t j = 0; j < k.size(); ++j) full[i * k.size() + j] = static_cast<double>(k[i]) * k[j];
          std::vector<double> l1;
          const std::vector<double> ref = test::convolve_reference(in, full, size, b, &l1);
          Array two_pass;
          for (const std::string& method : gpu::separable_methods(size)) {
            Array d_out = Array::device(t, s, 0, stream_);
            gpu::launch_convolve_separable(d_in.raw(), d_out.raw(), d_scratch.data<float>(), t, planar3 ? s[0] : 1,
                                           s[planar3 ? 1 : 0], s[planar3 ? 2 : 1], k.data(), k.data(),
                                           d_k.data<float>(), d_k.data<float>(), size, b, stream_, method);
            const Array out = to_host(d_out);
            if (method == "two_pass") two_pass = out;
            for (std::int64_t i = 0; i < in.size(); ++i) {
              ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                  << describe(in, size, b) << " method " << method << " at " << i << ": " << get(out, i) << " vs "
                  << ref[i];
              if (!two_pass.empty())
                ASSERT_EQ(get(out, i), get(two_pass, i)) << describe(in, size, b) << " method " << method << " at " << i;
            }
          }
        }
}

// Chained launches (weft::launch_chained): each kernel reads what the one before it on the stream
// wrote, with no synchronisation between them; a kernel touching memory before its wait for the
// previous grid would read a half-written image. Medians (exact) and one-tap convolutions (exact
// copies of a neighbour) chained eight times against the CPU applied eight times.
TEST_F(FiltersGpu, ChainedLaunchesSeeTheKernelBefore) {
  const Shape s(512, 1024);
  for (const char* method : {"aligned2", "aligned8"}) {
    Array host = test::random_array(DType::u8, s, 256.0, 31);
    Array a = to_device(host), b = Array::device(DType::u8, s, 0, stream_);
    for (int k = 0; k < 8; ++k) {
      gpu::launch_median(a.raw(), b.raw(), DType::u8, 1, s[0], s[1], 3, false, Border::clamp, stream_, method);
      std::swap(a, b);
      const std::vector<double> ref = test::median_reference(host, 3, Border::clamp);
      for (std::int64_t i = 0; i < host.size(); ++i) host.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(ref[i]);
    }
    const Array out = to_host(a);
    ASSERT_EQ(std::memcmp(out.raw(), host.raw(), host.bytes()), 0) << method;
  }
  const std::vector<float> tap = {0, 0, 0, 0, 0, 1, 0, 0, 0};  // one neighbour along x
  for (const char* method : {"rollq", "rolls", "stream4"}) {
    Array host = test::random_array(DType::f32, s, 1000.0, 37);
    Array a = to_device(host), b = Array::device(DType::f32, s, 0, stream_);
    const Array d_k = to_device(
        Array::wrap(DType::f32, Shape(static_cast<std::int64_t>(tap.size())), const_cast<float*>(tap.data())));
    for (int k = 0; k < 8; ++k) {
      gpu::launch_convolve(a.raw(), b.raw(), DType::f32, 1, s[0], s[1], tap.data(), d_k.data<float>(), 3,
                           Border::clamp, stream_, method);
      std::swap(a, b);
      const std::vector<double> ref = test::convolve_reference(host, {tap.begin(), tap.end()}, 3, Border::clamp);
      for (std::int64_t i = 0; i < host.size(); ++i) host.data<float>()[i] = static_cast<float>(ref[i]);
    }
    const Array out = to_host(a);
    ASSERT_EQ(std::memcmp(out.raw(), host.raw(), host.bytes()), 0) << method;
  }
}

TEST_F(FiltersGpu, UnknownMethodsAreRejected) {
  const Array d = to_device(test::random_array(DType::u8, Shape(8, 8), 256.0, 1));
  Array out = Array::device(DType::u8, Shape(8, 8), 0, stream_);
  EXPECT_THROW(gpu::launch_median(d.raw(), out.raw(), DType::u8, 1, 8, 8, 7, false, Border::clamp, stream_, "dpx4"),
               ConfigError);
  const float w = 1.0f;
  EXPECT_THROW(gpu::launch_convolve(d.raw(), out.raw(), DType::u8, 1, 8, 8, &w, nullptr, 1, Border::clamp, stream_,
                                    "stream3"),
               ConfigError);
}

TEST_F(FiltersGpu, SeparableAndGaussianMatchTheCpuPath) {
  for (DType t : {DType::f32, DType::u8, DType::u16, DType::f16})
    for (const Shape& s : kImages)
      for (int size : {1, 3, 7, 31})
        for (Border b : kBorders) {
          const std::vector<float> k = gaussian_kernel(size / 3.0 + 0.5, size);
          const Array in = test::random_array(t, s, 200.0, 3);
          const Array out = to_host(gpu::convolve_separable(to_device(in), k, k, b, stream_));
          std::vector<double> full(k.size() * k.size());
          for (std::size_t i = 0; i < k.size(); ++i)
            for (std::size_t j = 0; j < k.size(); ++j) full[i * k.size() + j] = static_cast<double>(k[i]) * k[j];
          std::vector<double> l1;
          const std::vector<double> ref = test::convolve_reference(in, full, size, b, &l1);
          for (std::int64_t i = 0; i < in.size(); ++i)
            ASSERT_TRUE(test::within_tolerance(t, get(out, i), ref[i], l1[i]))
                << describe(in, size, b) << " at " << i << ": " << get(out, i) << " vs " << ref[i];
        }
}

TEST_F(FiltersGpu, PyramidMatchesTheCpuPyramid) {
  const Array in = test::random_array(DType::f32, Shape(67, 45), 1.0, 4);
  const std::vector<Array> cpu = gaussian_pyramid(in, 5, 1.0, Border::clamp);
  const std::vector<Array> gpu = gpu::gaussian_pyramid(to_device(in), 5, 1.0, Border::clamp, stream_);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t level = 0; level < cpu.size(); ++level) {
    const Array g = to_host(gpu[level]);
    ASSERT_EQ(g.shape(), cpu[level].shape());
    for (std::int64_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(get(g, i), get(cpu[level], i), 1e-5) << "level " << level << " at " << i;  // fp32 rounding order
  }
}

}  // namespace
}  // namespace weft::filters
