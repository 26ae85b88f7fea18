#include "size_map.hpp"

#include <string>

#include "weft/util/error.hpp"
#include "weft/util/parallel_for.hpp"

namespace weft::granulometry {

SizeMapLayout SizeMapLayout::choose(int max_size, bool diameter) {
  SizeMapLayout l;
  l.diameter = diameter;
  l.largest = diameter ? 2 * std::int64_t{max_size} + 1 : max_size;
  if (l.largest <= 254) l.dtype = DType::u8, l.background = 255;
  else if (l.largest <= 65534) l.dtype = DType::u16, l.background = 65535;
  else l.dtype = DType::i32, l.background = -1;
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
  if (map.dtype() != DType::i32 || !map.memory().is_host())
    throw Error("size map: expected host i32 planes, got " + std::string(dtype_name(map.dtype())));
  Array stored = Array::host(layout_.dtype, map.shape());
  const std::int32_t* in = map.data<std::int32_t>();
  const bool diameter = layout_.diameter;
  const std::int64_t background = layout_.background;
  const auto convert = [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    parallel_for(map.size(), [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i)
        out[i] = static_cast<T>(in[i] < 0 ? background : diameter ? 2 * std::int64_t{in[i]} + 1 : in[i]);
    }, 1 << 16);
  };
  if (layout_.dtype == DType::u8) convert(stored.data<std::uint8_t>());
  else if (layout_.dtype == DType::u16) convert(stored.data<std::uint16_t>());
  else convert(stored.data<std::int32_t>());
  volume_.write(first, stored);
}

}  // namespace weft::granulometry
