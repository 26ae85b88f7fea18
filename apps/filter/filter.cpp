// weft filter median|correlate|convolve|gaussian: one image or volume through a filter task on the
// CPU or a GPU. Graph: input source → MedianFilter | Convolve | GaussianBlur → output sink
// (temporary name, rename). A colour PNG goes through the same tasks as three grey tokens (R, G, B)
// that the sink puts back together.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "filter_io.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/tasks/filters/tasks.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

namespace weft::cli {
namespace {

struct Options {
  std::string kind;
  std::string input;
  std::string output;
  int size = 0;
  std::string kernel;
  bool normalize = false;
  double sigma = 0;
  std::string border = "clamp";
  std::string colour = "channels";
};

bool takes_kernel(const std::string& kind) { return kind == "correlate" || kind == "convolve"; }

/// The kernel correlate or convolve applies, read, normalised if asked and, for convolve, flipped
/// here once, so that the CPU and the CUDA tasks (which both correlate) receive the same kernel.
filter_app::KernelFile prepare_kernel(const Options& o) {
  if (o.kernel.empty()) throw ConfigError("--kernel: missing (a text file of ksize² or ksize numbers)");
  filter_app::KernelFile k = filter_app::read_kernel(o.kernel, o.size);
  if (o.normalize) filter_app::normalize(k, o.kernel);
  if (o.kind == "convolve") filter_app::flip(k);
  return k;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

/// One warning when the kernel changes the image's level: a sum far from 1 scales the brightness
/// (and saturates u8/u16 results); a zero sum on u8/u16 clips every negative response to 0.
void warn_about_kernel(const Options& o, const filter_app::KernelFile& k, DType dtype) {
  const bool integer = dtype == DType::u8 || dtype == DType::u16;
  const std::string type(dtype_name(dtype));
  const double sum = filter_app::kernel_sum(k);
  double sum1d = 0;
  for (float v : k.values) sum1d += v;
  const std::string sums = k.separable ? number(sum1d) + " (" + number(sum) + " as a 2D kernel)" : number(sum);
  const std::string what = "filter " + o.kind + ": the " + (k.separable ? "separable " : "") + "kernel in '" +
                           o.kernel + "' sums to ";
  if (filter_app::sums_to_zero(k)) {
    if (integer)
      logger("app")->warn("{}0: its negative responses are clipped to 0 in the {} output (an f32 input, from "
                          "FILE.h5:/dataset, keeps them)",
                          what, type);
    return;
  }
  if (std::fabs(sum - 1.0) <= 0.01) return;
  logger("app")->warn("{}{}, not 1: it scales the image's brightness by {}{}; --normalize divides it by its sum", what,
                      sums, number(sum),
                      integer ? ", and " + type + " results are clipped to " + (dtype == DType::u8 ? "0..255" : "0..65535")
                              : std::string());
}

/// The filter task for the options (throws ConfigError on bad sizes, kernels and sigmas).
Task& add_filter(Graph& graph, const Options& o, const filter_app::KernelFile& k, const Array* input) {
  const filters::Border border = filters::parse_border(o.border, "--border");
  if (o.kind == "median") {
    if (o.size == 0) throw ConfigError("--size: missing (median sizes: 3, 5, 7, 9 in 2D; 3, 5 in 3D)");
    if (input) filters::check_median_args(*input, o.size);
    return graph.add<filters::MedianFilter>("median", o.size, border);
  }
  if (takes_kernel(o.kind)) {
    if (input) filters::check_convolve_args(*input, k.values.size(), k.ksize, k.separable);
    return graph.add<filters::Convolve>(o.kind, k.values, k.ksize, border, k.separable);
  }
  if (o.kind == "gaussian") {
    if (o.sigma <= 0) throw ConfigError("--sigma: expected a positive number, got " + std::to_string(o.sigma));
    auto& task = graph.add<filters::GaussianBlur>("gaussian", o.sigma, border, o.size);
    if (input) filters::check_convolve_args(*input, 1, 1, true);
    return task;
  }
  throw ConfigError("filter kind: expected median | correlate | convolve | gaussian, got '" + o.kind + "'");
}

template <class F>
void connect_filter(Graph& graph, Task& task, F&& source_out, const std::string& output, int channels) {
  auto& sink = graph.add<filter_app::ArraySink>("output", output, channels);
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

/// `channels`: one grey array, or the three planes of a colour image, filtered one after the other
/// by the same task on the same place.
Graph filter_graph(const Options& o, const filter_app::KernelFile& k, std::vector<Array> channels) {
  Graph graph;
  const Array* checked = channels.empty() || channels.front().empty() ? nullptr : &channels.front();
  Task& filter = add_filter(graph, o, k, checked);
  const int count = std::max(1, static_cast<int>(channels.size()));
  auto& source = graph.add<filter_app::ArraySource>("input", std::move(channels));
  connect_filter(graph, filter, source.out, o.output, count);
  return graph;
}

int filter_main(int argc, char** argv) {
  CommonOptions common;
  Options o;
  po::options_description desc("Filter options");
  desc.add_options()
      ("kind", po::value(&o.kind), "median | correlate | convolve | gaussian (first positional argument)")
      ("input", po::value(&o.input), "input: IMAGE.png | IMAGE.pgm | FILE.h5:/dataset (2D or 3D)")
      ("output", po::value(&o.output),
       "output: IMAGE.png | IMAGE.pgm | FILE.h5:/dataset (keeps the input's dtype; colour: .png or an [H,W,3] dataset)")
      ("size", po::value(&o.size)->default_value(0), "window or kernel size K (odd; gaussian: 0 = 2*ceil(3*sigma)+1)")
      ("kernel", po::value(&o.kernel), "correlate, convolve: text file of K*K (full) or K (separable) coefficients")
      ("normalize", po::bool_switch(&o.normalize), "correlate, convolve: divide the kernel by its sum (refused when it sums to 0)")
      ("sigma", po::value(&o.sigma)->default_value(0.0), "gaussian: standard deviation in pixels")
      ("border", po::value(&o.border)->default_value("clamp"),
       "clamp | mirror | zero (scipy.ndimage modes nearest, mirror, constant with cval 0)")
      ("colour", po::value(&o.colour)->default_value("channels"),
       "a colour PNG: channels = filter R, G and B each and write colour; grey = filter its luminance, write grey");
  add_common_options(desc, common);
  po::positional_options_description positional;
  positional.add("kind", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft filter median|correlate|convolve|gaussian --input IN --output OUT [--size K]\n"
             "                   [--kernel FILE [--normalize]] [--sigma S] [--border clamp|mirror|zero]\n"
             "                   [--colour channels|grey] [--devices cpu|gpu]\n"
             "IN and OUT are PNG/PGM images or HDF5 datasets (FILE.h5:/path, 2D or 3D), chosen by extension.\n"
             "Median: 2D 3..9, 3D 3 or 5, u8/u16/f32. correlate: out(y,x) = sum k[i][j] in(y+i-r, x+j-r)\n"
             "(scipy.ndimage.correlate, OpenCV filter2D); convolve: the same with the kernel flipped in every\n"
             "axis (scipy.ndimage.convolve). Odd K <= 63, u8/u16/f16/f32, fp32 accumulation; a kernel whose\n"
             "sum is far from 1 is warned about (--normalize). 3D arrays are filtered slice by slice except\n"
             "by the median. A colour PNG is filtered channel by channel (R, G, B; alpha dropped) into a\n"
             "colour PNG or an [H,W,3] u8 dataset, never a PGM; --colour grey filters its luminance instead.",
             &positional))
    return 0;
  filter_app::InputInfo info;
  filter_app::KernelFile kernel;
  check_job(argc, argv, common, [&] {
    if (o.kind != "median" && !takes_kernel(o.kind) && o.kind != "gaussian")
      throw ConfigError("filter kind: expected median | correlate | convolve | gaussian, got '" + o.kind + "'");
    (void)filters::parse_border(o.border, "--border");
    const filter_app::Colour colour = filter_app::parse_colour(o.colour);
    if (!std::isfinite(o.sigma) || o.sigma < 0) throw ConfigError("--sigma: expected a number >= 0");
    if (o.normalize && !takes_kernel(o.kind))
      throw ConfigError("--normalize: applies to correlate and convolve, not to " + o.kind);
    if (takes_kernel(o.kind)) kernel = prepare_kernel(o);
    if (o.output.empty()) throw ConfigError("--output: missing (a .png/.pgm image or FILE.h5:/dataset)");
    info = filter_app::check_input(o.input, colour);
    filter_app::check_output(o.output, info);
    if (common.devices != "cpu") {  // one channel in and out, and float work arrays, on a GPU
      double voxels = 1;
      for (std::int64_t d : info.shape) voxels *= static_cast<double>(d);
      check_gpu_memory(voxels * (2.0 * static_cast<double>(dtype_size(info.dtype)) + 8.0), "--input " + o.input);
    }
    std::string what = std::string(dtype_name(info.dtype)) + (info.channels == 3 ? " RGB" : "");
    return JobFields{{"--input " + o.input, what + ", " + file_fingerprint(info.file)}};
  });
  const Environment* env = Environment::current();
  if (takes_kernel(o.kind) && (!env || env->rank() == 0)) warn_about_kernel(o, kernel, info.dtype);
  std::vector<Array> channels = filter_app::read_input(info);
  const std::string shape = channels.front().shape().str() + (info.channels == 3 ? " RGB, per channel" : "");
  Graph graph = filter_graph(o, kernel, std::move(channels));
  Progress progress("filter " + o.kind, 1, common.progress);
  const RunStats stats = run_graph(graph, common);
  progress.advance();
  progress.done();
  std::printf("filter %s: %s %s -> %s, %.3f s\n", o.kind.c_str(), o.input.c_str(), shape.c_str(), o.output.c_str(),
              stats.seconds);
  return 0;
}

const Registrar reg{{"filter", "median, correlation, convolution or Gaussian blur of an image or volume", &filter_main}};
const GraphRegistrar graph{{"filter", [] {
                              Options o;
                              o.kind = "median";
                              o.size = 3;
                              o.output = "filtered.png";
                              return filter_graph(o, {}, {});
                            }}};

}  // namespace
}  // namespace weft::cli
