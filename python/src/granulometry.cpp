// weft.granulometry: morphology::run_granulometry, as `weft granulometry` runs it, on a numpy
// volume of any integer, float32/64 or bool dtype (no copy: its planes are thresholded in their
// own type and packed as the slabs read them) or on an HDF5 dataset read plane by plane, with the
// size map into a numpy array.
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/granulometry_job.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "weft/util/error.hpp"

namespace weft::python {
namespace {

/// A volume in place: a numpy array's values (any number or bool, read where they are) or an
/// HDF5 dataset read plane by plane; either way in the stored type, thresholded there.
struct Volume {
  const void* values = nullptr;  ///< a numpy volume's first value (none for a dataset)
  std::optional<io::DatasetRef> dataset;
  Shape shape;
  morphology::ValueType type = morphology::ValueType::u8;
};

/// The ValueType of a numpy dtype (kind and item size), or none (float16, complex, objects, ...).
std::optional<morphology::ValueType> value_type_of(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = static_cast<int>(d.itemsize());
  std::string name;
  if (kind == 'b' && size == 1) return morphology::ValueType::b8;
  if ((kind == 'i' || kind == 'u' || kind == 'f') && size <= 8) name = std::string(1, kind) + std::to_string(8 * size);
  return morphology::parse_value_type(name);
}

/// Planes [first, first + count) as foreground bits.
Array planes_bits(const Volume& v, std::int64_t first, std::int64_t count, const morphology::Foreground& foreground) {
  const std::int64_t plane = v.shape[1] * v.shape[2];
  const auto size = static_cast<std::int64_t>(morphology::value_size(v.type));
  if (!v.dataset)
    return morphology::foreground_bits(static_cast<const char*>(v.values) + first * plane * size, v.type, count,
                                       v.shape[1], v.shape[2], foreground);
  std::vector<char> values(static_cast<std::size_t>(count * plane * size));
  io::read_slab_values(*v.dataset, first, count, values.data());
  return morphology::foreground_bits(values.data(), v.type, count, v.shape[1], v.shape[2], foreground);
}

/// Otsu's threshold of the whole volume (a dataset read whole for it).
double otsu_of(const Volume& v) {
  if (!v.dataset) return morphology::otsu_threshold(v.values, v.type, v.shape.size());
  std::vector<char> values(static_cast<std::size_t>(v.shape.size()) * morphology::value_size(v.type));
  io::read_slab_values(*v.dataset, 0, v.shape[0], values.data());
  return morphology::otsu_threshold(values.data(), v.type, v.shape.size());
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
      const io::DatasetInfo info = io::checked_dataset_info(*v.dataset, "volume " + dataset, /*any_number=*/true);
      if (info.shape.size() != 3) throw ConfigError("volume " + dataset + ": expected a 3D dataset");
      const auto type = morphology::parse_value_type(info.element);
      if (!type) throw ConfigError("volume " + dataset + ": dtype " + info.element + " (load it with h5py)");
      v.shape = Shape(info.shape[0], info.shape[1], info.shape[2]);
      v.type = *type;
    } else {
      keep = py::array::ensure(volume, py::array::c_style);
      if (!keep || keep.ndim() != 3) throw ConfigError("volume: expected a 3D array");
      const auto type = value_type_of(keep.dtype());
      if (!type || !keep.dtype().attr("isnative").cast<bool>())
        throw ConfigError("volume: dtype " + std::string(py::str(keep.dtype())) + " is thresholded in Python first");
      v.values = keep.data();
      v.shape = Shape(keep.shape(0), keep.shape(1), keep.shape(2));
      v.type = *type;
    }
    if (v.shape.size() == 0) throw ConfigError("volume: empty (" + v.shape.str() + ")");
    // The foreground rule, as the command line's --threshold: nonzero, value >= T (an int exactly,
    // also beyond 2^53), or Otsu's T.
    morphology::Foreground foreground;
    double used = 0;
    std::string rule = "nonzero";
    if (py::isinstance<py::str>(threshold)) {
      if (threshold.cast<std::string>() != "otsu") throw ConfigError("threshold: a number or 'otsu'");
      py::gil_scoped_release release;
      used = otsu_of(v);
      foreground = used;
      rule = "otsu";
    } else if (!threshold.is_none()) {
      foreground = py::isinstance<py::int_>(threshold)
                       ? morphology::Foreground::parse(std::string(py::str(threshold)), "threshold")
                       : morphology::Foreground(threshold.cast<double>());
      used = foreground.value();
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
    job.value_bytes = static_cast<std::int64_t>(morphology::value_size(v.type));
    job.reader = [v, foreground](std::int64_t first, std::int64_t count) {
      return planes_bits(v, first, count, foreground);
    };
    // The size map as documented: int32, -1 on the background, the whole volume's (in memory here).
    py::array_t<std::int32_t> map;
    std::int32_t* map_data = nullptr;
    if (size_map) {
      map = py::array_t<std::int32_t>({v.shape[0], v.shape[1], v.shape[2]});
      map_data = map.mutable_data();
    }
    const std::size_t plane = static_cast<std::size_t>(v.shape[1] * v.shape[2]);
    const morphology::SizeMapWriter writer = [map_data, plane](std::int64_t first, const Array& slab, int) {
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
