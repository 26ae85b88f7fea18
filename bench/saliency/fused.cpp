// Dynamic and fused saliency in the benchmark: GPU stages alone, the graph on one GPU, and the
// fused graph spread over GPUs (one process) or ranks (mpirun), pipeline or farm, against the
// automatic mapper. Frames are synthetic and held in memory: a patch moving over a panning texture.
#include "fused.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "weft/cuda.hpp"
#include "weft/exec/executor.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/tasks/saliency/tasks.hpp"

namespace weft::saliency_bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace weft::saliency;
constexpr int kRing = 8;  // distinct frames cycled by the source

std::vector<Array> moving_frames(std::int64_t h, std::int64_t w) {
  std::vector<Array> frames;
  for (int t = 0; t < kRing; ++t) {
    Array a = Array::host(DType::u8, Shape(h, w));
    const double py = h * 0.4 + 3.0 * t, px = w * 0.3 + 5.0 * t, side = h / 8.0;
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x) {
        const double X = x + 2.0 * t, Y = y - 1.0 * t;
        double v = 0.5 + 0.2 * std::sin(0.21 * X + 0.13 * Y) + 0.15 * std::cos(0.07 * Y - 0.11 * X);
        if (y >= py && y < py + side && x >= px && x < px + side) v = 0.5 + 0.3 * std::sin(0.5 * (x - px));
        a.data<std::uint8_t>()[y * w + x] = static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255));
      }
    frames.push_back(a);
  }
  return frames;
}

class RingSource final : public Task {
 public:
  RingSource(std::vector<Array> frames, int count) : Task("read"), frames_(std::move(frames)), count_(count) {}
  Out<Array> out = output<Array>("out", DType::u8, 2);
  void run(Context& ctx) override {
    if (sent_ == count_) return ctx.end_stream();
    ctx.put(out, frames_[static_cast<std::size_t>(sent_++ % kRing)]);
  }

 private:
  std::vector<Array> frames_;
  int count_, sent_ = 0;
};
class Arrivals final : public Task {
 public:
  explicit Arrivals(std::shared_ptr<std::vector<Clock::time_point>> at) : Task("write"), at_(std::move(at)) {}
  In<Array> in = input<Array>("in", DType::f32, 2);
  void run(Context& ctx) override {
    (void)ctx.take(in);
    at_->push_back(Clock::now());
  }

 private:
  std::shared_ptr<std::vector<Clock::time_point>> at_;
};

/// read → pathway ("static", "dynamic", "fused"; staged, or a farm of `farm` FrameSaliency) → write.
Graph pathway_graph(const std::string& pathway, int farm, const std::vector<Array>& frames, int count,
                    std::shared_ptr<std::vector<Clock::time_point>> arrivals) {
  const std::int64_t h = frames[0].shape()[0], w = frames[0].shape()[1];
  const MotionParams prm;
  Graph g;
  auto& read = g.add<RingSource>(frames, count);
  auto& write = g.add<Arrivals>(std::move(arrivals));
  const bool with_static = pathway != "dynamic", with_dynamic = pathway != "static";
  std::pair<Task*, int> ms{nullptr, 0}, md{nullptr, 0};
  if (farm > 0) {
    auto& input = g.add<MotionInput>("motion.input", motion_scale(prm, w));
    const Farm f = g.add_farm("frame", farm, [&](int i) {
      return std::make_unique<FrameSaliency>("frame." + std::to_string(i), with_static, true, prm);
    });
    int port = 0;
    g.connect(read.out, input.in);
    if (with_static) g.connect(read.out, f.in(port++));
    g.connect(input.cur, f.in(port++));
    g.connect(input.prev, f.in(port++));
    auto& median = g.add<TemporalMedian>("motion.median", prm.median_frames);
    auto& map = g.add<DynamicMap>("motion.map", h, w, motion_scale(prm, w));
    g.connect(f.out(with_static ? 1 : 0), median.in);
    g.connect(median.out, map.in);
    if (with_static) ms = f.out(0);
    md = {&map, map.out.index};
  } else {
    if (with_static) {
      const StaticPathway s = add_static_pathway(g, 6);
      g.connect(read.out, s.retina->in);
      ms = {s.normalize, s.normalize->out.index};
    }
    if (with_dynamic) {
      const DynamicPathway d = add_dynamic_pathway(g, prm, h, w);
      g.connect(read.out, d.input->in);
      md = {d.map, d.map->out.index};
    }
  }
  if (with_static && with_dynamic) {
    auto& fusion = g.add<Fusion>("fusion");
    g.connect(ms, fusion.static_map);
    g.connect(md, fusion.dynamic_map);
    g.connect(fusion.out, write.in);
  } else {
    g.connect(with_static ? ms : md, write.in);
  }
  return g;
}

struct Timing {
  double steady = 0;  ///< seconds per frame between the arrivals of frame count/10 and the last
  double total = 0;   ///< seconds per frame of the whole run
  int nccl_edges = 0, peer_edges = 0;  ///< cross-rank edges through NCCL and through CUDA IPC
};
Timing run_timed(Graph& g, const Mapping& m, const std::vector<Clock::time_point>& arrivals, int count) {
  Executor executor;
  auto run = executor.run(g, m);
  run.wait();
  Timing t;
  t.total = run.stats().seconds / count;
  t.nccl_edges = run.stats().nccl_edges;
  t.peer_edges = run.stats().peer_edges;
  const int skip = count / 10;
  if (static_cast<int>(arrivals.size()) == count && count - 1 > skip)
    t.steady = std::chrono::duration<double>(arrivals.back() - arrivals[skip]).count() / (count - 1 - skip);
  return t;
}

/// Every task on `gpu` except the source, the sink and a farm's scatter and gather (host of rank 0).
Mapping one_place(const Graph& g, Place gpu) {
  Mapping m;
  for (const auto& t : g.tasks()) {
    const std::string& n = t->name();
    const bool host = n == "read" || n == "write" || n.ends_with(".scatter") || n.ends_with(".gather");
    m.set(n, host ? Place::host() : gpu);
  }
  return m;
}

/// Approximate bytes the dynamic stages move per frame (each plane read or written once per pass):
/// working frame, 2 pyramids, levels × iterations affine passes (2 planes read), compensation
/// (3 planes), flow (scales × warps × iterations passes over ~7 planes, coarse levels ≈ 1/3 more),
/// temporal median (n flows), dynamic map (upsampled), fusion (3 planes of the frame).
double dynamic_bytes(std::int64_t h, std::int64_t w, bool fused) {
  const MotionParams p;
  const int k = motion_scale(p, w);
  const double n = static_cast<double>(working_extent(h, k) * working_extent(w, k)), px = static_cast<double>(h * w);
  const double pyramid = 4.0 / 3.0;
  return px + 4 * n + 2 * 4 * n * pyramid + p.levels * p.iterations * 2 * 4 * n * pyramid + 3 * 4 * n +
         p.flow.warps * p.flow.iterations * 7 * 4 * n * pyramid + p.median_frames * 8 * n + 4 * n + 4 * px +
         (fused ? 3 * 4 * px : 0.0);
}

/// GPU stages alone on one stream (frames resident): dynamic, or fused (static + dynamic + fusion).
double stages_seconds(const std::vector<Array>& frames, bool fused, int count, cudaStream_t stream) {
  const std::int64_t h = frames[0].shape()[0], w = frames[0].shape()[1];
  const MotionParams prm;
  const int k = motion_scale(prm, w);
  std::vector<Array> d_frames;
  for (const Array& f : frames) d_frames.push_back(upload_gpu(f, 0, stream));
  RetinaGpu retina;
  GaborGpu bank(0, kOrientations);
  Array last;
  std::deque<Array> flows;
  auto one = [&](int i) {
    const Array& frame = d_frames[static_cast<std::size_t>(i % kRing)];
    const Array cur = motion_frame_gpu(frame, k, 0, stream);
    const Array prev = last.empty() ? cur : last;
    last = cur;
    flows.push_back(residual_flow_gpu(cur, prev, prm, 0, stream));
    if (static_cast<int>(flows.size()) > prm.median_frames) flows.pop_front();
    const Array md = dynamic_map_gpu(temporal_median_gpu({flows.begin(), flows.end()}, 0, stream), h, w, k, 0, stream);
    if (!fused) return md;
    const Interacted in = interactions_gpu({bank.run(retina.run(frame, 0, stream), 0, stream)}, 0, stream);
    return fusion_gpu(normalize_gpu(in.maps, in.stats, 0, stream), md, 0, stream);
  };
  for (int i = 0; i < 10; ++i) (void)one(i);
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto t0 = Clock::now();
  for (int i = 0; i < count; ++i) (void)one(i);
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / count;
  flows.clear();
  last = Array();
  d_frames.clear();
  WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return s;
}

}  // namespace

void run_one_gpu(bench::Result& result, nlohmann::json& rows, double bandwidth) {
  cudaStream_t stream = nullptr;
  WEFT_CUDA_CHECK(cudaSetDevice(0));
  WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
  const std::vector<std::pair<int, int>> sizes = {{512, 512}, {576, 720}, {1080, 1920}};
  std::printf("\n%-10s %-8s %-10s %10s %12s %12s %8s %12s %10s\n", "size", "pathway", "graph", "MB/frame", "floor us",
              "stages us", "x floor", "graph fps", "runtime %");
  for (auto [h, w] : sizes) {
    const std::vector<Array> frames = moving_frames(h, w);
    const std::string size = std::to_string(w) + "x" + std::to_string(h);
    const int count = h * w > 1000000 ? 300 : 600;
    for (const std::string pathway : {"dynamic", "fused"}) {
      const bool fused = pathway == "fused";
      double stages = 0;
      try {
        stages = stages_seconds(frames, fused, count / 2, stream);
      } catch (const std::exception& e) {
        std::printf("%s %s stages failed: %s\n", size.c_str(), pathway.c_str(), e.what());
      }
      // Fused bytes: the static stages' (saliency_bench.cpp) are not repeated here, so this floor
      // is the dynamic part's plus the fusion: a lower bound.
      const double bytes = dynamic_bytes(h, w, fused), floor = bytes / bandwidth;
      for (int farm : {0, 2}) {
        Timing t;
        try {
          auto arrivals = std::make_shared<std::vector<Clock::time_point>>();
          Graph g = pathway_graph(pathway, farm, frames, count, arrivals);
          t = run_timed(g, one_place(g, Place::cuda(0)), *arrivals, count);
        } catch (const std::exception& e) {
          std::printf("%s %s graph failed: %s\n", size.c_str(), pathway.c_str(), e.what());
        }
        const double share = t.steady > stages && stages > 0 ? 1.0 - stages / t.steady : 0.0;
        const std::string graph = farm ? "farm of 2" : "staged";
        std::printf("%-10s %-8s %-10s %10.1f %12.1f %12.1f %8.2f %12.0f %10.1f\n", size.c_str(), pathway.c_str(),
                    graph.c_str(), bytes / 1e6, floor * 1e6, stages * 1e6, stages / floor,
                    t.steady > 0 ? 1.0 / t.steady : 0.0, 100 * share);
        std::fflush(stdout);
        rows.push_back({{"size", size}, {"pathway", pathway}, {"graph", graph}, {"bytes_per_frame", bytes},
                        {"floor_seconds", floor}, {"stages_seconds", stages}, {"stages_fps", stages > 0 ? 1 / stages : 0.0},
                        {"stages_over_floor", stages / floor}, {"graph_seconds", t.steady},
                        {"graph_fps", t.steady > 0 ? 1 / t.steady : 0.0},
                        {"graph_fps_with_startup", t.total > 0 ? 1 / t.total : 0.0}, {"runtime_share", share},
                        {"frames", count}});
        if (h == 1080 && fused && farm == 0) result.target("fused_1920x1080_graph_fps", t.steady > 0 ? 1 / t.steady : 0.0, 200.0, true);
      }
    }
  }
  cudaStreamDestroy(stream);
}

namespace {

/// Places of the scaling layouts over n devices: device(i) is the i-th (rank, GPU).
Mapping layout_mapping(const Graph& g, const std::string& layout, int n, const std::function<Place(int)>& device) {
  Mapping m = one_place(g, device(0));
  if (layout == "farm") {
    for (int i = 0; i < n; ++i) m.set("frame." + std::to_string(i), device(i));
  } else if (layout == "pipeline" && n == 2) {
    for (const auto& t : g.tasks())
      if (t->name().starts_with("motion.")) m.set(t->name(), device(1));
  } else if (layout == "pipeline" && n >= 4) {
    for (const char* t : {"gabor.3", "gabor.4", "gabor.5"}) m.set(t, device(1));
    for (const char* t : {"motion.input", "motion.dominant", "motion.compensate"}) m.set(t, device(2));
    for (const char* t : {"motion.flow", "motion.median", "motion.map"}) m.set(t, device(3));
  }
  return m;
}

}  // namespace

bool run_scaling(bench::Result& result, const Environment& env, int count) {
  const bool ranks = env.size() > 1;
  const int local = cuda_device_count();
  const int available = ranks ? env.size() : local;
  if (available < 2 || local == 0) {
    if (env.rank() == 0) std::printf("scaling: needs 2 or more GPUs (or ranks with a GPU each); found %d\n", available);
    return false;
  }
  // Ranks of one host see every GPU: rank r uses GPU r mod (GPUs per rank).
  auto device = [&](int i) { return ranks ? Place::cuda(i % local, i) : Place::cuda(i); };
  const int h = 1080, w = 1920;
  const std::vector<Array> frames = moving_frames(h, w);
  nlohmann::json table = nlohmann::json::array();
  double one = 0, best4 = 0, stages = 0;
  int largest = 1;
  double best_hand = 0, automatic_fps = 0;  // at the largest n
  if (env.rank() == 0) {  // the fused GPU stages alone on one device: the work a device does per frame
    cudaStream_t stream = nullptr;
    WEFT_CUDA_CHECK(cudaSetDevice(0));
    WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
    try {
      stages = stages_seconds(frames, true, 100, stream);
    } catch (const std::exception& e) {
      std::printf("scaling: stages failed: %s\n", e.what());
    }
    cudaStreamDestroy(stream);
  }
  if (env.rank() == 0)
    std::printf("\nfused %dx%d over %s: %-10s %4s %10s %10s %9s %s\n", w, h, ranks ? "ranks" : "GPUs", "layout", "n",
                "fps", "speed-up", "runtime %", ranks ? "edges NCCL/IPC" : "");
  for (int n : {1, 2, 4}) {
    if (n > available) break;
    for (const std::string layout : {"farm", "pipeline", "auto"}) {
      if (n == 1 && layout != "farm") continue;
      Timing t;
      int width = 0;
      try {
        auto arrivals = std::make_shared<std::vector<Clock::time_point>>();
        // The automatic choice sees the first n devices: n GPUs of this process, or n ranks that
        // each see the host's first n GPUs (spread_places gives each rank its own); it picks the
        // graph's farm width (automatic_farm_width, as `weft saliency --farm auto`) and the
        // places (AutoMapper).
        Cluster cluster = env.cluster();
        if (ranks) {
          cluster.ranks.resize(static_cast<std::size_t>(n));
          for (auto& r : cluster.ranks) r.gpus.resize(std::min(r.gpus.size(), static_cast<std::size_t>(n)));
        } else {
          cluster.ranks[0].gpus.resize(static_cast<std::size_t>(n));
        }
        width = layout == "farm" ? n : layout == "auto" ? automatic_farm_width(cluster, DeviceChoice::gpu) : 0;
        if (layout == "auto" && env.rank() == 0) std::printf("%-28s auto: farm of %d\n", "", width);
        Graph g = pathway_graph("fused", width, frames, count, arrivals);
        Mapping m;
        if (layout == "auto") {
          g.place(g.at("read"), Place::host());
          g.place(g.at("write"), Place::host());
          ApiMapper api;
          AutoMapper automatic(DeviceChoice::gpu);
          m = map_graph(g, cluster, {&api, &automatic});
        } else {
          m = layout_mapping(g, layout, n, device);
        }
        t = run_timed(g, m, *arrivals, count);
      } catch (const std::exception& e) {
        if (env.rank() == 0) std::printf("%s n=%d failed: %s\n", layout.c_str(), n, e.what());
      }
      const double fps = t.steady > 0 ? 1.0 / t.steady : 0.0;
      if (n == 1) one = fps;
      if (n == 4) best4 = std::max(best4, fps);
      if (n > largest) {
        largest = n;
        best_hand = automatic_fps = 0;
      }
      if (layout == "auto") automatic_fps = fps;
      else best_hand = std::max(best_hand, fps);
      // Runtime share: the part of the frame time not explained by n devices each doing 1/n of the
      // stages (scheduling, transfers, imbalance).
      const double share = t.steady > 0 && stages > 0 ? std::max(0.0, 1.0 - stages / n / t.steady) : 0.0;
      if (env.rank() == 0) {
        std::printf("%-28s %-10s %4d %10.0f %10.2f %9.1f %s\n", "", layout.c_str(), n, fps, one > 0 ? fps / one : 0.0,
                    100 * share,
                    ranks ? (std::to_string(t.nccl_edges) + "/" + std::to_string(t.peer_edges)).c_str() : "");
        std::fflush(stdout);
      }
      table.push_back({{"layout", layout}, {"devices", n}, {"farm_width", width}, {"fps", fps}, {"speedup", one > 0 ? fps / one : 0.0},
                       {"seconds_per_frame", t.steady}, {"seconds_per_frame_with_startup", t.total},
                       {"runtime_share", share}, {"frames", count}, {"nccl_edges", t.nccl_edges},
                       {"peer_edges", t.peer_edges}});
    }
  }
  if (env.rank() != 0) return true;
  // Merge into the existing results file (its one-GPU rows and targets stay).
  const char* dir = std::getenv("WEFT_RESULTS_DIR");
  const std::string path = (dir ? std::string(dir) : std::string(WEFT_SOURCE_DIR) + "/bench/results") + "/saliency.json";
  std::ifstream in(path);
  if (in) {
    try {
      const nlohmann::json old = nlohmann::json::parse(in);
      for (const char* key : {"metrics", "targets"})
        if (old.contains(key))
          for (auto it = old[key].begin(); it != old[key].end(); ++it) result.json()[key][it.key()] = it.value();
      if (old.contains("device")) result.json()["metrics"]["one_gpu_device"] = old["device"];
    } catch (const std::exception& e) {
      std::printf("scaling: could not read %s (%s); writing the scaling table alone\n", path.c_str(), e.what());
    }
  }
  const std::string key = ranks ? "scaling_ranks" : "scaling";
  result.metric(key, table);
  result.metric(key + "_note", "fused 1920x1080 graph, frames from memory; farm: frame.<i> on device i, stateful ends "
                               "and fusion on device 0; pipeline: static vs dynamic pathway (2), gabor halves and "
                               "dynamic halves (4); auto: the automatic choice over the first n devices (farm width from "
                               "automatic_farm_width, two replicas per GPU, placed by AutoMapper); speedup against the "
                               "farm on 1 device; runtime_share = 1 - (stages_seconds / n) / seconds_per_frame, with stages_seconds the "
                               "fused GPU stages alone on device 0");
  result.metric(key + "_stages_seconds", stages);
  // Which build and command this table comes from (the file's top-level ones are this run's too,
  // but the tables merged from earlier runs keep theirs).
  result.metric(key + "_commit", result.json()["commit"]);
  result.metric(key + "_command", result.json()["command"]);
  // The issue: the automatic mapper at least as fast as the best hand-written mapping.
  result.target(ranks ? "auto_over_best_hand_written_ranks" : "auto_over_best_hand_written",
                best_hand > 0 ? automatic_fps / best_hand : 0.0, 1.0, true);
  if (available >= 4) result.target(ranks ? "fused_4rank_speedup" : "fused_4gpu_speedup", one > 0 ? best4 / one : 0.0, 3.6, true);
  return true;
}

void cpu_smoke() {
  const std::vector<Array> frames = moving_frames(96, 128);
  for (const std::string pathway : {"dynamic", "fused"})
    for (int farm : {0, 2}) {
      auto arrivals = std::make_shared<std::vector<Clock::time_point>>();
      Graph g = pathway_graph(pathway, farm, frames, 12, arrivals);
      const Timing t = run_timed(g, one_place(g, Place::host()), *arrivals, 12);
      std::printf("cpu smoke 128x96 %s farm %d: %.1f frames/s\n", pathway.c_str(), farm, t.steady > 0 ? 1 / t.steady : 0.0);
    }
}

}  // namespace weft::saliency_bench
