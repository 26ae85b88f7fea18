// HDF5: references, round trips of every dtype and rank, chunking, slabs, streaming writes,
// attributes, unsupported types, missing files and datasets, concurrent readers.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <fcntl.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "io_test_util.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"

namespace {

using weft::Array;
using weft::DType;
using weft::Shape;
using namespace weft::io;
using namespace weft::io::test;

// Fills with distinct bytes so that any misplaced element shows (f16 stays finite: high byte < 0x7c).
Array pattern(DType dtype, Shape shape, int seed = 0) {
  Array a = Array::host(dtype, shape);
  auto* bytes = static_cast<unsigned char*>(a.raw());
  for (std::size_t i = 0; i < a.bytes(); ++i) bytes[i] = static_cast<unsigned char>((i * 7 + seed) % 0x7b);
  return a;
}

/// Adds the 3-D u16 or f32 `volume` to `file` as dataset `name` through the library itself, in
/// chunks of `chunk`, with the byte shuffle and gzip, or with the fletcher32 checksum alone.
void add_filtered(const std::string& file, const char* name, const Array& volume, const hsize_t (&chunk)[3],
                  bool checksum) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hsize_t dims[3] = {static_cast<hsize_t>(volume.shape()[0]), static_cast<hsize_t>(volume.shape()[1]),
                           static_cast<hsize_t>(volume.shape()[2])};
  const hid_t type = volume.dtype() == DType::u16 ? H5T_NATIVE_UINT16 : H5T_NATIVE_FLOAT;
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(plist, 3, chunk);
  if (checksum) {
    H5Pset_fletcher32(plist);
  } else {
    H5Pset_shuffle(plist);
    H5Pset_deflate(plist, 6);
  }
  const hid_t d = H5Dcreate2(f, name, type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  EXPECT_GE(d, 0) << name;
  if (d >= 0) {
    EXPECT_GE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, volume.raw()), 0) << name;
    H5Dclose(d);
  }
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(f);
}

void expect_same(const Array& a, const Array& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0);
}

TEST(Hdf5, ParseDatasetRef) {
  const DatasetRef ref = parse_dataset_ref("vol.h5:/exchange/data");
  EXPECT_EQ(ref.file, "vol.h5");
  EXPECT_EQ(ref.path, "/exchange/data");
  EXPECT_EQ(parse_dataset_ref("C:/x/y.h5:/d").file, "C:/x/y.h5");
  EXPECT_EQ(parse_dataset_ref("a.h5:d").path, "/d");
  EXPECT_THROW_WITH((void)parse_dataset_ref("vol.h5"), weft::ConfigError, "'vol.h5'");
  EXPECT_THROW_WITH((void)parse_dataset_ref("vol.h5:"), weft::ConfigError, "'vol.h5:'");
  EXPECT_THROW_WITH((void)parse_dataset_ref(":/a"), weft::ConfigError, "':/a'");
}

TEST(Hdf5, RoundTripEveryDtypeAndRank) {
  const std::string file = scratch_file("all.h5");
  const DType types[] = {DType::u8, DType::u16, DType::i32, DType::f16, DType::f32, DType::f64};
  const Shape shapes[] = {Shape(11), Shape(5, 7), Shape(3, 4, 6)};
  std::vector<std::pair<std::string, Array>> written;
  {
    H5Writer writer(file);
    int seed = 0;
    for (DType t : types) {
      for (const Shape& s : shapes) {
        const std::string path = "/g/" + std::string(weft::dtype_name(t)) + "/r" + std::to_string(s.ndim());
        written.emplace_back(path, pattern(t, s, ++seed));
        writer.write(path, written.back().second);
      }
    }
    EXPECT_EQ(leftover_temporaries(), 1);  // the writer's file, under a temporary name of its own
    EXPECT_FALSE(std::filesystem::exists(file));
    writer.commit();
  }
  EXPECT_EQ(leftover_temporaries(), 0);
  for (const auto& [path, data] : written) {
    const DatasetRef ref{file, path};
    const DatasetInfo info = dataset_info(ref);
    EXPECT_EQ(info.dtype, data.dtype()) << path;
    ASSERT_EQ(info.shape.size(), static_cast<std::size_t>(data.shape().ndim())) << path;
    EXPECT_TRUE(info.chunk.empty()) << path;
    expect_same(read_dataset(ref), data);
  }
}

TEST(Hdf5, ChunkedCompressedAndSlabs) {
  const std::string file = scratch_file("chunked.h5");
  const Array volume = pattern(DType::u16, Shape(9, 10, 12));
  const Array image = pattern(DType::f32, Shape(8, 5), 3);
  {
    H5Writer writer(file);
    writer.write("/v", volume, {4, 100, 6}, true);
    writer.write("/img", image, {2, 5});
    writer.write("/v", volume, {4, 100, 6}, true);  // replaces
    writer.commit();
  }
  const DatasetInfo info = dataset_info({file, "/v"});
  EXPECT_EQ(info.shape, (std::vector<std::int64_t>{9, 10, 12}));
  EXPECT_EQ(info.chunk, (std::vector<std::int64_t>{4, 10, 6}));
  expect_same(read_dataset({file, "/v"}), volume);

  const Array slab = read_slab({file, "/v"}, 3, 4);
  ASSERT_EQ(slab.shape(), Shape(4, 10, 12));
  EXPECT_EQ(std::memcmp(slab.raw(), volume.data<std::uint16_t>() + 3 * 120, slab.bytes()), 0);
  const Array rows = read_slab({file, "/img"}, 7, 1);
  ASSERT_EQ(rows.shape(), Shape(1, 5));
  EXPECT_EQ(std::memcmp(rows.raw(), image.data<float>() + 35, rows.bytes()), 0);

  EXPECT_THROW_WITH((void)read_slab({file, "/v"}, 7, 3), weft::ConfigError, "[7, 10)");
  EXPECT_THROW_WITH((void)read_slab({file, "/v"}, -1, 2), weft::ConfigError, "chunked.h5:/v");
  EXPECT_THROW_WITH((void)read_slab({file, "/v"}, 0, 0), weft::ConfigError, "axis 0 has 9");
}

// A contiguous dataset's raw extent is where its bytes are in the file; chunked, compressed and
// not yet written datasets have none.
TEST(Hdf5, RawExtentOfContiguousDatasets) {
  const std::string file = scratch_file("raw_extent.h5");
  const Array volume = pattern(DType::u16, Shape(5, 7, 9), 2);
  const Array floats = pattern(DType::f32, Shape(3, 4, 5), 5);
  {
    H5Writer writer(file);
    writer.write("/a/v", volume);
    writer.write("/f", floats);
    writer.write("/chunked", volume, {2, 7, 9});
    writer.write("/compressed", volume, {2, 7, 9}, true);
    writer.create("/empty", DType::u8, Shape(4, 4, 4));
    writer.commit();
  }
  const int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  for (const auto& [path, array] : {std::pair<std::string, const Array*>{"/a/v", &volume}, {"/f", &floats}}) {
    const auto extent = raw_extent({file, path});
    ASSERT_TRUE(extent.has_value()) << path;
    EXPECT_EQ(extent->dtype, array->dtype());
    EXPECT_EQ(extent->shape, (std::vector<std::int64_t>{array->shape()[0], array->shape()[1], array->shape()[2]}));
    std::vector<unsigned char> bytes(array->bytes());
    ASSERT_EQ(::pread(fd, bytes.data(), bytes.size(), extent->offset), static_cast<ssize_t>(bytes.size())) << path;
    EXPECT_EQ(std::memcmp(bytes.data(), array->raw(), bytes.size()), 0) << path;
  }
  ::close(fd);
  EXPECT_FALSE(raw_extent({file, "/chunked"}).has_value());
  EXPECT_FALSE(raw_extent({file, "/compressed"}).has_value());
  EXPECT_FALSE(raw_extent({file, "/empty"}).has_value());
  EXPECT_THROW((void)raw_extent({file, "/missing"}), weft::IoError);
}

// The raw chunks of planes: each at its offset holds the chunk's elements in C order (edge chunks
// padded); filtered datasets and unwritten chunks have none.
TEST(Hdf5, RawChunksOfUnfilteredDatasets) {
  const std::string file = scratch_file("raw_chunks.h5");
  const Array volume = pattern(DType::u16, Shape(11, 9, 16), 4);
  {
    H5Writer writer(file);
    writer.write("/v", volume, {4, 5, 8});
    writer.write("/gz", volume, {4, 5, 8}, true);
    writer.write("/flat", volume);
    writer.create("/empty", DType::u8, Shape(4, 4, 8), {2, 2, 8});
    writer.commit();
  }
  const auto chunks = raw_chunks({file, "/v"}, 5, 4);  // planes 5..8: chunk rows 1 and 2
  ASSERT_TRUE(chunks.has_value());
  EXPECT_EQ(chunks->chunk, (std::vector<std::int64_t>{4, 5, 8}));
  EXPECT_EQ(chunks->first_row, 1);
  EXPECT_EQ(chunks->rows, 2);
  EXPECT_EQ(chunks->per_y, 2);
  EXPECT_EQ(chunks->per_x, 2);
  ASSERT_EQ(chunks->offsets.size(), 8u);
  const int fd = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<std::uint16_t> chunk(4 * 5 * 8);
  for (std::size_t k = 0; k < chunks->offsets.size(); ++k) {
    ASSERT_EQ(::pread(fd, chunk.data(), chunk.size() * 2, chunks->offsets[k]), static_cast<ssize_t>(chunk.size() * 2));
    const std::int64_t row = 1 + static_cast<std::int64_t>(k) / 4, iy = k / 2 % 2, ix = k % 2;
    for (std::int64_t z = 0; z < 4; ++z)
      for (std::int64_t y = 0; y < 5; ++y)
        for (std::int64_t x = 0; x < 8; ++x) {
          const std::int64_t vz = row * 4 + z, vy = iy * 5 + y, vx = ix * 8 + x;
          if (vz >= 11 || vy >= 9) continue;  // padding of edge chunks
          ASSERT_EQ(chunk[static_cast<std::size_t>((z * 5 + y) * 8 + x)], volume.data<std::uint16_t>()[(vz * 9 + vy) * 16 + vx])
              << "chunk " << k << " at " << z << "," << y << "," << x;
        }
  }
  ::close(fd);
  EXPECT_FALSE(raw_chunks({file, "/flat"}, 0, 4).has_value());
  EXPECT_FALSE(raw_chunks({file, "/empty"}, 0, 4).has_value());
  EXPECT_THROW((void)raw_chunks({file, "/v"}, 8, 4), weft::ConfigError);
}

// ChunkIndex keeps the chunk rows it was asked for: the same chunks as raw_chunks for any planes,
// a row with an unwritten chunk refused alone (the rows before it still listed), none for a
// contiguous dataset, and planes outside the dataset a ConfigError.
TEST(Hdf5, ChunkIndexListsEachRowAsRawChunksDoes) {
  const std::string file = scratch_file("chunk_index.h5");
  const Array volume = pattern(DType::u8, Shape(6, 4, 16), 3);
  {
    H5Writer writer(file);
    writer.create("/part", DType::u8, Shape(6, 4, 16), {2, 4, 8});
    Array first = Array::host(DType::u8, Shape(4, 4, 16));
    std::memcpy(first.raw(), volume.raw(), first.bytes());
    writer.write_slab("/part", 0, first);  // chunk rows 0 and 1; row 2 never written
    writer.write("/flat", volume);
    writer.commit();
  }
  const auto index = ChunkIndex::open({file, "/part"});
  ASSERT_NE(index, nullptr);
  const auto rows01 = index->planes(0, 4);
  ASSERT_TRUE(rows01.has_value());
  const auto direct = raw_chunks({file, "/part"}, 0, 4);
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(rows01->offsets, direct->offsets);
  EXPECT_EQ(rows01->sizes, direct->sizes);
  EXPECT_EQ(rows01->offsets.size(), 4u);  // 2 rows of 1 × 2 chunks
  EXPECT_FALSE(index->planes(3, 2).has_value());  // rows 1 and 2: row 2 is not allocated
  EXPECT_FALSE(raw_chunks({file, "/part"}, 3, 2).has_value());
  const auto row1 = index->planes(2, 2);  // asked before: kept
  ASSERT_TRUE(row1.has_value());
  EXPECT_EQ(row1->first_row, 1);
  EXPECT_EQ(row1->offsets, std::vector<std::int64_t>(rows01->offsets.begin() + 2, rows01->offsets.end()));
  EXPECT_THROW((void)index->planes(5, 2), weft::ConfigError);
  EXPECT_EQ(ChunkIndex::open({file, "/flat"}), nullptr);
}

/// Expects raw_chunks of every plane of `name` in `file` to hold the offsets, stored sizes and
/// filter masks that H5Dget_chunk_info_by_coord gives, chunk by chunk; returns how many there were.
std::size_t expect_chunks_where_the_library_says(const std::string& file, const std::string& name, std::int64_t planes) {
  const auto chunks = raw_chunks({file, name}, 0, planes);
  EXPECT_TRUE(chunks.has_value()) << name;
  if (!chunks) return 0;
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(d, 0) << name;
  std::size_t k = 0;
  for (std::int64_t r = 0; r < chunks->rows; ++r)
    for (std::int64_t iy = 0; iy < chunks->per_y; ++iy)
      for (std::int64_t ix = 0; ix < chunks->per_x && k < chunks->offsets.size(); ++ix, ++k) {
        const hsize_t at[3] = {static_cast<hsize_t>(r * chunks->chunk[0]), static_cast<hsize_t>(iy * chunks->chunk[1]),
                               static_cast<hsize_t>(ix * chunks->chunk[2])};
        unsigned mask = 99;
        haddr_t address = HADDR_UNDEF;
        hsize_t size = 0;
        EXPECT_GE(H5Dget_chunk_info_by_coord(d, at, &mask, &address, &size), 0) << name << " chunk " << k;
        EXPECT_EQ(chunks->offsets[k], static_cast<std::int64_t>(address)) << name << " chunk " << k;
        EXPECT_EQ(chunks->sizes[k], static_cast<std::int64_t>(size)) << name << " chunk " << k;
        EXPECT_EQ(chunks->filter_masks[k], mask) << name << " chunk " << k;
      }
  EXPECT_EQ(k, chunks->offsets.size()) << name;
  H5Dclose(d);
  H5Fclose(f);
  return k;
}

// The chunks' places that raw_chunks lists (a lookup per chunk through a recording file driver on
// HDF5 1.10, the library's listing elsewhere) are those H5Dget_chunk_info_by_coord gives: plain,
// gzip and shuffled chunks, several chunk rows; and in a file of the latest format, each kind of
// chunk index (fixed array, extensible array, version 2 B-tree, a single chunk).
TEST(Hdf5, RawChunksAreWhereTheLibrarySaysTheyAre) {
  const std::string file = scratch_file("chunk_places.h5");
  const Array volume = pattern(DType::u16, Shape(9, 10, 24), 5);
  {
    H5Writer writer(file);
    writer.write("/plain", volume, {2, 4, 8});
    writer.write("/gz", volume, {3, 3, 8}, true);
    writer.commit();
  }
  add_filtered(file, "/shuffled", volume, {4, 5, 8}, false);
  for (const char* name : {"/plain", "/gz", "/shuffled"}) EXPECT_GT(expect_chunks_where_the_library_says(file, name, 9), 8u);

  const std::string latest = scratch_file("chunk_indexes.h5");
  {
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    const hid_t f = H5Fcreate(latest.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    ASSERT_GE(f, 0);
    const hsize_t dims[3] = {9, 10, 24}, unlimited = H5S_UNLIMITED;
    struct Kind {
      const char* name;
      hsize_t max[3], chunk[3];
    };
    for (const Kind& kind : {Kind{"/fixed", {9, 10, 24}, {2, 4, 8}}, Kind{"/extensible", {unlimited, 10, 24}, {2, 4, 8}},
                             Kind{"/btree2", {unlimited, unlimited, 24}, {2, 4, 8}}, Kind{"/single", {9, 10, 24}, {9, 10, 24}}}) {
      const hid_t space = H5Screate_simple(3, dims, kind.max);
      const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
      H5Pset_chunk(plist, 3, kind.chunk);
      const hid_t d = H5Dcreate2(f, kind.name, H5T_NATIVE_UINT16, space, H5P_DEFAULT, plist, H5P_DEFAULT);
      EXPECT_GE(d, 0) << kind.name;
      EXPECT_GE(H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, volume.raw()), 0) << kind.name;
      H5Dclose(d);
      H5Pclose(plist);
      H5Sclose(space);
    }
    H5Fclose(f);
    H5Pclose(fapl);
  }
  for (const char* name : {"/fixed", "/extensible", "/btree2"}) EXPECT_GT(expect_chunks_where_the_library_says(latest, name, 9), 8u);
  EXPECT_EQ(expect_chunks_where_the_library_says(latest, "/single", 9), 1u);
}

// Chunks compressed with gzip, alone or after the byte shuffle, read back by RawFile: every chunk
// equals the library's read of the same elements; other filters (fletcher32) have no raw chunks.
TEST(Hdf5, RawChunksInflateAndUnshuffle) {
  const std::string file = scratch_file("raw_chunks_gz.h5");
  const Array volume = pattern(DType::f32, Shape(7, 6, 16), 9);
  {
    H5Writer writer(file);
    writer.write("/gz", volume, {3, 4, 8}, true);
    writer.commit();
  }
  add_filtered(file, "/shuffled", volume, {3, 4, 8}, false);  // shuffle + deflate, through the library
  add_filtered(file, "/checked", volume, {3, 4, 8}, true);    // fletcher32
  const RawFile raw(file);
  for (const char* name : {"/gz", "/shuffled"}) {
    const auto chunks = raw_chunks({file, name}, 0, 7);
    ASSERT_TRUE(chunks.has_value()) << name;
    EXPECT_TRUE(chunks->deflate);
    EXPECT_EQ(chunks->shuffle, std::string(name) == "/shuffled");
    ASSERT_EQ(chunks->offsets.size(), 3u * 2 * 2);
    std::vector<float> chunk(3 * 4 * 8);
    for (std::int64_t k = 0; k < 12; ++k) {
      raw.read_chunk(*chunks, k, chunk.data());
      const std::int64_t row = k / 4, iy = k / 2 % 2, ix = k % 2;
      for (std::int64_t z = 0; z < 3; ++z)
        for (std::int64_t y = 0; y < 4; ++y)
          for (std::int64_t x = 0; x < 8; ++x) {
            const std::int64_t vz = row * 3 + z, vy = iy * 4 + y;
            if (vz >= 7 || vy >= 6) continue;
            ASSERT_EQ(std::memcmp(&chunk[static_cast<std::size_t>((z * 4 + y) * 8 + x)],
                                  volume.data<float>() + (vz * 6 + vy) * 16 + ix * 8 + x, 4),
                      0)
                << name << " chunk " << k;
          }
    }
  }
  EXPECT_FALSE(raw_chunks({file, "/checked"}, 0, 7).has_value());
  EXPECT_THROW_WITH(RawFile(scratch_file("missing.h5")), weft::IoError, "missing.h5");
}

// Elements [z0, z0+nz) of axis 0 of a host array, as a copy.
Array sub_slab(const Array& a, std::int64_t z0, std::int64_t nz) {
  const Shape& s = a.shape();
  const Array out = s.ndim() == 3 ? Array::host(a.dtype(), Shape(nz, s[1], s[2])) : Array::host(a.dtype(), Shape(nz, s[1]));
  const std::size_t row = a.bytes() / static_cast<std::size_t>(s[0]);
  std::memcpy(out.raw(), static_cast<const unsigned char*>(a.raw()) + z0 * row, nz * row);
  return out;
}

TEST(Hdf5, StreamingSlabWrites) {
  const std::string file = scratch_file("stream.h5");
  const Array volume = pattern(DType::f32, Shape(6, 5, 4));
  const Array one = sub_slab(volume, 2, 1);
  const Array slice = Array::wrap(DType::f32, Shape(5, 4), one.raw());  // 2D slice of a 3D dataset
  {
    H5Writer writer(file);
    writer.create("/out/volume", DType::f32, Shape(6, 5, 4), {1, 5, 4}, true);
    writer.write_slab("/out/volume", 0, sub_slab(volume, 0, 2));
    writer.write_slab("/out/volume", 2, slice);
    writer.write_slab("/out/volume", 3, sub_slab(volume, 3, 3));
    EXPECT_THROW_WITH(writer.write_slab("/out/volume", 5, sub_slab(volume, 0, 2)), weft::ConfigError, "does not fit");
    EXPECT_THROW_WITH(writer.write_slab("/out/volume", 0, pattern(DType::u8, Shape(1, 5, 4))), weft::ConfigError,
                      "u8");
    EXPECT_THROW_WITH(writer.write_slab("/out/volume", 0, pattern(DType::f32, Shape(1, 4, 5))), weft::ConfigError,
                      "does not fit");
    EXPECT_THROW_WITH(writer.write_slab("/nothing", 0, slice), weft::ConfigError, "/nothing");
    writer.commit();
    EXPECT_THROW_WITH(writer.write("/late", slice), weft::IoError, "after commit");
  }
  expect_same(read_dataset({file, "/out/volume"}), volume);
}

// A 4-D dataset (a flow sequence [T, H, W, 2]) created by extents, written and read one element
// of axis 0 at a time (arrays have at most 3 axes).
TEST(Hdf5, FourDimensionalSlabs) {
  const std::string file = scratch_file("flows.h5");
  const Array a = pattern(DType::f32, Shape(5, 4, 2), 1), b = pattern(DType::f32, Shape(5, 4, 2), 2);
  {
    H5Writer writer(file);
    writer.create("/flow", DType::f32, std::vector<std::int64_t>{2, 5, 4, 2}, {1, 5, 4, 2});
    writer.write_slab("/flow", 1, b);
    writer.write_slab("/flow", 0, a);
    EXPECT_THROW_WITH(writer.write_slab("/flow", 2, a), weft::ConfigError, "does not fit");
    EXPECT_THROW_WITH(writer.write_slab("/flow", 0, pattern(DType::f32, Shape(4, 5, 2))), weft::ConfigError,
                      "does not fit");
    writer.commit();
  }
  EXPECT_EQ(dataset_info({file, "/flow"}).shape, (std::vector<std::int64_t>{2, 5, 4, 2}));
  expect_same(read_slab({file, "/flow"}, 0, 1), a);
  expect_same(read_slab({file, "/flow"}, 1, 1), b);
  EXPECT_THROW_WITH((void)read_slab({file, "/flow"}, 0, 2), weft::ConfigError, "4 with one element");
}

// Reads a scalar attribute with the HDF5 C API (the library under test has no attribute reader).
template <class T> T read_attribute(const std::string& file, const std::string& object, const std::string& name,
                                    hid_t type) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
  const hid_t a = H5Aopen(o, name.c_str(), H5P_DEFAULT);
  T value{};
  EXPECT_GE(H5Aread(a, type, &value), 0);
  H5Aclose(a);
  H5Oclose(o);
  H5Fclose(f);
  return value;
}

std::string read_string_attribute(const std::string& file, const std::string& object, const std::string& name) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
  const hid_t a = H5Aopen(o, name.c_str(), H5P_DEFAULT);
  const hid_t t = H5Aget_type(a);
  std::string value(H5Tget_size(t), '\0');
  EXPECT_GE(H5Aread(a, t, value.data()), 0);
  H5Tclose(t);
  H5Aclose(a);
  H5Oclose(o);
  H5Fclose(f);
  return value.substr(0, value.find('\0'));
}

TEST(Hdf5, AttributesAndVectors) {
  const std::string file = scratch_file("attr.h5");
  {
    H5Writer writer(file);
    writer.write_vector("/results/curve", {0.5, 1.5, 2.5});
    writer.attribute("/", "version", 3);
    writer.attribute("/", "voxel_size", 0.75);
    writer.attribute("/results", "method", "granulometry");
    writer.attribute("/results/curve", "count", std::int64_t{1} << 40);
    writer.attribute("/results/curve", "count", std::int64_t{42});  // replaces
    EXPECT_THROW_WITH(writer.attribute("/absent", "x", 1.0), weft::IoError, "/absent");
    writer.commit();
  }
  EXPECT_EQ(read_attribute<std::int64_t>(file, "/", "version", H5T_NATIVE_INT64), 3);
  EXPECT_EQ(read_attribute<double>(file, "/", "voxel_size", H5T_NATIVE_DOUBLE), 0.75);
  EXPECT_EQ(read_attribute<std::int64_t>(file, "/results/curve", "count", H5T_NATIVE_INT64), 42);
  EXPECT_EQ(read_string_attribute(file, "/results", "method"), "granulometry");
  const Array curve = read_dataset({file, "/results/curve"});
  ASSERT_EQ(curve.dtype(), DType::f64);
  ASSERT_EQ(curve.shape(), Shape(3));
  EXPECT_EQ(curve.data<double>()[2], 2.5);
}

TEST(Hdf5, UnsupportedTypesAndMissingThings) {
  const std::string file = scratch_file("odd.h5");
  {
    const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[4] = {2, 2, 2, 2};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const std::int16_t values[4] = {1, 2, 3, 4};
    const hid_t d = H5Dcreate2(f, "/i16", H5T_STD_I16LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(d);
    const hid_t d64 = H5Dcreate2(f, "/u64", H5T_STD_U64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d64);
    const hid_t space4 = H5Screate_simple(4, dims, nullptr);
    const hid_t d4 = H5Dcreate2(f, "/flow4d", H5T_IEEE_F32LE, space4, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d4);
    H5Sclose(space4);
    const hid_t g = H5Gcreate2(f, "/group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Sclose(space);
    H5Fclose(f);
  }
  EXPECT_THROW_WITH((void)dataset_info({file, "/i16"}), weft::ConfigError, "unsupported dtype i16 in " + file + ":/i16");
  EXPECT_THROW_WITH((void)read_dataset({file, "/u64"}), weft::ConfigError, "unsupported dtype u64");
  EXPECT_EQ(dataset_info({file, "/flow4d"}).shape.size(), 4u);
  EXPECT_THROW_WITH((void)read_dataset({file, "/flow4d"}), weft::ConfigError, "rank 4");
  EXPECT_THROW_WITH((void)read_dataset({file, "/group"}), weft::IoError, "not a dataset");
  EXPECT_THROW_WITH((void)read_dataset({file, "/nope/deeper"}), weft::IoError, "no dataset /nope/deeper in " + file);
  EXPECT_THROW_WITH((void)read_dataset({scratch_file("absent.h5"), "/x"}), weft::IoError, "absent.h5");
  write_text(scratch_file("text.h5"), "not hdf5 at all");
  EXPECT_THROW_WITH((void)dataset_info({scratch_file("text.h5"), "/x"}), weft::IoError, "not an HDF5 file");
  EXPECT_THROW_WITH((void)read_slab({file, "/u64"}, 0, 1), weft::ConfigError, "u64");
  EXPECT_THROW_WITH(H5Writer(scratch_file("nodir/x.h5")), weft::IoError, "nodir/x.h5");
  // A file cut short: the library's own reason after the file's name.
  const std::string cut = scratch_file("cut.h5");
  {
    H5Writer writer(cut);
    writer.write("/v", pattern(DType::u8, Shape(64, 64, 64)), {16, 16, 16});
    writer.commit();
  }
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  EXPECT_THROW_WITH((void)dataset_info({cut, "/v"}), weft::IoError, "H5Fopen failed for " + cut + ": truncated file");
}

TEST(Hdf5, UncommittedWriterLeavesNothing) {
  const std::string file = scratch_file("abandoned.h5");
  {
    H5Writer writer(file);
    writer.write("/a", pattern(DType::u8, Shape(4, 4)));
  }
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(leftover_temporaries(), 0);
}

TEST(Hdf5, ConcurrentReaders) {
  const std::string file = scratch_file("shared.h5");
  const Array volume = pattern(DType::u8, Shape(16, 32, 32));
  {
    H5Writer writer(file);
    writer.write("/v", volume, {2, 32, 32}, true);
    writer.commit();
  }
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int z = 0; z < 16; ++z) {
        const Array slab = read_slab({file, "/v"}, z, 1);
        if (std::memcmp(slab.raw(), volume.data<std::uint8_t>() + z * 1024, 1024) != 0) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
