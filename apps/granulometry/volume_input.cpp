#include "volume_input.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>
#include <vector>

#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"

namespace weft::granulometry {
namespace {

Shape parse_shape(const std::string& text) {
  std::vector<std::int64_t> dims;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 1)
      throw ConfigError("--shape: expected ZxYxX with positive extents, got '" + text + "'");
    dims.push_back(v);
  }
  if (dims.size() != 3) throw ConfigError("--shape: expected ZxYxX (3 extents), got '" + text + "'");
  return Shape(dims[0], dims[1], dims[2]);
}

DType check_dtype(DType t, const std::string& where) {
  if (t != DType::u8 && t != DType::u16 && t != DType::f32)
    throw ConfigError(where + ": unsupported dtype " + std::string(dtype_name(t)) + " (expected u8, u16 or f32)");
  return t;
}

}  // namespace

Shape check_input(const VolumeInput& in) {
  if (in.input.empty()) throw ConfigError("--input: missing (FILE.h5:/dataset or a RAW file with --shape and --dtype)");
  if (in.is_raw()) {
    if (in.shape.empty() || in.dtype.empty())
      throw ConfigError("--input " + in.input + ": a RAW file needs both --shape ZxYxX and --dtype u8|u16|f32");
    const Shape shape = parse_shape(in.shape);
    const DType t = check_dtype(parse_dtype(in.dtype, "--dtype"), "--dtype");
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(in.input, ec);
    if (ec) throw ConfigError("--input: cannot read RAW file '" + in.input + "': " + ec.message());
    const auto want = static_cast<std::uintmax_t>(shape.size()) * dtype_size(t);
    if (bytes != want)
      throw ConfigError("--input " + in.input + ": file has " + std::to_string(bytes) + " bytes, --shape " + in.shape +
                        " --dtype " + in.dtype + " needs " + std::to_string(want));
    return shape;
  }
  const io::DatasetRef ref = io::parse_dataset_ref(in.input);
  if (!std::filesystem::exists(ref.file)) throw ConfigError("--input: file '" + ref.file + "' does not exist");
  io::DatasetInfo info;
  try {
    info = io::dataset_info(ref);
  } catch (const IoError& e) {  // a missing dataset or an unreadable file is bad input here
    throw ConfigError("--input " + in.input + ": " + e.what());
  }
  if (info.shape.size() != 3)
    throw ConfigError("--input " + in.input + ": expected a 3D dataset, got " + std::to_string(info.shape.size()) +
                      "D");
  check_dtype(info.dtype, "--input " + in.input);
  const Shape shape(info.shape[0], info.shape[1], info.shape[2]);
  if (shape.size() == 0) throw ConfigError("--input " + in.input + ": the volume is empty (" + shape.str() + ")");
  return shape;
}

Array read_volume(const VolumeInput& in) {
  const Shape shape = check_input(in);
  if (auto values = read_values_direct(in, shape, 0, shape[0])) return std::move(*values);  // RAW files always
  return io::read_dataset(io::parse_dataset_ref(in.input));
}

Array read_planes(const VolumeInput& in, std::int64_t first, std::int64_t count) {
  if (!in.is_raw()) {
    const io::DatasetRef ref = io::parse_dataset_ref(in.input);
    const io::DatasetInfo info = io::dataset_info(ref);
    if (info.shape.size() == 3 && first >= 0 && count > 0 && first + count <= info.shape[0])
      if (auto values = read_values_direct(in, Shape(info.shape[0], info.shape[1], info.shape[2]), first, count))
        return std::move(*values);
    return io::read_slab(ref, first, count);
  }
  const Shape shape = parse_shape(in.shape);
  if (first < 0 || count < 0 || first + count > shape[0])
    throw ConfigError("--input " + in.input + ": planes [" + std::to_string(first) + ", " +
                      std::to_string(first + count) + ") outside " + shape.str());
  return std::move(*read_values_direct(in, shape, first, count));  // a RAW file is always read directly
}

namespace {

/// Planes [first, first + count) of values of `type` stored contiguously from byte `offset` of `path`.
Array read_contiguous(const std::string& path, std::int64_t offset, DType type, const Shape& shape, std::int64_t first,
                      std::int64_t count, morphology::Foreground foreground) {
  const io::RawFile file(path);
  const auto size = static_cast<std::int64_t>(dtype_size(type));
  const std::int64_t plane = shape[1] * shape[2];
  return morphology::read_foreground_bits(
      [&](std::int64_t voxel, std::int64_t voxels, void* to) {
        file.read(offset + (first * plane + voxel) * size, voxels * size, to);
      },
      type, count, shape[1], shape[2], foreground);
}

}  // namespace

std::optional<Array> read_values_direct(const VolumeInput& in, const Shape& shape, std::int64_t first,
                                        std::int64_t count) {
  const Shape planes(count, shape[1], shape[2]);
  auto contiguous = [&](const std::string& path, std::int64_t offset, DType type) {
    const io::RawFile file(path);
    const auto size = static_cast<std::int64_t>(dtype_size(type));
    const std::int64_t start = offset + first * shape[1] * shape[2] * size;
    Array out = Array::host(type, planes);
    morphology::read_values([&](std::int64_t voxel, std::int64_t voxels, void* to) {
      file.read(start + voxel * size, voxels * size, to);
    }, type, count, shape[1], shape[2], out.raw());
    return out;
  };
  if (in.is_raw()) return contiguous(in.input, 0, parse_dtype(in.dtype, "--dtype"));
  const io::DatasetRef ref = io::parse_dataset_ref(in.input);
  if (const auto extent = io::raw_extent(ref)) return contiguous(ref.file, extent->offset, extent->dtype);
  const auto chunks = io::raw_chunks(ref, first, count);
  if (!chunks) return std::nullopt;
  const io::RawFile file(ref.file);
  const morphology::ChunkGrid grid{chunks->chunk[0], chunks->chunk[1], chunks->chunk[2], chunks->first_row,
                                   chunks->rows,     chunks->per_y,    chunks->per_x};
  Array out = Array::host(chunks->dtype, planes);
  morphology::read_values_chunked([&](std::int64_t k, void* to) { file.read_chunk(*chunks, k, to); }, chunks->dtype,
                                  grid, first, count, shape[1], shape[2], out.raw());
  return out;
}

std::optional<Array> read_foreground_direct(const VolumeInput& in, const Shape& shape, std::int64_t first,
                                            std::int64_t count, morphology::Foreground foreground) {
  if (in.is_raw())
    return read_contiguous(in.input, 0, parse_dtype(in.dtype, "--dtype"), shape, first, count, foreground);
  const io::DatasetRef ref = io::parse_dataset_ref(in.input);
  if (const auto extent = io::raw_extent(ref))
    return read_contiguous(ref.file, extent->offset, extent->dtype, shape, first, count, foreground);
  if (shape[2] % 8 != 0) return std::nullopt;  // chunk rows could not start on bytes of bits
  const auto chunks = io::raw_chunks(ref, first, count);
  if (!chunks || !morphology::chunked_bits_fit(shape[2], chunks->chunk[2])) return std::nullopt;
  const io::RawFile file(ref.file);
  const morphology::ChunkGrid grid{chunks->chunk[0], chunks->chunk[1], chunks->chunk[2], chunks->first_row,
                                   chunks->rows,     chunks->per_y,    chunks->per_x};
  Array out = Array::host(DType::u8, Shape(count, morphology::foreground_plane_bytes(shape[1], shape[2])));
  morphology::read_foreground_bits_chunked(
      [&](std::int64_t k, void* to) { file.read_chunk(*chunks, k, to); },
      chunks->dtype, grid, first, count, shape[1], shape[2], foreground, out.data<std::uint8_t>());
  return out;
}

}  // namespace weft::granulometry
