#include "size_map.hpp"

#include <string>

#include "weft/util/error.hpp"

namespace weft::granulometry {

namespace {

std::string meaning(const morphology::SizeMapForm& f, const std::string& element) {
  const std::string what = f.diameter ? "2n + 1, the diameter in voxels" : "n, the radius in voxels";
  return what + " of the largest " + element + " (size n <= max_size) whose opening keeps the voxel; " +
         std::to_string(f.background()) + " on the background; a length is the value times voxel_size";
}

}  // namespace

SizeMapOutput::SizeMapOutput(io::H5Writer& file, const Shape& shape, int max_size, bool diameter,
                             const std::string& element, const VoxelSize& voxel)
    : form_(morphology::SizeMapForm::smallest(max_size, diameter)),
      volume_(file, "/size_map", form_.dtype, shape, {32, 64, 64}, static_cast<double>(form_.background())) {
  file.attribute("/size_map", "meaning", meaning(form_, element));
  file.attribute("/size_map", "quantity", std::string(diameter ? "diameter" : "radius"));
  file.attribute("/size_map", "units", std::string("voxels"));
  file.attribute("/size_map", "background", form_.background());
  file.attribute("/size_map", "max_size", max_size);
  file.attribute("/size_map", "element", element);
  file.attribute("/size_map", "voxel_size", voxel.size);
  file.attribute("/size_map", "voxel_unit", voxel.unit);
}

void SizeMapOutput::write(std::int64_t first, const Array& map) {
  if (map.dtype() != form_.dtype || !map.memory().is_host())
    throw Error("size map: expected host " + std::string(dtype_name(form_.dtype)) + " planes, got " +
                std::string(dtype_name(map.dtype())));
  volume_.write(first, map);
}

}  // namespace weft::granulometry
