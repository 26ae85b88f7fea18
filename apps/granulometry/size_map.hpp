#pragma once
// The size map in granulometry.h5: written slab by slab as the slabs finish, in the smallest
// integer type that holds its values, each chunk deflated on every core (io::DeflatedVolume).
#include <cstdint>
#include <memory>
#include <string>

#include "provenance.hpp"
#include "weft/data/array.hpp"
#include "weft/tasks/io/deflated_volume.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/granulometry.hpp"

namespace weft::granulometry {

/// How the size map's values are stored. Value n (radius, in voxels) or 2n + 1 (diameter, in
/// voxels); the background is the type's largest value (255 for u8, 65535 for u16), or −1 in i32
/// for maps whose values pass 65534.
struct SizeMapLayout {
  bool diameter = false;
  DType dtype = DType::u8;
  std::int64_t background = 255;
  std::int64_t largest = 0;  ///< the largest stored value (N, or 2N + 1)
  /// The layout for sizes up to `max_size`.
  [[nodiscard]] static SizeMapLayout choose(int max_size, bool diameter);
};

class SizeMapOutput {
 public:
  /// Creates /size_map [shape] in `file` for sizes up to `max_size`, with its attributes.
  SizeMapOutput(io::H5Writer& file, const Shape& shape, int max_size, bool diameter, const std::string& element,
                const VoxelSize& voxel);
  /// The opening function of planes [first, first + map.shape()[0]), already in the layout's
  /// form (host, morphology::SizeMapForm::smallest: the job's size_map_smallest).
  void write(std::int64_t first, const Array& map);
  /// IoError unless every plane was written.
  void finish() { volume_.finish(); }
  [[nodiscard]] const SizeMapLayout& layout() const { return layout_; }

 private:
  SizeMapLayout layout_;
  io::DeflatedVolume volume_;
};

}  // namespace weft::granulometry
