// DeflatedVolume: chunk rows deflated on every core and stored with H5Dwrite_chunk.
#include "weft/tasks/io/deflated_volume.hpp"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "weft/util/error.hpp"

namespace weft::io {
namespace {

/// `n` copies of `fill` in the bytes of `dtype` at `to`.
void fill_values(void* to, std::int64_t n, DType dtype, double fill) {
  const std::size_t size = dtype_size(dtype);
  unsigned char value[8] = {};
  switch (dtype) {
    case DType::u8: value[0] = static_cast<std::uint8_t>(fill); break;
    case DType::u16: { const auto v = static_cast<std::uint16_t>(fill); std::memcpy(value, &v, 2); break; }
    case DType::i32: { const auto v = static_cast<std::int32_t>(fill); std::memcpy(value, &v, 4); break; }
    case DType::f32: { const auto v = static_cast<float>(fill); std::memcpy(value, &v, 4); break; }
    case DType::f64: std::memcpy(value, &fill, 8); break;
    case DType::f16: throw ConfigError("DeflatedVolume: f16 is not written this way");
  }
  auto* out = static_cast<unsigned char*>(to);
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(out + static_cast<std::size_t>(i) * size, value, size);
}

}  // namespace

DeflatedVolume::DeflatedVolume(H5Writer& file, std::string path, DType dtype, const Shape& shape,
                               std::vector<std::int64_t> chunk, double fill, int level, int threads)
    : file_(file), path_(std::move(path)), dtype_(dtype), depth_(shape[0]), height_(shape[1]), width_(shape[2]),
      fill_(fill), level_(std::clamp(level, 1, 9)),
      threads_(threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
  if (shape.ndim() != 3 || chunk.size() != 3 || shape.size() == 0)
    throw ConfigError("DeflatedVolume: expected a non-empty [Z, Y, X] shape and 3 chunk extents for " + path_);
  for (int a = 0; a < 3; ++a) chunk[static_cast<std::size_t>(a)] = std::clamp<std::int64_t>(chunk[static_cast<std::size_t>(a)], 1, shape[a]);
  cz_ = chunk[0], cy_ = chunk[1], cx_ = chunk[2];
  file_.create_deflated(path_, dtype_, {depth_, height_, width_}, chunk, level_, fill_);
  written_.assign(static_cast<std::size_t>((depth_ + cz_ - 1) / cz_), false);
}

std::int64_t DeflatedVolume::row_planes(std::int64_t row) const { return std::min(cz_, depth_ - row * cz_); }

std::int64_t DeflatedVolume::waiting_planes() const {
  std::int64_t n = 0;
  for (const auto& [row, r] : waiting_) n += r.count;
  return n;
}

void DeflatedVolume::write(std::int64_t first, const Array& planes) {
  const Shape& s = planes.shape();
  if (!planes.memory().is_host() || planes.dtype() != dtype_ || s.ndim() != 3 || s[1] != height_ || s[2] != width_ ||
      first < 0 || first + s[0] > depth_)
    throw ConfigError("DeflatedVolume: " + std::string(dtype_name(planes.dtype())) + " " + s.str() + " at plane " +
                      std::to_string(first) + " does not fit " + std::string(dtype_name(dtype_)) + " " +
                      Shape(depth_, height_, width_).str() + " " + path_);
  const std::int64_t plane = height_ * width_ * static_cast<std::int64_t>(dtype_size(dtype_));
  const auto* base = static_cast<const unsigned char*>(planes.raw());
  const std::int64_t end = first + s[0];
  for (std::int64_t row = first / cz_; row * cz_ < end; ++row) {
    const std::int64_t r0 = row * cz_, r1 = r0 + row_planes(row);
    const std::int64_t a = std::max(first, r0), b = std::min(end, r1);
    if (written_[static_cast<std::size_t>(row)]) throw ConfigError("DeflatedVolume: planes of " + path_ + " written twice");
    if (a == r0 && b == r1 && !waiting_.contains(row)) {  // the whole row here: deflated from the slab itself
      write_row(row, base + (r0 - first) * plane);
      continue;
    }
    Row& w = waiting_[row];
    if (w.planes.empty()) {
      w.planes = Array::host(dtype_, Shape(r1 - r0, height_, width_));
      w.present.assign(static_cast<std::size_t>(r1 - r0), false);
    }
    for (std::int64_t z = a; z < b; ++z) {
      if (w.present[static_cast<std::size_t>(z - r0)]) throw ConfigError("DeflatedVolume: plane " + std::to_string(z) + " of " + path_ + " written twice");
      std::memcpy(static_cast<unsigned char*>(w.planes.raw()) + (z - r0) * plane, base + (z - first) * plane,
                  static_cast<std::size_t>(plane));
      w.present[static_cast<std::size_t>(z - r0)] = true;
      ++w.count;
    }
    if (w.count == r1 - r0) {
      const Array whole = std::move(w.planes);
      waiting_.erase(row);
      write_row(row, static_cast<const unsigned char*>(whole.raw()));
    }
  }
}

void DeflatedVolume::write_row(std::int64_t row, const unsigned char* planes) {
  const std::int64_t nz = row_planes(row), per_y = (height_ + cy_ - 1) / cy_, per_x = (width_ + cx_ - 1) / cx_;
  const std::int64_t count = per_y * per_x;
  const std::size_t size = dtype_size(dtype_);
  const std::int64_t chunk_values = cz_ * cy_ * cx_;
  const uLong raw_bytes = static_cast<uLong>(chunk_values) * static_cast<uLong>(size);
  std::vector<std::vector<unsigned char>> out(static_cast<std::size_t>(count));
  std::atomic<std::int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&] {
    std::vector<unsigned char> chunk(raw_bytes);
    for (std::int64_t k; (k = next.fetch_add(1)) < count;) {
      try {
        const std::int64_t y0 = k / per_x * cy_, x0 = k % per_x * cx_;
        const std::int64_t ny = std::min(cy_, height_ - y0), nx = std::min(cx_, width_ - x0);
        // Edge chunks are stored whole: the part past the dataset holds the fill value.
        if (ny < cy_ || nx < cx_ || nz < cz_) fill_values(chunk.data(), chunk_values, dtype_, fill_);
        for (std::int64_t z = 0; z < nz; ++z)
          for (std::int64_t y = 0; y < ny; ++y)
            std::memcpy(chunk.data() + static_cast<std::size_t>((z * cy_ + y) * cx_) * size,
                        planes + static_cast<std::size_t>((z * height_ + y0 + y) * width_ + x0) * size,
                        static_cast<std::size_t>(nx) * size);
        auto& packed = out[static_cast<std::size_t>(k)];
        uLongf length = compressBound(raw_bytes);
        packed.resize(length);
        // zlib's format, as HDF5's deflate filter writes and reads it (compress2 there too).
        if (compress2(packed.data(), &length, chunk.data(), raw_bytes, level_) != Z_OK)
          throw IoError("deflating a chunk of " + path_ + " failed");
        packed.resize(length);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  const int workers = static_cast<int>(std::clamp<std::int64_t>(threads_, 1, count));
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  std::vector<H5Writer::StoredChunk> stored;
  stored.reserve(out.size());
  for (std::int64_t k = 0; k < count; ++k)
    stored.push_back({{row * cz_, k / per_x * cy_, k % per_x * cx_}, out[static_cast<std::size_t>(k)].data(),
                      out[static_cast<std::size_t>(k)].size()});
  file_.write_chunks(path_, stored);
  written_[static_cast<std::size_t>(row)] = true;
}

void DeflatedVolume::finish() {
  const auto missing = std::count(written_.begin(), written_.end(), false);
  if (missing > 0)
    throw IoError("DeflatedVolume: " + std::to_string(missing) + " of " + std::to_string(written_.size()) +
                  " chunk rows of " + path_ + " were never written (" + std::to_string(waiting_planes()) +
                  " planes wait for the rest of their row)");
}

}  // namespace weft::io
