// Dataset references, dataset information, whole and slab reads.
#include <bit>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace

DatasetRef parse_dataset_ref(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw ConfigError("bad dataset reference '" + text + "': expected FILE:/path/to/dataset (e.g. vol.h5:/exchange/data)");
  }
  DatasetRef ref{text.substr(0, colon), text.substr(colon + 1)};
  if (ref.path[0] != '/') ref.path.insert(ref.path.begin(), '/');
  return ref;
}

DatasetInfo dataset_info(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  DatasetInfo info;
  info.dtype = stored_dtype(open.dataset.get(), where);
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

Array read_dataset(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  const DType dtype = stored_dtype(open.dataset.get(), where);
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  Array out = Array::host(dtype, to_shape(detail::h5_extents(space.get(), where), where));
  if (out.size() > 0) {
    h5_check(H5Dread(open.dataset.get(), detail::memory_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw()),
             "H5Dread", where);
  }
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
  if (out.size() > 0) {
    h5_check(H5Dread(open.dataset.get(), detail::memory_type(dtype), memory_space.get(), file_space.get(), H5P_DEFAULT,
                     out.raw()),
             "H5Dread", where);
  }
  return out;
}

namespace {

/// Whether the library's bytes of `open` are this host's: no user block before the file's addresses,
/// elements stored in this host's byte order at their size. `dtype` is set.
bool native_storage(const OpenDataset& open, const std::string& where, DType& dtype) {
  const H5Handle file_plist(h5_check(H5Fget_create_plist(open.file.get()), "H5Fget_create_plist", where));
  hsize_t userblock = 0;
  h5_check(H5Pget_userblock(file_plist.get(), &userblock), "H5Pget_userblock", where);
  const H5Handle type(h5_check(H5Dget_type(open.dataset.get()), "H5Dget_type", where));
  dtype = detail::dtype_of_h5(type.get(), where);
  const H5T_order_t order = H5Tget_order(type.get());
  const bool native = order == H5T_ORDER_NONE || (order == H5T_ORDER_LE) == (std::endian::native == std::endian::little);
  return userblock == 0 && native && H5Tget_size(type.get()) == dtype_size(dtype);
}

}  // namespace

std::optional<RawExtent> raw_extent(const DatasetRef& ref) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  DType dtype = DType::u8;
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", where));
  if (H5Pget_layout(plist.get()) != H5D_CONTIGUOUS || H5Pget_external_count(plist.get()) != 0 ||
      !native_storage(open, where, dtype))
    return std::nullopt;
  const haddr_t offset = H5Dget_offset(open.dataset.get());
  if (offset == HADDR_UNDEF) return std::nullopt;
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  RawExtent extent;
  extent.offset = static_cast<std::int64_t>(offset);
  extent.dtype = dtype;
  for (const hsize_t d : detail::h5_extents(space.get(), where)) extent.shape.push_back(static_cast<std::int64_t>(d));
  return extent;
}

std::optional<RawChunks> raw_chunks(const DatasetRef& ref, std::int64_t z0, std::int64_t nz) {
  const detail::H5Lock lock;
  const std::string where = ref.str();
  const OpenDataset open = open_dataset(ref);
  const H5Handle plist(h5_check(H5Dget_create_plist(open.dataset.get()), "H5Dget_create_plist", where));
  RawChunks out;
  if (H5Pget_layout(plist.get()) != H5D_CHUNKED || H5Pget_nfilters(plist.get()) != 0 ||
      !native_storage(open, where, out.dtype))
    return std::nullopt;
  const H5Handle space(h5_check(H5Dget_space(open.dataset.get()), "H5Dget_space", where));
  const std::vector<hsize_t> dims = detail::h5_extents(space.get(), where);
  if (dims.size() != 3) return std::nullopt;
  hsize_t chunk[3] = {0, 0, 0};
  if (H5Pget_chunk(plist.get(), 3, chunk) != 3) return std::nullopt;
  for (int i = 0; i < 3; ++i) {
    out.shape.push_back(static_cast<std::int64_t>(dims[static_cast<std::size_t>(i)]));
    out.chunk.push_back(static_cast<std::int64_t>(chunk[i]));
  }
  if (z0 < 0 || nz < 1 || z0 + nz > out.shape[0])
    throw ConfigError("cannot read planes [" + std::to_string(z0) + ", " + std::to_string(z0 + nz) + ") of " + where +
                      ": axis 0 has " + std::to_string(out.shape[0]) + " elements");
  out.first_row = z0 / out.chunk[0];
  out.rows = (z0 + nz - 1) / out.chunk[0] - out.first_row + 1;
  out.per_y = (out.shape[1] + out.chunk[1] - 1) / out.chunk[1];
  out.per_x = (out.shape[2] + out.chunk[2] - 1) / out.chunk[2];
  const auto bytes = static_cast<hsize_t>(out.chunk[0] * out.chunk[1] * out.chunk[2]) * dtype_size(out.dtype);
  out.offsets.reserve(static_cast<std::size_t>(out.rows * out.per_y * out.per_x));
  for (std::int64_t r = 0; r < out.rows; ++r)
    for (std::int64_t y = 0; y < out.per_y; ++y)
      for (std::int64_t x = 0; x < out.per_x; ++x) {
        const hsize_t at[3] = {static_cast<hsize_t>((out.first_row + r) * out.chunk[0]),
                               static_cast<hsize_t>(y * out.chunk[1]), static_cast<hsize_t>(x * out.chunk[2])};
        unsigned mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(open.dataset.get(), at, &mask, &address, &size) < 0 || address == HADDR_UNDEF ||
            size != bytes)
          return std::nullopt;  // not allocated (fill values) or not stored as is
        out.offsets.push_back(static_cast<std::int64_t>(address));
      }
  return out;
}

}  // namespace weft::io
