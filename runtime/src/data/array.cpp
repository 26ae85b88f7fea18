#include "weft/data/array.hpp"

#include <cstring>

#include "data/buffer.hpp"
#include "device/device.hpp"
#include "weft/util/error.hpp"

namespace weft {

std::int64_t Shape::size() const noexcept {
  if (ndim_ == 0) return 0;
  std::int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[i];
  return n;
}

std::string Shape::str() const {
  std::string s;
  for (int i = 0; i < ndim_; ++i) s += (i ? "x" : "") + std::to_string(dims_[i]);
  return s.empty() ? "()" : s;
}

namespace detail {
Shape shape_from(int ndim, const std::int64_t* dims, const char* what) {
  switch (ndim) {
    case 1: return Shape(dims[0]);
    case 2: return Shape(dims[0], dims[1]);
    case 3: return Shape(dims[0], dims[1], dims[2]);
    default: throw Error(std::string(what) + ": an array of " + std::to_string(ndim) + " dimensions (1 to 3)");
  }
}
}  // namespace detail

bool operator==(const Shape& a, const Shape& b) noexcept {
  if (a.ndim_ != b.ndim_) return false;
  for (int i = 0; i < a.ndim_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

namespace detail {
Buffer::~Buffer() {
  if (!ptr) return;
  switch (owner) {
    case Owner::host_pool: host_pool_release(ptr, capacity); break;
    case Owner::device_pool: device_pool_release(memory.device_index, ptr, release_stream); break;
    case Owner::external: break;
  }
}
void release_on_home(const Array& a) noexcept {
  if (Buffer* b = ArrayAccess::buffer(a)) b->release_stream = nullptr;
}
}  // namespace detail

namespace {
void check_shape(const Shape& shape) {
  for (int i = 0; i < shape.ndim(); ++i)
    if (shape[i] < 0) throw ConfigError("negative array extent in shape " + shape.str());
}
}  // namespace

Array Array::host(DType type, Shape shape) {
  check_shape(shape);
  Array a;
  a.dtype_ = type;
  a.shape_ = shape;
  auto buf = std::make_shared<detail::Buffer>();
  std::size_t bytes = static_cast<std::size_t>(shape.size()) * dtype_size(type);
  buf->ptr = detail::host_pool_acquire(bytes, buf->capacity);
  buf->owner = detail::Buffer::Owner::host_pool;
  a.buffer_ = std::move(buf);
  return a;
}

Array Array::device(DType type, Shape shape, int device, void* stream) {
  check_shape(shape);
  Array a;
  a.dtype_ = type;
  a.shape_ = shape;
  auto buf = std::make_shared<detail::Buffer>();
  std::size_t bytes = static_cast<std::size_t>(shape.size()) * dtype_size(type);
  buf->ptr = detail::device_pool_acquire(device, bytes, stream);
  // Freed in order on the stream it was allocated on (a task's stream, or the caller's, which
  // must outlive the array); arrays that travel between tasks are moved to the home stream.
  buf->release_stream = stream;
  buf->capacity = bytes;
  buf->memory = Memory::on_device(device);
  buf->owner = detail::Buffer::Owner::device_pool;
  a.buffer_ = std::move(buf);
  return a;
}

Array Array::wrap(DType type, Shape shape, void* data) {
  check_shape(shape);
  Array a;
  a.dtype_ = type;
  a.shape_ = shape;
  auto buf = std::make_shared<detail::Buffer>();
  buf->ptr = data;
  buf->owner = detail::Buffer::Owner::external;
  a.buffer_ = std::move(buf);
  return a;
}

std::size_t Array::bytes() const noexcept {
  return static_cast<std::size_t>(shape_.size()) * dtype_size(dtype_);
}

Memory Array::memory() const noexcept { return buffer_ ? buffer_->memory : Memory{}; }

void* Array::raw() const noexcept { return buffer_ ? buffer_->ptr : nullptr; }

Array Array::to_host() const {
  if (empty()) return {};
  Array out = host(dtype_, shape_);
  if (memory().is_host()) {
    std::memcpy(out.raw(), raw(), bytes());
  } else {
    detail::copy_to_host_sync(out.raw(), raw(), bytes(), memory().device_index);
  }
  return out;
}

void Array::zero() {
  if (empty()) return;
  if (!memory().is_host()) throw Error("Array::zero() is for host arrays");
  std::memset(raw(), 0, bytes());
}

void Array::check_type(DType asked) const {
  if (asked != dtype_)
    throw Error("array of " + std::string(dtype_name(dtype_)) + " accessed as " +
                std::string(dtype_name(asked)));
}

}  // namespace weft
