#pragma once
/// A large 3-D dataset written by slabs of planes as they come, in any order, compressed on every
/// core. HDF5 compresses the chunks of one H5Dwrite on the calling thread (a 1024³ size map took
/// seconds that way); here each chunk is deflated with zlib on a thread of its own and stored as
/// it is with H5Dwrite_chunk, into a dataset that declares HDF5's deflate (gzip) filter: any HDF5
/// reader (h5py, the library's H5Dread, Fiji's HDF5 plugin) inflates it as if HDF5 had written it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weft/data/array.hpp"
#include "weft/tasks/io/hdf5.hpp"

namespace weft::io {

class DeflatedVolume {
 public:
  /// Creates `path` [Z, Y, X] of `dtype` in `file` (chunks `chunk`, clipped to the extents, deflate
  /// at `level` 1 to 9, `fill` where nothing is written), deflated on `threads` threads (0: one per core).
  DeflatedVolume(H5Writer& file, std::string path, DType dtype, const Shape& shape, std::vector<std::int64_t> chunk,
                 double fill, int level = 1, int threads = 0);

  /// Writes planes [first, first + planes.shape()[0]) (host [n, Y, X] of the dataset's dtype). Every
  /// chunk row (chunk[0] planes) they complete is deflated and written before it returns; the
  /// planes of a row that later calls complete wait, copied (at most a row per end of the slab).
  void write(std::int64_t first, const Array& planes);
  /// IoError naming the dataset unless every plane was written once.
  void finish();

  /// Planes waiting for the rest of their chunk row.
  [[nodiscard]] std::int64_t waiting_planes() const;

 private:
  struct Row {
    Array planes;                   ///< the row's planes as they arrive
    std::vector<bool> present;      ///< which of them arrived
    std::int64_t count = 0;
  };
  void write_row(std::int64_t row, const unsigned char* planes);  ///< the row's planes, whole
  [[nodiscard]] std::int64_t row_planes(std::int64_t row) const;

  H5Writer& file_;
  std::string path_;
  DType dtype_;
  std::int64_t depth_, height_, width_;
  std::int64_t cz_, cy_, cx_;
  double fill_;
  int level_, threads_;
  std::map<std::int64_t, Row> waiting_;  ///< rows some of whose planes arrived
  std::vector<bool> written_;             ///< per row
};

}  // namespace weft::io
