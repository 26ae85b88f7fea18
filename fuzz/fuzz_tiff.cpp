// TIFF volumes (tasks/io/tiff.cpp): the input is a TIFF file. Weft's checks of every page against
// the file (extents, sample format, strips or tiles inside it, decoded bytes within what the stored
// bytes can give) run first; a volume they accept is then decoded, at most a few small planes, so
// that what libtiff is asked to decode is what the checks let through.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "weft/tasks/io/tiff.hpp"
#include "weft/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = weft::fuzz::write_input("volume.tif", data, size);
  try {
    const weft::io::TiffVolume v = weft::io::open_tiff_volume(file, "--input");
    const std::int64_t plane = v.height * v.width * v.element_bytes;
    if (plane > (std::int64_t{1} << 24)) return 0;  // a valid header of a large page: nothing more to learn
    const std::int64_t planes = std::min<std::int64_t>(v.depth, 4);
    std::vector<unsigned char> to(static_cast<std::size_t>(plane * planes));
    weft::io::read_tiff_planes(v, 0, planes, to.data(), 1);
  } catch (const weft::Error&) {
  }
  return 0;
}
