// weft saliency: visual saliency of a video (issue 6), static, dynamic or fused pathway.
// Static: read → retina (Hann window + FFT) → gabor.<g> (one per orientation group: filters +
// inverse FFTs) → interactions → normalize (+ sum). Dynamic: read → motion.input (working frames)
// → motion.dominant (affine) → motion.compensate → motion.flow → motion.median → motion.map.
// Fused: both, → fusion. Then write (HDF5 frame by frame, heat maps).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "frames.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/tasks/flow/params.hpp"
#include "weft/tasks/saliency/dynamic_tasks.hpp"
#include "weft/tasks/saliency/pipeline.hpp"
#include "weft/tasks/saliency/tasks.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"
#include "weft/util/output.hpp"

namespace weft::cli {
namespace {

struct Options {
  std::vector<std::string> input;
  std::string output;
  std::string pathway = "fused";
  saliency::MotionParams motion;
  std::string flow_method = "hs";
  std::string png;
  bool all_maps = false;
  int gabor_groups = 6;
  int farm = 0;  ///< > 0: that many replicas of the per-frame work ("static.<i>" or "frame.<i>"), round-robin
  std::string farm_text = "auto";  ///< --farm as given: N, or auto (resolved into `farm` before the graph is built)
  std::int64_t max_frames = 0;
  std::string generate_sample;
  std::string sample_size = "128x96";
  std::int64_t sample_frames = 8;
};

Graph saliency_graph(const Options& o, const saliency_app::FrameInput& input, bool progress = false) {
  Graph graph;
  auto& read = graph.add<saliency_app::FrameSource>("read", input);
  saliency_app::SinkOptions sink;
  sink.output = o.output;
  sink.png_dir = o.png;
  sink.pathway = o.pathway;
  sink.all_maps = o.all_maps;
  sink.input = input.kind == saliency_app::FrameInput::hdf5 ? input.dataset : (input.files.empty() ? "" : input.files[0]);
  sink.frames = input.frames;
  sink.progress = progress;
  auto& write = graph.add<saliency_app::SaliencySink>("write", sink);
  graph.connect(read.out, write.frame);
  saliency::PipelineOptions pipeline;
  pipeline.pathway = o.pathway;
  pipeline.motion = o.motion;
  pipeline.gabor_groups = o.gabor_groups;
  pipeline.farm = o.farm;
  const saliency::PipelineOutputs maps =
      saliency::add_saliency_pipeline(graph, {&read, read.out.index}, input.height, input.width, pipeline);
  graph.connect(maps.map, write.map);
  if (o.all_maps && maps.static_map) {
    graph.connect(*maps.static_map, write.static_map);
    graph.connect(*maps.dynamic_map, write.dynamic_map);
  }
  return graph;
}

void check_pathway(const std::string& pathway) {
  if (pathway == "static" || pathway == "dynamic" || pathway == "fused") return;
  throw ConfigError("--pathway: expected static, dynamic or fused, got '" + pathway + "'");
}

std::pair<std::int64_t, std::int64_t> parse_size(const std::string& text) {
  long long w = 0, h = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lld%c", &w, &h, &tail) != 2 || w < 8 || h < 8 || w > 65536 || h > 65536)
    throw ConfigError("--sample-size: expected WxH with both from 8 to 65536, got '" + text + "'");
  return {h, w};
}

int saliency_main(int argc, char** argv) {
  CommonOptions common;
  Options o;
  po::options_description desc("Saliency options");
  desc.add_options()
      ("input", po::value(&o.input)->multitoken(),
       "FILE.h5:/dataset ([T,H,W] or [H,W], u8/u16/f32), a pattern with one frame number %d or %0Nd "
       "(frame%03d.png; %% is a literal %), or image files (PNG/PGM)")
      ("output", po::value(&o.output), "HDF5 output: /saliency float32 [T,H,W]")
      ("pathway", po::value(&o.pathway)->default_value("fused"),
       "static | dynamic | fused (the spatio-temporal model: a*Ms + b*Md + a*b*Ms*Md, a = max Ms, b = skewness Md)")
      ("all-maps", po::bool_switch(&o.all_maps), "also write /static and/or /dynamic (the pathway's maps)")
      ("png", po::value(&o.png), "folder for heat maps over the frames (saliency_NNNN.png)")
      ("gabor-groups", po::value(&o.gabor_groups)->default_value(6),
       "tasks the 6 orientations are split into (1, 2, 3 or 6): gabor.0 .. gabor.<G-1>")
      ("farm", po::value(&o.farm_text)->default_value("auto"),
       "N > 0: a frame farm of N replicas (static: static.<i>, whole static pathway; dynamic/fused: frame.<i>, "
       "static pathway and residual flow of a frame) between motion.input and motion.median; 0: the staged "
       "graph (--gabor-groups); auto: without --mapping or --gabor-groups, the automatic mapper's farm (two "
       "replicas per GPU of the job, one per rank on CPUs, the staged graph on the CPUs of one rank), else 0")
      ("motion-scale", po::value(&o.motion.scale)->default_value(0),
       "dynamic pathway working resolution: frames box-averaged by K = 1, 2, 4 or 8 (0: smallest K with W/K <= 512)")
      ("motion-levels", po::value(&o.motion.levels)->default_value(4),
       "pyramid levels of the dominant (affine) motion estimate (coarsest at least 16 pixels a side)")
      ("motion-iterations", po::value(&o.motion.iterations)->default_value(5),
       "robust Gauss-Newton steps per level (Tukey biweight, c = 4.685 sigma, sigma = 1.4826 median |r|)")
      ("median-frames", po::value(&o.motion.median_frames)->default_value(5),
       "temporal median of the residual motion magnitude over the last N frames (1..9)")
      ("flow-method", po::value(&o.flow_method)->default_value("hs"), "residual flow: hs, tvl1 or clg (weft flow)")
      ("flow-scales", po::value(&o.motion.flow.scales)->default_value(3), "residual flow pyramid levels")
      ("flow-warps", po::value(&o.motion.flow.warps)->default_value(2), "residual flow warps per level")
      ("flow-iterations", po::value(&o.motion.flow.iterations)->default_value(30),
       "residual flow iterations per warp (fixed: no early stop)")
      ("frames", po::value(&o.max_frames)->default_value(0), "process only the first N frames (0: all)")
      ("generate-sample", po::value(&o.generate_sample), "write a sample video FILE.h5:/frames and exit")
      ("sample-size", po::value(&o.sample_size)->default_value("128x96"), "sample frame size WxH")
      ("sample-frames", po::value(&o.sample_frames)->default_value(8), "sample frame count");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft saliency --input video.h5:/frames --output sal.h5 [--pathway fused|static|dynamic] [--png DIR]\n"
             "                     [--all-maps] [--gabor-groups 1|2|3|6 | --farm N] [--devices cpu|gpu|all] [--mapping FILE]\n"
             "       weft saliency --generate-sample video.h5 [--sample-size 720x576] [--sample-frames 8]\n"
             "Spatio-temporal visual saliency (Marat et al. 2009). Static: Gabor bank in the frequency domain,\n"
             "short-range interactions, Itti normalisation, sum. Dynamic: dominant (camera) motion as a robust\n"
             "affine fit over a pyramid, compensated; residual optical flow; temporal median of its magnitude;\n"
             "normalised like a static map. Fused (default): a*Ms + b*Md + a*b*Ms*Md."))
    return 0;
  const Environment* env = Environment::current();
  const bool root = !env || env->rank() == 0;
  if (!o.generate_sample.empty()) {
    const auto [h, w] = parse_size(o.sample_size);
    if (o.sample_frames < 1) throw ConfigError("--sample-frames: expected N >= 1, got " + std::to_string(o.sample_frames));
    check_host_memory(static_cast<double>(checked_product({o.sample_frames, h, w}, "--sample-size x --sample-frames")),
                      "--generate-sample (" + std::to_string(o.sample_frames) + " frames of " + o.sample_size + ")");
    if (root) {
      check_output(o.generate_sample, OutputKind::file, "--generate-sample");
      saliency_app::generate_sample(o.generate_sample, o.sample_frames, h, w);
      std::printf("saliency: wrote %s:/frames (%lld frames of %lldx%lld)\n", o.generate_sample.c_str(),
                  static_cast<long long>(o.sample_frames), static_cast<long long>(w), static_cast<long long>(h));
    }
    return 0;
  }
  check_pathway(o.pathway);
  {
    const flow::FlowParams defaults = saliency::MotionParams::default_flow();
    const int scales = o.motion.flow.scales, warps = o.motion.flow.warps, iterations = o.motion.flow.iterations;
    o.motion.flow = defaults;
    if (o.flow_method != "hs") {
      o.motion.flow = flow::default_params(flow::parse_method(o.flow_method, "--flow-method"));
      o.motion.flow.epsilon = 0.0;
      o.motion.flow.median = defaults.median;
    }
    o.motion.flow.scales = scales;
    o.motion.flow.warps = warps;
    o.motion.flow.iterations = iterations;
    saliency::validate(o.motion);
  }
  if (o.output.empty()) throw ConfigError("--output: missing (the HDF5 file for /saliency)");
  if (o.farm_text == "auto") {
    o.farm = 0;
    if (common.mapping.empty() && vm["gabor-groups"].defaulted()) {
      Cluster local;
      if (!env) local.ranks.push_back(local_devices(0));
      o.farm = automatic_farm_width(env ? env->cluster() : local, parse_device_choice(common.devices));
    }
  } else {
    std::size_t used = 0;
    try {
      o.farm = std::stoi(o.farm_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != o.farm_text.size() || o.farm < 0)
      throw ConfigError("--farm: expected N >= 0 or auto, got '" + o.farm_text + "'");
  }
  if (o.max_frames < 0) throw ConfigError("--frames: expected N >= 0, got " + std::to_string(o.max_frames));
  saliency_app::FrameInput input;
  check_job(argc, argv, common, [&] {
    check_output(o.output, OutputKind::file, "--output");
    if (!o.png.empty()) check_output(o.png, OutputKind::folder, "--png");
    input = saliency_app::resolve_input(o.input, o.max_frames);
    JobFields fields{{"--input", std::to_string(input.frames) + " frames of " + std::to_string(input.width) + "x" +
                                     std::to_string(input.height) + " " + std::string(dtype_name(input.dtype))}};
    if (input.kind == saliency_app::FrameInput::hdf5)
      fields.emplace_back("--input " + input.dataset, file_fingerprint(io::parse_dataset_ref(input.dataset).file));
    else
      for (const std::string& f : input.files) fields.emplace_back("--input " + f, file_fingerprint(f));
    return fields;
  });
  Graph graph = saliency_graph(o, input, common.progress);
  const RunStats stats = run_graph(graph, common);
  if (root)
    std::printf("saliency: %lld frames of %lldx%lld, %s pathway, %s, %.3f s (%.1f frames/s) -> %s\n",
                static_cast<long long>(input.frames), static_cast<long long>(input.width),
                static_cast<long long>(input.height), o.pathway.c_str(),
                o.farm > 0 ? ("farm of " + std::to_string(o.farm)).c_str() : "staged graph", stats.seconds,
                stats.seconds > 0 ? static_cast<double>(input.frames) / stats.seconds : 0.0, o.output.c_str());
  return 0;
}

const Registrar reg{{"saliency", "visual saliency of a video (static, dynamic, fused)", &saliency_main}};
/// The graph with default options (720x576 frames), for `weft mapping check`.
Graph default_graph(int farm, const std::string& pathway = "static") {
  Options o;
  o.output = "saliency.h5";
  o.farm = farm;
  o.pathway = pathway;
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
const GraphRegistrar fused{{"saliency-fused", [] { return default_graph(0, "fused"); }}};
const GraphRegistrar fused_farm2{{"saliency-fused-farm2", [] { return default_graph(2, "fused"); }}};
const GraphRegistrar fused_farm4{{"saliency-fused-farm4", [] { return default_graph(4, "fused"); }}};

}  // namespace
}  // namespace weft::cli
