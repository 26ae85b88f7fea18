#include "size_map.hpp"

#include <string>

#include "weft/util/error.hpp"

namespace weft::granulometry {

SizeMapLayout SizeMapLayout::choose(int max_size, bool diameter) {
  SizeMapLayout l;
  l.diameter = diameter;
  const morphology::SizeMapForm form = morphology::SizeMapForm::smallest(max_size, diameter);
  l.largest = form.value(max_size);
  l.dtype = form.dtype;
  l.background = form.background();
  return l;
}

namespace {

std::string meaning(const SizeMapLayout& l, const std::string& element) {
  const std::string what = l.diameter ? "2n + 1, the diameter in voxels" : "n, the radius in voxels";
  return what + " of the largest " + element + " (size n <= max_size) whose opening keeps the voxel; " +
         std::to_string(l.background) + " on the background; a length is the value times voxel_size";
}

}  // namespace

SizeMapOutput::SizeMapOutput(io::H5Writer& file, const Shape& shape, int max_size, bool diameter,
                             const std::string& element, const VoxelSize& voxel)
    : layout_(SizeMapLayout::choose(max_size, diameter)),
      volume_(file, "/size_map", layout_.dtype, shape, {32, 64, 64}, static_cast<double>(layout_.background)) {
  file.attribute("/size_map", "meaning", meaning(layout_, element));
  file.attribute("/size_map", "quantity", std::string(diameter ? "diameter" : "radius"));
  file.attribute("/size_map", "units", std::string("voxels"));
  file.attribute("/size_map", "background", layout_.background);
  file.attribute("/size_map", "max_size", max_size);
  file.attribute("/size_map", "element", element);
  file.attribute("/size_map", "voxel_size", voxel.size);
  file.attribute("/size_map", "voxel_unit", voxel.unit);
}

void SizeMapOutput::write(std::int64_t first, const Array& map) {
  if (map.dtype() != layout_.dtype || !map.memory().is_host())
    throw Error("size map: expected host " + std::string(dtype_name(layout_.dtype)) + " planes, got " +
                std::string(dtype_name(map.dtype())));
  volume_.write(first, map);
}

}  // namespace weft::granulometry
