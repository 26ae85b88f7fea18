// H5Writer: datasets, slabs and attributes in a file renamed into place on commit().
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "file_commit.hpp"
#include "h5_common.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"

namespace weft::io {
namespace {

using detail::h5_check;
using detail::H5Handle;

constexpr unsigned kGzipLevel = 4;

std::vector<hsize_t> extents_of(const Shape& shape) {
  std::vector<hsize_t> dims;
  for (int a = 0; a < shape.ndim(); ++a) dims.push_back(static_cast<hsize_t>(shape[a]));
  return dims;
}

// Dataset creation properties: chunked (clipped to the extents) and optionally gzip, or contiguous.
H5Handle creation_properties(const std::vector<hsize_t>& dims, std::vector<std::int64_t> chunk, bool compress,
                             const std::string& where) {
  H5Handle plist(h5_check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", where));
  const bool has_zero = std::find(dims.begin(), dims.end(), hsize_t{0}) != dims.end();
  if (chunk.empty() && compress) {
    chunk.assign(dims.size(), 1);  // one element of axis 0 per chunk, other axes whole
    for (std::size_t a = 1; a < dims.size(); ++a) chunk[a] = static_cast<std::int64_t>(dims[a]);
    if (dims.size() == 1) chunk[0] = static_cast<std::int64_t>(std::min<hsize_t>(dims[0], 1 << 16));
  }
  if (chunk.empty() || has_zero) return plist;
  if (chunk.size() != dims.size()) {
    throw ConfigError("chunk shape for " + where + " has " + std::to_string(chunk.size()) + " extents, the data has " +
                      std::to_string(dims.size()) + " axes");
  }
  std::vector<hsize_t> c(dims.size());
  for (std::size_t a = 0; a < dims.size(); ++a) {
    c[a] = static_cast<hsize_t>(std::clamp<std::int64_t>(chunk[a], 1, static_cast<std::int64_t>(dims[a])));
  }
  h5_check(H5Pset_chunk(plist.get(), static_cast<int>(c.size()), c.data()), "H5Pset_chunk", where);
  if (compress) h5_check(H5Pset_deflate(plist.get(), kGzipLevel), "H5Pset_deflate", where);
  return plist;
}

// Creates `path` (with intermediate groups), removing a previous link of that name.
H5Handle create_dataset(hid_t file, const std::string& path, DType dtype, const std::vector<hsize_t>& dims,
                        std::vector<std::int64_t> chunk, bool compress, const std::string& where) {
  if (path.empty() || path == "/") throw ConfigError("bad dataset path '" + path + "' for " + where);
  if (detail::h5_path_exists(file, path)) h5_check(H5Ldelete(file, path.c_str(), H5P_DEFAULT), "H5Ldelete", where);
  const H5Handle space(
      h5_check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple", where));
  const H5Handle link_plist(h5_check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate", where));
  h5_check(H5Pset_create_intermediate_group(link_plist.get(), 1), "H5Pset_create_intermediate_group", where);
  const H5Handle create_plist = creation_properties(dims, std::move(chunk), compress, where);
  // Stored as the in-memory type: native little-endian integers and IEEE floats (f16 as IEEE half).
  return H5Handle(h5_check(H5Dcreate2(file, path.c_str(), detail::memory_type(dtype), space.get(), link_plist.get(),
                                      create_plist.get(), H5P_DEFAULT),
                           "H5Dcreate", where));
}

H5Handle open_object(hid_t file, const std::string& path, const std::string& where) {
  if (!detail::h5_path_exists(file, path)) throw IoError("no object " + path + " in " + where);
  return H5Handle(h5_check(H5Oopen(file, path.c_str(), H5P_DEFAULT), "H5Oopen", where));
}

void write_attribute(hid_t file, const std::string& object_path, const std::string& name, hid_t type,
                     const void* value, const std::string& where) {
  const H5Handle object = open_object(file, object_path, where);
  if (H5Aexists(object.get(), name.c_str()) > 0) {
    h5_check(H5Adelete(object.get(), name.c_str()), "H5Adelete", where);
  }
  const H5Handle space(h5_check(H5Screate(H5S_SCALAR), "H5Screate", where));
  const H5Handle attribute(
      h5_check(H5Acreate2(object.get(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), "H5Acreate", where));
  h5_check(H5Awrite(attribute.get(), type, value), "H5Awrite", where);
}

}  // namespace

H5Writer::H5Writer(std::string final_path)
    : final_path_(std::move(final_path)), temp_path_(detail::temporary_path(final_path_)) {
  const detail::H5Lock lock;
  // H5F_ACC_EXCL: O_EXCL, so a file (or a symlink) already at the temporary name is never opened.
  file_ = H5Fcreate(temp_path_.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
  if (file_ < 0) detail::h5_fail("H5Fcreate", temp_path_ + " (for " + final_path_ + ")");
}

H5Writer::~H5Writer() {
  if (file_ < 0) return;
  const detail::H5Lock lock;
  H5Fclose(file_);
  std::remove(temp_path_.c_str());
}

void H5Writer::check_open(const char* operation) const {
  if (file_ < 0) throw IoError(std::string("H5Writer::") + operation + " after commit() of " + final_path_);
}

void H5Writer::write(const std::string& path, const Array& data, std::vector<std::int64_t> chunk_shape, bool compress) {
  const std::string where = final_path_ + ":" + path;
  if (data.empty()) throw ConfigError("cannot write an empty array to " + where);
  const Array host = data.memory().is_host() ? data : data.to_host();
  const detail::H5Lock lock;
  check_open("write");
  const H5Handle dataset = create_dataset(file_, path, host.dtype(), extents_of(host.shape()), std::move(chunk_shape),
                                          compress, where);
  if (host.size() > 0) {
    h5_check(H5Dwrite(dataset.get(), detail::memory_type(host.dtype()), H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw()),
             "H5Dwrite", where);
  }
}

void H5Writer::write_vector(const std::string& path, const std::vector<double>& values) {
  const std::string where = final_path_ + ":" + path;
  const detail::H5Lock lock;
  check_open("write_vector");
  const std::vector<hsize_t> dims{values.size()};
  const H5Handle dataset = create_dataset(file_, path, DType::f64, dims, {}, false, where);
  if (!values.empty()) {
    h5_check(H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "H5Dwrite",
             where);
  }
}

void H5Writer::create(const std::string& path, DType dtype, Shape shape, std::vector<std::int64_t> chunk_shape,
                      bool compress) {
  const std::string where = final_path_ + ":" + path;
  if (shape.ndim() < 1) throw ConfigError("cannot create " + where + " with an empty shape");
  const detail::H5Lock lock;
  check_open("create");
  (void)create_dataset(file_, path, dtype, extents_of(shape), std::move(chunk_shape), compress, where);
}

void H5Writer::create(const std::string& path, DType dtype, const std::vector<std::int64_t>& extents,
                      std::vector<std::int64_t> chunk_shape, bool compress) {
  const std::string where = final_path_ + ":" + path;
  if (extents.empty()) throw ConfigError("cannot create " + where + " with an empty shape");
  std::vector<hsize_t> dims;
  for (std::int64_t e : extents) {
    if (e < 0) throw ConfigError("cannot create " + where + " with a negative extent " + std::to_string(e));
    dims.push_back(static_cast<hsize_t>(e));
  }
  const detail::H5Lock lock;
  check_open("create");
  (void)create_dataset(file_, path, dtype, dims, std::move(chunk_shape), compress, where);
}

void H5Writer::create_deflated(const std::string& path, DType dtype, const std::vector<std::int64_t>& extents,
                               const std::vector<std::int64_t>& chunk, int level, double fill) {
  const std::string where = final_path_ + ":" + path;
  if (chunk.size() != extents.size() || extents.empty())
    throw ConfigError("create_deflated: " + std::to_string(chunk.size()) + " chunk extents for " +
                      std::to_string(extents.size()) + " axes of " + where);
  std::vector<hsize_t> dims, c;
  for (std::size_t a = 0; a < extents.size(); ++a) {
    if (extents[a] < 1 || chunk[a] < 1 || chunk[a] > extents[a])
      throw ConfigError("create_deflated: chunk " + std::to_string(chunk[a]) + " for an extent " +
                        std::to_string(extents[a]) + " of " + where);
    dims.push_back(static_cast<hsize_t>(extents[a]));
    c.push_back(static_cast<hsize_t>(chunk[a]));
  }
  const detail::H5Lock lock;
  check_open("create_deflated");
  if (detail::h5_path_exists(file_, path)) h5_check(H5Ldelete(file_, path.c_str(), H5P_DEFAULT), "H5Ldelete", where);
  const H5Handle space(h5_check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple", where));
  const H5Handle link_plist(h5_check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate", where));
  h5_check(H5Pset_create_intermediate_group(link_plist.get(), 1), "H5Pset_create_intermediate_group", where);
  const H5Handle plist(h5_check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", where));
  h5_check(H5Pset_chunk(plist.get(), static_cast<int>(c.size()), c.data()), "H5Pset_chunk", where);
  h5_check(H5Pset_deflate(plist.get(), static_cast<unsigned>(std::clamp(level, 1, 9))), "H5Pset_deflate", where);
  // The fill value in the dataset's own type (the library converts it from a double).
  h5_check(H5Pset_fill_value(plist.get(), H5T_NATIVE_DOUBLE, &fill), "H5Pset_fill_value", where);
  (void)H5Handle(h5_check(H5Dcreate2(file_, path.c_str(), detail::memory_type(dtype), space.get(), link_plist.get(),
                                     plist.get(), H5P_DEFAULT),
                          "H5Dcreate", where));
}

void H5Writer::write_chunks(const std::string& path, const std::vector<StoredChunk>& chunks) {
  const std::string where = final_path_ + ":" + path;
  const detail::H5Lock lock;
  check_open("write_chunks");
  if (!detail::h5_path_exists(file_, path)) throw ConfigError("write_chunks: no dataset " + where);
  const H5Handle dataset(h5_check(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), "H5Dopen", where));
  for (const StoredChunk& c : chunks) {
    std::vector<hsize_t> offset(c.offset.begin(), c.offset.end());
    h5_check(H5Dwrite_chunk(dataset.get(), H5P_DEFAULT, 0, offset.data(), c.bytes, c.data), "H5Dwrite_chunk", where);
  }
}

void H5Writer::write_slab(const std::string& path, std::int64_t z0, const Array& slab) {
  const std::string where = final_path_ + ":" + path;
  if (slab.empty()) throw ConfigError("cannot write an empty slab to " + where);
  const Array host = slab.memory().is_host() ? slab : slab.to_host();
  const detail::H5Lock lock;
  check_open("write_slab");
  if (!detail::h5_path_exists(file_, path)) throw ConfigError("write_slab: no dataset " + where + " (call create first)");
  const H5Handle dataset(h5_check(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), "H5Dopen", where));
  const H5Handle type(h5_check(H5Dget_type(dataset.get()), "H5Dget_type", where));
  const DType stored = detail::dtype_of_h5(type.get(), where);
  const H5Handle file_space(h5_check(H5Dget_space(dataset.get()), "H5Dget_space", where));
  const std::vector<hsize_t> dims = detail::h5_extents(file_space.get(), where);
  std::vector<hsize_t> count = extents_of(host.shape());
  if (count.size() + 1 == dims.size()) count.insert(count.begin(), 1);
  bool fits = count.size() == dims.size() && host.dtype() == stored;
  for (std::size_t a = 1; fits && a < dims.size(); ++a) fits = count[a] == dims[a];
  if (!fits || z0 < 0 || static_cast<hsize_t>(z0) + count[0] > dims[0]) {
    std::string dataset_shape;
    for (hsize_t d : dims) {
      if (!dataset_shape.empty()) dataset_shape.push_back('x');
      dataset_shape.append(std::to_string(d));
    }
    throw ConfigError("write_slab: a " + std::string(dtype_name(host.dtype())) + " " + host.shape().str() +
                      " slab at " + std::to_string(z0) + " does not fit " + std::string(dtype_name(stored)) + " " +
                      dataset_shape + " dataset " + where);
  }
  std::vector<hsize_t> start(dims.size(), 0);
  start[0] = static_cast<hsize_t>(z0);
  h5_check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
           "H5Sselect_hyperslab", where);
  const H5Handle memory_space(
      h5_check(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), "H5Screate_simple", where));
  h5_check(H5Dwrite(dataset.get(), detail::memory_type(stored), memory_space.get(), file_space.get(), H5P_DEFAULT,
                    host.raw()),
           "H5Dwrite", where);
}

void H5Writer::attribute(const std::string& object_path, const std::string& name, double value) {
  const detail::H5Lock lock;
  check_open("attribute");
  write_attribute(file_, object_path, name, H5T_NATIVE_DOUBLE, &value, final_path_ + ":" + object_path + "@" + name);
}

void H5Writer::attribute(const std::string& object_path, const std::string& name, std::int64_t value) {
  const detail::H5Lock lock;
  check_open("attribute");
  write_attribute(file_, object_path, name, H5T_NATIVE_INT64, &value, final_path_ + ":" + object_path + "@" + name);
}

void H5Writer::attribute(const std::string& object_path, const std::string& name, const std::string& value) {
  const std::string where = final_path_ + ":" + object_path + "@" + name;
  const detail::H5Lock lock;
  check_open("attribute");
  const H5Handle type(h5_check(H5Tcopy(H5T_C_S1), "H5Tcopy", where));
  h5_check(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)), "H5Tset_size", where);
  h5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset", where);
  std::string padded = value;
  padded.resize(std::max<std::size_t>(value.size(), 1), '\0');
  write_attribute(file_, object_path, name, type.get(), padded.data(), where);
}

void H5Writer::commit() {
  {
    const detail::H5Lock lock;
    check_open("commit");
    const herr_t closed = H5Fclose(file_);
    file_ = -1;
    if (closed < 0) {
      std::remove(temp_path_.c_str());
      throw IoError("cannot finish HDF5 file " + final_path_);
    }
  }
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    std::remove(temp_path_.c_str());
    throw IoError("cannot rename " + temp_path_ + " to " + final_path_);
  }
}

}  // namespace weft::io
