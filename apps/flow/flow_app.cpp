// weft flow: optical flow of a frame pair, an image sequence or an HDF5 video.
#include <cstdio>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "flow_graph.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

using flow::FlowParams;

const char* const kUsage =
    "usage: weft flow --method hs|tvl1|clg --frames A.png B.png [C.png ...] --output flow.flo|flows.h5\n"
    "                 [--input video.h5:/frames] [--precision fp32|fp16] [--png flow.png] [--farm N] [method options]\n"
    "       weft flow --method hs|tvl1|clg --frames A.png B.png --output flow.flo --split [--strips N] [--devices cpu|gpu]\n"
    "Optical flow from each frame to the next. A pair writes a Middlebury .flo file; a sequence or\n"
    "video writes HDF5 dataset /flow f32 [T-1, H, W, 2] ((u, v) per pixel). Frames are PNG or PGM\n"
    "(colour converted to grey) or an HDF5 video [T,H,W]. A sequence is farmed over every GPU of\n"
    "every rank (under mpirun too): frames are read once on rank 0, flows written there in order.\n"
    "--split computes one pair in row strips, one per GPU of every rank (per rank with --devices cpu;\n"
    "--strips N to choose), with halo exchange: the same flow as one device (every method; on CPUs\n"
    "bit for bit; on GPUs the single-GPU kernels, whose result it equals but for the order of the\n"
    "stopping test's sum; tvl1 with --epsilon 0 runs the one-iteration-per-launch kernel, not the\n"
    "fused ones one GPU uses then).\n"
    "Unset method options take the method's defaults (tvl1 as IPOL/OpenCV: tau 0.25, lambda 0.15,\n"
    "theta 0.3, zoom 0.5, 5 scales, 5 warps, epsilon 0.01, 300 iterations, median 5 every 30; and,\n"
    "chosen on bench/flow's evaluation set, --antialias 0.6, --presmooth 0.5 and the frames' texture\n"
    "parts (--texture 0.95, Wedel et al. 2009) only when their brightness changes, --texture-threshold).\n"
    "Weak spots (mean EPE in px, report half of the evaluation set, docs/flow.md): hs and clg have\n"
    "no texture split and lose under brightness changes (gain: hs 1.99, clg 1.90, tvl1 0.11), blur\n"
    "motion edges (rigid objects: hs 0.18, clg 0.19, tvl1 0.10) and lag on large motion (clg 1.33,\n"
    "tvl1 0.60). tvl1 loses to OpenCV DualTVL1 on rigid objects (0.10 vs 0.085) and small textures (0.83\n"
    "vs 0.30, one pair of five).";

void set_if(const po::variables_map& vm, const char* key, auto& field) {
  if (vm.count(key)) field = vm[key].as<std::remove_reference_t<decltype(field)>>();
}

int flow_main(int argc, char** argv) {
  CommonOptions common;
  flow::app::FlowInput in;
  flow::app::FlowOutput out;
  std::string method = "tvl1", precision = "fp32";
  bool split = false;
  int farm = 0, strips = 0;
  po::options_description desc("Flow options");
  desc.add_options()
      ("method", po::value(&method)->default_value("tvl1"),
       "hs (Horn-Schunck, Jacobi, incremental warping) | tvl1 (dual TV-L1, Zach-Pock-Bischof, IPOL scheme) | "
       "clg (combined local-global, Bruhn et al., pointwise-coupled Jacobi)")
      ("frames", po::value(&in.frames)->multitoken(), "two or more frames (PNG or PGM), in order")
      ("input", po::value(&in.video), "HDF5 video FILE.h5:/DATASET of shape [T,H,W]")
      ("output", po::value(&out.path), "output: .flo for a pair, .h5 for a sequence (dataset /flow)")
      ("png", po::value(&out.png), "also write the Middlebury colour coding of the first flow here")
      ("precision", po::value(&precision)->default_value("fp32"),
       "GPU storage: fp32, or fp16 (half/half2 images, gradients, duals, tensors; flow kept in float; "
       "intensities normalised to [0,1]). The CPU path always computes in float")
      ("scales", po::value<int>(), "pyramid levels (default 5; fewer if the coarsest would be < 16 px)")
      ("zoom", po::value<double>(), "size ratio between levels, in (0,1) (default 0.5; bilinear zoom-out)")
      ("antialias", po::value<double>(), "pyramid anti-aliasing: Gaussian sigma antialias*sqrt(1/zoom^2-1) before each zoom-out (default tvl1 0.6, as IPOL; hs/clg 0: none, as OpenCV)")
      ("warps", po::value<int>(), "warps (re-linearisations, bicubic) per level (default 5)")
      ("iterations", po::value<int>(), "most iterations per warp (default tvl1 300, hs/clg 200)")
      ("epsilon", po::value<double>(), "stop a warp when the mean squared flow update < epsilon^2 (default tvl1 0.01, hs/clg 0.001); 0: never")
      ("presmooth", po::value<double>(), "Gaussian sigma on both frames before the pyramid (default tvl1 0.5, hs/clg 0)")
      ("texture", po::value<double>(), "structure-texture: the flow is computed on f - texture*ROF(f) of each frame, in [0,1] (Wedel et al. 2009; default tvl1 0.95, hs/clg 0: off), for pairs whose brightness changes (--texture-threshold)")
      ("texture-threshold", po::value<double>(), "use the texture parts only when |ln(s1/s0)| + |m1-m0|/s > this, from the frames' mean m and standard deviation s (default 0.18; 0: every pair)")
      ("median", po::value<int>(), "median filter window of the flow, 0/1 off, 3 or 5 (default 5)")
      ("median-interval", po::value<int>(), "median filter at each warp's start and every N iterations (default 30)")
      ("tau", po::value<double>(), "tvl1: dual time step, <= 0.25 (default 0.25)")
      ("lambda", po::value<double>(), "tvl1: data term weight, intensities in [0,255] (default 0.15)")
      ("theta", po::value<double>(), "tvl1: coupling of u and v (default 0.3)")
      ("alpha", po::value<double>(), "hs, clg: smoothness weight alpha (alpha^2 multiplies the regulariser; intensities in [0,255]) (default hs 12, clg 10)")
      ("rho", po::value<double>(), "clg: Gaussian scale of the structure tensor (default 1.5)")
      ("farm", po::value(&farm)->default_value(0),
       "replicas of the flow task for a sequence (pairs round-robin, flows written in order): 0 = one per GPU "
       "of every rank (per rank with --devices cpu), 1 = no farm")
      ("split", po::bool_switch(&split),
       "one frame pair in row strips over every GPU of every rank (or CPU of every rank with --devices cpu), "
       "under mpirun too, with halo exchange; the same flow as on one device (hs, tvl1, clg)")
      ("strips", po::value(&strips)->default_value(0),
       "--split: number of strips (0 = one per GPU of every rank, or per rank with --devices cpu)");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm, kUsage)) return 0;
  FlowParams p = flow::default_params(flow::parse_method(method, "--method"));
  p.precision = flow::parse_precision(precision, "--precision");
  set_if(vm, "scales", p.scales);
  set_if(vm, "zoom", p.zoom);
  set_if(vm, "antialias", p.antialias);
  set_if(vm, "warps", p.warps);
  set_if(vm, "iterations", p.iterations);
  set_if(vm, "epsilon", p.epsilon);
  set_if(vm, "presmooth", p.presmooth);
  set_if(vm, "texture", p.texture);
  set_if(vm, "texture-threshold", p.texture_threshold);
  set_if(vm, "median", p.median);
  set_if(vm, "median-interval", p.median_interval);
  set_if(vm, "tau", p.tau);
  set_if(vm, "lambda", p.lambda);
  set_if(vm, "theta", p.theta);
  set_if(vm, "alpha", p.alpha);
  set_if(vm, "rho", p.rho);
  check_job(argc, argv, common, [&] {
    flow::validate(p);
    if (farm < 0) throw ConfigError("weft flow: --farm: expected N >= 0, got " + std::to_string(farm));
    if (strips < 0) throw ConfigError("weft flow: --strips: expected N >= 0, got " + std::to_string(strips));
    return flow::app::check(in, out, common.devices != "cpu");
  });
  const Environment* env = Environment::current();
  const Cluster cluster = env ? env->cluster() : Cluster{{local_devices()}};
  if (split) {
    if (in.pair_count() != 1)
      throw ConfigError("weft flow: --split computes one frame pair, got " + std::to_string(in.pair_count()) + " pairs");
    const int n = flow::app::split_strips(strips, cluster, common.devices != "cpu", in);
    Graph g = flow::app::build_split_graph(in, out, p, common.progress, n);
    const RunStats stats = run_graph(g, common);
    if (!env || env->rank() == 0)
      std::fprintf(stderr, "flow: 1 pair with %s in %d strip(s) in %.3f s -> %s\n", method.c_str(), n, stats.seconds,
                   out.path.c_str());
    return 0;
  }
  const int replicas = flow::app::farm_replicas(farm, cluster, common.devices != "cpu", in.pair_count());
  Graph g = flow::app::build_graph(in, out, p, common.progress, replicas);
  const RunStats stats = run_graph(g, common);
  if (!env || env->rank() == 0)
    std::fprintf(stderr, "flow: %lld pair(s) with %s/%s on %d replica(s) in %.3f s -> %s\n",
                 static_cast<long long>(in.pair_count()), method.c_str(), precision.c_str(), replicas, stats.seconds,
                 out.path.c_str());
  return 0;
}

const Registrar reg{{"flow", "optical flow (hs, tvl1, clg) of frame pairs, sequences or HDF5 videos", &flow_main}};
const GraphRegistrar graph{{"flow", [] {
                              flow::app::FlowInput in;
                              in.frames = {"frame0.png", "frame1.png"};
                              return flow::app::build_graph(in, {"flow.flo", ""}, FlowParams{}, false);
                            }}};

}  // namespace
}  // namespace weft::cli
