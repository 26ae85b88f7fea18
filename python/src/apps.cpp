// The applications on numpy arrays, built from the same tasks and pipelines as the `weft` program
// (so that both give the same results): filters, optical flow, saliency.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "weft/tasks/filters/tasks.hpp"
#include "weft/tasks/flow/task.hpp"
#include "weft/tasks/saliency/motion.hpp"
#include "weft/tasks/saliency/pipeline.hpp"
#include "weft/util/error.hpp"

namespace weft::python {
namespace {

/// Emits consecutive pairs (t, t+1) of `frames`.
class Pairs final : public Task {
 public:
  explicit Pairs(std::vector<Array> frames) : Task("frames"), frames_(std::move(frames)) {}
  Out<Array> frame0 = output<Array>("frame0", std::nullopt, 2);
  Out<Array> frame1 = output<Array>("frame1", std::nullopt, 2);
  void run(Context& ctx) override {
    const auto t = ctx.index();
    if (t + 1 >= frames_.size()) return ctx.end_stream();
    ctx.put(frame0, frames_[t]);
    ctx.put(frame1, frames_[t + 1]);
  }

 private:
  std::vector<Array> frames_;
};

/// Copies what it receives into `out`, at the token's index (tokens may arrive from a farm).
class Collect final : public Task {
 public:
  Collect(std::string name, std::shared_ptr<std::vector<Array>> out) : Task(std::move(name)), out_(std::move(out)) {}
  In<Array> in = input<Array>("in");
  void run(Context& ctx) override {
    Array a = ctx.take(in);
    if (out_->size() <= ctx.index()) out_->resize(ctx.index() + 1);
    (*out_)[ctx.index()] = a.memory().is_host() ? a : a.to_host();
  }

 private:
  std::shared_ptr<std::vector<Array>> out_;
};

/// Runs input → `task` → output for one array.
py::array filter_one(const py::array& image, std::unique_ptr<Task> task, const std::string& devices) {
  const CallTimer timer;
  const py::array keep = py::array::ensure(image, py::array::c_style);
  Array in = wrap(keep, "image");
  Graph g;
  auto& src = g.add<ArraysSource>("input", std::vector<Array>{in});
  Task& f = g.add_task(std::move(task));
  auto out = std::make_shared<std::vector<Array>>();
  auto& sink = g.add<Collect>("output", out);
  g.connect(std::pair<Task*, int>{&src, src.out.index}, std::pair<Task*, int>{&f, 0});
  g.connect(std::pair<Task*, int>{&f, 0}, std::pair<Task*, int>{&sink, sink.in.index});
  RunOptions o;
  o.devices = devices;
  (void)run_graph(g, o);
  return to_numpy(out->at(0));
}

std::vector<Array> frames_of(const py::array& video, const std::string& what) {
  if (video.ndim() != 3) throw ConfigError(what + ": expected [T, H, W] frames, got " + std::to_string(video.ndim()) + "D");
  const Array all = wrap(video, what);
  const Shape s = all.shape();
  const std::size_t plane = static_cast<std::size_t>(s[1] * s[2]) * dtype_size(all.dtype());
  std::vector<Array> frames;
  for (std::int64_t t = 0; t < s[0]; ++t)
    frames.push_back(Array::wrap(all.dtype(), Shape(s[1], s[2]), static_cast<char*>(all.raw()) + t * plane));
  return frames;
}

flow::FlowParams flow_params(const std::string& method, const std::string& precision, const py::dict& options) {
  flow::FlowParams p = flow::default_params(flow::parse_method(method, "method"));
  p.precision = flow::parse_precision(precision, "precision");
  for (const auto& [key, value] : options) {
    const std::string k = py::str(key);
    if (k == "scales") p.scales = value.cast<int>();
    else if (k == "zoom") p.zoom = value.cast<double>();
    else if (k == "antialias") p.antialias = value.cast<double>();
    else if (k == "warps") p.warps = value.cast<int>();
    else if (k == "iterations") p.iterations = value.cast<int>();
    else if (k == "epsilon") p.epsilon = value.cast<double>();
    else if (k == "presmooth") p.presmooth = value.cast<double>();
    else if (k == "texture") p.texture = value.cast<double>();
    else if (k == "texture_threshold") p.texture_threshold = value.cast<double>();
    else if (k == "median") p.median = value.cast<int>();
    else if (k == "median_interval") p.median_interval = value.cast<int>();
    else if (k == "tau") p.tau = value.cast<double>();
    else if (k == "lambda_" || k == "lambda") p.lambda = value.cast<double>();
    else if (k == "theta") p.theta = value.cast<double>();
    else if (k == "alpha") p.alpha = value.cast<double>();
    else if (k == "rho") p.rho = value.cast<double>();
    else throw ConfigError("flow: unknown option '" + k + "'");
  }
  flow::validate(p);
  return p;
}

}  // namespace

void bind_filters(py::module_& m) {
  m.def("_median", [](const py::array& a, int size, const std::string& border, const std::string& devices) {
    const filters::Border b = filters::parse_border(border, "border");
    filters::check_median_args(wrap(py::array::ensure(a, py::array::c_style), "image"), size);
    return filter_one(a, std::make_unique<filters::MedianFilter>("median", size, b), devices);
  });
  m.def("_convolve", [](const py::array& a, const py::array& kernel, const std::string& border, bool flip,
                        const std::string& devices) {
    const py::array_t<float, py::array::c_style | py::array::forcecast> k(kernel);
    const bool separable = k.ndim() == 1;
    if (k.ndim() != 1 && (k.ndim() != 2 || k.shape(0) != k.shape(1)))
      throw ConfigError("kernel: expected a square 2D kernel (or a 1D separable one), got shape " +
                        std::string(py::str(py::tuple(kernel.attr("shape")))));
    std::vector<float> values(k.data(), k.data() + k.size());
    if (flip) std::reverse(values.begin(), values.end());  // convolution: the kernel turned by 180 degrees
    const int ksize = static_cast<int>(k.shape(0));
    filters::check_convolve_args(wrap(py::array::ensure(a, py::array::c_style), "image"), values.size(), ksize, separable);
    return filter_one(a, std::make_unique<filters::Convolve>("convolve", values, ksize,
                                                             filters::parse_border(border, "border"), separable),
                      devices);
  });
  m.def("_gaussian", [](const py::array& a, double sigma, int size, const std::string& border, const std::string& devices) {
    if (!(sigma > 0)) throw ConfigError("sigma: expected a positive number, got " + std::to_string(sigma));
    return filter_one(a, std::make_unique<filters::GaussianBlur>("gaussian", sigma, filters::parse_border(border, "border"), size),
                      devices);
  });
}

void bind_flow(py::module_& m) {
  m.def("_flow_sequence", [](const py::array& frames, const std::string& method, const std::string& precision,
                             const py::dict& options, int replicas, const std::string& devices) {
    const CallTimer timer;
    const py::array keep = py::array::ensure(frames, py::array::c_style);
    std::vector<Array> list = frames_of(keep, "frames");
    if (list.size() < 2) throw ConfigError("frames: need at least 2 frames, got " + std::to_string(list.size()));
    const flow::FlowParams p = flow_params(method, precision, options);
    Graph g;
    auto& src = g.add<Pairs>(std::move(list));
    auto out = std::make_shared<std::vector<Array>>();
    auto& sink = g.add<Collect>("sink", out);
    if (replicas <= 1) {
      auto& f = g.add<flow::OpticalFlow>(p);
      g.connect(src.frame0, f.frame0);
      g.connect(src.frame1, f.frame1);
      g.connect(f.flow, sink.in);
    } else {
      const Farm farm = g.add_farm("flow", replicas, [&](int i) {
        return std::make_unique<flow::OpticalFlow>(p, "flow." + std::to_string(i));
      });
      g.connect(src.frame0, farm.in(0));
      g.connect(src.frame1, farm.in(1));
      g.connect(farm.out(0), sink.in);
    }
    RunOptions o;
    o.devices = devices;
    (void)run_graph(g, o);
    py::list flows;
    for (const Array& a : *out) flows.append(to_numpy(a));
    return flows;
  });
  m.def("_flow_defaults", [](const std::string& method) {
    const flow::FlowParams p = flow::default_params(flow::parse_method(method, "method"));
    py::dict d;
    d["scales"] = p.scales, d["zoom"] = p.zoom, d["antialias"] = p.antialias, d["warps"] = p.warps;
    d["iterations"] = p.iterations, d["epsilon"] = p.epsilon, d["presmooth"] = p.presmooth;
    d["texture"] = p.texture, d["texture_threshold"] = p.texture_threshold, d["median"] = p.median, d["median_interval"] = p.median_interval;
    if (p.method == flow::Method::tvl1) d["tau"] = p.tau, d["lambda"] = p.lambda, d["theta"] = p.theta;
    else d["alpha"] = p.alpha;
    if (p.method == flow::Method::clg) d["rho"] = p.rho;
    return d;
  });
  m.def("_farm_width", [](const std::string& devices, int per_gpu) {
    return automatic_farm_width(environment().cluster(), parse_device_choice(devices), per_gpu);
  });
}

void bind_saliency(py::module_& m) {
  m.def("_saliency", [](const py::array& video, const std::string& pathway, int farm, const std::string& devices) {
    const CallTimer timer;
    const py::array keep = py::array::ensure(video, py::array::c_style);
    std::vector<Array> frames = frames_of(keep, "video");
    const Shape s = frames.front().shape();
    saliency::PipelineOptions o;
    o.pathway = pathway;
    o.farm = farm;
    o.motion.flow = saliency::MotionParams::default_flow();
    Graph g;
    auto& read = g.add<ArraysSource>("read", std::move(frames));
    const saliency::PipelineOutputs maps = saliency::add_saliency_pipeline(g, {&read, read.out.index}, s[0], s[1], o);
    auto out = std::make_shared<std::vector<Array>>();
    auto& sink = g.add<Collect>("write", out);
    g.connect(maps.map, std::pair<Task*, int>{&sink, sink.in.index});
    RunOptions r;
    r.devices = devices;
    (void)run_graph(g, r);
    py::list result;
    for (const Array& a : *out) result.append(to_numpy(a));
    return result;
  });
}

}  // namespace weft::python
