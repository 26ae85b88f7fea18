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

class SizeMapOutput {
 public:
  /// Creates /size_map [shape] in `file` for sizes up to `max_size`, with its attributes, stored
  /// in morphology::SizeMapForm::smallest(max_size, diameter): value n (the radius) or 2n + 1
  /// (the diameter), in voxels; the background the type's largest value (255 for u8, 65535 for
  /// u16), or −1 in i32 for maps whose values pass 65534.
  SizeMapOutput(io::H5Writer& file, const Shape& shape, int max_size, bool diameter, const std::string& element,
                const VoxelSize& voxel);
  /// The opening function of planes [first, first + map.shape()[0]), already in that form (host;
  /// the job's size_map_smallest).
  void write(std::int64_t first, const Array& map);
  /// IoError unless every plane was written.
  void finish() { volume_.finish(); }

 private:
  morphology::SizeMapForm form_;
  io::DeflatedVolume volume_;
};

}  // namespace weft::granulometry
