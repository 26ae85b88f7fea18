#pragma once
/// Internal: the HDF5 lock, error silencing, owned identifiers and type mapping shared by the reader
/// and the writer. Every function here expects the caller to hold H5Lock.
#include <hdf5.h>

#include <mutex>
#include <string>
#include <vector>

#include "weft/data/dtype.hpp"

namespace weft::io::detail {

/// Holds the process-wide HDF5 mutex (recursive: helpers may nest) and silences HDF5's error printing.
class H5Lock {
 public:
  H5Lock();
  H5Lock(const H5Lock&) = delete;
  H5Lock& operator=(const H5Lock&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

/// An HDF5 identifier closed (H5Idec_ref) when it goes out of scope.
class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  ~H5Handle();
  H5Handle(H5Handle&& other) noexcept : id_(other.id_) { other.id_ = -1; }
  H5Handle& operator=(H5Handle&& other) noexcept;
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  [[nodiscard]] hid_t get() const noexcept { return id_; }

 private:
  hid_t id_ = -1;
};

/// Throws IoError "HDF5 <what> failed for <where>" when `status` is negative; returns it otherwise.
template <class T> T h5_check(T status, const char* what, const std::string& where);
[[noreturn]] void h5_fail(const char* what, const std::string& where);
template <class T> T h5_check(T status, const char* what, const std::string& where) {
  if (status < 0) h5_fail(what, where);
  return status;
}

/// The in-memory HDF5 type for a dtype (f16 is an IEEE half built once; not to be closed).
[[nodiscard]] hid_t memory_type(DType dtype);
/// Maps a dataset's stored type to a dtype; ConfigError "unsupported dtype X in <where>" otherwise.
[[nodiscard]] DType dtype_of_h5(hid_t type, const std::string& where);

/// A stored element type by name and size: "bool" (h5py's enum of a byte, FALSE = 0 and
/// TRUE = 1), "i8" … "i64", "u8" … "u64", "f16", "f32", "f64"; ConfigError "unsupported dtype X
/// in <where>" for any other type (strings, compounds, other enums, integers wider than 8 bytes).
struct Element {
  std::string name;
  std::size_t bytes = 1;
};
[[nodiscard]] Element element_of_h5(hid_t type, const std::string& where);

/// True when every link of `path` ("/a/b/c") exists in `file`.
[[nodiscard]] bool h5_path_exists(hid_t file, const std::string& path);

/// Extents of a dataspace.
[[nodiscard]] std::vector<hsize_t> h5_extents(hid_t space, const std::string& where);

}  // namespace weft::io::detail
