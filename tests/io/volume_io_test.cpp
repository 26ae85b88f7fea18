// Volumes beyond DType: HDF5 datasets of every number type read as stored, TIFF files and stacks
// (checked headers, every layout read back), and DeflatedVolume's chunks as any reader sees them.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "io_test_util.hpp"
#include "weft/tasks/io/deflated_volume.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/tiff.hpp"
#include "weft/util/error.hpp"

namespace {

using weft::Array;
using weft::DType;
using weft::Shape;
using namespace weft::io;
using namespace weft::io::test;
namespace fs = std::filesystem;

/// A 3-D dataset `name` of HDF5 type `file_type` in `file`, written from `values` of `memory_type`,
/// chunked (with the shuffle and gzip) when `chunk` is given.
void add_dataset(const std::string& file, const char* name, hid_t file_type, hid_t memory_type, const void* values,
                 const hsize_t (&dims)[3], const hsize_t* chunk = nullptr) {
  const hid_t f = fs::exists(file) ? H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                                   : H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  if (chunk) {
    H5Pset_chunk(plist, 3, chunk);
    H5Pset_shuffle(plist);
    H5Pset_deflate(plist, 4);
  }
  const hid_t d = H5Dcreate2(f, name, file_type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  ASSERT_GE(d, 0) << name;
  EXPECT_GE(H5Dwrite(d, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), 0) << name;
  H5Dclose(d);
  H5Pclose(plist);
  H5Sclose(space);
  H5Fclose(f);
}

/// h5py's bool: an enum of a signed byte, FALSE = 0 and TRUE = 1.
hid_t h5py_bool() {
  const hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
  signed char no = 0, yes = 1;
  H5Tenum_insert(t, "FALSE", &no);
  H5Tenum_insert(t, "TRUE", &yes);
  return t;
}

TEST(VolumeIo, DatasetsOfEveryNumberTypeAreReadAsStored) {
  const std::string file = scratch_file("types.h5");
  const hsize_t dims[3] = {3, 4, 5}, chunk[3] = {2, 4, 3};
  std::vector<std::uint64_t> u64(60);
  for (std::size_t i = 0; i < u64.size(); ++i) u64[i] = (std::uint64_t{1} << 53) + i * 0x10001;  // not doubles
  std::vector<std::int16_t> i16(60);
  for (std::size_t i = 0; i < i16.size(); ++i) i16[i] = static_cast<std::int16_t>(-1000 + 37 * static_cast<int>(i));
  std::vector<std::uint8_t> flags(60);
  for (std::size_t i = 0; i < flags.size(); ++i) flags[i] = i % 3 == 0;
  const hid_t boolean = h5py_bool();
  add_dataset(file, "/u64", H5T_STD_U64LE, H5T_NATIVE_UINT64, u64.data(), dims);
  add_dataset(file, "/u64_gzip", H5T_STD_U64LE, H5T_NATIVE_UINT64, u64.data(), dims, chunk);
  add_dataset(file, "/i16_be", H5T_STD_I16BE, H5T_NATIVE_INT16, i16.data(), dims);  // converted by the library
  add_dataset(file, "/bool", boolean, boolean, flags.data(), dims);
  H5Tclose(boolean);
  struct Case { const char* path; const char* element; const void* want; std::size_t bytes; };
  for (const Case& c : {Case{"/u64", "u64", u64.data(), 8}, Case{"/u64_gzip", "u64", u64.data(), 8},
                        Case{"/i16_be", "i16", i16.data(), 2}, Case{"/bool", "bool", flags.data(), 1}}) {
    const DatasetInfo info = dataset_info({file, c.path}, true);
    EXPECT_EQ(info.element, c.element) << c.path;
    EXPECT_EQ(info.element_bytes, static_cast<std::int64_t>(c.bytes)) << c.path;
    std::vector<unsigned char> got(2 * 20 * c.bytes);
    read_slab_values({file, c.path}, 1, 2, got.data());
    EXPECT_EQ(std::memcmp(got.data(), static_cast<const unsigned char*>(c.want) + 20 * c.bytes, got.size()), 0) << c.path;
  }
  EXPECT_THROW_WITH((void)dataset_info({file, "/u64"}), weft::ConfigError, "unsupported dtype u64");
  // The direct readers take them too: a contiguous extent, chunks unshuffled by 8-byte elements.
  const auto extent = raw_extent({file, "/u64"});
  ASSERT_TRUE(extent.has_value());
  EXPECT_EQ(extent->element, "u64");
  EXPECT_FALSE(raw_extent({file, "/i16_be"}).has_value());  // not this host's byte order
  const auto chunks = raw_chunks({file, "/u64_gzip"}, 0, 3);
  ASSERT_TRUE(chunks.has_value());
  EXPECT_EQ(chunks->element_bytes, 8);
  std::vector<std::uint64_t> first_chunk(static_cast<std::size_t>(chunks->chunk_bytes() / 8));
  RawFile(file).read_chunk(*chunks, 0, first_chunk.data());
  EXPECT_EQ(first_chunk[0], u64[0]);
  EXPECT_EQ(first_chunk[3], u64[5]);  // chunk 2 x 4 x 3: its second row starts at x = 0 of y = 1
  EXPECT_THROW_WITH(read_slab_values({file, "/u64"}, 2, 2, first_chunk.data()), weft::ConfigError, "axis 0 has 3");
}

TEST(VolumeIo, TiffFilesAndStacksReadBack) {
#if !defined(WEFT_HAVE_TIFF)
  GTEST_SKIP() << "built without libtiff";
#endif
  std::mt19937 rng(3);
  Array u16 = Array::host(DType::u16, Shape(5, 19, 13));
  for (std::int64_t i = 0; i < u16.size(); ++i) u16.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(rng());
  Array f64 = Array::host(DType::f64, Shape(3, 9, 4));
  for (std::int64_t i = 0; i < f64.size(); ++i) f64.data<double>()[i] = std::ldexp(static_cast<double>(rng()), -20);
  for (const char* compression : {"none", "lzw", "deflate", "packbits"}) {
    const std::string multi = scratch_file(std::string("multi-") + compression + ".tif");
    write_tiff(multi, u16, compression);
    fs::create_directories(scratch_file(std::string("stack-") + compression));
    write_tiff(scratch_file(std::string("stack-") + compression) + "/slice", u16, compression, true);
    for (const std::string& input : {multi, scratch_file(std::string("stack-") + compression),
                                     scratch_file(std::string("stack-") + compression) + "/slice_*.tif"}) {
      EXPECT_TRUE(is_tiff_input(input)) << input;
      const TiffVolume v = open_tiff_volume(input, "--input");
      EXPECT_EQ(v.element, "u16");
      EXPECT_EQ(v.depth, 5);
      EXPECT_EQ(v.height, 19);
      EXPECT_EQ(v.width, 13);
      for (int threads : {1, 3}) {
        std::vector<std::uint16_t> got(3 * 19 * 13);
        read_tiff_planes(v, 2, 3, got.data(), threads);
        EXPECT_EQ(std::memcmp(got.data(), u16.data<std::uint16_t>() + 2 * 19 * 13, got.size() * 2), 0)
            << input << " " << compression << " " << threads;
      }
    }
  }
  const std::string doubles = scratch_file("f64.tiff");
  write_tiff(doubles, f64);
  const TiffVolume v = open_tiff_volume(doubles, "--input");
  EXPECT_EQ(v.element, "f64");
  std::vector<double> got(static_cast<std::size_t>(f64.size()));
  read_tiff_planes(v, 0, 3, got.data());
  EXPECT_EQ(std::memcmp(got.data(), f64.raw(), f64.bytes()), 0);
  EXPECT_FALSE(is_tiff_input(scratch_file("types.h5") + ":/u64"));
}

TEST(VolumeIo, TiffStacksTakeTheNaturalOrder) {
#if !defined(WEFT_HAVE_TIFF)
  GTEST_SKIP() << "built without libtiff";
#endif
  const fs::path dir = scratch_file("natural");
  fs::create_directories(dir);
  for (int z : {10, 9, 1, 100}) {  // plane z holds the value z
    Array a = Array::host(DType::u8, Shape(1, 2, 3));
    std::fill_n(a.data<std::uint8_t>(), a.size(), static_cast<std::uint8_t>(z));
    write_tiff((dir / ("s" + std::to_string(z) + ".tif")).string(), a);
  }
  write_text((dir / "notes.txt").string(), "not a slice");
  const TiffVolume v = open_tiff_volume(dir.string(), "--input");
  ASSERT_EQ(v.depth, 4);
  std::vector<std::uint8_t> got(4 * 6);
  read_tiff_planes(v, 0, 4, got.data());
  EXPECT_EQ((std::vector<int>{got[0], got[6], got[12], got[18]}), (std::vector<int>{1, 9, 10, 100}));
}

/// A little-endian TIFF of one page, `width` × `height` 8-bit pixels (`samples` a pixel), its
/// one strip of `stored` bytes at the end of the file.
std::string tiny_tiff(std::uint32_t width, std::uint32_t height, std::uint16_t samples, std::uint32_t stored,
                      std::uint16_t bits = 8) {
  std::string b = "II*";
  b.push_back('\0');
  const auto u16 = [&](std::uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); };
  const auto u32 = [&](std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  u32(8);
  const std::uint16_t entries = 9;
  const std::uint32_t data = 8 + 2 + entries * 12 + 4;
  u16(entries);
  const auto tag = [&](std::uint16_t id, std::uint16_t type, std::uint32_t value) {
    u16(id), u16(type), u32(1), u32(type == 3 ? value & 0xFFFF : value);
  };
  tag(256, 4, width), tag(257, 4, height), tag(258, 3, bits), tag(259, 3, 1), tag(262, 3, 1);
  tag(273, 4, data), tag(277, 3, samples), tag(278, 4, height), tag(279, 4, stored);
  u32(0);
  b.append(stored, '\x01');
  return b;
}

TEST(VolumeIo, BadTiffsGiveOneClearError) {
#if !defined(WEFT_HAVE_TIFF)
  GTEST_SKIP() << "built without libtiff";
#endif
  const auto file = [](const std::string& name, const std::string& bytes) {
    const std::string p = scratch_file(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  };
  EXPECT_NO_THROW((void)open_tiff_volume(file("ok.tif", tiny_tiff(4, 3, 1, 12)), "--input"));
  // A 30-byte file claiming 100000 × 100000 pixels: refused before anything is allocated.
  EXPECT_THROW_WITH((void)open_tiff_volume(file("huge.tif", tiny_tiff(100000, 100000, 1, 8)), "--input"),
                    weft::ConfigError, "huge.tif");
  EXPECT_THROW_WITH((void)open_tiff_volume(file("rgb.tif", tiny_tiff(4, 3, 3, 36)), "--input"), weft::ConfigError,
                    "samples per pixel");
  EXPECT_THROW_WITH((void)open_tiff_volume(file("bilevel.tif", tiny_tiff(8, 3, 1, 3, 1)), "--input"),
                    weft::ConfigError, "1-bit");
  std::string cut = tiny_tiff(4, 3, 1, 12);
  cut.resize(cut.size() - 5);
  EXPECT_THROW_WITH((void)open_tiff_volume(file("cut.tif", cut), "--input"), weft::ConfigError, "cut.tif");
  EXPECT_THROW_WITH((void)open_tiff_volume(file("text.tif", "not a tiff at all"), "--input"), weft::ConfigError,
                    "cannot open");
  EXPECT_THROW_WITH((void)open_tiff_volume(scratch_file("none-*.tif"), "--input"), weft::ConfigError, "no file matches");
  EXPECT_THROW_WITH((void)open_tiff_volume(scratch_file("absent.tif"), "--input"), weft::ConfigError, "does not exist");
  fs::create_directories(scratch_file("empty-stack"));
  EXPECT_THROW_WITH((void)open_tiff_volume(scratch_file("empty-stack"), "--input"), weft::ConfigError, "no .tif");
  // A stack whose slices differ, or holds a multi-page file.
  fs::create_directories(scratch_file("mixed"));
  file("mixed/a1.tif", tiny_tiff(4, 3, 1, 12));
  file("mixed/a2.tif", tiny_tiff(5, 3, 1, 15));
  EXPECT_THROW_WITH((void)open_tiff_volume(scratch_file("mixed"), "--input"), weft::ConfigError, "the first page");
  fs::create_directories(scratch_file("pages"));
  write_tiff(scratch_file("pages/a.tif"), Array::host(DType::u8, Shape(2, 3, 4)));
  EXPECT_THROW_WITH((void)open_tiff_volume(scratch_file("pages"), "--input"), weft::ConfigError, "single-page");
}

TEST(VolumeIo, DeflatedVolumeIsWhatAnyReaderReads) {
  const Shape shape(23, 21, 70);  // chunk rows of 4 planes: slabs end inside them; edge chunks padded
  Array volume = Array::host(DType::u16, shape);
  for (std::int64_t i = 0; i < volume.size(); ++i) volume.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(i % 1000);
  const std::string path = scratch_file("deflated.h5");
  {
    H5Writer h5(path);
    DeflatedVolume out(h5, "/map", DType::u16, shape, {4, 8, 16}, 65535.0, 1, 3);
    // Slabs in any order, as ranks finish them.
    const std::vector<std::pair<std::int64_t, std::int64_t>> slabs{{9, 5}, {0, 3}, {14, 9}, {3, 6}};
    for (const auto& [first, count] : slabs) {
      Array part = Array::host(DType::u16, Shape(count, shape[1], shape[2]));
      std::memcpy(part.raw(), volume.data<std::uint16_t>() + first * shape[1] * shape[2], part.bytes());
      out.write(first, part);
      if (first == 9) {
        EXPECT_GT(out.waiting_planes(), 0);
      }
    }
    EXPECT_EQ(out.waiting_planes(), 0);
    EXPECT_THROW(out.write(0, Array::host(DType::u16, Shape(1, shape[1], shape[2]))), weft::ConfigError);  // twice
    out.finish();
    h5.commit();
  }
  EXPECT_EQ(dataset_filters({path, "/map"}), (std::vector<std::string>{"deflate (gzip) (filter 1)"}));
  EXPECT_EQ(dataset_info({path, "/map"}).chunk, (std::vector<std::int64_t>{4, 8, 16}));
  const Array back = read_dataset({path, "/map"});  // through H5Dread and HDF5's own inflate
  EXPECT_EQ(std::memcmp(back.raw(), volume.raw(), volume.bytes()), 0);
  {
    H5Writer h5(scratch_file("incomplete.h5"));
    DeflatedVolume out(h5, "/map", DType::u8, Shape(8, 4, 4), {4, 4, 4}, 255.0);
    out.write(0, Array::host(DType::u8, Shape(2, 4, 4)));
    EXPECT_THROW_WITH(out.finish(), weft::IoError, "never written");
  }
}

}  // namespace
