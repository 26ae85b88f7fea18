// Flow benchmark: ms per frame per method and precision at 640x480, 1920x1080 and 3840x2160 for
// (a) the seed's setting (3 scales x 1 warp x 10 iterations, no median, epsilon 0, no texture
// part) and (b) the quality defaults; each against the memory-bandwidth floor of its iterations.
// EPE and time on the shared pairs, beside OpenCV DualTVL1 on the CPU (bench/results/flow_opencv_cpu.json).
// Per-stage GPU times (CUDA events) of TV-L1 at every size: where the time goes.
// Usage: flow_bench [--quick]   (--quick: 640x480 and the pairs only)
//        flow_bench --seed [W H fp32|fp16]   TV-L1 at the seed's setting only, per stage (prints,
//                                            writes nothing); with a size, 3 calls of it (profilers)
//        flow_bench --farm [PAIRS]   video farm over every GPU of this process against one GPU
//                                    (1920x1080, TV-L1 defaults): bench/results/flow_farm.json
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <nlohmann/json.hpp>

#include "result.hpp"
#include "gpu.hpp"
#include "weft/cuda.hpp"
#include "weft/exec/executor.hpp"
#include "weft/tasks/flow/colour.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/flow/task.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/tasks/io/image.hpp"

namespace {
using namespace weft;
using flow::FlowParams;
using flow::Method;
using flow::Precision;

Array upload(const Array& h, cudaStream_t s) {
  Array d = Array::device(h.dtype(), h.shape(), 0, s);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(d.raw(), h.raw(), h.bytes(), cudaMemcpyHostToDevice, s));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(s));
  return d;
}

Array texture(int w, int h, double dx, double dy) {
  Array a = Array::host(DType::u8, Shape(h, w));
  auto* p = a.data<std::uint8_t>();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double X = (x - dx) * 640.0 / w, Y = (y - dy) * 480.0 / h;
      p[y * w + x] = static_cast<std::uint8_t>(128 + 50 * std::sin(0.31 * X + 0.13 * Y) + 40 * std::cos(0.23 * Y - 0.17 * X));
    }
  return a;
}

// Median ms of `reps` runs (after one warm-up), synchronised, stream-timed with events.
double time_ms(const Array& a, const Array& b, const FlowParams& p, int reps, cudaStream_t s, Array* out = nullptr) {
  cudaEvent_t e0, e1;
  WEFT_CUDA_CHECK(cudaEventCreate(&e0));
  WEFT_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    WEFT_CUDA_CHECK(cudaEventRecord(e0, s));
    Array f = flow::compute_cuda(a, b, p, s);
    WEFT_CUDA_CHECK(cudaEventRecord(e1, s));
    WEFT_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    WEFT_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) t.push_back(ms);
    if (out) *out = f;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return bench::median(t);
}

// Bytes one launch of the iteration kernel moves per pixel (reads + writes), from the kernels'
// loads and stores: tvl1: u (float2) r/w, two duals r/w, (Ix,Iy), rho_c; hs/clg: u r/w and 5
// tensor planes. A fused TV-L1 launch (epsilon 0) moves the same for up to kFusedSteps iterations.
constexpr int kFusedSteps = 5;  // FusedTvl1Policy::steps (tasks/flow/cuda/kernels.cuh)
double bytes_per_pixel_launch(Method m, Precision p) {
  const double s = p == Precision::fp16 ? 2 : 4;
  return m == Method::tvl1 ? 8 + 8 + 4 * s + 2 * s + s + 4 * s : 8 + 8 + 5 * s;
}
int launches(const FlowParams& p, Method m) {
  return m == Method::tvl1 && p.epsilon == 0 ? (p.iterations + kFusedSteps - 1) / kFusedSteps : p.iterations;
}

// Floor of the iterations (the pyramid and warps are cheaper and left out): every level, every
// warp, each launch one full pass over the level's state at the measured bandwidth.
double floor_ms(int w, int h, const FlowParams& p, Method m, Precision pr, double bandwidth) {
  double pixels = 0;
  int lw = w, lh = h;
  for (int k = 0; k < p.scales; ++k) {
    if (k > 0) {
      const int nw = std::max(1, int(lw * p.zoom + 0.5)), nh = std::max(1, int(lh * p.zoom + 0.5));
      if (nw < 16 || nh < 16) break;
      lw = nw, lh = nh;
    }
    pixels += double(lw) * lh;
  }
  return pixels * p.warps * launches(p, m) * bytes_per_pixel_launch(m, pr) / bandwidth * 1e3;
}

FlowParams seed_setting(Method m, Precision pr) {
  FlowParams p = flow::default_params(m);
  p.precision = pr;
  p.scales = 3, p.warps = 1, p.iterations = 10, p.epsilon = 0, p.median = 0, p.texture = 0;
  p.presmooth = 0, p.antialias = 0;  // the fixed work the seed setting has been timed with
  return p;
}

struct PairFiles {
  const char *name, *f0, *f1, *truth;
};
constexpr PairFiles kPairs[] = {
    {"RubberWhale", "middlebury/RubberWhale/frame10.png", "middlebury/RubberWhale/frame11.png", "middlebury/RubberWhale/flow10.flo"},
    {"Hydrangea", "middlebury/Hydrangea/frame10.png", "middlebury/Hydrangea/frame11.png", "middlebury/Hydrangea/flow10.flo"},
    {"SintelEasy", "sintel/easy/frame_0002.png", "sintel/easy/frame_0003.png", "sintel/easy/gt/frame_0002.flo"},
};

// Mean per-stage milliseconds of `reps` calls (events between stages; each call synchronises).
flow::StageTimes stage_times(const Array& a, const Array& b, const FlowParams& p, int reps, cudaStream_t s) {
  flow::StageTimes sum;
  for (int r = 0; r < reps; ++r) (void)flow::compute_cuda(a, b, p, s, &sum);
  for (double* v : {&sum.input, &sum.pyramid, &sum.warp, &sum.iterations, &sum.median, &sum.upsample}) *v /= reps;
  return sum;
}

// --- Video farm: pairs from host memory through a farm of OpticalFlow replicas, one per GPU.
using Clock = std::chrono::steady_clock;

class RepeatPairs final : public Task {
 public:
  RepeatPairs(std::vector<Array> frames, int pairs) : Task("frames"), frames_(std::move(frames)), pairs_(pairs) {}
  Out<Array> frame0 = output<Array>("frame0", DType::u8, 2);
  Out<Array> frame1 = output<Array>("frame1", DType::u8, 2);
  void run(Context& ctx) override {
    const auto k = ctx.index();
    if (k >= static_cast<std::uint64_t>(pairs_)) return ctx.end_stream();
    ctx.put(frame0, frames_[k % frames_.size()]);
    ctx.put(frame1, frames_[(k + 1) % frames_.size()]);
  }

 private:
  std::vector<Array> frames_;
  int pairs_;
};

class Arrivals final : public Task {
 public:
  explicit Arrivals(std::shared_ptr<std::vector<Clock::time_point>> times) : Task("sink"), times_(std::move(times)) {}
  In<Array> flow = input<Array>("flow", DType::f32, 3);
  void run(Context& ctx) override {
    (void)ctx.take(flow);
    times_->push_back(Clock::now());
  }

 private:
  std::shared_ptr<std::vector<Clock::time_point>> times_;
};

// Seconds per pair in the steady state (after the first tenth) with `gpus` replicas on GPUs 0..gpus-1.
double farm_seconds_per_pair(const std::vector<Array>& frames, const FlowParams& p, int gpus, int pairs) {
  Graph g;
  auto& src = g.add<RepeatPairs>(frames, pairs);
  auto times = std::make_shared<std::vector<Clock::time_point>>();
  auto& sink = g.add<Arrivals>(times);
  const Farm farm = g.add_farm("flow", gpus, [&](int i) {
    return std::make_unique<flow::OpticalFlow>(p, "flow." + std::to_string(i));
  });
  g.connect(src.frame0, farm.in(0));
  g.connect(src.frame1, farm.in(1));
  g.connect(farm.out(0), sink.flow);
  Mapping m;
  for (const auto& t : g.tasks()) m.set(t->name(), Place::host());
  for (int i = 0; i < gpus; ++i) m.set("flow." + std::to_string(i), Place::cuda(i));
  Executor ex;
  ex.run(g, m).wait();
  const std::size_t skip = times->size() / 10;
  return std::chrono::duration<double>(times->back() - (*times)[skip]).count() / double(times->size() - 1 - skip);
}

int farm_main(int argc, char** argv, int pairs) {
  bench::Result result("flow_farm", argc, argv);
  int gpus = 0;
  WEFT_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  std::vector<Array> frames;
  for (int k = 0; k < 4; ++k) frames.push_back(texture(1920, 1080, 1.5 * k, 0.7 * k));
  const FlowParams p = flow::default_params(Method::tvl1);
  result.metric("gpus", gpus);
  result.metric("pairs", pairs);
  result.metric("setting", "tvl1 defaults fp32, 1920x1080 u8 frames from host memory, replicas flow.<i> on gpu:i");
  nlohmann::json rows = nlohmann::json::array();
  double one = 0, all = 0;
  std::vector<int> counts{1};
  for (int n = 2; n < gpus; n *= 2) counts.push_back(n);
  if (gpus > 1) counts.push_back(gpus);
  for (int n : counts) {
    try {
      const double sp = farm_seconds_per_pair(frames, p, n, pairs * n);
      std::printf("farm over %d GPU(s): %.2f ms per pair, %.1f pairs/s\n", n, 1e3 * sp, 1.0 / sp);
      std::fflush(stdout);
      rows.push_back({{"gpus", n}, {"ms_per_pair", 1e3 * sp}, {"pairs_per_second", 1.0 / sp}});
      if (n == 1) one = sp;
      if (n == gpus) all = sp;
    } catch (const std::exception& e) {
      std::printf("farm over %d GPU(s) failed: %s\n", n, e.what());
      rows.push_back({{"gpus", n}, {"error", e.what()}});
    }
  }
  result.metric("farm", rows);
  if (one > 0 && all > 0 && gpus > 1) {
    result.metric("speedup_all_gpus", one / all);
    std::printf("speedup %d GPUs over 1: %.2fx (target %.1fx for 4)\n", gpus, one / all, 0.9 * gpus);
    if (gpus == 4) result.target("farm_4gpu_speedup", one / all, 3.6, true);
  }
  std::printf("wrote %s\n", result.write().c_str());
  return 0;
}

// TV-L1 at the seed's setting only, every size and precision, with per-stage times; prints, writes
// nothing (for comparing kernel variants, e.g. WEFT_FLOW_FUSED_LAYOUT=shared|columns4|columns8).
// With W H PRECISION: that size and precision only, 3 calls (for profilers).
int seed_main(int argc, char** argv) {
  if (argc == 5) {
    cudaStream_t s;
    WEFT_CUDA_CHECK(cudaStreamCreate(&s));
    const int w = std::atoi(argv[2]), h = std::atoi(argv[3]);
    const Array a = upload(texture(w, h, 0, 0), s), b = upload(texture(w, h, 1.5, 0.7), s);
    const FlowParams p = seed_setting(Method::tvl1, std::strcmp(argv[4], "fp16") == 0 ? Precision::fp16 : Precision::fp32);
    std::printf("%dx%d %s: %.3f ms\n", w, h, argv[4], time_ms(a, b, p, 2, s));
    return 0;
  }
  cudaStream_t s;
  WEFT_CUDA_CHECK(cudaStreamCreate(&s));
  std::printf("%-5s %-10s %9s %8s %8s %8s %8s %8s %8s\n", "prec", "size", "ms/frame", "input", "pyramid", "warp",
              "iterate", "upsample", "stages");
  for (Precision pr : {Precision::fp32, Precision::fp16})
    for (auto [w, h] : {std::pair{640, 480}, std::pair{1920, 1080}, std::pair{3840, 2160}}) {
      const Array a = upload(texture(w, h, 0, 0), s), b = upload(texture(w, h, 1.5, 0.7), s);
      const FlowParams p = seed_setting(Method::tvl1, pr);
      const double ms = time_ms(a, b, p, 20, s);
      const flow::StageTimes t = stage_times(a, b, p, 10, s);
      std::printf("%-5s %4dx%-5d %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n",
                  std::string(flow::precision_name(pr)).c_str(), w, h, ms, t.input, t.pyramid, t.warp, t.iterations,
                  t.upsample, t.input + t.pyramid + t.warp + t.iterations + t.upsample);
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--seed") == 0) return seed_main(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "--farm") == 0) return farm_main(argc, argv, argc > 2 ? std::atoi(argv[2]) : 40);
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  bench::Result result("flow", argc, argv);
  cudaStream_t s;
  WEFT_CUDA_CHECK(cudaStreamCreate(&s));
  const double bw = bench::device_copy_bandwidth(s);
  result.metric("measured_bandwidth_GBps", bw / 1e9);
  std::printf("measured device bandwidth %.0f GB/s\n\n", bw / 1e9);

  struct Res {
    int w, h;
    const char* name;
  };
  std::vector<Res> sizes{{640, 480, "640x480"}};
  if (!quick) sizes.push_back({1920, 1080, "1920x1080"}), sizes.push_back({3840, 2160, "3840x2160"});
  nlohmann::json table = nlohmann::json::array();
  double tvl1_fp16_4k_seed = -1;
  std::printf("%-5s %-5s %-10s %-8s %10s %10s %8s\n", "meth", "prec", "size", "setting", "ms/frame", "floor ms", "ratio");
  for (Method m : {Method::tvl1, Method::hs, Method::clg})
    for (Precision pr : {Precision::fp32, Precision::fp16})
      for (const auto& r : sizes) {
        const Array a = upload(texture(r.w, r.h, 0, 0), s), b = upload(texture(r.w, r.h, 1.5, 0.7), s);
        for (int setting = 0; setting < 2; ++setting) {
          FlowParams p = setting == 0 ? seed_setting(m, pr) : flow::default_params(m);
          p.precision = pr;
          const int reps = setting == 0 ? 10 : (r.w > 2000 ? 2 : 3);
          double ms = 0;
          try {
            ms = time_ms(a, b, p, reps, s);
          } catch (const std::exception& e) {
            std::printf("%s %s %s: failed: %s\n", std::string(flow::method_name(m)).c_str(),
                        std::string(flow::precision_name(pr)).c_str(), r.name, e.what());
            table.push_back({{"method", flow::method_name(m)}, {"precision", flow::precision_name(pr)},
                             {"size", r.name}, {"error", e.what()}});
            continue;
          }
          const double fl = floor_ms(r.w, r.h, p, m, pr, bw);
          const char* sname = setting == 0 ? "seed" : "defaults";
          std::printf("%-5s %-5s %-10s %-8s %10.3f %10.3f %8.2f%s\n", std::string(flow::method_name(m)).c_str(),
                      std::string(flow::precision_name(pr)).c_str(), r.name, sname, ms, fl, ms / fl,
                      setting == 1 ? "  (floor: all iterations; early stop may beat it)" : "");
          table.push_back({{"method", flow::method_name(m)}, {"precision", flow::precision_name(pr)}, {"size", r.name},
                           {"setting", sname}, {"ms_per_frame", ms}, {"floor_ms", fl}, {"measured_over_floor", ms / fl},
                           {"floor_note", setting == 0 ? "iterations only, all executed (epsilon 0)"
                                                       : "iterations only, assuming the maximum count (epsilon stops earlier)"}});
          if (m == Method::tvl1 && pr == Precision::fp16 && r.w == 3840 && setting == 0) tvl1_fp16_4k_seed = ms;
        }
      }
  result.metric("times", table);
  std::fflush(stdout);

  // Where the time goes: TV-L1 per stage at the seed's setting and at the defaults.
  nlohmann::json stages = nlohmann::json::array();
  std::printf("\n%-5s %-10s %-8s %8s %8s %8s %8s %8s %8s %8s\n", "prec", "size", "setting", "input", "pyramid", "warp",
              "iterate", "median", "upsample", "total");
  for (Precision pr : {Precision::fp32, Precision::fp16})
    for (const auto& r : sizes)
      for (int setting = 0; setting < 2; ++setting) {
        try {
          const Array a = upload(texture(r.w, r.h, 0, 0), s), b = upload(texture(r.w, r.h, 1.5, 0.7), s);
          FlowParams p = setting == 0 ? seed_setting(Method::tvl1, pr) : flow::default_params(Method::tvl1);
          p.precision = pr;
          (void)flow::compute_cuda(a, b, p, s);  // warm-up
          const flow::StageTimes t = stage_times(a, b, p, setting == 0 ? 10 : 2, s);
          const double total = t.input + t.pyramid + t.warp + t.iterations + t.median + t.upsample;
          const char* sname = setting == 0 ? "seed" : "defaults";
          std::printf("%-5s %-10s %-8s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n",
                      std::string(flow::precision_name(pr)).c_str(), r.name, sname, t.input, t.pyramid, t.warp,
                      t.iterations, t.median, t.upsample, total);
          stages.push_back({{"method", "tvl1"}, {"precision", flow::precision_name(pr)}, {"size", r.name},
                            {"setting", sname}, {"input_ms", t.input}, {"pyramid_ms", t.pyramid}, {"warp_ms", t.warp},
                            {"iterations_ms", t.iterations}, {"median_ms", t.median}, {"upsample_ms", t.upsample},
                            {"total_ms", total}});
        } catch (const std::exception& e) {
          std::printf("stages %s %s failed: %s\n", std::string(flow::precision_name(pr)).c_str(), r.name, e.what());
        }
        std::fflush(stdout);
      }
  result.metric("tvl1_stages_ms", stages);

  // Shared pairs: EPE and time at the defaults and the seed's setting, beside OpenCV.
  nlohmann::json peer;
  {
    std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/bench/results/flow_opencv_cpu.json");
    if (in) in >> peer;
  }
  nlohmann::json pairs = nlohmann::json::array();
  double worst_epe_ratio = 0, worst_speedup = 1e30;
  std::printf("\n%-12s %-5s %-5s %-8s %8s %10s %10s %10s\n", "pair", "meth", "prec", "setting", "EPE", "ms", "cv EPE", "cv ms");
  for (const auto& pf : kPairs) {
    const std::string root = std::string(WEFT_SHARED_DATA) + "/flow/";
    if (!std::ifstream(root + pf.f0)) continue;
    const Array a = upload(io::read_image(root + pf.f0), s), b = upload(io::read_image(root + pf.f1), s);
    const Array truth = io::read_flo(root + pf.truth);
    const bool have_peer = peer.contains("pairs") && peer["pairs"].contains(pf.name);
    const double cv_epe = have_peer ? peer["pairs"][pf.name]["epe"].get<double>() : NAN;
    const double cv_ms = have_peer ? 1e3 * peer["pairs"][pf.name]["seconds"].get<double>() : NAN;
    for (Method m : {Method::tvl1, Method::hs, Method::clg})
      for (Precision pr : {Precision::fp32, Precision::fp16})
        for (int setting = 0; setting < 2; ++setting) {
          FlowParams p = setting == 0 ? seed_setting(m, pr) : flow::default_params(m);
          p.precision = pr;
          Array f;
          double ms = 0;
          try {
            ms = time_ms(a, b, p, 3, s, &f);
          } catch (const std::exception& e) {
            std::printf("%s %s failed: %s\n", pf.name, std::string(flow::method_name(m)).c_str(), e.what());
            continue;
          }
          const double epe = flow::endpoint_error(f.to_host(), truth);
          const char* sname = setting == 0 ? "seed" : "defaults";
          std::printf("%-12s %-5s %-5s %-8s %8.3f %10.3f %10.3f %10.1f\n", pf.name, std::string(flow::method_name(m)).c_str(),
                      std::string(flow::precision_name(pr)).c_str(), sname, epe, ms, cv_epe, cv_ms);
          nlohmann::json row{{"pair", pf.name}, {"method", flow::method_name(m)}, {"precision", flow::precision_name(pr)},
                             {"setting", sname}, {"epe", epe}, {"ms", ms}};
          if (have_peer && m == Method::tvl1) {
            row["opencv_cpu_epe"] = cv_epe, row["opencv_cpu_ms"] = cv_ms, row["speedup_vs_opencv"] = cv_ms / ms;
            row["epe_over_opencv"] = epe / cv_epe;
            if (setting == 1) worst_epe_ratio = std::max(worst_epe_ratio, epe / cv_epe), worst_speedup = std::min(worst_speedup, cv_ms / ms);
          }
          pairs.push_back(row);
        }
  }
  result.metric("pairs", pairs);
  if (!peer.is_null()) result.metric("opencv_peer", peer);
  if (tvl1_fp16_4k_seed > 0) result.target("tvl1_fp16_4k_seed_ms", tvl1_fp16_4k_seed, 1.0, false);
  if (worst_epe_ratio > 0) {
    result.target("tvl1_defaults_epe_over_opencv_worst_pair", worst_epe_ratio, 1.05, false);
    result.target("tvl1_defaults_speedup_vs_opencv_worst_pair", worst_speedup, 100.0, true);
  }
  std::printf("\nwrote %s\n", result.write().c_str());
  WEFT_CUDA_CHECK(cudaStreamDestroy(s));
  return 0;
}
