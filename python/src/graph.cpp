// weft.Graph from Python: the shipped C++ tasks by kind, sources and sinks of numpy arrays, and
// Python tasks (a callable on numpy arrays, on a CPU place, holding the GIL only while it runs).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/tasks/filters/tasks.hpp"
#include "weft/tasks/flow/task.hpp"
#include "weft/tasks/saliency/tasks.hpp"
#include "weft/util/error.hpp"

namespace weft::python {
namespace {

/// A copy of a numpy array in a host Array of its own (what a task puts must outlive Python's).
Array copy_of(const py::array& a, const std::string& what) {
  const Array view = wrap(py::array::ensure(a, py::array::c_style | py::array::forcecast), what);
  Array out = Array::host(view.dtype(), view.shape());
  std::memcpy(out.raw(), view.raw(), view.bytes());
  return out;
}

/// Keeps every array it receives, in token order, for Python to read after the run.
class ArraysSink final : public Task {
 public:
  explicit ArraysSink(std::string name) : Task(std::move(name)) {}
  In<Array> in = input<Array>("in");
  void run(Context& ctx) override {
    Array a = ctx.take(in);
    std::lock_guard lock(mutex_);
    arrays_.push_back(a.memory().is_host() ? a : a.to_host());
  }
  [[nodiscard]] std::vector<Array> arrays() const {
    std::lock_guard lock(mutex_);
    return arrays_;
  }
  [[nodiscard]] bool moves_data() const override { return true; }

 private:
  mutable std::mutex mutex_;
  std::vector<Array> arrays_;
};

/// A Python callable as a task: each firing calls fn(*inputs) with numpy arrays (views of the
/// tokens' arrays) under the GIL and puts what it returns (an array, or a tuple of one per output).
class PythonTask final : public Task {
 public:
  PythonTask(std::string name, py::function fn, const std::vector<std::string>& inputs,
             const std::vector<std::string>& outputs)
      : Task(std::move(name)), fn_(std::move(fn)) {
    for (const auto& i : inputs) in_.push_back(input<Array>(i));
    for (const auto& o : outputs) out_.push_back(output<Array>(o));
  }
  ~PythonTask() override {
    py::gil_scoped_acquire gil;  // the callable is a Python object
    fn_ = py::function();
  }
  void run(Context& ctx) override {
    std::vector<Array> args;
    for (const auto& port : in_) args.push_back(ctx.take(port));
    std::vector<Array> results;
    {
      py::gil_scoped_acquire gil;
      py::tuple call(args.size());
      for (std::size_t i = 0; i < args.size(); ++i) call[i] = to_numpy(args[i]);
      py::object r = fn_(*call);
      if (out_.empty()) return;
      if (out_.size() == 1) {
        results.push_back(copy_of(py::array(r), "task " + name() + " (its result)"));
      } else {
        const py::tuple t = py::tuple(r);
        if (t.size() != out_.size())
          throw ConfigError("task " + name() + ": returned " + std::to_string(t.size()) + " values for " +
                            std::to_string(out_.size()) + " outputs");
        for (std::size_t i = 0; i < t.size(); ++i)
          results.push_back(copy_of(py::array(t[i]), "task " + name() + " (its result " + std::to_string(i) + ")"));
      }
    }
    for (std::size_t i = 0; i < out_.size(); ++i) ctx.put(out_[i], std::move(results[i]));
  }
  [[nodiscard]] bool has_cpu() const override { return true; }

 private:
  py::function fn_;
  std::vector<In<Array>> in_;
  std::vector<Out<Array>> out_;
};

filters::Border border_of(const py::dict& k) {
  return filters::parse_border(k.contains("border") ? k["border"].cast<std::string>() : "clamp", "border");
}

/// A 2D numpy kernel (or a 1D separable one) as coefficients; `flip`: convolution, not correlation.
std::unique_ptr<Task> kernel_task(const std::string& name, const py::dict& k, bool flip) {
  if (!k.contains("kernel")) throw ConfigError(name + ": kernel= is missing");
  const py::array_t<float, py::array::c_style | py::array::forcecast> kernel(k["kernel"]);
  const bool separable = kernel.ndim() == 1;
  if (kernel.ndim() != 1 && (kernel.ndim() != 2 || kernel.shape(0) != kernel.shape(1)))
    throw ConfigError(name + ": kernel= must be square 2D (or 1D, separable)");
  std::vector<float> values(kernel.data(), kernel.data() + kernel.size());
  if (flip) std::reverse(values.begin(), values.end());  // a square kernel flipped in both axes
  return std::make_unique<filters::Convolve>(name, values, static_cast<int>(kernel.shape(0)), border_of(k), separable);
}

/// The shipped tasks Python can add by kind.
std::unique_ptr<Task> make_task(const std::string& kind, const std::string& name, const py::dict& k) {
  if (kind == "Affine")
    return std::make_unique<tasks::Affine>(name, k["a"].cast<float>(), k.contains("b") ? k["b"].cast<float>() : 0.0f);
  if (kind == "Add") return std::make_unique<tasks::Add>(name);
  if (kind == "Median") return std::make_unique<filters::MedianFilter>(name, k["size"].cast<int>(), border_of(k));
  if (kind == "Correlate") return kernel_task(name, k, false);
  if (kind == "Convolve") return kernel_task(name, k, true);
  if (kind == "Gaussian")
    return std::make_unique<filters::GaussianBlur>(name, k["sigma"].cast<double>(), border_of(k),
                                                   k.contains("size") ? k["size"].cast<int>() : 0);
  if (kind == "OpticalFlow") {
    flow::FlowParams p = flow::default_params(flow::parse_method(k.contains("method") ? k["method"].cast<std::string>() : "tvl1", "method"));
    if (k.contains("precision")) p.precision = flow::parse_precision(k["precision"].cast<std::string>(), "precision");
    flow::validate(p);
    return std::make_unique<flow::OpticalFlow>(p, name);
  }
  if (kind == "StaticSaliency") return std::make_unique<saliency::StaticSaliency>(name);
  throw ConfigError("Graph.add: unknown task kind '" + kind +
                    "' (Affine, Add, Median, Correlate, Convolve, Gaussian, OpticalFlow, StaticSaliency)");
}

std::vector<std::string> port_names(const std::vector<PortSpec>& ports) {
  std::vector<std::string> names;
  for (const auto& p : ports) names.push_back(p.name);
  return names;
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<Graph>(m, "_Graph")
      .def(py::init<>())
      .def("add", [](Graph& g, const std::string& name, const std::string& kind, const py::dict& kwargs) {
        g.add_task(make_task(kind, name, kwargs));
      })
      .def("source", [](Graph& g, const std::string& name, const std::vector<py::array>& arrays) {
        std::vector<Array> copies;
        for (std::size_t i = 0; i < arrays.size(); ++i)
          copies.push_back(copy_of(arrays[i], "source " + name + " array " + std::to_string(i)));
        g.add_task(std::make_unique<ArraysSource>(name, std::move(copies)));
      })
      .def("sink", [](Graph& g, const std::string& name) { g.add_task(std::make_unique<ArraysSink>(name)); })
      .def("python", [](Graph& g, const std::string& name, py::function fn, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
        // No CUDA variant: the automatic mapper puts it on rank 0's CPU, alike on every rank.
        g.add_task(std::make_unique<PythonTask>(name, std::move(fn), inputs, outputs));
      })
      .def("connect", [](Graph& g, const std::string& from, const std::string& to) { g.connect(from, to); })
      .def("place", [](Graph& g, const std::string& task, const std::string& place) {
        g.place(g.at(task), Place::parse(place));
      })
      .def("tasks", [](const Graph& g) {
        py::list out;
        for (const auto& t : g.tasks())
          out.append(py::dict(py::arg("name") = t->name(), py::arg("inputs") = port_names(t->inputs()),
                              py::arg("outputs") = port_names(t->outputs())));
        return out;
      })
      .def("results", [](const Graph& g, const std::string& sink) {
        const auto* s = dynamic_cast<const ArraysSink*>(g.find(sink));
        if (!s) throw ConfigError("Graph.results: '" + sink + "' is not a sink of this graph");
        py::list out;
        for (const Array& a : s->arrays()) out.append(to_numpy(a));
        return out;
      });
  m.def("_run", [](Graph& g, const std::string& devices, const std::string& mapping, const std::string& trace) {
    RunOptions o;
    o.devices = devices;
    o.mapping = mapping;
    o.trace = trace;
    const RunStats stats = run_graph(g, o);
    py::list tasks;
    for (const auto& t : stats.tasks)
      tasks.append(py::dict(py::arg("task") = t.task, py::arg("place") = t.place.str(), py::arg("tokens") = t.tokens,
                            py::arg("busy_seconds") = t.busy_seconds));
    return py::dict(py::arg("seconds") = stats.seconds, py::arg("tasks") = tasks);
  });
}

}  // namespace weft::python
