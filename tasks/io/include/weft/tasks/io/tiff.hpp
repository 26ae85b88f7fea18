#pragma once
/// Volumes stored as TIFF, as tomography pipelines export them: one multi-page file (page z is
/// plane z) or a stack of single-page files (a folder's .tif/.tiff files, or a pattern, taken in
/// the natural order of their names: slice_9 before slice_10). Grey pages of 8 to 64 bits,
/// unsigned, signed or IEEE float, in strips or tiles, with any compression this libtiff decodes.
/// Every page's header is checked against its file before anything is allocated or read; libtiff's
/// own messages never reach the terminal: its innermost reason ends the error.
#include <cstdint>
#include <string>
#include <vector>

#include "weft/data/array.hpp"

namespace weft::io {

struct TiffVolume {
  std::vector<std::string> files;  ///< the stack's files, or the one multi-page file
  bool multipage = false;
  std::int64_t depth = 0, height = 0, width = 0;
  /// The pages' element type: "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64".
  std::string element = "u8";
  std::int64_t element_bytes = 1;
};

/// Whether `input` names TIFF data: an existing folder, a pattern (with *, ? or [), or a name ending
/// in .tif or .tiff (any case). Not "FILE:/dataset" where FILE exists (an HDF5 dataset).
[[nodiscard]] bool is_tiff_input(const std::string& input);

/// Lists and checks the volume: every page one sample of 8, 16, 32 or 64 bits, the same extents
/// and type as the first, its strips or tiles inside its file, no more decoded bytes than its
/// stored bytes can give (for uncompressed, PackBits, LZW and deflate pages); a stack's files one
/// page each. ConfigError starting with `what` and naming the file (and page) otherwise.
[[nodiscard]] TiffVolume open_tiff_volume(const std::string& input, const std::string& what);

/// Planes [first, first + count) into `to` (count · height · width · element_bytes bytes), values
/// as stored, in this host's byte order, decoded on up to `threads` threads (0: one per core).
/// IoError naming the file and page for data that does not decode to whole pages.
void read_tiff_planes(const TiffVolume& volume, std::int64_t first, std::int64_t count, void* to, int threads = 0);

/// Writes `volume` (host [Z, Y, X]: u8, u16, i32, f32 or f64) as one multi-page TIFF, or, with
/// `pages_per_file` 1, as files path_0000.tif, path_0001.tif, ... (for tests and samples).
/// `compression`: "none", "lzw", "deflate" or "packbits". Written in place (not staged).
void write_tiff(const std::string& path, const Array& volume, const std::string& compression = "none",
                bool one_file_per_page = false);

}  // namespace weft::io
