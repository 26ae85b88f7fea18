// weft granulometry: size distribution of a 3D volume by openings with growing elements.
// Graph: volume source → threshold → granulometry (CPU or GPU) → report sink (files).
#include <cstdio>
#include <memory>
#include <string>

#include "common/cli.hpp"
#include "outputs.hpp"
#include "sample.hpp"
#include "volume_input.hpp"
#include "weft/exec/environment.hpp"
#include "weft/tasks/morphology/tasks.hpp"
#include "weft/util/error.hpp"
#if defined(WEFT_GRANULOMETRY_MEDIAN)
#include "weft/tasks/filters/tasks.hpp"
#endif

namespace weft::cli {
namespace {

struct Options {
  granulometry::VolumeInput input;
  std::string element = "octahedron";
  std::string threshold;
  int median = 0;  ///< 0: none, else the 3D median window (3 or 5) applied before thresholding
  int max_size = -1;
  std::string output;
  bool size_map = false;
  std::string generate_sample;
  std::int64_t sample_size = 128;
};

Graph granulometry_graph(const Options& o, const CommonOptions& common, std::shared_ptr<granulometry::Report> report) {
  morphology::GranulometryOptions g;
  g.element = morphology::parse_element(o.element);
  g.max_size = o.max_size;
  g.size_map = o.size_map;
  if (common.progress) {
    auto bar = std::make_shared<std::unique_ptr<Progress>>();
    g.on_size = [bar](int n, int last) {
      if (!*bar) *bar = std::make_unique<Progress>("granulometry", last);
      (*bar)->advance();
      if (n == last) (*bar)->done();
    };
  }
  Graph graph;
  auto& source = graph.add<granulometry::VolumeSource>("volume", o.input);
  auto& threshold = graph.add<morphology::Threshold>("threshold", morphology::ThresholdRule::parse(o.threshold),
                                                     [report](double t) { report->threshold = t; });
  auto& openings = graph.add<morphology::Granulometry>("openings", g);
  auto& sink = graph.add<granulometry::ReportSink>("report", o.output, report, o.size_map);
#if defined(WEFT_GRANULOMETRY_MEDIAN)
  if (o.median > 0) {
    auto& median = graph.add<filters::MedianFilter>("median", o.median);
    graph.connect(source.out, median.in);
    graph.connect(median.out, threshold.in);
  } else {
    graph.connect(source.out, threshold.in);
  }
#else
  graph.connect(source.out, threshold.in);
#endif
  graph.connect(threshold.out, openings.in);
  graph.connect(openings.remaining, sink.remaining);
  graph.connect(openings.spectrum, sink.spectrum);
  graph.connect(openings.size_map, sink.size_map);
  return graph;
}

int granulometry_main(int argc, char** argv) {
  CommonOptions common;
  Options o;
  po::options_description desc("Granulometry options");
  desc.add_options()
      ("input", po::value(&o.input.input), "FILE.h5:/dataset, or a RAW file with --shape and --dtype")
      ("shape", po::value(&o.input.shape), "RAW input: ZxYxX")
      ("dtype", po::value(&o.input.dtype), "RAW input: u8 | u16 | f32")
      ("threshold", po::value(&o.threshold), "foreground = value >= T, or 'otsu' (default: any non-zero value)")
      ("median", po::value(&o.median)->default_value(0), "3D median filter of size 3 or 5 before thresholding (0: none)")
      ("element", po::value(&o.element)->default_value("octahedron"), "octahedron | cube | ball")
      ("max-size", po::value(&o.max_size)->default_value(-1), "largest size N (default: until nothing remains)")
      ("output", po::value(&o.output), "output folder: curve.csv, granulometry.h5, curve.svg")
      ("size-map", po::bool_switch(&o.size_map), "also write the opening function (size map) into granulometry.h5")
      ("generate-sample", po::value(&o.generate_sample), "write a sample volume FILE.h5:/exchange/data and exit")
      ("sample-size", po::value(&o.sample_size)->default_value(128), "edge of the sample volume");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft granulometry --input FILE.h5:/dataset --element octahedron|cube|ball --max-size N\n"
             "                         --output DIR [--threshold T|otsu] [--size-map] [--devices cpu|gpu|all]\n"
             "                         [--mapping FILE]\n"
             "       weft granulometry --generate-sample FILE.h5 [--sample-size 128]\n"
             "Counts the foreground voxels left by openings of growing size (granulometric curve and\n"
             "pattern spectrum)."))
    return 0;
  const Environment* env = Environment::current();
  const bool root = !env || env->rank() == 0;
  if (!o.generate_sample.empty()) {
    if (root) {
      granulometry::generate_sample(o.generate_sample, o.sample_size);
      std::printf("granulometry: wrote %s:/exchange/data (%lld^3)\n", o.generate_sample.c_str(),
                  static_cast<long long>(o.sample_size));
    }
    return 0;
  }
  (void)morphology::parse_element(o.element);
  if (o.max_size < -1) throw ConfigError("--max-size: expected N >= 0, got " + std::to_string(o.max_size));
  if (o.output.empty()) throw ConfigError("--output: missing (the folder for curve.csv, granulometry.h5, curve.svg)");
  (void)morphology::ThresholdRule::parse(o.threshold);
  if (o.median != 0 && o.median != 3 && o.median != 5)
    throw ConfigError("--median: expected 3 or 5 (or 0 for none), got " + std::to_string(o.median));
#if !defined(WEFT_GRANULOMETRY_MEDIAN)
  if (o.median != 0) throw ConfigError("--median: this build has no median filter (tasks/filters)");
#endif
  const Shape shape = granulometry::check_input(o.input);
  auto report = std::make_shared<granulometry::Report>();
  report->input = o.input.input;
  report->element = o.element;
  report->shape = shape.str();
  report->threshold_rule = o.threshold.empty() ? "nonzero" : (o.threshold == "otsu" ? "otsu" : "value");
  report->max_size = o.max_size;
  Graph graph = granulometry_graph(o, common, report);
  const RunStats stats = run_graph(graph, common);
  if (!report->remaining.empty()) {
    std::printf("granulometry: %s %s, %s, sizes 0..%zu, %lld foreground voxels, %.3f s -> %s\n", o.input.input.c_str(),
                shape.str().c_str(), o.element.c_str(), report->remaining.size() - 1,
                static_cast<long long>(report->remaining[0]), stats.seconds, o.output.c_str());
  }
  return 0;
}

const Registrar reg{{"granulometry", "size distribution of a 3D volume by openings", &granulometry_main}};
const GraphRegistrar graph{{"granulometry", [] {
                              Options o;
                              o.input.input = "volume.h5:/exchange/data";
                              o.output = "granulometry-out";
                              CommonOptions common;
                              common.progress = false;
                              return granulometry_graph(o, common, std::make_shared<granulometry::Report>());
                            }}};

}  // namespace
}  // namespace weft::cli
