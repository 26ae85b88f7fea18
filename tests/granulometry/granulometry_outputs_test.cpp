// `weft granulometry`'s outputs against the definition: the size map of small odd volumes by brute
// force on 1, 2 and 4 ranks, in core and out of core; its storage (u8/u16, radius or diameter);
// units and provenance in curve.csv, granulometry.h5 and curve.svg; every input type and TIFF.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "brute_force.hpp"
#include "common/run_weft.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/io/tiff.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/util/version.hpp"

namespace weft {
namespace {

namespace fs = std::filesystem;
using test::Outcome;

Outcome run(const std::string& args, int ranks = 1) {
  std::string prefix;
#if defined(WEFT_MPIEXEC)
  if (ranks > 1) prefix = std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ";
#endif
  return test::run_weft("granulometry", args + " --devices cpu --no-progress", prefix);
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// curve.csv's rows (no '#' lines), each split at commas; the header first.
std::vector<std::vector<std::string>> curve_rows(const std::string& out) {
  std::istringstream in(read_text(out + "/curve.csv"));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    rows.emplace_back();
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) rows.back().push_back(cell);
  }
  return rows;
}

/// The stored size map as i32 with −1 on the background (the file's `background` value).
Array size_map_of(const std::string& out, std::int64_t background) {
  const Array stored = io::read_dataset(io::parse_dataset_ref(out + "/granulometry.h5:/size_map"));
  Array m = Array::host(DType::i32, stored.shape());
  for (std::int64_t i = 0; i < m.size(); ++i) {
    const std::int64_t v = stored.dtype() == DType::u8    ? stored.data<std::uint8_t>()[i]
                           : stored.dtype() == DType::u16 ? stored.data<std::uint16_t>()[i]
                                                          : stored.data<std::int32_t>()[i];
    m.data<std::int32_t>()[i] = v == background ? -1 : static_cast<std::int32_t>(v);
  }
  return m;
}

/// The definition: per voxel the largest n ≤ `last` (−1: any) whose opening (brute force) keeps it,
/// −1 on the background; `curve` gets each opening's count, up to the first empty one or `last`.
Array brute_size_map(const Array& mask, morphology::Element element, std::vector<std::int64_t>& curve, int last = -1) {
  Array map = Array::host(DType::i32, mask.shape());
  for (std::int64_t i = 0; i < mask.size(); ++i) map.data<std::int32_t>()[i] = mask.data<std::uint8_t>()[i] ? 0 : -1;
  curve = {test::count_foreground(mask)};
  for (int n = 1; curve.back() > 0 && (last < 0 || n <= last); ++n) {
    const Array opened = test::brute_force_opening(mask, element, n);
    curve.push_back(test::count_foreground(opened));
    for (std::int64_t i = 0; i < mask.size(); ++i)
      if (opened.data<std::uint8_t>()[i]) map.data<std::int32_t>()[i] = n;
  }
  return map;
}

class GranulometryOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(WEFT_BINARY_DIR) + "/apps/weft")) GTEST_SKIP() << "weft program not built";
    dir_ = fs::temp_directory_path() / ("weft-gran-out-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(GranulometryOutputs, SizeMapIsTheDefinitionOnOneTwoFourRanksInAndOutOfCore) {
  const Array mask = test::random_mask(Shape(13, 11, 9), 0.75, 43);
  {
    io::H5Writer h5(path("odd.h5"));
    h5.write("/v", mask, {4, 5, 3}, true);
    h5.commit();
  }
  std::vector<int> ranks{1};
#if defined(WEFT_MPIEXEC)
  ranks = {1, 2, 4};
#endif
  for (const char* element : {"octahedron", "cube", "ball"}) {
    std::vector<std::int64_t> curve, capped_curve;
    const Array want = brute_size_map(mask, morphology::parse_element(element), curve);
    const Array capped = brute_size_map(mask, morphology::parse_element(element), capped_curve, 1);
    // In core (one slab per rank), out of core (slabs of 2 planes over several rounds, and a
    // memory budget of a few planes with their halo), N found first or given.
    for (const std::string& slabs : {std::string(""), std::string(" --slab-planes 2"),
                                     std::string(" --max-size 1 --device-memory 17000")})
      for (int r : ranks) {
        const std::string out = path(std::string("map-") + element);
        const Outcome o = run("--input " + path("odd.h5") + ":/v --element " + element + " --size-map --output " + out +
                                  slabs,
                              r);
        ASSERT_EQ(o.code, 0) << element << slabs << " on " << r << " ranks: " << o.output;
        const std::string what = std::string(element) + slabs + " on " + std::to_string(r) + " ranks";
        // Out of core means slabs in rounds: more slabs than ranks.
        const std::size_t said = o.output.find(" slab(s) on ");
        ASSERT_NE(said, std::string::npos) << o.output;
        const int count = std::stoi(o.output.substr(o.output.rfind(", ", said) + 2));
        if (!slabs.empty()) {
          EXPECT_GT(count, r) << what;
        }
        if (slabs.find("--max-size") == std::string::npos) {
          const auto rows = curve_rows(out);
          ASSERT_EQ(rows.size(), curve.size() + 1) << what;  // the header, then sizes 0..N, the last one empty
          for (std::size_t n = 0; n < curve.size(); ++n) EXPECT_EQ(rows[n + 1][3], std::to_string(curve[n])) << what;
          EXPECT_TRUE(test::same(size_map_of(out, 255), want)) << what;
        } else {  // N = 1: the largest n <= 1 (for balls not min(map, 1): a ball curve can rise)
          EXPECT_TRUE(test::same(size_map_of(out, 255), capped)) << what;
        }
        fs::remove_all(out);
      }
  }
}

TEST_F(GranulometryOutputs, SizeMapStorageTypeAndQuantity) {
  const Array mask = test::random_mask(Shape(9, 10, 11), 0.8, 7);
  {
    io::H5Writer h5(path("m.h5"));
    h5.write("/v", mask);
    h5.commit();
  }
  std::vector<std::int64_t> curve;
  const Array want = brute_size_map(mask, morphology::Element::cube, curve);
  struct Case { std::string args; DType dtype; std::int64_t background; bool diameter; };
  for (const Case& c : {Case{"--max-size 254", DType::u8, 255, false}, Case{"--max-size 255", DType::u16, 65535, false},
                        Case{"--max-size 126 --size-map-as diameter", DType::u8, 255, true},
                        Case{"--max-size 127 --size-map-as diameter", DType::u16, 65535, true}}) {
    const Outcome o = run("--input " + path("m.h5") + ":/v --element cube --size-map --voxel-size 2.5nm --output " +
                          path("s") + " " + c.args);
    ASSERT_EQ(o.code, 0) << c.args << ": " << o.output;
    const io::DatasetRef ref = io::parse_dataset_ref(path("s") + "/granulometry.h5:/size_map");
    EXPECT_EQ(io::dataset_info(ref).dtype, c.dtype) << c.args;
    EXPECT_EQ(io::dataset_filters(ref).front(), "deflate (gzip) (filter 1)") << c.args;
    Array got = size_map_of(path("s"), c.background);
    for (std::int64_t i = 0; i < got.size(); ++i) {
      const std::int32_t n = want.data<std::int32_t>()[i];
      ASSERT_EQ(got.data<std::int32_t>()[i], n < 0 ? -1 : c.diameter ? 2 * n + 1 : n) << c.args << " voxel " << i;
    }
    // The attributes say what the values are.
    const hid_t f = H5Fopen((path("s") + "/granulometry.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t d = H5Dopen2(f, "/size_map", H5P_DEFAULT);
    std::int64_t background = 0;
    double voxel = 0;
    const hid_t a = H5Aopen(d, "background", H5P_DEFAULT), b = H5Aopen(d, "voxel_size", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &background);
    H5Aread(b, H5T_NATIVE_DOUBLE, &voxel);
    const hid_t q = H5Aopen(d, "quantity", H5P_DEFAULT);
    const hid_t qt = H5Aget_type(q);
    std::string quantity(H5Tget_size(qt), '\0');
    H5Aread(q, qt, quantity.data());
    H5Tclose(qt), H5Aclose(q), H5Aclose(a), H5Aclose(b), H5Dclose(d), H5Fclose(f);
    EXPECT_EQ(background, c.background);
    EXPECT_EQ(voxel, 2.5);
    EXPECT_EQ(quantity, c.diameter ? "diameter" : "radius");
    fs::remove_all(path("s"));
  }
}

TEST_F(GranulometryOutputs, UnitsAndProvenanceInEveryOutput) {
  // One digital ball of radius 2 (33 voxels): its opening by the ball of radius 1 loses the 8
  // voxels (±1, ±1, ±1), which no copy of that ball inside it covers; the radius-2 opening keeps
  // them. The curve rises: 33, 25, 33, 0, the spectrum 8, -8, 33.
  Array ball = Array::host(DType::u16, Shape(7, 7, 7));
  ball.zero();
  for (int z = -2; z <= 2; ++z)
    for (int y = -2; y <= 2; ++y)
      for (int x = -2; x <= 2; ++x)
        if (z * z + y * y + x * x <= 4) ball.data<std::uint16_t>()[((z + 3) * 7 + y + 3) * 7 + x + 3] = 3;
  {
    io::H5Writer h5(path("ball.h5"));
    h5.write("/v", ball);
    h5.commit();
  }
  const Outcome o = run("--input " + path("ball.h5") + ":/v --element ball --threshold 2 --voxel-size 0.65um --output " +
                        path("u"));
  ASSERT_EQ(o.code, 0) << o.output;
  const auto rows = curve_rows(path("u"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"size", "radius_um", "diameter_um", "remaining", "volume_fraction",
                                               "spectrum", "cumulative"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"1", "0.65", "1.95", "25", "0.07288629738", "-8", "0"}));
  EXPECT_EQ(rows[1][6], "0.2424242424");  // 1 − 25/33: removed by the opening of size 1
  EXPECT_EQ(rows[3][5], "33");
  const std::string csv = read_text(path("u") + "/curve.csv");
  const BuildInfo build = build_info();
  for (const std::string& line : {"# program: weft " + build.version + " (commit " + build.commit + ")",
                                  std::string("# foreground: value >= 2"), std::string("# voxel_size: 0.65 um"),
                                  std::string("# devices: cpu")})
    EXPECT_NE(csv.find(line), std::string::npos) << line << " in\n" << csv;
  EXPECT_NE(csv.find("# command: weft granulometry --input " + path("ball.h5") + ":/v --element ball"), std::string::npos);
  const std::size_t date = csv.find("# date: ");
  ASSERT_NE(date, std::string::npos);
  EXPECT_EQ(csv.substr(date + 8 + 4, 1), "-");
  EXPECT_EQ(csv.substr(date + 8 + 19, 2), "Z\n");  // 2026-01-31T12:34:56Z
  // granulometry.h5 says the same.
  const std::string h5 = path("u") + "/granulometry.h5";
  for (const char* name : {"/radius", "/diameter", "/volume_fraction", "/cumulative"})
    EXPECT_EQ(io::read_dataset(io::parse_dataset_ref(h5 + ":" + name)).size(), 4) << name;
  EXPECT_EQ(io::read_dataset(io::parse_dataset_ref(h5 + ":/diameter")).data<double>()[2], 5 * 0.65);
  const hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  for (const char* name : {"program", "command", "date", "devices", "foreground", "voxel_unit"}) {
    const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    EXPECT_GE(a, 0) << name;
    const hid_t t = H5Aget_type(a);
    std::string value(H5Tget_size(t), '\0');
    H5Aread(a, t, value.data());
    EXPECT_FALSE(value.empty()) << name;
    if (std::string(name) == "foreground") {
      EXPECT_EQ(value, "value >= 2");
    } else if (std::string(name) == "voxel_unit") {
      EXPECT_EQ(value, "um");
    }
    H5Tclose(t), H5Aclose(a);
  }
  H5Fclose(f);
  // curve.svg: the negative bar below the zero line, the provenance as a caption.
  const std::string svg = read_text(path("u") + "/curve.svg");
  EXPECT_NE(svg.find("fill=\"#9b2226\""), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the zero line
  EXPECT_NE(svg.find("weft " + build.version), std::string::npos);
  EXPECT_NE(svg.find("foreground: value &gt;= 2 · voxel size 0.65 um"), std::string::npos);
}

/// Adds `values` (3-D, `shape`) as dataset `name` of HDF5 type `type` to `file` (created if absent).
void add_dataset(const std::string& file, const char* name, hid_t type, const void* values, const Shape& shape) {
  const hid_t f = fs::exists(file) ? H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                                   : H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[3] = {static_cast<hsize_t>(shape[0]), static_cast<hsize_t>(shape[1]), static_cast<hsize_t>(shape[2])};
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t d = H5Dcreate2(f, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
  H5Dclose(d), H5Sclose(space), H5Fclose(f);
}

TEST_F(GranulometryOutputs, EveryInputTypeAndTiffGiveTheSameResults) {
  const Shape shape(10, 12, 16);
  const Array mask = test::random_mask(shape, 0.7, 5);
  std::vector<std::int16_t> ct(static_cast<std::size_t>(shape.size()));
  std::vector<std::uint64_t> big(ct.size());
  std::vector<std::int8_t> small(ct.size());
  for (std::size_t i = 0; i < ct.size(); ++i) {
    const bool fg = mask.data<std::uint8_t>()[i] != 0;
    ct[i] = static_cast<std::int16_t>(fg ? 900 : -300);
    big[i] = (std::uint64_t{1} << 53) + (fg ? 1 : 0);  // apart only past a double's precision
    small[i] = static_cast<std::int8_t>(fg ? -1 : -2);
  }
  const std::string file = path("types.h5");
  add_dataset(file, "/mask", H5T_NATIVE_UINT8, mask.raw(), shape);
  add_dataset(file, "/ct", H5T_NATIVE_INT16, ct.data(), shape);
  add_dataset(file, "/big", H5T_NATIVE_UINT64, big.data(), shape);
  add_dataset(file, "/small", H5T_NATIVE_INT8, small.data(), shape);
  Array ct_array = Array::host(DType::u16, shape);  // the same values as u16 TIFF pages
  for (std::int64_t i = 0; i < ct_array.size(); ++i) ct_array.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(ct[static_cast<std::size_t>(i)] + 1000);
#if defined(WEFT_HAVE_TIFF)
  io::write_tiff(path("ct.tif"), ct_array, "lzw");
  fs::create_directories(path("stack"));
  io::write_tiff(path("stack") + "/z", mask, "deflate", true);
#endif
  {
    std::ofstream raw(path("ct.raw"), std::ios::binary);
    raw.write(reinterpret_cast<const char*>(ct.data()), static_cast<std::streamsize>(ct.size() * 2));
  }
  const std::string common = " --element ball --size-map --output ";
  ASSERT_EQ(run("--input " + file + ":/mask" + common + path("ref")).code, 0);
  const auto want = curve_rows(path("ref"));
  const Array want_map = size_map_of(path("ref"), 255);
  for (const std::string& input : {file + ":/ct --threshold 0", file + ":/big --threshold 9007199254740993",
                                   file + ":/small --threshold -1", file + ":/ct --threshold otsu",
                                   path("ct.tif") + " --threshold 1000", path("stack"), "'" + path("stack") + "/z_*.tif'",
                                   path("ct.raw") + " --shape 10x12x16 --dtype i16 --threshold 0 --slab-planes 3",
                                   path("ct.tif") + " --threshold 1000 --median 3 --max-size 1"}) {
#if !defined(WEFT_HAVE_TIFF)
    if (input.find("tif") != std::string::npos || input.find("stack") != std::string::npos) continue;
#endif
    const Outcome o = run("--input " + input + common + path("got"));
    ASSERT_EQ(o.code, 0) << input << ": " << o.output;
    if (input.find("--median") != std::string::npos) {  // a median changes the mask: runs, that is all
      fs::remove_all(path("got"));
      continue;
    }
    EXPECT_EQ(curve_rows(path("got")), want) << input;
    EXPECT_TRUE(test::same(size_map_of(path("got"), 255), want_map)) << input;
    fs::remove_all(path("got"));
  }
}

}  // namespace
}  // namespace weft
