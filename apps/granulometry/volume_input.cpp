#include "volume_input.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>
#include <vector>

#include "common/job_check.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"

namespace weft::granulometry {
namespace {

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
    const DType t = check_dtype(parse_dtype(in.dtype, "--dtype"), "--dtype");
    const std::vector<std::int64_t> dims = cli::parse_extents(in.shape, "--shape", 3);
    cli::check_raw_file(in.input, dims, dtype_size(t), "--shape " + in.shape + " --dtype " + in.dtype);
    const Shape shape(dims[0], dims[1], dims[2]);
    return shape;
  }
  if (in.input.find(':') == std::string::npos)
    throw ConfigError("--input " + in.input + ": give FILE.h5:/dataset, or a RAW file with --shape ZxYxX and --dtype");
  const io::DatasetRef ref = io::parse_dataset_ref(in.input);
  if (!std::filesystem::exists(ref.file)) throw ConfigError("--input: file '" + ref.file + "' does not exist");
  io::DatasetInfo info;
  try {
    info = io::checked_dataset_info(ref, "--input " + in.input);
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

DirectSource direct_source(const VolumeInput& in) {
  DirectSource source;
  if (in.is_raw()) {
    source.kind = DirectSource::contiguous;
    source.ref = {in.input, ""};
    source.dtype = parse_dtype(in.dtype, "--dtype");
    return source;
  }
  source.ref = io::parse_dataset_ref(in.input);
  if (const auto extent = io::raw_extent(source.ref)) {
    source.kind = DirectSource::contiguous;
    source.offset = extent->offset;
    source.dtype = extent->dtype;
    return source;
  }
  const io::DatasetInfo info = io::dataset_info(source.ref);
  source.dtype = info.dtype;
  if (info.chunk.size() == 3) {
    source.chunks = io::ChunkIndex::open(source.ref);  // none for filters it cannot undo
    if (source.chunks) source.kind = DirectSource::chunked;  // a read of unallocated chunks: the library
    source.chunk_width = info.chunk[2];
  }
  return source;
}

namespace {

/// Pieces of the values of planes [first, ...) of a contiguous source (voxel 0: the first plane's first).
morphology::ValueFetch contiguous_fetch(const io::RawFile& file, const DirectSource& source, const Shape& shape,
                                        std::int64_t first) {
  const auto size = static_cast<std::int64_t>(dtype_size(source.dtype));
  const std::int64_t start = source.offset + first * shape[1] * shape[2] * size;
  return [&file, size, start](std::int64_t voxel, std::int64_t voxels, void* to) {
    file.read(start + voxel * size, voxels * size, to);
  };
}

morphology::ChunkGrid grid_of(const io::RawChunks& c) {
  return {c.chunk[0], c.chunk[1], c.chunk[2], c.first_row, c.rows, c.per_y, c.per_x};
}

/// Whether planes [first, first + count) of `source` can be read without the library; for a
/// chunked source, their chunks into `chunks` (io::ChunkIndex refuses those of unallocated chunks).
bool direct_chunks(const DirectSource& source, std::int64_t first, std::int64_t count,
                   std::optional<io::RawChunks>& chunks) {
  if (source.kind == DirectSource::none) return false;
  if (source.kind == DirectSource::chunked) chunks = source.chunks->planes(first, count);
  return source.kind != DirectSource::chunked || chunks.has_value();
}

}  // namespace

std::optional<Array> read_values_direct(const DirectSource& source, const Shape& shape, std::int64_t first,
                                        std::int64_t count) {
  std::optional<io::RawChunks> chunks;
  if (!direct_chunks(source, first, count, chunks)) return std::nullopt;
  const io::RawFile file(source.ref.file);
  Array out = Array::host(source.dtype, Shape(count, shape[1], shape[2]));
  if (chunks)
    morphology::read_values_chunked([&](std::int64_t k, void* to) { file.read_chunk(*chunks, k, to); }, chunks->dtype,
                                    grid_of(*chunks), first, count, shape[1], shape[2], out.raw());
  else
    morphology::read_values(contiguous_fetch(file, source, shape, first), source.dtype, count, shape[1], shape[2],
                            out.raw());
  return out;
}

std::optional<Array> read_foreground_direct(const DirectSource& source, const Shape& shape, std::int64_t first,
                                            std::int64_t count, morphology::Foreground foreground) {
  if (source.kind == DirectSource::chunked && !morphology::chunked_bits_fit(shape[2], source.chunk_width))
    return std::nullopt;  // chunk rows that would not start on bytes of bits: values, then packing
  std::optional<io::RawChunks> chunks;
  if (!direct_chunks(source, first, count, chunks)) return std::nullopt;
  const io::RawFile file(source.ref.file);
  if (!chunks)
    return morphology::read_foreground_bits(contiguous_fetch(file, source, shape, first), source.dtype, count, shape[1],
                                            shape[2], foreground);
  Array out = Array::host(DType::u8, Shape(count, morphology::foreground_plane_bytes(shape[1], shape[2])));
  morphology::read_foreground_bits_chunked([&](std::int64_t k, void* to) { file.read_chunk(*chunks, k, to); },
                                           chunks->dtype, grid_of(*chunks), first, count, shape[1], shape[2],
                                           foreground, out.data<std::uint8_t>());
  return out;
}

Array read_volume(const VolumeInput& in, const DirectSource& source) {
  const Shape shape = check_input(in);
  if (auto values = read_values_direct(source, shape, 0, shape[0])) return std::move(*values);
  return io::read_dataset(io::parse_dataset_ref(in.input));  // RAW files never come here
}

Array read_planes(const VolumeInput& in, const DirectSource& source, const Shape& shape, std::int64_t first,
                  std::int64_t count) {
  if (first < 0 || count < 0 || first + count > shape[0])
    throw ConfigError("--input " + in.input + ": planes [" + std::to_string(first) + ", " +
                      std::to_string(first + count) + ") outside " + shape.str());
  if (auto values = read_values_direct(source, shape, first, count)) return std::move(*values);
  return io::read_slab(source.ref, first, count);  // RAW files never come here
}

}  // namespace weft::granulometry
