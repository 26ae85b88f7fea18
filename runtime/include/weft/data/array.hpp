#pragma once
/// Typed N-D arrays (1D to 3D) living on the host or on one GPU, with pooled storage.
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "weft/data/dtype.hpp"

namespace weft {

/// Extents of a 1D to 3D array, slowest axis first (z, y, x), row-major.
class Shape {
 public:
  Shape() = default;
  Shape(std::int64_t x) : ndim_(1), dims_{x, 1, 1} {}  // NOLINT: implicit from a length
  Shape(std::int64_t y, std::int64_t x) : ndim_(2), dims_{y, x, 1} {}
  Shape(std::int64_t z, std::int64_t y, std::int64_t x) : ndim_(3), dims_{z, y, x} {}
  [[nodiscard]] int ndim() const noexcept { return ndim_; }
  [[nodiscard]] std::int64_t operator[](int axis) const noexcept { return dims_[axis]; }
  [[nodiscard]] std::int64_t size() const noexcept;  ///< number of elements
  [[nodiscard]] std::string str() const;             ///< "ZxYxX"
  friend bool operator==(const Shape& a, const Shape& b) noexcept;

 private:
  int ndim_ = 0;
  std::array<std::int64_t, 3> dims_{0, 1, 1};
};

/// Where an array's bytes live: the host (pinned when a GPU exists) or device `device`.
struct Memory {
  enum Kind : std::uint8_t { host, device } kind = host;
  int device_index = -1;
  [[nodiscard]] static Memory on_host() { return {}; }
  [[nodiscard]] static Memory on_device(int index) { return {device, index}; }
  [[nodiscard]] bool is_host() const noexcept { return kind == host; }
  friend bool operator==(const Memory&, const Memory&) = default;
};

namespace detail {
struct Buffer;       // pooled storage, returned to its pool when the last Array drops it
struct ArrayAccess;  // the executor's access to an array's storage
}

/// A typed array sharing its storage (copying an Array copies a handle, not the data).
/// Storage comes from the host pool or the device pool of its GPU: no allocation per token.
class Array {
 public:
  Array() = default;
  /// Host array from the pinned host pool (contents uninitialised).
  [[nodiscard]] static Array host(DType type, Shape shape);
  /// Device array from the pool of GPU `device`, ordered on `stream` (a cudaStream_t). Inside a
  /// task use Context::alloc; with a stream of your own, synchronise it before the array drops.
  [[nodiscard]] static Array device(DType type, Shape shape, int device, void* stream);
  /// Host array over memory the caller owns and keeps alive (no copy).
  [[nodiscard]] static Array wrap(DType type, Shape shape, void* data);

  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] std::int64_t size() const noexcept { return shape_.size(); }
  [[nodiscard]] std::size_t bytes() const noexcept;
  [[nodiscard]] Memory memory() const noexcept;
  [[nodiscard]] bool empty() const noexcept { return !buffer_; }
  [[nodiscard]] void* raw() const noexcept;

  /// Typed pointer; throws if T does not match dtype().
  template <class T> [[nodiscard]] T* data() const {
    check_type(dtype_of<T>);
    return static_cast<T*>(raw());
  }
  /// A deep copy on the host (synchronous; for tests and I/O).
  [[nodiscard]] Array to_host() const;
  /// Fill a host array with zero bytes.
  void zero();

 private:
  friend struct detail::ArrayAccess;
  void check_type(DType asked) const;
  DType dtype_ = DType::u8;
  Shape shape_;
  std::shared_ptr<detail::Buffer> buffer_;
};

}  // namespace weft
