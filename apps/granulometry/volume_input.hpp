#pragma once
// Where `weft granulometry` reads its volume: an HDF5 dataset or a RAW file.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "weft/data/array.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/threshold.hpp"

namespace weft::granulometry {

struct VolumeInput {
  std::string input;   ///< "FILE.h5:/dataset" or a RAW file
  std::string shape;   ///< RAW only: "ZxYxX"
  std::string dtype;   ///< RAW only: u8 | u16 | f32
  [[nodiscard]] bool is_raw() const { return !shape.empty() || !dtype.empty(); }
};

/// Checks the input before anything runs (file, dataset, rank, dtype, size); returns its shape.
/// Throws ConfigError naming the option and value.
[[nodiscard]] Shape check_input(const VolumeInput& in);
/// Where the input's values can be read without the HDF5 library, by pieces with pread on every
/// core; found once per input: a RAW file or a contiguous HDF5 dataset (io::raw_extent: from byte
/// `offset`), or a chunked dataset (unfiltered or gzip, alone or after the byte shuffle), whose
/// chunks `chunks` (io::ChunkIndex, shared by the copies of the source) lists as the reads ask for
/// them, each chunk row once, when they are allocated. `none`: every read goes through the library.
struct DirectSource {
  enum Kind : std::uint8_t { none, contiguous, chunked } kind = none;
  io::DatasetRef ref;         ///< the file (and dataset) read; a RAW file's path in ref.file
  std::int64_t offset = 0;    ///< contiguous: byte of the first value
  DType dtype = DType::u8;    ///< the values' type
  std::int64_t chunk_width = 0;  ///< chunked: X of a chunk
  std::shared_ptr<io::ChunkIndex> chunks;  ///< chunked: the chunks' addresses, asked once
};
[[nodiscard]] DirectSource direct_source(const VolumeInput& in);

/// Reads the whole volume into a host array (u8, u16 or f32): read_values_direct of `source` (the
/// input's direct_source) where it can (RAW files always), else through the HDF5 library.
[[nodiscard]] Array read_volume(const VolumeInput& in, const DirectSource& source);
/// Reads planes [first, first + count) of axis 0 of a volume of `shape` (read_values_direct where
/// it can, else an HDF5 hyperslab). ConfigError naming --input for planes outside the volume.
[[nodiscard]] Array read_planes(const VolumeInput& in, const DirectSource& source, const Shape& shape,
                                std::int64_t first, std::int64_t count);

/// The values of planes [first, first + count) of a volume of `shape` read from `source` by pieces
/// (or chunks, inflated when gzip-compressed) on every core; nullopt where the source cannot be
/// read so (`none`, or chunks io::ChunkIndex refuses).
[[nodiscard]] std::optional<Array> read_values_direct(const DirectSource& source, const Shape& shape,
                                                      std::int64_t first, std::int64_t count);

/// Foreground bits (morphology/threshold.hpp) of planes [first, first + count) of a volume of
/// `shape` read from `source` by pieces on every core and packed as they come; for a chunked
/// source only where its chunk rows start on bytes of bits (X and the chunk width multiples of 8).
/// nullopt otherwise (read_planes, then packing).
[[nodiscard]] std::optional<Array> read_foreground_direct(const DirectSource& source, const Shape& shape,
                                                          std::int64_t first, std::int64_t count,
                                                          morphology::Foreground foreground);

}  // namespace weft::granulometry
