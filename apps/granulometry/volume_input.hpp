#pragma once
// Where `weft granulometry` reads its volume: an HDF5 dataset, a RAW file, or TIFF (one multi-page
// file, or a stack of single-page files: a folder or a pattern).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "weft/data/array.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/tiff.hpp"
#include "weft/tasks/morphology/threshold.hpp"

namespace weft::granulometry {

struct VolumeInput {
  std::string input;   ///< "FILE.h5:/dataset", a RAW file, or TIFF (io::is_tiff_input)
  std::string shape;   ///< RAW only: "ZxYxX"
  std::string dtype;   ///< RAW only: a value type name (morphology::parse_value_type)
  [[nodiscard]] bool is_raw() const { return !shape.empty() || !dtype.empty(); }
  [[nodiscard]] bool is_tiff() const { return !is_raw() && io::is_tiff_input(input); }
};

/// What the checks found: the volume's extents and its values' type, and the files that hold it.
struct VolumeInfo {
  Shape shape;
  morphology::ValueType type = morphology::ValueType::u8;
  std::string first_file, last_file;  ///< for the ranks' comparison of their inputs
};

/// Checks the input before anything runs (files, dataset, rank, element type, headers against
/// file sizes). Throws ConfigError naming the option and value.
[[nodiscard]] VolumeInfo check_input(const VolumeInput& in);

/// Where the input's values can be read without the HDF5 library, by pieces with pread on every
/// core; found once per input: a RAW file or a contiguous HDF5 dataset (io::raw_extent: from byte
/// `offset`), or a chunked dataset (unfiltered or gzip, alone or after the byte shuffle), whose
/// chunks `chunks` (io::ChunkIndex, shared by the copies of the source) lists as the reads ask for
/// them, each chunk row once, when they are allocated. `none`: every read goes through the library
/// (or libtiff, whose checked volume `tiff` holds).
struct DirectSource {
  enum Kind : std::uint8_t { none, contiguous, chunked } kind = none;
  io::DatasetRef ref;         ///< the file (and dataset) read; a RAW file's path in ref.file
  std::int64_t offset = 0;    ///< contiguous: byte of the first value
  morphology::ValueType type = morphology::ValueType::u8;  ///< the values' type
  std::int64_t chunk_width = 0;  ///< chunked: X of a chunk
  std::shared_ptr<io::ChunkIndex> chunks;  ///< chunked: the chunks' addresses, asked once
  std::shared_ptr<const io::TiffVolume> tiff;  ///< TIFF input: its files and pages, checked
};
[[nodiscard]] DirectSource direct_source(const VolumeInput& in);

/// Values of planes as stored: `bytes` holds count · Y · X values of `type`.
struct Values {
  morphology::ValueType type = morphology::ValueType::u8;
  Array bytes;  ///< u8 [count · Y · X · value_size(type)]
  [[nodiscard]] const void* data() const { return bytes.raw(); }
};

/// Reads planes [first, first + count) of axis 0 of a volume of `shape`: read_values_direct where
/// it can, else through the HDF5 library or libtiff. ConfigError naming --input for planes outside
/// the volume.
[[nodiscard]] Values read_planes(const VolumeInput& in, const DirectSource& source, const Shape& shape,
                                 std::int64_t first, std::int64_t count);

/// The values of planes [first, first + count) of a volume of `shape` read from `source` by pieces
/// (or chunks, inflated when gzip-compressed) on every core; nullopt where the source cannot be
/// read so (`none`, or chunks io::ChunkIndex refuses).
[[nodiscard]] std::optional<Values> read_values_direct(const DirectSource& source, const Shape& shape,
                                                       std::int64_t first, std::int64_t count);

/// Foreground bits (morphology/threshold.hpp) of planes [first, first + count) of a volume of
/// `shape` read from `source` by pieces on every core and packed as they come; for a chunked
/// source only where its chunk rows start on bytes of bits (X and the chunk width multiples of 8).
/// nullopt otherwise (read_planes, then packing).
[[nodiscard]] std::optional<Array> read_foreground_direct(const DirectSource& source, const Shape& shape,
                                                          std::int64_t first, std::int64_t count,
                                                          const morphology::Foreground& foreground);

/// `values` as an array the median filter takes (u8, u16 or f32): a view of them as they are (which
/// `values` must outlive), or a copy as f32 where the type holds only values a float holds exactly (morphology::exact_in_f32; check_input refuses the
/// others with --median).
[[nodiscard]] Array filterable(const Values& values, const Shape& shape);

}  // namespace weft::granulometry
