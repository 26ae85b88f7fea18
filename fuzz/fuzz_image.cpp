// PNG and PGM files (tasks/io): the header checks first, as the programs make them, then the
// decoders; a header that lies about the pixels must be refused before anything is allocated.
#include <cstdint>

#include "fuzz_common.hpp"
#include "weft/tasks/io/flo.hpp"
#include "weft/tasks/io/image.hpp"
#include "weft/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = weft::fuzz::write_input("image", data, size);
  try {
    const weft::io::ImageInfo info = weft::io::image_info(path);
    if (info.height * info.width > (std::int64_t{1} << 26)) return 0;  // large but plausible: not this test's
    (void)weft::io::read_image(path);
    (void)weft::io::read_image_rgb(path);
  } catch (const weft::Error&) {
  }
  try {
    (void)weft::io::read_flo(path);
  } catch (const weft::Error&) {
  }
  return 0;
}
