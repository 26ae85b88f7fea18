// Dataset references, dataset information, whole and slab reads.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cstdint>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chunk_places.hpp"
#include "h5_common.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

using detail::h5_check;
using detail::H5Handle;

struct OpenDataset {
  H5Handle file;
  H5Handle dataset;
};

OpenDataset open_dataset(const DatasetRef& ref) {
  const std::string where = ref.str();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(ref.file, ec)) throw IoError("cannot open " + ref.file + ": no such file");
  if (H5Fis_hdf5(ref.file.c_str()) <= 0) throw IoError("cannot open " + ref.file + ": not an HDF5 file");
  OpenDataset open;
  open.file = H5Handle(h5_check(H5Fopen(ref.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen", ref.file));
  if (!detail::h5_path_exists(open.file.get(), ref.path)) {
    throw IoError("no dataset " + ref.path + " in " + ref.file);
  }
  H5O_info_t info;
  h5_check(H5Oget_info_by_name(open.file.get(), ref.path.c_str(), &info, H5P_DEFAULT), "H5Oget_info_by_name", where);
  if (info.type != H5O_TYPE_DATASET) throw IoError(where + " is not a dataset");
  open.dataset = H5Handle(h5_check(H5Dopen2(open.file.get(), ref.path.c_str(), H5P_DEFAULT), "H5Dopen", where));
  return open;
}

Shape to_shape(const std::vector<hsize_t>& dims, const std::string& where) {
  const auto d = [&](std::size_t i) { return static_cast<std::int64_t>(dims[i]); };
  switch (dims.size()) {
    case 1: return Shape(d(0));
    case 2: return Shape(d(0), d(1));
    case 3: return Shape(d(0), d(1), d(2));
    default:
      throw ConfigError("cannot read " + where + ": rank " + std::to_string(dims.size()) +
                        " datasets are not supported (1 to 3 axes)");
  }
}

DType stored_dtype(hid_t dataset, const std::string& where) {
  const H5Handle type(h5_check(H5Dget_type(dataset), "H5Dget_type", where));
  return detail::dtype_of_h5(type.get(), where);
}

/// The element type of `dataset`, and its DType where it has one (u8 otherwise, with `any_number`;
/// without it, dtype_of_h5's ConfigError).
detail::Element stored_element(hid_t dataset, const std::string& where, bool any_number, DType& dtype) {
  const H5Handle type(h5_check(H5Dget_type(dataset), "H5Dget_type", where));
  const detail::Element element = detail::element_of_h5(type.get(), where);
  try {
    dtype = detail::dtype_of_h5(type.get(), where);
  } catch (const ConfigError&) {
    if (!any_number) throw;
    dtype = DType::u8;
  }
  return element;
}

}  // namespace

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

DatasetRef parse_dataset_ref(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw ConfigError("bad dataset reference '" + text + "': expected FILE:/path/to/dataset (e.g. vol.h5:/exchange/data)");
  }
  DatasetRef ref{text.substr(0, colon), text.substr(colon + 1)};
  if (ref.path[0] != '/') ref.path.insert(ref.path.begin(), '/');
  return ref;
}

DatasetInfo dataset_info(const DatasetRef& ref, bool any_number) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  DatasetInfo info;
  const detail::Element element = stored_element(open.dataset.get(), where, any_number, info.dtype);
  info.element = element.name;
  info.element_bytes = static_cast<std::int64_t>(element.bytes);
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  for (hsize_t d : detail::h5_extents(space.get(), where)) info.shape.push_back(static_cast<std::int64_t>(d));
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", where));
  if (H5Pget_layout(plist.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(info.shape.size());
    h5_check(H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()), "H5Pget_chunk", where);
    for (hsize_t c : chunk) info.chunk.push_back(static_cast<std::int64_t>(c));
  }
  return info;
}

namespace {

struct Filter {
  H5Z_filter_t id = 0;
  std::string name;
};

std::vector<Filter> filters_of(hid_t plist) {
  std::vector<Filter> out;
  const int n = H5Pget_nfilters(plist);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    char name[128] = {};
    const H5Z_filter_t id =
        H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &values, nullptr, sizeof name, name, &config);
    std::string text = name;
    if (id == H5Z_FILTER_DEFLATE) text = "deflate (gzip)";
    else if (id == H5Z_FILTER_SHUFFLE) text = "shuffle";
    else if (id == H5Z_FILTER_FLETCHER32) text = "fletcher32";
    else if (id == H5Z_FILTER_SZIP) text = "szip";
    else if (id == 32000) text = "lzf";
    else if (id == 32001) text = "blosc";
    else if (id == 32004) text = "lz4";
    else if (id == 32015) text = "zstd";
    else if (text.empty()) text = "unnamed";
    out.push_back({id, text + " (filter " + std::to_string(id) + ")"});
  }
  return out;
}

std::string filter_list(const std::vector<Filter>& filters) {
  std::string text;
  for (const Filter& f : filters) text += (text.empty() ? "" : ", ") + f.name;
  return text;
}

/// A failed H5Dread of a filtered dataset names the filters: the library's own reason ("filter
/// returned failure during read") does not say which.
void read_checked(hid_t dataset, hid_t memory_type, hid_t memory_space, hid_t file_space, void* out,
                  const std::string& where) {
  if (H5Dread(dataset, memory_type, memory_space, file_space, H5P_DEFAULT, out) >= 0) return;
  const H5Handle plist(H5Dget_create_plist(dataset));
  const std::vector<Filter> filters = plist.get() >= 0 ? filters_of(plist.get()) : std::vector<Filter>{};
  try {
    detail::h5_fail("H5Dread", where);
  } catch (const IoError& e) {
    if (filters.empty()) throw;
    throw IoError(std::string(e.what()) + " (compressed or filtered data: " + filter_list(filters) +
                  "; the file is corrupt or its filter failed)");
  }
}

}  // namespace

std::vector<std::string> dataset_filters(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const OpenDataset open = open_dataset(ref);
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", ref.str()));
  std::vector<std::string> names;
  for (const Filter& f : filters_of(plist.get())) names.push_back(f.name);
  return names;
}

DatasetInfo checked_dataset_info(const DatasetRef& ref, const std::string& what, bool any_number) {
  DatasetInfo info = dataset_info(ref, any_number);
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", where));
  for (const Filter& f : filters_of(plist.get()))
    if (H5Zfilter_avail(f.id) <= 0)
      throw ConfigError(what + ": the dataset is compressed with " + f.name +
                        ", which this HDF5 cannot decode (its plugin is not installed)");
  // Element count and bytes within 64 bits (a header can declare any extents).
  std::uint64_t elements = 1;
  for (std::int64_t d : info.shape) {
    if (d < 0 || (d > 0 && elements > static_cast<std::uint64_t>(INT64_MAX) / static_cast<std::uint64_t>(d)))
      throw ConfigError(what + ": extents too large to address");
    elements *= static_cast<std::uint64_t>(d);
  }
  const auto element_bytes = static_cast<std::uint64_t>(info.element_bytes);
  if (elements > static_cast<std::uint64_t>(INT64_MAX) / element_bytes)
    throw ConfigError(what + ": extents too large to address");
  const std::uint64_t bytes = elements * element_bytes;
  if (elements == 0) return info;
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  if (layout == H5D_CONTIGUOUS && H5Pget_external_count(plist.get()) == 0) {
    const haddr_t offset = H5Dget_offset(open.dataset.get());
    std::error_code ec;
    const auto file_bytes = std::filesystem::file_size(ref.file, ec);
    if (offset == HADDR_UNDEF)
      throw ConfigError(what + ": the dataset was never written (no storage allocated)");
    if (!ec && (offset > file_bytes || bytes > file_bytes - offset))
      throw ConfigError(what + ": the dataset's " + std::to_string(bytes) + " bytes at byte " + std::to_string(offset) +
                        " run past the end of the file (" + std::to_string(file_bytes) + " bytes): truncated file");
  } else if (layout == H5D_CHUNKED) {
    const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
    hsize_t written = 0;
    h5_check(H5Dget_num_chunks(open.dataset.get(), space.get(), &written), "H5Dget_num_chunks", where);
    std::uint64_t total = 1;
    for (std::size_t i = 0; i < info.shape.size(); ++i)
      total *= static_cast<std::uint64_t>((info.shape[i] + info.chunk[i] - 1) / info.chunk[i]);
    if (written < total)
      throw ConfigError(what + ": only " + std::to_string(written) + " of its " + std::to_string(total) +
                        " chunks are written (an incomplete file? the others would read as fill values)");
  }
  return info;
}

Array read_dataset(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  const DType dtype = stored_dtype(open.dataset.get(), where);
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  Array out = Array::host(dtype, to_shape(detail::h5_extents(space.get(), where), where));
  if (out.size() > 0) read_checked(open.dataset.get(), detail::memory_type(dtype), H5S_ALL, H5S_ALL, out.raw(), where);
  return out;
}

Array read_slab(const DatasetRef& ref, std::int64_t z0, std::int64_t nz) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  const DType dtype = stored_dtype(open.dataset.get(), where);
  const H5Handle file_space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  std::vector<hsize_t> dims = detail::h5_extents(file_space.get(), where);
  if ((dims.size() != 2 && dims.size() != 3 && dims.size() != 4) || (dims.size() == 4 && nz != 1)) {
    throw ConfigError("cannot read a slab of " + where + ": it has " + std::to_string(dims.size()) +
                      " axes (slabs need 2 or 3, or 4 with one element of axis 0)");
  }
  const auto extent = static_cast<std::int64_t>(dims[0]);
  if (z0 < 0 || nz < 1 || z0 + nz > extent) {
    throw ConfigError("cannot read slab [" + std::to_string(z0) + ", " + std::to_string(z0 + nz) + ") of " + where +
                      ": axis 0 has " + std::to_string(extent) + " elements");
  }
  std::vector<hsize_t> start(dims.size(), 0);
  start[0] = static_cast<hsize_t>(z0);
  dims[0] = static_cast<hsize_t>(nz);
  h5_check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(), nullptr),
           "H5Sselect_hyperslab", where);
  const H5Handle memory_space(
      h5_check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple", where));
  // One element of a 4-D dataset comes back without its axis 0 (arrays have at most 3 axes).
  const std::vector<hsize_t> out_dims = dims.size() == 4 ? std::vector<hsize_t>(dims.begin() + 1, dims.end()) : dims;
  Array out = Array::host(dtype, to_shape(out_dims, where));
  if (out.size() > 0)
    read_checked(open.dataset.get(), detail::memory_type(dtype), memory_space.get(), file_space.get(), out.raw(), where);
  return out;
}

void read_slab_values(const DatasetRef& ref, std::int64_t z0, std::int64_t nz, void* to) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  DType unused = DType::u8;
  const detail::Element element = stored_element(open.dataset.get(), where, true, unused);
  const H5Handle file_space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  std::vector<hsize_t> dims = detail::h5_extents(file_space.get(), where);
  if (dims.size() != 3) throw ConfigError("cannot read planes of " + where + ": it has " + std::to_string(dims.size()) + " axes, not 3");
  if (z0 < 0 || nz < 1 || z0 + nz > static_cast<std::int64_t>(dims[0]))
    throw ConfigError("cannot read planes [" + std::to_string(z0) + ", " + std::to_string(z0 + nz) + ") of " + where +
                      ": axis 0 has " + std::to_string(dims[0]) + " elements");
  const std::vector<hsize_t> start{static_cast<hsize_t>(z0), 0, 0};
  dims[0] = static_cast<hsize_t>(nz);
  h5_check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(), nullptr),
           "H5Sselect_hyperslab", where);
  const H5Handle memory_space(h5_check(H5Screate_simple(3, dims.data(), nullptr), "H5Screate_simple", where));
  // The stored type in this host's byte order (an enum stays an enum: its values are the bytes).
  const H5Handle type(h5_check(H5Dget_type(open.dataset.get()), "H5Dget_type", where));
  const H5Handle native(h5_check(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), "H5Tget_native_type", where));
  if (H5Tget_size(native.get()) != element.bytes)
    throw ConfigError("cannot read " + where + ": its " + element.name + " values have no native type of their size");
  read_checked(open.dataset.get(), native.get(), memory_space.get(), file_space.get(), to, where);
}

namespace {

/// Whether the library's bytes of `open` are this host's: no user block before the file's addresses,
/// elements stored in this host's byte order at their size (IEEE floats, two's complement
/// integers: what element_of_h5 accepts). `dtype`, `element` and `bytes` are set.
bool native_storage(const OpenDataset& open, const std::string& where, DType& dtype, std::string& element,
                    std::int64_t& bytes) {
  const H5Handle file_plist(h5_check(H5Fget_create_plist(open.file.get()), "H5Fget_create_plist", where));
  hsize_t userblock = 0;
  h5_check(H5Pget_userblock(file_plist.get(), &userblock), "H5Pget_userblock", where);
  const H5Handle type(h5_check(H5Dget_type(open.dataset.get()), "H5Dget_type", where));
  const detail::Element e = stored_element(open.dataset.get(), where, true, dtype);
  element = e.name;
  bytes = static_cast<std::int64_t>(e.bytes);
  const H5T_order_t order = H5Tget_order(type.get());
  const bool native = order == H5T_ORDER_NONE || (order == H5T_ORDER_LE) == (std::endian::native == std::endian::little);
  // A float stored otherwise than IEEE (another exponent or mantissa width) is left to the library.
  bool ieee = true;
  if (H5Tget_class(type.get()) == H5T_FLOAT) {
    const H5Handle want(H5Tcopy(e.bytes == 8 ? H5T_NATIVE_DOUBLE : e.bytes == 4 ? H5T_NATIVE_FLOAT : H5T_IEEE_F32LE));
    ieee = e.bytes == 2 || H5Tequal(type.get(), want.get()) > 0;
  }
  return userblock == 0 && native && ieee && H5Tget_size(type.get()) == e.bytes;
}

}  // namespace

std::optional<RawExtent> raw_extent(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  RawExtent extent;
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", where));
  if (H5Pget_layout(plist.get()) != H5D_CONTIGUOUS || H5Pget_external_count(plist.get()) != 0 ||
      !native_storage(open, where, extent.dtype, extent.element, extent.element_bytes))
    return std::nullopt;
  const haddr_t offset = H5Dget_offset(open.dataset.get());
  if (offset == HADDR_UNDEF) return std::nullopt;
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  extent.offset = static_cast<std::int64_t>(offset);
  for (const hsize_t d : detail::h5_extents(space.get(), where)) extent.shape.push_back(static_cast<std::int64_t>(d));
  return extent;
}

std::int64_t RawChunks::chunk_bytes() const {
  return chunk.size() == 3 ? chunk[0] * chunk[1] * chunk[2] * element_bytes : 0;
}

std::shared_ptr<ChunkIndex> ChunkIndex::open(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", where));
  RawChunks layout;
  if (H5Pget_layout(plist.get()) != H5D_CHUNKED ||
      !native_storage(open, where, layout.dtype, layout.element, layout.element_bytes))
    return nullptr;
  const int filters = H5Pget_nfilters(plist.get());
  std::vector<H5Z_filter_t> pipeline;
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    pipeline.push_back(H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &values, nullptr, 0, nullptr, &config));
  }
  layout.deflate = !pipeline.empty() && pipeline.back() == H5Z_FILTER_DEFLATE;
  layout.shuffle = pipeline.size() == 2 && pipeline.front() == H5Z_FILTER_SHUFFLE;
  if (!(pipeline.empty() || (pipeline.size() == 1 && layout.deflate) || (layout.shuffle && layout.deflate)))
    return nullptr;  // other filters (szip, fletcher32, plugins): the library undoes them
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  const std::vector<hsize_t> dims = detail::h5_extents(space.get(), where);
  if (dims.size() != 3) return nullptr;
  hsize_t chunk[3] = {0, 0, 0};
  if (H5Pget_chunk(plist.get(), 3, chunk) != 3) return nullptr;
  for (int i = 0; i < 3; ++i) {
    layout.shape.push_back(static_cast<std::int64_t>(dims[static_cast<std::size_t>(i)]));
    layout.chunk.push_back(static_cast<std::int64_t>(chunk[i]));
  }
  layout.per_y = (layout.shape[1] + layout.chunk[1] - 1) / layout.chunk[1];
  layout.per_x = (layout.shape[2] + layout.chunk[2] - 1) / layout.chunk[2];
  return std::shared_ptr<ChunkIndex>(new ChunkIndex(ref, std::move(layout)));
}

ChunkIndex::ChunkIndex(DatasetRef ref, RawChunks layout)
    : ref_(std::move(ref)), layout_(std::move(layout)),
      rows_(static_cast<std::size_t>((layout_.shape[0] + layout_.chunk[0] - 1) / layout_.chunk[0])) {}

std::optional<RawChunks> ChunkIndex::planes(std::int64_t z0, std::int64_t nz) {
  if (z0 < 0 || nz < 1 || z0 + nz > layout_.shape[0])
    throw ConfigError("cannot read planes [" + std::to_string(z0) + ", " + std::to_string(z0 + nz) + ") of " +
                      ref_.str() + ": axis 0 has " + std::to_string(layout_.shape[0]) + " elements");
  RawChunks out = layout_;
  out.first_row = z0 / out.chunk[0];
  out.rows = (z0 + nz - 1) / out.chunk[0] - out.first_row + 1;
  const std::int64_t per_row = out.per_y * out.per_x;
  const std::lock_guard guard(mutex_);
  std::optional<detail::H5Lock> lock;  // taken once a row is asked for; released after the files close
  std::optional<OpenDataset> open;     // the library's listing, only where `places` cannot be had
  std::unique_ptr<detail::ChunkPlaces> places;  // a lookup per chunk where this HDF5 allows (1.10)
  for (std::int64_t r = out.first_row; r < out.first_row + out.rows; ++r) {
    Row& row = rows_[static_cast<std::size_t>(r)];
    if (!row.asked) {
      if (!lock) {
        lock.emplace();
        places = detail::ChunkPlaces::open(ref_);
        if (!places) open.emplace(open_dataset(ref_));
      }
      row.asked = true;
      row.usable = true;
      for (std::int64_t y = 0; y < out.per_y && row.usable; ++y)
        for (std::int64_t x = 0; x < out.per_x && row.usable; ++x) {
          const hsize_t at[3] = {static_cast<hsize_t>(r * out.chunk[0]), static_cast<hsize_t>(y * out.chunk[1]),
                                 static_cast<hsize_t>(x * out.chunk[2])};
          // Not allocated (fill values) or not stored as expected: the library reads this row. (The
          // places' offsets are in the file, H5Dget_chunk_info_by_coord's past the user block: the
          // same here, as native_storage refuses files with one.)
          detail::ChunkPlaces::Place place;
          if (places) {
            row.usable = places->locate(at, place);
          } else {
            haddr_t address = HADDR_UNDEF;
            hsize_t size = 0;
            row.usable = H5Dget_chunk_info_by_coord(open->dataset.get(), at, &place.filter_mask, &address, &size) >= 0 &&
                         address != HADDR_UNDEF && size != 0;
            place.offset = static_cast<std::int64_t>(address);
            place.size = static_cast<std::int64_t>(size);
          }
          row.usable = row.usable && (out.deflate || place.size == out.chunk_bytes());  // deflate: any size
          row.offsets.push_back(place.offset);
          row.sizes.push_back(place.size);
          row.filter_masks.push_back(place.filter_mask);
        }
      if (!row.usable) row.offsets.clear(), row.sizes.clear(), row.filter_masks.clear();
    }
    if (!row.usable) return std::nullopt;
  }
  const auto count = static_cast<std::size_t>(out.rows * per_row);
  out.offsets.reserve(count);
  out.sizes.reserve(count);
  out.filter_masks.reserve(count);
  for (std::int64_t r = out.first_row; r < out.first_row + out.rows; ++r) {
    const Row& row = rows_[static_cast<std::size_t>(r)];
    out.offsets.insert(out.offsets.end(), row.offsets.begin(), row.offsets.end());
    out.sizes.insert(out.sizes.end(), row.sizes.begin(), row.sizes.end());
    out.filter_masks.insert(out.filter_masks.end(), row.filter_masks.begin(), row.filter_masks.end());
  }
  return out;
}

std::optional<RawChunks> raw_chunks(const DatasetRef& ref, std::int64_t z0, std::int64_t nz) {
  const auto index = ChunkIndex::open(ref);
  if (!index) return std::nullopt;
  return index->planes(z0, nz);
}

RawFile::RawFile(std::string path) : path_(std::move(path)), fd_(::open(path_.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) throw IoError("cannot open '" + path_ + "': " + std::strerror(errno));
}

RawFile::~RawFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RawFile::read(std::int64_t offset, std::int64_t bytes, void* to) const {
  auto* at = static_cast<char*>(to);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, at, static_cast<std::size_t>(bytes), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw IoError("cannot read " + std::to_string(bytes) + " bytes at byte " + std::to_string(offset) + " of '" +
                    path_ + "': " + (got < 0 ? std::strerror(errno) : "the file ends there"));
    at += got, offset += got, bytes -= got;
  }
}

void RawFile::read_chunk(const RawChunks& chunks, std::int64_t k, void* to) const {
  const auto i = static_cast<std::size_t>(k);
  const std::int64_t bytes = chunks.chunk_bytes(), stored = chunks.sizes[i];
  const unsigned mask = chunks.filter_masks[i];
  const bool shuffled = chunks.shuffle && (mask & 1u) == 0 && chunks.element_bytes > 1;
  const bool deflated = chunks.deflate && (mask & (1u << (chunks.shuffle ? 1 : 0))) == 0;
  const auto bad = [&](const std::string& why) {
    return IoError("chunk at byte " + std::to_string(chunks.offsets[i]) + " of '" + path_ + "': " + why);
  };
  if (!deflated && !shuffled) {
    if (stored != bytes) throw bad(std::to_string(stored) + " bytes stored for a chunk of " + std::to_string(bytes));
    return read(chunks.offsets[i], bytes, to);
  }
  thread_local std::vector<unsigned char> packed, plain;  // each thread's, kept between chunks
  unsigned char* values = static_cast<unsigned char*>(to);
  if (shuffled) {
    plain.resize(static_cast<std::size_t>(bytes));
    values = plain.data();
  }
  if (deflated) {
    packed.resize(static_cast<std::size_t>(stored));
    read(chunks.offsets[i], stored, packed.data());
    uLongf length = static_cast<uLongf>(bytes);
    const int status = ::uncompress(values, &length, packed.data(), static_cast<uLong>(stored));
    if (status != Z_OK || static_cast<std::int64_t>(length) != bytes)
      throw bad("corrupt deflate (gzip) data: it does not inflate to the chunk's " + std::to_string(bytes) +
                " bytes (zlib: " + (status == Z_DATA_ERROR ? std::string("data error")
                                    : status == Z_BUF_ERROR ? std::string("too short or too long")
                                                            : "status " + std::to_string(status)) + ")");
  } else {
    if (stored != bytes) throw bad(std::to_string(stored) + " bytes stored for a chunk of " + std::to_string(bytes));
    read(chunks.offsets[i], bytes, values);
  }
  if (shuffled) {  // byte j of every element stored together: element e's byte j at j · n + e
    const auto size = static_cast<std::size_t>(chunks.element_bytes);
    const std::size_t n = static_cast<std::size_t>(bytes) / size;
    auto* out = static_cast<unsigned char*>(to);
    for (std::size_t j = 0; j < size; ++j)
      for (std::size_t e = 0; e < n; ++e) out[e * size + j] = values[j * n + e];
  }
}

}  // namespace weft::io
