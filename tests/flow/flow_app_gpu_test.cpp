// `weft flow --split` end to end on GPUs (label gpu): the program's split flow, in strips over the
// GPUs of one process and over two ranks, against the same program's flow on one GPU. With an
// epsilon the stopping test never reaches, both run the same one-iteration kernels: bit for bit
// (flow_split_gpu_test asserts the same of the library). Skips without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/run_weft.hpp"
#include "flow_test_util.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/tasks/io/image.hpp"

namespace weft::flow {
namespace {

namespace fs = std::filesystem;

constexpr int kWidth = 203, kHeight = 157;  // odd sizes: uneven strips on every level
const char* const kSettings = " --scales 3 --warps 2 --iterations 25 --epsilon 1e-9";

Array frame(double shift) {
  const Array p = test::pattern(kWidth, kHeight, 1.3 * shift, -0.6 * shift);
  Array a = Array::host(DType::u8, Shape(kHeight, kWidth));
  for (std::int64_t i = 0; i < a.size(); ++i) a.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(p.data<double>()[i]);
  return a;
}

TEST(FlowAppGpu, SplitOnGpusIsTheOneGpuFlow) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/apps/weft";
  if (!fs::exists(weft)) GTEST_SKIP() << "weft program not built at " << weft;
  const fs::path dir = fs::temp_directory_path() / ("weft-flow-app-gpu-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto path = [&](const std::string& name) { return (dir / name).string(); };
  ASSERT_NO_THROW(io::write_png(path("f0.png"), frame(0)));
  ASSERT_NO_THROW(io::write_png(path("f1.png"), frame(1)));
  for (const std::string method : {"tvl1", "hs", "clg"})
    for (const std::string precision : {"fp32", "fp16"}) {
      const std::string pair = "--frames " + path("f0.png") + " " + path("f1.png") + " --devices gpu --method " + method +
                               " --precision " + precision + kSettings;
      const std::string whole = path(method + precision + ".flo");
      const auto one = ::weft::test::run_weft("flow", pair + " --output " + whole);
      ASSERT_EQ(one.code, 0) << one.output;
      std::vector<std::pair<std::string, std::string>> runs = {{" --strips 3", ""}};  // (options, launcher)
#if defined(WEFT_MPIEXEC)
      runs.emplace_back("", std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n 2 ");
#endif
      const Array want = io::read_flo(whole);
      for (std::size_t k = 0; k < runs.size(); ++k) {
        const auto& [options, launcher] = runs[k];
        const std::string out = path(method + precision + "-split" + std::to_string(k) + ".flo");
        const auto o = ::weft::test::run_weft("flow", pair + " --split" + options + " --output " + out, launcher);
        ASSERT_EQ(o.code, 0) << launcher << method << " " << precision << options << ": " << o.output;
        const Array got = io::read_flo(out);
        ASSERT_EQ(got.shape(), want.shape());
        const test::Diff d = test::diff(got, want);
        std::printf("%s %s --split%s%s: max difference %g px (flow up to %g px)\n", method.c_str(), precision.c_str(),
                    options.c_str(), launcher.empty() ? "" : " under mpiexec -n 2", d.max, d.scale);
        EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << launcher << method << " " << precision << options;
      }
    }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft::flow
