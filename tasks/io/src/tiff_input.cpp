// is_tiff_input, and the TIFF functions of a build without libtiff (they refuse, saying so).
#include <filesystem>
#include <string>

#include "tiff_names.hpp"
#include "weft/tasks/io/tiff.hpp"
#include "weft/util/error.hpp"

namespace weft::io {

bool is_tiff_input(const std::string& input) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::size_t colon = input.rfind(':');
  if (colon != std::string::npos && colon > 0 && fs::is_regular_file(input.substr(0, colon), ec)) return false;
  return fs::is_directory(input, ec) || detail::has_pattern(input) || detail::tiff_name(input);
}

#if !defined(WEFT_HAVE_TIFF)
TiffVolume open_tiff_volume(const std::string& input, const std::string& what) {
  throw ConfigError(what + ": '" + input + "' is TIFF, which this build cannot read (it was built without libtiff: "
                    "install libtiff-dev and build again)");
}

void read_tiff_planes(const TiffVolume&, std::int64_t, std::int64_t, void*, int) {
  throw ConfigError("TIFF: this build has no libtiff");
}

void write_tiff(const std::string& path, const Array&, const std::string&, bool) {
  throw ConfigError("write_tiff '" + path + "': this build has no libtiff");
}
#endif

}  // namespace weft::io
