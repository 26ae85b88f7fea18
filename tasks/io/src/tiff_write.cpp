// write_tiff: a volume as one multi-page TIFF or one file per page (tests, samples).
#include <tiffio.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "weft/tasks/io/tiff.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

std::uint16_t compression_of(const std::string& name) {
  if (name == "none") return COMPRESSION_NONE;
  if (name == "lzw") return COMPRESSION_LZW;
  if (name == "deflate") return COMPRESSION_ADOBE_DEFLATE;
  if (name == "packbits") return COMPRESSION_PACKBITS;
  throw ConfigError("TIFF compression: expected none, lzw, deflate or packbits, got '" + name + "'");
}

void write_pages(const std::string& path, const Array& volume, std::int64_t first, std::int64_t count,
                 std::uint16_t compression) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  if (!t) throw IoError("cannot create TIFF '" + path + "'");
  const Shape& s = volume.shape();
  const auto bytes = static_cast<std::int64_t>(dtype_size(volume.dtype()));
  const std::uint16_t format = volume.dtype() == DType::f32 || volume.dtype() == DType::f64 ? SAMPLEFORMAT_IEEEFP
                               : volume.dtype() == DType::i32                               ? SAMPLEFORMAT_INT
                                                                                            : SAMPLEFORMAT_UINT;
  const std::int64_t plane = s[1] * s[2] * bytes;
  // Strips of a few rows, so that a page has several (as cameras and exporters write them).
  const auto rows = static_cast<std::uint32_t>(std::max<std::int64_t>(1, std::min<std::int64_t>(s[1], 8)));
  bool ok = true;
  for (std::int64_t z = first; ok && z < first + count; ++z) {
    ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(s[2])) &&
         TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(s[1])) &&
         TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1) &&
         TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(8 * bytes)) &&
         TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, format) && TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK) &&
         TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) && TIFFSetField(t, TIFFTAG_COMPRESSION, compression) &&
         TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rows);
    if (count > 1) ok = ok && TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
    const auto* p = static_cast<const unsigned char*>(volume.raw()) + z * plane;
    for (std::int64_t y = 0, k = 0; ok && y < s[1]; y += rows, ++k) {
      const std::int64_t n = std::min<std::int64_t>(rows, s[1] - y) * s[2] * bytes;
      ok = TIFFWriteEncodedStrip(t, static_cast<std::uint32_t>(k), const_cast<unsigned char*>(p + y * s[2] * bytes), n) == n;
    }
    ok = ok && TIFFWriteDirectory(t);
  }
  TIFFClose(t);
  if (!ok) throw IoError("cannot write TIFF '" + path + "'");
}

}  // namespace

void write_tiff(const std::string& path, const Array& volume, const std::string& compression, bool one_file_per_page) {
  const Array host = volume.memory().is_host() ? volume : volume.to_host();
  if (host.shape().ndim() != 3 || host.dtype() == DType::f16)
    throw ConfigError("write_tiff: expected a [Z, Y, X] volume of u8, u16, i32, f32 or f64, got " +
                      std::string(dtype_name(host.dtype())) + " " + host.shape().str());
  const std::uint16_t c = compression_of(compression);
  if (!one_file_per_page) return write_pages(path, host, 0, host.shape()[0], c);
  for (std::int64_t z = 0; z < host.shape()[0]; ++z) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "_%04lld.tif", static_cast<long long>(z));
    write_pages(path + suffix, host, z, 1, c);
  }
}

}  // namespace weft::io
