// weft.granulometry: morphology::run_granulometry, as `weft granulometry` runs it, on a numpy
// volume (no copy: its planes are thresholded and packed as the slabs read them) or on an HDF5
// dataset read plane by plane, with the size map into a numpy array.
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/granulometry_job.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"

namespace weft::python {
namespace {

struct Volume {
  Array values;                 ///< a numpy volume's values (empty for a dataset)
  std::optional<io::DatasetRef> dataset;
  Shape shape;
  DType dtype = DType::u8;
};

Array planes_of(const Volume& v, std::int64_t first, std::int64_t count) {
  if (v.dataset) return io::read_slab(*v.dataset, first, count);
  const std::size_t plane = static_cast<std::size_t>(v.shape[1] * v.shape[2]) * dtype_size(v.dtype);
  return Array::wrap(v.dtype, Shape(count, v.shape[1], v.shape[2]),
                     static_cast<char*>(v.values.raw()) + static_cast<std::size_t>(first) * plane);
}

}  // namespace

void bind_granulometry(py::module_& m) {
  m.def("_granulometry", [](const py::object& volume, const std::string& dataset, const std::string& element,
                            int max_size, const py::object& threshold, bool size_map, const std::string& devices,
                            std::int64_t slab_planes, double device_memory) {
    const CallTimer timer;
    Volume v;
    py::array keep;
    if (!dataset.empty()) {
      v.dataset = io::parse_dataset_ref(dataset);
      const io::DatasetInfo info = io::checked_dataset_info(*v.dataset, "volume " + dataset);
      if (info.shape.size() != 3) throw ConfigError("volume " + dataset + ": expected a 3D dataset");
      if (info.dtype != DType::u8 && info.dtype != DType::u16 && info.dtype != DType::f32)
        throw ConfigError("volume " + dataset + ": dtype " + std::string(dtype_name(info.dtype)) +
                          " (a dataset is read as stored: u8, u16 or f32; load other types with h5py)");
      v.shape = Shape(info.shape[0], info.shape[1], info.shape[2]);
      v.dtype = info.dtype;
    } else {
      keep = py::array::ensure(volume, py::array::c_style);
      if (!keep || keep.ndim() != 3) throw ConfigError("volume: expected a 3D array");
      v.values = wrap(keep, "volume");
      v.shape = v.values.shape();
      v.dtype = v.values.dtype();
      if (v.dtype != DType::u8 && v.dtype != DType::u16 && v.dtype != DType::f32)
        throw ConfigError("volume: dtype " + std::string(dtype_name(v.dtype)) + " is thresholded in Python first");
    }
    if (v.shape.size() == 0) throw ConfigError("volume: empty (" + v.shape.str() + ")");
    // The foreground rule, as the command line's --threshold: nonzero, value >= T, or Otsu's T.
    morphology::Foreground foreground;
    double used = 0;
    std::string rule = "nonzero";
    if (py::isinstance<py::str>(threshold)) {
      if (threshold.cast<std::string>() != "otsu") throw ConfigError("threshold: a number or 'otsu'");
      py::gil_scoped_release release;
      const Array whole = v.dataset ? io::read_dataset(*v.dataset) : v.values;
      used = morphology::otsu_threshold(whole);
      foreground = used;
      rule = "otsu";
    } else if (!threshold.is_none()) {
      used = threshold.cast<double>();
      foreground = used;
      rule = "value";
    }
    Environment& env = environment();
    morphology::GranulometryJob job;
    job.shape = v.shape;
    job.element = morphology::parse_element(element);
    job.max_size = max_size;
    job.size_map = size_map;
    job.cluster = &env.cluster();
    job.places = morphology::slab_places(env.cluster(), parse_device_choice(devices));
    job.budget = device_memory > 0 ? device_memory : morphology::default_slab_budget(job.places, env.cluster());
    job.slab_planes = slab_planes;
    job.value_bytes = static_cast<std::int64_t>(dtype_size(v.dtype));
    job.reader = [v, foreground](std::int64_t first, std::int64_t count) {
      return morphology::foreground_bits(planes_of(v, first, count), foreground);
    };
    py::array_t<std::int32_t> map;
    std::int32_t* map_data = nullptr;
    if (size_map) {
      map = py::array_t<std::int32_t>({v.shape[0], v.shape[1], v.shape[2]});
      map_data = map.mutable_data();
    }
    const std::size_t plane = static_cast<std::size_t>(v.shape[1] * v.shape[2]);
    const morphology::SizeMapWriter writer = [map_data, plane](std::int64_t first, const Array& slab) {
      std::memcpy(map_data + static_cast<std::size_t>(first) * plane, slab.raw(), slab.bytes());
    };
    const morphology::GraphRunner runner = [&devices](Graph& graph, const Mapper& slabs, bool) {
      RunOptions o;
      o.devices = devices;
      o.defaults = {&slabs};
      (void)run_graph(graph, o);
    };
    const morphology::GranulometryOutcome out = morphology::run_granulometry(job, runner, size_map ? writer : nullptr);
    py::dict result(py::arg("collected") = out.collected, py::arg("remaining") = out.remaining,
                    py::arg("spectrum") = out.spectrum, py::arg("max_size") = out.max_size,
                    py::arg("threshold") = used, py::arg("threshold_rule") = rule,
                    py::arg("slabs") = out.plan.slabs(), py::arg("places") = out.plan.workers);
    result["size_map"] = size_map ? py::object(map) : py::none();
    return result;
  });
}

}  // namespace weft::python
