#pragma once
/// Internal: where HDF5 stores each chunk of a dataset, asked at the cost of a lookup per chunk.
///
/// HDF5 1.10 answers H5Dget_chunk_info_by_coord (and H5Dget_chunk_info) by walking the dataset's
/// whole chunk index up to the chunk asked for, so listing n chunks costs O(n²): 37 µs a chunk
/// for 4096 chunks, 86 µs for 8192 (probes, printed, not kept). Its H5Dread_chunk finds a chunk by a lookup
/// instead, then reads the stored bytes through the file driver. ChunkPlaces opens the file
/// through a read-only driver of its own that passes every metadata read to pread and, for a
/// chunk asked for, records the raw-data read's file offset and size instead of reading: 0.5 µs
/// a chunk on the development machine (the same probe). The offset is the driver's, that is, the byte offset in
/// the file (past any user block). HDF5 1.14's H5Dchunk_iter does this walk in one pass; the
/// Debian 12 and GPU images have 1.10.
#include <hdf5.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "h5_common.hpp"
#include "weft/tasks/io/hdf5.hpp"

namespace weft::io::detail {

class ChunkPlaces {
 public:
  /// The dataset of `ref` opened through the recording driver; null where this HDF5 is not 1.10
  /// (from 1.10.5, whose driver interface it implements) or the file does not open that way.
  /// Call it, and every method, under H5Lock.
  [[nodiscard]] static std::unique_ptr<ChunkPlaces> open(const DatasetRef& ref);
  ~ChunkPlaces();
  ChunkPlaces(const ChunkPlaces&) = delete;
  ChunkPlaces& operator=(const ChunkPlaces&) = delete;

  struct Place {
    std::int64_t offset = 0;  ///< byte offset in the file
    std::int64_t size = 0;    ///< stored bytes (compressed where filtered)
    unsigned filter_mask = 0;
  };
  /// The chunk at element `offset` (its first element); false where it is not allocated or HDF5
  /// did not read it in exactly one piece (the caller then lets the library read it).
  [[nodiscard]] bool locate(const hsize_t* offset, Place& place);

 private:
  ChunkPlaces() = default;
  H5Handle file_, dataset_;
  std::vector<unsigned char> buffer_;  // H5Dread_chunk's destination, never written through the driver
};

}  // namespace weft::io::detail
