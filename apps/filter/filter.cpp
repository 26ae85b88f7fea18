// weft filter median|convolve|gaussian: one image or volume through a filter task on the CPU or a GPU.
// Graph: input source → MedianFilter | Convolve | GaussianBlur → output sink (temporary name, rename).
#include <cmath>
#include <cstdio>
#include <string>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "filter_io.hpp"
#include "weft/tasks/filters/tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

struct Options {
  std::string kind;
  std::string input;
  std::string output;
  int size = 0;
  std::string kernel;
  double sigma = 0;
  std::string border = "clamp";
};

/// The filter task for the options (throws ConfigError on bad sizes, kernels and sigmas).
Task& add_filter(Graph& graph, const Options& o, const Array* input) {
  const filters::Border border = filters::parse_border(o.border, "--border");
  if (o.kind == "median") {
    if (o.size == 0) throw ConfigError("--size: missing (median sizes: 3, 5, 7, 9 in 2D; 3, 5 in 3D)");
    if (input) filters::check_median_args(*input, o.size);
    return graph.add<filters::MedianFilter>("median", o.size, border);
  }
  if (o.kind == "convolve") {
    if (o.kernel.empty()) throw ConfigError("--kernel: missing (a text file of ksize² or ksize numbers)");
    const filter_app::KernelFile k = filter_app::read_kernel(o.kernel, o.size);
    if (input) filters::check_convolve_args(*input, k.values.size(), k.ksize, k.separable);
    return graph.add<filters::Convolve>("convolve", k.values, k.ksize, border, k.separable);
  }
  if (o.kind == "gaussian") {
    if (o.sigma <= 0) throw ConfigError("--sigma: expected a positive number, got " + std::to_string(o.sigma));
    auto& task = graph.add<filters::GaussianBlur>("gaussian", o.sigma, border, o.size);
    if (input) filters::check_convolve_args(*input, 1, 1, true);
    return task;
  }
  throw ConfigError("filter kind: expected median | convolve | gaussian, got '" + o.kind + "'");
}

template <class F> void connect_filter(Graph& graph, Task& task, F&& source_out, const std::string& output) {
  auto& sink = graph.add<filter_app::ArraySink>("output", output);
  if (auto* m = dynamic_cast<filters::MedianFilter*>(&task)) {
    graph.connect(source_out, m->in);
    graph.connect(m->out, sink.in);
  } else if (auto* c = dynamic_cast<filters::Convolve*>(&task)) {
    graph.connect(source_out, c->in);
    graph.connect(c->out, sink.in);
  } else if (auto* g = dynamic_cast<filters::GaussianBlur*>(&task)) {
    graph.connect(source_out, g->in);
    graph.connect(g->out, sink.in);
  }
}

Graph filter_graph(const Options& o, Array input) {
  Graph graph;
  const Array* checked = input.empty() ? nullptr : &input;
  Task& filter = add_filter(graph, o, checked);
  auto& source = graph.add<filter_app::ArraySource>("input", std::move(input));
  connect_filter(graph, filter, source.out, o.output);
  return graph;
}

int filter_main(int argc, char** argv) {
  CommonOptions common;
  Options o;
  po::options_description desc("Filter options");
  desc.add_options()
      ("kind", po::value(&o.kind), "median | convolve | gaussian (first positional argument)")
      ("input", po::value(&o.input), "input: IMAGE.png | IMAGE.pgm | FILE.h5:/dataset (2D or 3D)")
      ("output", po::value(&o.output), "output: IMAGE.png | IMAGE.pgm | FILE.h5:/dataset (keeps the input's dtype)")
      ("size", po::value(&o.size)->default_value(0), "window or kernel size K (odd; gaussian: 0 = 2*ceil(3*sigma)+1)")
      ("kernel", po::value(&o.kernel), "convolve: text file of K*K (full) or K (separable) coefficients")
      ("sigma", po::value(&o.sigma)->default_value(0.0), "gaussian: standard deviation in pixels")
      ("border", po::value(&o.border)->default_value("clamp"), "clamp | mirror | zero");
  add_common_options(desc, common);
  po::positional_options_description positional;
  positional.add("kind", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft filter median|convolve|gaussian --input IN --output OUT [--size K] [--kernel FILE]\n"
             "                   [--sigma S] [--border clamp|mirror|zero] [--devices cpu|gpu]\n"
             "IN and OUT are PNG/PGM images or HDF5 datasets (FILE.h5:/path, 2D or 3D), chosen by extension.\n"
             "Median: 2D 3..9, 3D 3 or 5, u8/u16/f32. Convolution (2D, slice by slice for 3D): odd K <= 63,\n"
             "u8/u16/f16/f32, fp32 accumulation. 3D arrays are filtered slice by slice except by the median.",
             &positional))
    return 0;
  check_job(argc, argv, common, [&] {
    if (o.kind != "median" && o.kind != "convolve" && o.kind != "gaussian")
      throw ConfigError("filter kind: expected median | convolve | gaussian, got '" + o.kind + "'");
    (void)filters::parse_border(o.border, "--border");
    if (!std::isfinite(o.sigma) || o.sigma < 0) throw ConfigError("--sigma: expected a number >= 0");
    if (o.output.empty()) throw ConfigError("--output: missing (a .png/.pgm image or FILE.h5:/dataset)");
    const filter_app::InputInfo info = filter_app::check_input(o.input);
    filter_app::check_output(o.output, info.dtype);
    return JobFields{{"--input " + o.input, std::string(dtype_name(info.dtype)) + ", " + file_fingerprint(info.file)}};
  });
  Array input = filter_app::read_input(o.input);
  const std::string shape = input.shape().str();
  Graph graph = filter_graph(o, std::move(input));
  Progress progress("filter " + o.kind, 1, common.progress);
  const RunStats stats = run_graph(graph, common);
  progress.advance();
  progress.done();
  std::printf("filter %s: %s %s -> %s, %.3f s\n", o.kind.c_str(), o.input.c_str(), shape.c_str(), o.output.c_str(),
              stats.seconds);
  return 0;
}

const Registrar reg{{"filter", "median, convolution or Gaussian blur of an image or volume", &filter_main}};
const GraphRegistrar graph{{"filter", [] {
                              Options o;
                              o.kind = "median";
                              o.size = 3;
                              o.output = "filtered.png";
                              return filter_graph(o, Array());
                            }}};

}  // namespace
}  // namespace weft::cli
