// The process's Environment, arrays between numpy and Weft, errors as Python exceptions, running
// a graph with the GIL released, and what the job's ranks have.
#include <pybind11/stl.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "bindings.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"
#include "weft/util/version.hpp"

namespace weft::python {
namespace {

std::unique_ptr<Environment>& environment_slot() {
  static std::unique_ptr<Environment> env;
  return env;
}

DType dtype_of_numpy(const py::dtype& t, const std::string& what) {
  const char kind = t.kind();
  const auto size = t.itemsize();
  if (kind == 'u' && size == 1) return DType::u8;
  if (kind == 'b' && size == 1) return DType::u8;  // bool: 0 or 1 in one byte
  if (kind == 'u' && size == 2) return DType::u16;
  if (kind == 'i' && size == 4) return DType::i32;
  if (kind == 'f' && size == 2) return DType::f16;
  if (kind == 'f' && size == 4) return DType::f32;
  if (kind == 'f' && size == 8) return DType::f64;
  throw ConfigError(what + ": numpy dtype " + py::str(static_cast<const py::handle&>(t)).cast<std::string>() +
                    " is not one Weft computes on (uint8, uint16, int32, float16, float32, float64)");
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::u8: return py::dtype::of<std::uint8_t>();
    case DType::u16: return py::dtype::of<std::uint16_t>();
    case DType::i32: return py::dtype::of<std::int32_t>();
    case DType::f16: return py::dtype("float16");
    case DType::f32: return py::dtype::of<float>();
    case DType::f64: return py::dtype::of<double>();
  }
  return py::dtype::of<std::uint8_t>();
}

// Python exception types: a small hierarchy under weft.WeftError, made once.
struct Errors {
  py::object base, config, io, remote, internal;
};
Errors& errors() {
  static Errors e;
  return e;
}

py::object new_exception(py::module_& m, const char* name, py::object bases, const char* doc) {
  const std::string full = std::string("weft.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(full.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  py::object t = py::reinterpret_steal<py::object>(type);
  m.attr(name) = t;
  return t;
}

}  // namespace

Environment& environment() {
  auto& env = environment_slot();
  if (!env) {
    static int argc = 1;
    static char name[] = "python";
    static char* args[] = {name, nullptr};
    static char** argv = args;
    env = std::make_unique<Environment>(argc, argv);
    // Ended before the interpreter: the rank says goodbye to the others and MPI is finalised
    // (unless mpi4py initialised it, which then finalises it itself).
    py::module_::import("atexit").attr("register")(py::cpp_function([] {
      py::gil_scoped_release release;
      environment_slot().reset();
    }));
  }
  return *env;
}

Array wrap(const py::array& array, const std::string& what) {
  if (array.ndim() < 1 || array.ndim() > 3)
    throw ConfigError(what + ": expected an array of 1 to 3 dimensions, got " + std::to_string(array.ndim()));
  if (!(array.flags() & py::array::c_style))
    throw ConfigError(what + ": expected a C-contiguous array (numpy.ascontiguousarray makes one)");
  const DType t = dtype_of_numpy(array.dtype(), what);
  std::vector<std::int64_t> dims;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) dims.push_back(static_cast<std::int64_t>(array.shape(i)));
  const Shape shape = dims.size() == 1 ? Shape(dims[0]) : dims.size() == 2 ? Shape(dims[0], dims[1])
                                                                           : Shape(dims[0], dims[1], dims[2]);
  return Array::wrap(t, shape, const_cast<void*>(array.data()));
}

py::array to_numpy(const Array& array) {
  if (array.empty()) return py::array(py::dtype::of<float>(), std::vector<py::ssize_t>{0});
  auto* held = new Array(array.memory().is_host() ? array : array.to_host());
  py::capsule owner(held, [](void* p) { delete static_cast<Array*>(p); });
  std::vector<py::ssize_t> shape;
  for (int i = 0; i < held->shape().ndim(); ++i) shape.push_back(static_cast<py::ssize_t>(held->shape()[i]));
  return py::array(numpy_dtype(held->dtype()), shape, held->raw(), owner);  // no copy: the capsule keeps it
}

RunStats run_graph(Graph& graph, const RunOptions& options) {
  const Cluster& cluster = environment().cluster();
  ApiMapper api;
  std::unique_ptr<FileMapper> file;
  AutoMapper automatic(parse_device_choice(options.devices));
  std::vector<const Mapper*> mappers{&api};
  if (!options.mapping.empty()) {
    file = std::make_unique<FileMapper>(options.mapping);
    file->check(graph, cluster, true);
    mappers.push_back(file.get());
  }
  mappers.insert(mappers.end(), options.defaults.begin(), options.defaults.end());
  mappers.push_back(&automatic);
  const Mapping mapping = map_graph(graph, cluster, mappers);
  ExecutorOptions exec;
  exec.trace_file = options.trace;
  Executor executor(exec);
  RunHandle run;
  std::future<void> done;
  {
    py::gil_scoped_release release;  // Python tasks take it back only while they run
    run = executor.run(graph, mapping);
    done = std::async(std::launch::async, [&run] { run.wait(); });
  }
  // Ctrl-C reaches Python between these waits: the run is cancelled and KeyboardInterrupt raised.
  for (;;) {
    {
      py::gil_scoped_release release;
      if (done.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) break;
    }
    if (PyErr_CheckSignals() != 0) {
      {
        py::gil_scoped_release release;
        run.cancel();
        try {
          done.get();
        } catch (...) {
        }
      }
      throw py::error_already_set();
    }
  }
  done.get();  // rethrows the run's first error (translated into a weft exception)
  return run.stats();
}

double& last_call_seconds() {
  static double seconds = 0;
  return seconds;
}

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

CallTimer::CallTimer() : start_(now()) {}
CallTimer::~CallTimer() { last_call_seconds() = now() - start_; }

void bind_errors(py::module_& m) {
  Errors& e = errors();
  e.base = new_exception(m, "WeftError", py::reinterpret_borrow<py::object>(PyExc_Exception),
                         "Base of every error Weft raises.");
  e.config = new_exception(m, "ConfigError", py::make_tuple(e.base, py::reinterpret_borrow<py::object>(PyExc_ValueError)),
                           "Bad input: an argument, option, mapping or data file (the command line's exit 2).");
  e.io = new_exception(m, "IoError", py::make_tuple(e.base, py::reinterpret_borrow<py::object>(PyExc_OSError)),
                       "A file could not be read or written, or is corrupt.");
  e.remote = new_exception(m, "RemoteError", py::make_tuple(e.base),
                           "The run stopped because another rank of the job failed; the message is that rank's.");
  e.internal = new_exception(m, "InternalError", py::make_tuple(e.base, py::reinterpret_borrow<py::object>(PyExc_RuntimeError)),
                             "An internal fault: a CUDA, NCCL or MPI failure, or a bug (please report it).");
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    Errors& e = errors();
    try {
      std::rethrow_exception(p);
    } catch (const RemoteError& x) {
      PyErr_SetString(e.remote.ptr(), x.what());
    } catch (const ConfigError& x) {
      PyErr_SetString(e.config.ptr(), x.what());
    } catch (const IoError& x) {
      PyErr_SetString(e.io.ptr(), x.what());
    } catch (const Error& x) {
      PyErr_SetString(e.internal.ptr(), x.user_message().c_str());
    }
  });
}

void bind_runtime(py::module_& m) {
  m.def("_devices", [] {
    py::list ranks;
    for (const RankInfo& r : environment().cluster().ranks) {
      py::list gpus;
      for (const GpuInfo& g : r.gpus)
        gpus.append(py::dict(py::arg("index") = g.index, py::arg("name") = g.name,
                             py::arg("memory_bytes") = g.memory_bytes,
                             py::arg("compute_capability") = py::make_tuple(g.compute_major, g.compute_minor),
                             py::arg("multiprocessors") = g.multiprocessors, py::arg("uuid") = g.uuid));
      ranks.append(py::dict(py::arg("rank") = r.rank, py::arg("host") = r.host, py::arg("cpu_cores") = r.cpu_cores,
                            py::arg("memory_bytes") = r.memory_bytes, py::arg("gpus") = gpus));
    }
    return ranks;
  });
  m.def("_rank", [] { return environment().rank(); });
  m.def("_last_call_seconds", [] { return last_call_seconds(); });
  m.def("_size", [] { return environment().size(); });
  m.def("_version", [] {
    const BuildInfo b = build_info();
    return py::dict(py::arg("version") = b.version, py::arg("commit") = b.commit, py::arg("cuda") = b.cuda,
                    py::arg("nccl") = b.nccl, py::arg("mpi") = b.mpi, py::arg("hdf5") = io::hdf5_version());
  });
  m.def("_read_image", [](const std::string& path) {
    Array a;
    {
      py::gil_scoped_release release;
      a = io::read_image(path);
    }
    return to_numpy(a);
  });
  m.def("_read_dataset", [](const std::string& ref) {
    Array a;
    {
      py::gil_scoped_release release;
      a = io::read_dataset(io::parse_dataset_ref(ref));
    }
    return to_numpy(a);
  });
}

}  // namespace weft::python
