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

using morphology::ValueType;

constexpr const char* kTypes = "bool, i8, u8, i16, u16, i32, u32, i64, u64, f32 or f64";

ValueType value_type(const std::string& name, const std::string& where) {
  if (const auto t = morphology::parse_value_type(name)) return *t;
  throw ConfigError(where + ": unsupported dtype " + name + " (expected " + kTypes + ")");
}

VolumeInfo check_tiff(const VolumeInput& in) {
  const io::TiffVolume v = io::open_tiff_volume(in.input, "--input " + in.input);
  VolumeInfo info;
  info.shape = Shape(v.depth, v.height, v.width);
  info.type = value_type(v.element, "--input " + in.input);
  (void)cli::checked_product({v.depth, v.height, v.width, v.element_bytes}, "--input " + in.input);
  info.first_file = v.files.front();
  info.last_file = v.files.back();
  return info;
}

}  // namespace

VolumeInfo check_input(const VolumeInput& in) {
  if (in.input.empty())
    throw ConfigError("--input: missing (FILE.h5:/dataset, TIFF files, or a RAW file with --shape and --dtype)");
  VolumeInfo info;
  if (in.is_raw()) {
    if (in.shape.empty() || in.dtype.empty())
      throw ConfigError("--input " + in.input + ": a RAW file needs both --shape ZxYxX and --dtype (" + kTypes + ")");
    info.type = value_type(in.dtype, "--dtype");
    const std::vector<std::int64_t> dims = cli::parse_extents(in.shape, "--shape", 3);
    cli::check_raw_file(in.input, dims, morphology::value_size(info.type), "--shape " + in.shape + " --dtype " + in.dtype);
    info.shape = Shape(dims[0], dims[1], dims[2]);
    info.first_file = info.last_file = in.input;
    return info;
  }
  if (in.is_tiff()) return check_tiff(in);
  if (in.input.find(':') == std::string::npos)
    throw ConfigError("--input " + in.input +
                      ": give FILE.h5:/dataset, TIFF files (a .tif file, a folder, a pattern), or a RAW file with "
                      "--shape ZxYxX and --dtype");
  const io::DatasetRef ref = io::parse_dataset_ref(in.input);
  if (!std::filesystem::exists(ref.file)) throw ConfigError("--input: file '" + ref.file + "' does not exist");
  io::DatasetInfo dataset;
  try {
    dataset = io::checked_dataset_info(ref, "--input " + in.input, /*any_number=*/true);
  } catch (const IoError& e) {  // a missing dataset or an unreadable file is bad input here
    throw ConfigError("--input " + in.input + ": " + e.what());
  } catch (const ConfigError& e) {  // the library's own (an element type that is no number) names the option too
    const std::string what = e.what();
    throw ConfigError(what.starts_with("--input") ? what : "--input " + in.input + ": " + what);
  }
  if (dataset.shape.size() != 3)
    throw ConfigError("--input " + in.input + ": expected a 3D dataset, got " + std::to_string(dataset.shape.size()) +
                      "D");
  info.type = value_type(dataset.element, "--input " + in.input);
  info.shape = Shape(dataset.shape[0], dataset.shape[1], dataset.shape[2]);
  if (info.shape.size() == 0) throw ConfigError("--input " + in.input + ": the volume is empty (" + info.shape.str() + ")");
  info.first_file = info.last_file = ref.file;
  return info;
}

DirectSource direct_source(const VolumeInput& in) {
  DirectSource source;
  if (in.is_raw()) {
    source.kind = DirectSource::contiguous;
    source.ref = {in.input, ""};
    source.type = value_type(in.dtype, "--dtype");
    return source;
  }
  if (in.is_tiff()) {
    auto tiff = std::make_shared<io::TiffVolume>(io::open_tiff_volume(in.input, "--input " + in.input));
    source.type = value_type(tiff->element, "--input " + in.input);
    source.tiff = std::move(tiff);
    return source;
  }
  source.ref = io::parse_dataset_ref(in.input);
  if (const auto extent = io::raw_extent(source.ref)) {
    source.kind = DirectSource::contiguous;
    source.offset = extent->offset;
    source.type = value_type(extent->element, "--input " + in.input);
    return source;
  }
  const io::DatasetInfo info = io::dataset_info(source.ref, /*any_number=*/true);
  source.type = value_type(info.element, "--input " + in.input);
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
  const auto size = static_cast<std::int64_t>(morphology::value_size(source.type));
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

Values empty_values(ValueType type, const Shape& shape, std::int64_t count) {
  const auto bytes = count * shape[1] * shape[2] * static_cast<std::int64_t>(morphology::value_size(type));
  return {type, Array::host(DType::u8, Shape(bytes))};
}

}  // namespace

std::optional<Values> read_values_direct(const DirectSource& source, const Shape& shape, std::int64_t first,
                                         std::int64_t count) {
  std::optional<io::RawChunks> chunks;
  if (!direct_chunks(source, first, count, chunks)) return std::nullopt;
  const io::RawFile file(source.ref.file);
  Values out = empty_values(source.type, shape, count);
  if (chunks)
    morphology::read_values_chunked([&](std::int64_t k, void* to) { file.read_chunk(*chunks, k, to); }, source.type,
                                    grid_of(*chunks), first, count, shape[1], shape[2], out.bytes.raw());
  else
    morphology::read_values(contiguous_fetch(file, source, shape, first), source.type, count, shape[1], shape[2],
                            out.bytes.raw());
  return out;
}

std::optional<Array> read_foreground_direct(const DirectSource& source, const Shape& shape, std::int64_t first,
                                            std::int64_t count, const morphology::Foreground& foreground) {
  if (source.kind == DirectSource::chunked && !morphology::chunked_bits_fit(shape[2], source.chunk_width))
    return std::nullopt;  // chunk rows that would not start on bytes of bits: values, then packing
  std::optional<io::RawChunks> chunks;
  if (!direct_chunks(source, first, count, chunks)) return std::nullopt;
  const io::RawFile file(source.ref.file);
  if (!chunks)
    return morphology::read_foreground_bits(contiguous_fetch(file, source, shape, first), source.type, count, shape[1],
                                            shape[2], foreground);
  Array out = Array::host(DType::u8, Shape(count, morphology::foreground_plane_bytes(shape[1], shape[2])));
  morphology::read_foreground_bits_chunked([&](std::int64_t k, void* to) { file.read_chunk(*chunks, k, to); },
                                           source.type, grid_of(*chunks), first, count, shape[1], shape[2],
                                           foreground, out.data<std::uint8_t>());
  return out;
}

Values read_planes(const VolumeInput& in, const DirectSource& source, const Shape& shape, std::int64_t first,
                   std::int64_t count) {
  if (first < 0 || count < 0 || first + count > shape[0])
    throw ConfigError("--input " + in.input + ": planes [" + std::to_string(first) + ", " +
                      std::to_string(first + count) + ") outside " + shape.str());
  if (auto values = read_values_direct(source, shape, first, count)) return std::move(*values);
  Values out = empty_values(source.type, shape, count);
  if (count == 0) return out;
  if (source.tiff) io::read_tiff_planes(*source.tiff, first, count, out.bytes.raw());
  else io::read_slab_values(source.ref, first, count, out.bytes.raw());  // RAW files never come here
  return out;
}

Array filterable(const Values& values, const Shape& shape) {
  const std::int64_t n = values.bytes.size() / static_cast<std::int64_t>(morphology::value_size(values.type));
  const Shape planes(n / (shape[1] * shape[2]), shape[1], shape[2]);
  // The same bytes, typed: a view of `values`, which must outlive it.
  const auto as = [&](DType t) { return Array::wrap(t, planes, const_cast<void*>(values.data())); };
  if (values.type == ValueType::u8 || values.type == ValueType::b8) return as(DType::u8);
  if (values.type == ValueType::u16) return as(DType::u16);
  if (values.type == ValueType::f32) return as(DType::f32);
  Array f = Array::host(DType::f32, planes);
  morphology::values_to_f32(values.data(), values.type, n, f.data<float>());
  return f;
}

}  // namespace weft::granulometry
