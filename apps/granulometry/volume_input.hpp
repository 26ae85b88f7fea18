#pragma once
// Where `weft granulometry` reads its volume: an HDF5 dataset or a RAW file.
#include <cstdint>
#include <optional>
#include <string>

#include "weft/data/array.hpp"
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
/// Reads the whole volume into a host array (u8, u16 or f32): read_values_direct where it can (RAW
/// files always), else through the HDF5 library.
[[nodiscard]] Array read_volume(const VolumeInput& in);
/// Reads planes [first, first + count) of axis 0 (read_values_direct where it can, else an HDF5
/// hyperslab or a range of the RAW file).
[[nodiscard]] Array read_planes(const VolumeInput& in, std::int64_t first, std::int64_t count);

/// The values of planes [first, first + count) of a volume of `shape`, read by pieces (or chunks,
/// inflated when gzip-compressed) with pread on every core where the file allows it: a RAW file, a
/// contiguous HDF5 dataset, a chunked one unfiltered or gzip-compressed (any chunk shape); nullopt
/// otherwise. read_volume and read_planes of an HDF5 dataset try it first.
[[nodiscard]] std::optional<Array> read_values_direct(const VolumeInput& in, const Shape& shape, std::int64_t first,
                                                      std::int64_t count);

/// Foreground bits (morphology/threshold.hpp) of planes [first, first + count) of a volume of
/// `shape`, read by pieces with pread on every core and packed as they come, where the file allows
/// it: a RAW file, a contiguous HDF5 dataset (io::raw_extent), or a chunked one, unfiltered or
/// gzip-compressed (with or without the byte shuffle), whose chunks start on bytes of bits
/// (io::raw_chunks, X and the chunks' width multiples of 8; compressed chunks inflated on every
/// core too). nullopt for any other input, which read_planes reads.
[[nodiscard]] std::optional<Array> read_foreground_direct(const VolumeInput& in, const Shape& shape,
                                                          std::int64_t first, std::int64_t count,
                                                          morphology::Foreground foreground);

}  // namespace weft::granulometry
