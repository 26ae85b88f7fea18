#include "h5_common.hpp"

#include <string>

#include "weft/util/error.hpp"

namespace weft::io::detail {
namespace {

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

// IEEE 754 binary16, little-endian: HDF5 1.10 has no predefined half type.
hid_t make_half_type() {
  const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  return t;
}

}  // namespace

H5Lock::H5Lock() : lock_(hdf5_mutex()) {
  // Automatic printing of the error stack is a setting of each thread in a thread-safe HDF5:
  // silenced once per thread that calls the library (the reason is kept in h5_fail's message).
  thread_local const bool silenced = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
  (void)silenced;
}

H5Handle::~H5Handle() {
  if (id_ >= 0) H5Idec_ref(id_);
}

H5Handle& H5Handle::operator=(H5Handle&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Idec_ref(id_);
    id_ = other.id_;
    other.id_ = -1;
  }
  return *this;
}

namespace {

/// Keeps the description of each error met walking the stack downwards: the last is the innermost,
/// the library's own account of what went wrong (e.g. "truncated file: eof = ...").
herr_t keep_innermost(unsigned /*n*/, const H5E_error2_t* error, void* innermost) {
  if (error->desc && *error->desc) *static_cast<std::string*>(innermost) = error->desc;
  return 0;
}

}  // namespace

void h5_fail(const char* what, const std::string& where) {
  std::string why;  // the thread's error stack holds the failed call's errors (printing is off)
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, &why);
  H5Eclear2(H5E_DEFAULT);
  throw IoError(std::string("HDF5 ") + what + " failed for " + where + (why.empty() ? "" : ": " + why));
}

hid_t memory_type(DType dtype) {
  switch (dtype) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    case DType::i32: return H5T_NATIVE_INT32;
    case DType::f16: {
      static const hid_t half = make_half_type();
      return half;
    }
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_UINT8;
}

DType dtype_of_h5(hid_t type, const std::string& where) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (type_class == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (!is_signed && size == 1) return DType::u8;
    if (!is_signed && size == 2) return DType::u16;
    if (is_signed && size == 4) return DType::i32;
    throw ConfigError("unsupported dtype " + std::string(is_signed ? "i" : "u") + std::to_string(8 * size) +
                      " in " + where + " (supported: u8, u16, i32, f16, f32, f64)");
  }
  if (type_class == H5T_FLOAT) {
    if (size == 2) return DType::f16;
    if (size == 4) return DType::f32;
    if (size == 8) return DType::f64;
    throw ConfigError("unsupported dtype f" + std::to_string(8 * size) + " in " + where);
  }
  throw ConfigError("unsupported dtype (HDF5 type class " + std::to_string(static_cast<int>(type_class)) +
                    ", not a number) in " + where);
}

Element element_of_h5(hid_t type, const std::string& where) {
  const H5T_class_t type_class = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  // The name is a letter and the bits ("i16"); built in place (GCC 12 warns about a "x" + to_string).
  std::string name(1, type_class == H5T_FLOAT ? 'f' : H5Tget_sign(type) == H5T_SGN_2 ? 'i' : 'u');
  name.append(std::to_string(8 * size));
  if (type_class == H5T_INTEGER && (size == 1 || size == 2 || size == 4 || size == 8)) return {name, size};
  if (type_class == H5T_FLOAT && (size == 2 || size == 4 || size == 8)) return {name, size};
  if (type_class == H5T_ENUM && size == 1 && H5Tget_nmembers(type) == 2) {
    // h5py writes numpy's bool as this enum; its members' values are the stored bytes.
    bool named = true;
    for (unsigned i = 0; i < 2; ++i) {
      char* name = H5Tget_member_name(type, i);
      signed char value = -1;
      named = named && name && std::string(name) == (i == 0 ? "FALSE" : "TRUE") &&
              H5Tget_member_value(type, i, &value) >= 0 && value == static_cast<signed char>(i);
      if (name) H5free_memory(name);
    }
    if (named) return {"bool", 1};
  }
  if (type_class == H5T_INTEGER || type_class == H5T_FLOAT) throw ConfigError("unsupported dtype " + name + " in " + where);
  throw ConfigError("unsupported dtype (HDF5 type class " + std::to_string(static_cast<int>(type_class)) +
                    (type_class == H5T_ENUM ? ", an enum other than h5py's bool" : ", not a number") + ") in " + where);
}

bool h5_path_exists(hid_t file, const std::string& path) {
  if (path.empty() || path == "/") return true;
  std::size_t pos = path[0] == '/' ? 1 : 0;
  while (pos <= path.size()) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string prefix = path.substr(0, next);
    if (next > pos && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    pos = next + 1;
  }
  return true;
}

std::vector<hsize_t> h5_extents(hid_t space, const std::string& where) {
  const int rank = h5_check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims", where);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) h5_check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "H5Sget_simple_extent_dims", where);
  return dims;
}

}  // namespace weft::io::detail
