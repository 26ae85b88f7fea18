// weft saliency: visual saliency of a video (issue 6), static pathway.
// Graph: read → retina (Hann window + FFT) → gabor.<g> (one per orientation group: filters +
// inverse FFTs) → interactions → normalize (+ sum) → write (HDF5 frame by frame, heat maps).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "frames.hpp"
#include "weft/exec/environment.hpp"
#include "weft/tasks/saliency/tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

struct Options {
  std::vector<std::string> input;
  std::string output;
  std::string pathway = "static";
  std::string png;
  bool all_maps = false;
  int gabor_groups = 6;
  int farm = 0;  ///< > 0: that many replicas of the whole pathway ("static.<i>"), frames round-robin
  std::int64_t max_frames = 0;
  std::string generate_sample;
  std::string sample_size = "128x96";
  std::int64_t sample_frames = 8;
};

Graph saliency_graph(const Options& o, const saliency_app::FrameInput& input) {
  Graph graph;
  auto& read = graph.add<saliency_app::FrameSource>("read", input);
  saliency_app::SinkOptions sink;
  sink.output = o.output;
  sink.png_dir = o.png;
  sink.all_maps = o.all_maps;
  sink.input = input.kind == saliency_app::FrameInput::hdf5 ? input.dataset : (input.files.empty() ? "" : input.files[0]);
  sink.frames = input.frames;
  auto& write = graph.add<saliency_app::SaliencySink>("write", sink);
  graph.connect(read.out, write.frame);
  if (o.farm > 0) {
    const Farm farm = graph.add_farm("static", o.farm, [](int i) {
      return std::make_unique<saliency::StaticSaliency>("static." + std::to_string(i));
    });
    graph.connect(read.out, farm.in());
    graph.connect(farm.out(), write.map);
    return graph;
  }
  const saliency::StaticPathway path = saliency::add_static_pathway(graph, o.gabor_groups, "--gabor-groups");
  graph.connect(read.out, path.retina->in);
  graph.connect(path.normalize->out, write.map);
  return graph;
}

void check_pathway(const std::string& pathway) {
  if (pathway == "static") return;
  if (pathway == "dynamic" || pathway == "fused")
    throw ConfigError("--pathway " + pathway +
                      ": not implemented yet (this version computes the static pathway only; use --pathway static)");
  throw ConfigError("--pathway: expected static, dynamic or fused, got '" + pathway + "'");
}

std::pair<std::int64_t, std::int64_t> parse_size(const std::string& text) {
  long long w = 0, h = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lld%c", &w, &h, &tail) != 2 || w < 8 || h < 8)
    throw ConfigError("--sample-size: expected WxH with both at least 8, got '" + text + "'");
  return {h, w};
}

int saliency_main(int argc, char** argv) {
  CommonOptions common;
  Options o;
  po::options_description desc("Saliency options");
  desc.add_options()
      ("input", po::value(&o.input)->multitoken(),
       "FILE.h5:/dataset ([T,H,W] or [H,W], u8/u16/f32), a pattern frame%03d.png, or image files (PNG/PGM)")
      ("output", po::value(&o.output), "HDF5 output: /saliency float32 [T,H,W]")
      ("pathway", po::value(&o.pathway)->default_value("static"), "static (dynamic and fused: not implemented yet)")
      ("all-maps", po::bool_switch(&o.all_maps), "also write /static")
      ("png", po::value(&o.png), "folder for heat maps over the frames (saliency_NNNN.png)")
      ("gabor-groups", po::value(&o.gabor_groups)->default_value(6),
       "tasks the 6 orientations are split into (1, 2, 3 or 6): gabor.0 .. gabor.<G-1>")
      ("farm", po::value(&o.farm)->default_value(0),
       "N > 0: a frame farm of N whole-pathway tasks static.0 .. static.<N-1> (place them with --mapping)")
      ("frames", po::value(&o.max_frames)->default_value(0), "process only the first N frames (0: all)")
      ("generate-sample", po::value(&o.generate_sample), "write a sample video FILE.h5:/frames and exit")
      ("sample-size", po::value(&o.sample_size)->default_value("128x96"), "sample frame size WxH")
      ("sample-frames", po::value(&o.sample_frames)->default_value(8), "sample frame count");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft saliency --input video.h5:/frames --output sal.h5 [--pathway static] [--png DIR]\n"
             "                     [--all-maps] [--gabor-groups 1|2|3|6 | --farm N] [--devices cpu|gpu|all] [--mapping FILE]\n"
             "       weft saliency --generate-sample video.h5 [--sample-size 720x576] [--sample-frames 8]\n"
             "Static visual saliency (Marat et al. 2009): Gabor bank in the frequency domain, short-range\n"
             "interactions, Itti normalisation, sum."))
    return 0;
  const Environment* env = Environment::current();
  const bool root = !env || env->rank() == 0;
  if (!o.generate_sample.empty()) {
    const auto [h, w] = parse_size(o.sample_size);
    if (o.sample_frames < 1) throw ConfigError("--sample-frames: expected N >= 1, got " + std::to_string(o.sample_frames));
    if (root) {
      saliency_app::generate_sample(o.generate_sample, o.sample_frames, h, w);
      std::printf("saliency: wrote %s:/frames (%lld frames of %lldx%lld)\n", o.generate_sample.c_str(),
                  static_cast<long long>(o.sample_frames), static_cast<long long>(w), static_cast<long long>(h));
    }
    return 0;
  }
  check_pathway(o.pathway);
  if (o.output.empty()) throw ConfigError("--output: missing (the HDF5 file for /saliency)");
  if (o.farm < 0) throw ConfigError("--farm: expected N >= 0, got " + std::to_string(o.farm));
  if (o.max_frames < 0) throw ConfigError("--frames: expected N >= 0, got " + std::to_string(o.max_frames));
  const saliency_app::FrameInput input = saliency_app::resolve_input(o.input, o.max_frames);
  Graph graph = saliency_graph(o, input);
  const RunStats stats = run_graph(graph, common);
  if (root)
    std::printf("saliency: %lld frames of %lldx%lld, static pathway, %.3f s (%.1f frames/s) -> %s\n",
                static_cast<long long>(input.frames), static_cast<long long>(input.width),
                static_cast<long long>(input.height), stats.seconds,
                stats.seconds > 0 ? static_cast<double>(input.frames) / stats.seconds : 0.0, o.output.c_str());
  return 0;
}

const Registrar reg{{"saliency", "visual saliency of a video (static pathway)", &saliency_main}};
/// The graph with default options (720x576 frames), for `weft mapping check`.
Graph default_graph(int farm) {
  Options o;
  o.output = "saliency.h5";
  o.farm = farm;
  saliency_app::FrameInput input;
  input.kind = saliency_app::FrameInput::hdf5;
  input.dataset = "video.h5:/frames";
  input.frames = 1;
  input.height = 576;
  input.width = 720;
  return saliency_graph(o, input);
}
const GraphRegistrar graph{{"saliency", [] { return default_graph(0); }}};
const GraphRegistrar farm2{{"saliency-farm2", [] { return default_graph(2); }}};
const GraphRegistrar farm4{{"saliency-farm4", [] { return default_graph(4); }}};

}  // namespace
}  // namespace weft::cli
