#pragma once
// The Python module's shared pieces: the process's Environment, numpy <-> weft::Array, and running
// a graph with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/exec/executor.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft::python {

namespace py = pybind11;

/// The process's Environment, made on first use (MPI under mpirun, or joined when mpi4py
/// initialised it first) and kept until the interpreter exits.
Environment& environment();

/// A C-contiguous numpy array of a dtype Weft has (u8, u16, i32, f16, f32, f64) as a host Array
/// over the same memory (no copy); `keep` must outlive every use. Throws ConfigError naming `what`.
[[nodiscard]] Array wrap(const py::array& array, const std::string& what);
/// A numpy array holding a copy of `array` (a device array is copied to the host first).
[[nodiscard]] py::array to_numpy(const Array& array);

/// How a graph runs from Python.
struct RunOptions {
  std::string devices = "auto";  ///< cpu | gpu | all | auto
  std::string mapping;           ///< YAML mapping file, empty: none
  std::string trace;             ///< Chrome/Perfetto trace file, empty: none
  std::vector<const Mapper*> defaults;  ///< consulted after the mapping file, before the automatic mapper
};
/// Maps and runs `graph` on every rank of the job with the GIL released; returns the run's statistics.
RunStats run_graph(Graph& graph, const RunOptions& options);

/// Seconds the last application call spent in C++ (building, mapping and running its graphs), so
/// that a benchmark can tell what the Python layer adds (bench/python/python_overhead.py).
double& last_call_seconds();
/// Times its scope into last_call_seconds().
class CallTimer {
 public:
  CallTimer();
  ~CallTimer();
  CallTimer(const CallTimer&) = delete;
  CallTimer& operator=(const CallTimer&) = delete;

 private:
  double start_;
};

/// Emits its arrays, one per token in order (port "out"), then ends its stream.
class ArraysSource final : public Task {
 public:
  ArraysSource(std::string name, std::vector<Array> arrays) : Task(std::move(name)), arrays_(std::move(arrays)) {}
  Out<Array> out = output<Array>("out");
  void run(Context& ctx) override {
    if (ctx.index() >= arrays_.size()) return ctx.end_stream();
    ctx.put(out, arrays_[ctx.index()]);
  }

 private:
  std::vector<Array> arrays_;
};

void bind_errors(py::module_& m);
void bind_runtime(py::module_& m);
void bind_graph(py::module_& m);
void bind_filters(py::module_& m);
void bind_flow(py::module_& m);
void bind_saliency(py::module_& m);
void bind_granulometry(py::module_& m);

}  // namespace weft::python
