// Filters benchmark: device copy bandwidth first (cudaMemcpy D2D, bytes read + written), then MP/s
// of median 3/5/7 (u8) and convolution 3..55 (f32, full and separable), kernel only and with
// H2D + D2H from pinned memory, at 512² to 8192²; peers: NPP (if built) and cuFFT; the seed's
// figure (Perrot median 3×3: 1854 MP/s, 4096² 8-bit with transfers, C2070). Writes filters.json.
// Usage: filters_bench [--quick]   (--quick: 512² and 2048² only)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "peers.hpp"
#include "result.hpp"
#include "gpu.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/filters/cuda.hpp"

namespace {

using namespace weft;
using namespace weft::filters::bench;

constexpr int kReps = 10;

struct Buffers {
  void* d_in = nullptr;
  void* d_out = nullptr;
  float* d_scratch = nullptr;
  void* h_in = nullptr;
  void* h_out = nullptr;
};

struct Row {
  std::string filter;
  int n = 0;
  double kernel_mps = 0, with_transfers_mps = 0, floor_fraction = 0, npp_mps = 0, fft_mps = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  weft::bench::Result result("filters", argc, argv);
  cudaStream_t stream;
  WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
  const double bandwidth = bench::device_copy_bandwidth(stream);
  std::printf("device copy bandwidth (read + write): %.1f GB/s\n", bandwidth / 1e9);
  result.metric("copy_bandwidth_GBps", bandwidth / 1e9);

  const std::vector<int> sizes = quick ? std::vector<int>{512, 2048} : std::vector<int>{512, 1024, 2048, 4096, 8192};
  const std::vector<int> median_sizes{3, 5, 7};
  const std::vector<int> conv_sizes{3, 5, 7, 9, 11, 15, 21, 31, 55};
  const int max_n = sizes.back();
  const std::size_t max_bytes = std::size_t(max_n) * max_n * sizeof(float);
  Buffers b;
  WEFT_CUDA_CHECK(cudaMalloc(&b.d_in, max_bytes));
  WEFT_CUDA_CHECK(cudaMalloc(&b.d_out, max_bytes));
  WEFT_CUDA_CHECK(cudaMalloc(&b.d_scratch, max_bytes));
  WEFT_CUDA_CHECK(cudaMallocHost(&b.h_in, max_bytes));
  WEFT_CUDA_CHECK(cudaMallocHost(&b.h_out, max_bytes));
  std::memset(b.h_in, 0x3c, max_bytes);
  WEFT_CUDA_CHECK(cudaMemcpy(b.d_in, b.h_in, max_bytes, cudaMemcpyHostToDevice));
  float* d_weights = nullptr;
  WEFT_CUDA_CHECK(cudaMalloc(&d_weights, 64 * 64 * sizeof(float)));
  {
    std::vector<float> w(64 * 64, 1.0f / (55 * 55));
    WEFT_CUDA_CHECK(cudaMemcpy(d_weights, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  }

  std::vector<Row> rows;
  std::vector<std::string> peer_errors;  // a failing peer is recorded, not fatal
  auto measure = [&](const std::string& name, int n, std::size_t elem, auto&& launch) {
    Row row{name, n};
    const double mp = double(n) * n / 1e6;
    const std::size_t bytes = std::size_t(n) * n * elem;
    const double k_ms = time_ms(kReps, stream, launch);
    const double t_ms = time_ms(kReps, stream, [&] {
      WEFT_CUDA_CHECK(cudaMemcpyAsync(b.d_in, b.h_in, bytes, cudaMemcpyHostToDevice, stream));
      launch();
      WEFT_CUDA_CHECK(cudaMemcpyAsync(b.h_out, b.d_out, bytes, cudaMemcpyDeviceToHost, stream));
    });
    row.kernel_mps = mp / (k_ms * 1e-3);
    row.with_transfers_mps = mp / (t_ms * 1e-3);
    row.floor_fraction = (2.0 * bytes / bandwidth) / (k_ms * 1e-3);  // floor time / measured time
    return row;
  };

  for (int n : sizes) {
    for (int k : median_sizes) {
      Row row = measure("median" + std::to_string(k) + "x" + std::to_string(k) + " u8", n, 1, [&] {
        filters::gpu::launch_median(b.d_in, b.d_out, DType::u8, 1, n, n, k, false, filters::Border::clamp, stream);
      });
#if defined(WEFT_HAVE_NPP)
      const double interior = double(n - 2 * (k / 2)) * (n - 2 * (k / 2)) / 1e6;
      try {
        row.npp_mps = interior / (npp_median_ms(static_cast<const std::uint8_t*>(b.d_in),
                                                static_cast<std::uint8_t*>(b.d_out), n, n, k, kReps, stream) * 1e-3);
      } catch (const std::exception& e) {
        peer_errors.push_back(e.what());
      }
#endif
      rows.push_back(row);
    }
    for (int k : conv_sizes) {
      Row row = measure("conv" + std::to_string(k) + "x" + std::to_string(k) + " f32", n, 4, [&] {
        filters::gpu::launch_convolve(b.d_in, b.d_out, DType::f32, 1, n, n, d_weights, k, filters::Border::clamp,
                                      stream);
      });
#if defined(WEFT_HAVE_NPP)
      const double interior = double(n - 2 * (k / 2)) * (n - 2 * (k / 2)) / 1e6;
      try {
        row.npp_mps = interior / (npp_convolve_ms(static_cast<const float*>(b.d_in), static_cast<float*>(b.d_out), n,
                                                  n, d_weights, k, kReps, stream) * 1e-3);
      } catch (const std::exception& e) {
        peer_errors.push_back(e.what());
      }
#endif
      if (k >= 15) {
        try {
          row.fft_mps = double(n) * n / 1e6 /
                        (fft_convolve_ms(static_cast<const float*>(b.d_in), static_cast<float*>(b.d_out), n, n, k,
                                         kReps, stream) * 1e-3);
        } catch (const std::exception& e) {
          peer_errors.push_back(e.what());
        }
      }
      rows.push_back(row);
      Row sep = measure("separable" + std::to_string(k) + " f32", n, 4, [&] {
        filters::gpu::launch_convolve_separable(b.d_in, b.d_out, b.d_scratch, DType::f32, 1, n, n, d_weights,
                                                d_weights, k, filters::Border::clamp, stream);
      });
      rows.push_back(sep);
    }
  }

  std::printf("%-18s %6s %12s %14s %10s %10s %10s\n", "filter", "size", "kernel MP/s", "w/ xfer MP/s",
              "of floor", "NPP MP/s", "cuFFT MP/s");
  nlohmann::json table = nlohmann::json::array();
  double median3_min = 1e30, conv7_min = 1e30, npp_ratio_min = 1e30;
  bool npp_ran = false;
  for (const Row& r : rows) {
    std::printf("%-18s %6d %12.0f %14.0f %9.0f%% %10.0f %10.0f\n", r.filter.c_str(), r.n, r.kernel_mps,
                r.with_transfers_mps, 100 * r.floor_fraction, r.npp_mps, r.fft_mps);
    table.push_back({{"filter", r.filter}, {"n", r.n}, {"kernel_MPps", r.kernel_mps},
                     {"with_transfers_MPps", r.with_transfers_mps}, {"fraction_of_copy_bandwidth", r.floor_fraction},
                     {"npp_MPps", r.npp_mps}, {"cufft_MPps", r.fft_mps}});
    if (r.n >= 2048 && r.filter == "median3x3 u8") median3_min = std::min(median3_min, r.floor_fraction);
    if (r.n >= 2048 && (r.filter == "conv3x3 f32" || r.filter == "conv5x5 f32" || r.filter == "conv7x7 f32"))
      conv7_min = std::min(conv7_min, r.floor_fraction);
    if (r.npp_mps > 0) {
      npp_ran = true;
      npp_ratio_min = std::min(npp_ratio_min, r.kernel_mps / r.npp_mps);
    }
  }
  result.metric("table", table);
  if (!peer_errors.empty()) result.metric("peer_errors", peer_errors);
  result.metric("seed_perrot_median3x3_4096_u8_with_transfers_MPps_C2070", 1854);
  result.metric("target_scope", "bandwidth targets: minimum over images >= 2048^2, kernel only, "
                                "bytes = input + output, against the measured D2D copy bandwidth");
  result.target("median3x3 >= 80% of bandwidth", median3_min, 0.8, true);
  result.target("conv up to 7x7 >= 80% of bandwidth", conv7_min, 0.8, true);
  if (npp_ran) {
    result.target("faster than NPP at every size", npp_ratio_min, 1.0, true);
  } else {
    result.metric("npp", "not run: NPP libraries not found at build time");
  }
  std::printf("wrote %s\n", result.write().c_str());
  return 0;
}
