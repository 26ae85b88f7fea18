// TIFF volumes: multi-page files and stacks of single-page files, checked, then read on several threads.
#include "weft/tasks/io/tiff.hpp"

#include <glob.h>
#include <tiffio.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tiff_names.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

namespace fs = std::filesystem;
using detail::has_pattern;
using detail::tiff_name;

// libtiff reports through process-wide handlers, on the thread that called it: the last error of
// each thread is kept for the message, warnings (unknown tags, ...) are dropped.
thread_local std::string tiff_error;

__attribute__((format(printf, 2, 0))) void keep_error(const char* module, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  tiff_error = (module && *module ? std::string(module) + ": " : std::string()) + text;
}
void drop_warning(const char*, const char*, va_list) {}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(keep_error);
    TIFFSetWarningHandler(drop_warning);
  });
}

/// libtiff's last message on this thread, as " (libtiff: ...)" or nothing.
std::string reason() {
  std::string r = tiff_error.empty() ? "" : " (libtiff: " + tiff_error + ")";
  tiff_error.clear();
  return r;
}

struct Closer {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using Handle = std::unique_ptr<TIFF, Closer>;

Handle open_file(const std::string& path, const std::string& what) {
  install_handlers();
  tiff_error.clear();
  Handle t(TIFFOpen(path.c_str(), "r"));
  if (!t) throw ConfigError(what + ": cannot open '" + path + "' as TIFF" + reason());
  return t;
}

/// Natural order: runs of digits compare as numbers (slice_9 < slice_10), the rest as bytes.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::size_t zi = i, zj = j;  // leading zeros do not count
      while (zi + 1 < ei && a[zi] == '0') ++zi;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      const int c = a.compare(zi, ei - zi, b, zj, ej - zj);
      if (c != 0) return c < 0;
      i = ei, j = ej;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

/// Decoded bytes a strip or tile of `stored` bytes may give at most under `compression`, or 0
/// where no bound is known (the host's memory check is the only one then).
std::uint64_t decoded_bound(std::uint16_t compression, std::uint64_t stored) {
  switch (compression) {
    case COMPRESSION_NONE: return stored;
    case COMPRESSION_PACKBITS: return 64 * stored + 128;          // 2 bytes repeat a byte 128 times
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: return 1032 * stored + 4096;       // deflate's largest ratio
    case COMPRESSION_LZW: return 4096 * stored + 4096;           // a 9-12 bit code gives < 4096 bytes
    default: return 0;
  }
}

/// The page the handle is on, checked: one sample of a size and format we read, inside its file.
struct Page {
  std::int64_t width = 0, height = 0;
  std::string element;
  std::int64_t bytes = 0;
};

Page check_page(TIFF* t, const std::string& where, std::uint64_t file_bytes) {
  std::uint32_t width = 0, height = 0, depth = 1;
  std::uint16_t samples = 1, bits = 1, format = SAMPLEFORMAT_UINT, compression = COMPRESSION_NONE;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &width) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &height) || width == 0 ||
      height == 0)
    throw ConfigError(where + ": no image extents" + reason());
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &compression);
  TIFFGetFieldDefaulted(t, TIFFTAG_IMAGEDEPTH, &depth);
  if (samples != 1)
    throw ConfigError(where + ": " + std::to_string(samples) + " samples per pixel (colour?): expected grey pages");
  if (depth != 1) throw ConfigError(where + ": a 3-D tiled page (image depth " + std::to_string(depth) + ")");
  if (bits == 1) throw ConfigError(where + ": a 1-bit (bilevel) page: save the mask with 8 bits per pixel");
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    throw ConfigError(where + ": " + std::to_string(bits) + " bits per pixel (expected 8, 16, 32 or 64)");
  Page p;
  p.width = width, p.height = height, p.bytes = bits / 8;
  if (format == SAMPLEFORMAT_IEEEFP && (bits == 32 || bits == 64)) p.element = "f" + std::to_string(bits);
  else if (format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_VOID) p.element = "u" + std::to_string(bits);
  else if (format == SAMPLEFORMAT_INT) p.element = "i" + std::to_string(bits);
  else throw ConfigError(where + ": sample format " + std::to_string(format) + " with " + std::to_string(bits) + " bits");
  if (!TIFFIsCODECConfigured(compression)) {
    const TIFFCodec* codec = TIFFFindCODEC(compression);
    throw ConfigError(where + ": compressed with " + (codec ? std::string(codec->name) : "scheme") + " (" +
                      std::to_string(compression) + "), which this libtiff cannot decode");
  }
  // Every strip or tile inside the file, holding enough bytes for what it decodes to.
  const bool tiled = TIFFIsTiled(t) != 0;
  const std::uint32_t pieces = tiled ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
  std::uint32_t rows = height;
  if (!tiled) TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rows);
  rows = std::clamp<std::uint32_t>(rows, 1, height);
  const std::uint32_t needed = tiled ? pieces : (height + rows - 1) / rows;
  if (pieces == 0 || pieces < needed)
    throw ConfigError(where + ": " + std::to_string(pieces) + " strips or tiles for " + std::to_string(needed));
  // Each strip or tile is listed in the file (an offset and a byte count, 4 bytes at least): a
  // header that claims more than the file could list is refused before they are walked.
  if (needed > file_bytes / 4)
    throw ConfigError(where + ": " + std::to_string(needed) + " strips or tiles, more than a file of " +
                      std::to_string(file_bytes) + " bytes can list");
  for (std::uint32_t s = 0; s < needed; ++s) {
    int err = 0;
    const std::uint64_t offset = TIFFGetStrileOffsetWithErr(t, s, &err);
    const std::uint64_t stored = err ? 0 : TIFFGetStrileByteCountWithErr(t, s, &err);
    const std::string which = (tiled ? "tile " : "strip ") + std::to_string(s);
    if (err || stored == 0) throw ConfigError(where + ": " + which + " has no data" + reason());
    if (offset > file_bytes || stored > file_bytes - offset)
      throw ConfigError(where + ": " + which + "'s " + std::to_string(stored) + " bytes at byte " + std::to_string(offset) +
                        " run past the end of the file (" + std::to_string(file_bytes) + " bytes): truncated file");
    const std::uint32_t piece_rows = tiled ? 0 : std::min<std::uint32_t>(rows, height - s * rows);
    const std::uint64_t decoded = tiled ? TIFFTileSize64(t) : TIFFVStripSize64(t, piece_rows);
    const std::uint64_t bound = decoded_bound(compression, stored);
    if (decoded == 0 || (bound > 0 && decoded > bound))
      throw ConfigError(where + ": " + which + " claims " + std::to_string(decoded) + " bytes of pixels from " +
                        std::to_string(stored) + " stored bytes (a corrupt header?)");
  }
  return p;
}

std::uint64_t file_size(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  if (ec) throw ConfigError(what + ": cannot read '" + path + "': " + ec.message());
  return bytes;
}

/// Pages of one multi-page file, each checked; a stack's files must have one.
std::vector<Page> check_file(const std::string& path, const std::string& what) {
  const std::uint64_t bytes = file_size(path, what);
  Handle t = open_file(path, what);
  std::vector<Page> pages;
  do {
    const std::string where = what + ": '" + path + "' page " + std::to_string(pages.size());
    pages.push_back(check_page(t.get(), where, bytes));
    if (pages.size() >= (std::size_t{1} << 24)) throw ConfigError(what + ": '" + path + "' has too many pages");
  } while (TIFFReadDirectory(t.get()));
  if (!tiff_error.empty()) throw ConfigError(what + ": '" + path + "' page " + std::to_string(pages.size()) + reason());
  return pages;
}

std::vector<std::string> stack_files(const std::string& input, const std::string& what) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(input, ec)) {
    for (const auto& entry : fs::directory_iterator(input, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with(".") && tiff_name(name) && entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
    if (ec) throw ConfigError(what + ": cannot list folder '" + input + "': " + ec.message());
    if (files.empty()) throw ConfigError(what + ": folder '" + input + "' has no .tif or .tiff files");
  } else {
    glob_t found{};
    const int status = glob(input.c_str(), GLOB_NOSORT, nullptr, &found);
    for (std::size_t i = 0; status == 0 && i < found.gl_pathc; ++i)
      if (fs::is_regular_file(found.gl_pathv[i], ec)) files.emplace_back(found.gl_pathv[i]);
    globfree(&found);
    if (files.empty()) throw ConfigError(what + ": no file matches the pattern '" + input + "'");
  }
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

}  // namespace

TiffVolume open_tiff_volume(const std::string& input, const std::string& what) {
  TiffVolume v;
  std::error_code ec;
  const bool stack = fs::is_directory(input, ec) || (has_pattern(input) && !fs::exists(input, ec));
  if (!stack && !fs::is_regular_file(input, ec)) throw ConfigError(what + ": file '" + input + "' does not exist");
  v.files = stack ? stack_files(input, what) : std::vector<std::string>{input};
  v.multipage = !stack;
  Page first;
  for (std::size_t f = 0; f < v.files.size(); ++f) {
    const std::vector<Page> pages = check_file(v.files[f], what);
    if (stack && pages.size() != 1)
      throw ConfigError(what + ": '" + v.files[f] + "' has " + std::to_string(pages.size()) +
                        " pages: a stack takes single-page files (give a multi-page file by its name)");
    for (std::size_t k = 0; k < pages.size(); ++k) {
      const Page& p = pages[k];
      if (f == 0 && k == 0) first = p;
      if (p.width != first.width || p.height != first.height || p.element != first.element)
        throw ConfigError(what + ": '" + v.files[f] + "' page " + std::to_string(k) + " is " + std::to_string(p.height) +
                          "x" + std::to_string(p.width) + " " + p.element + ", the first page " +
                          std::to_string(first.height) + "x" + std::to_string(first.width) + " " + first.element);
    }
    v.depth += static_cast<std::int64_t>(pages.size());
  }
  v.height = first.height, v.width = first.width, v.element = first.element, v.element_bytes = first.bytes;
  return v;
}

namespace {

/// Decodes the page `t` is on into `to` (height · width · bytes), strip by strip or tile by tile.
void decode_page(TIFF* t, const TiffVolume& v, void* to, const std::string& where) {
  auto* out = static_cast<unsigned char*>(to);
  const std::int64_t row = v.width * v.element_bytes;
  if (!TIFFIsTiled(t)) {
    std::uint32_t rows = static_cast<std::uint32_t>(v.height);
    TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rows);
    rows = std::clamp<std::uint32_t>(rows, 1, static_cast<std::uint32_t>(v.height));
    for (std::int64_t y = 0, s = 0; y < v.height; y += rows, ++s) {
      const std::int64_t want = std::min<std::int64_t>(rows, v.height - y) * row;
      if (TIFFReadEncodedStrip(t, static_cast<std::uint32_t>(s), out + y * row, want) != want)
        throw IoError(where + ": strip " + std::to_string(s) + " does not decode to its " + std::to_string(want) +
                      " bytes" + reason());
    }
    return;
  }
  std::uint32_t tw = 0, th = 0;
  TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
  TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
  const auto tile_bytes = static_cast<tmsize_t>(TIFFTileSize64(t));
  std::vector<unsigned char> tile(static_cast<std::size_t>(tile_bytes));
  for (std::int64_t y = 0; y < v.height; y += th)
    for (std::int64_t x = 0; x < v.width; x += tw) {
      const auto k = TIFFComputeTile(t, static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 0, 0);
      if (TIFFReadEncodedTile(t, k, tile.data(), tile_bytes) != tile_bytes)
        throw IoError(where + ": tile " + std::to_string(k) + " does not decode" + reason());
      const std::int64_t h = std::min<std::int64_t>(th, v.height - y), w = std::min<std::int64_t>(tw, v.width - x);
      for (std::int64_t r = 0; r < h; ++r)
        std::memcpy(out + (y + r) * row + x * v.element_bytes, tile.data() + r * tw * v.element_bytes,
                    static_cast<std::size_t>(w * v.element_bytes));
    }
}

}  // namespace

void read_tiff_planes(const TiffVolume& v, std::int64_t first, std::int64_t count, void* to, int threads) {
  if (first < 0 || count < 0 || first + count > v.depth)
    throw ConfigError("TIFF planes [" + std::to_string(first) + ", " + std::to_string(first + count) + ") outside " +
                      std::to_string(v.depth) + " planes");
  if (count == 0) return;
  const std::int64_t plane = v.height * v.width * v.element_bytes;
  const int workers = static_cast<int>(std::clamp<std::int64_t>(
      threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency()), 1, count));
  // Each thread reads a run of planes with a handle of its own: a multi-page file's pages follow
  // each other, so a run needs one seek and then the next page each time.
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&](int w) {
    try {
      const std::int64_t begin = first + count * w / workers, end = first + count * (w + 1) / workers;
      Handle t;
      for (std::int64_t z = begin; z < end; ++z) {
        const std::string& file = v.files[v.multipage ? 0 : static_cast<std::size_t>(z)];
        const std::string where = "'" + file + "'" + (v.multipage ? " page " + std::to_string(z) : "");
        if (!v.multipage || !t) {
          install_handlers();
          t.reset(TIFFOpen(file.c_str(), "r"));
          if (!t) throw IoError("cannot open " + where + reason());
          if (v.multipage && !TIFFSetDirectory(t.get(), static_cast<tdir_t>(z)))
            throw IoError("cannot find " + where + reason());
        } else if (!TIFFReadDirectory(t.get())) {
          throw IoError("cannot find " + where + reason());
        }
        decode_page(t.get(), v, static_cast<unsigned char*>(to) + (z - first) * plane, where);
      }
    } catch (...) {
      const std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace weft::io
