// GPU granulometry: the shared loop (granulometry_driver.hpp) over CUDA distance transforms.
// Counts of every size land in one device array, read back once at the end (one sync per run
// besides the one that learns the largest distance).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../src/granulometry_driver.hpp"
#include "distance_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/morphology/granulometry.hpp"

namespace weft::morphology {
namespace {

/// The computed map (n, −1 on the background) in a narrower form (SizeMapForm).
template <class T>
__global__ void size_map_form_kernel(const std::int32_t* in, T* out, std::int64_t n, bool diameter, T background) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int32_t v = in[i];
    out[i] = v < 0 ? background : static_cast<T>(diameter ? 2 * v + 1 : v);
  }
}

Array size_map_in_form_gpu(Array computed, const SizeMapForm& form, int device, cudaStream_t stream) {
  Array out = Array::device(form.dtype, computed.shape(), device, stream);
  const std::int64_t n = computed.size();
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + threads - 1) / threads, 4096));
  if (n == 0) return out;
  const std::int32_t* in = computed.data<std::int32_t>();
  if (form.dtype == DType::u8)
    size_map_form_kernel<<<blocks, threads, 0, stream>>>(in, out.data<std::uint8_t>(), n, form.diameter,
                                                         std::uint8_t{255});
  else if (form.dtype == DType::u16)
    size_map_form_kernel<<<blocks, threads, 0, stream>>>(in, out.data<std::uint16_t>(), n, form.diameter,
                                                         std::uint16_t{65535});
  else if (form.dtype == DType::i32)
    size_map_form_kernel<<<blocks, threads, 0, stream>>>(in, out.data<std::int32_t>(), n, form.diameter,
                                                         std::int32_t{-1});
  else
    throw ConfigError("size map: no form in " + std::string(dtype_name(form.dtype)) + " (u8, u16 or i32)");
  check_launch("size_map_form_kernel", stream);
  return out;  // `computed` goes back to the pool on this stream, after the kernel
}

class GpuBackend {
 public:
  GpuBackend(const Array& mask, const GranulometryOptions& options, cudaStream_t stream)
      : mask_(mask), element_(options.element), max_size_(options.max_size), bit_steps_(options.bit_steps),
        ball_windowed_(options.ball_windowed),
        stream_(stream) {
    if (mask.shape().ndim() != 3)
      throw ConfigError("granulometry: expected a 3D volume, got shape " + mask.shape().str());
    if (mask.dtype() != DType::u8)
      throw ConfigError("granulometry: the mask must be u8, got " + std::string(dtype_name(mask.dtype())));
    if (mask.memory().is_host()) throw ConfigError("granulometry_gpu: the mask must be on a GPU");
    device_ = mask.memory().device_index;
    dims_ = {mask.shape()[0], mask.shape()[1], mask.shape()[2]};
    planes_ = detail::Planes::of(dims_.z, options);
    scalars_ = Array::device(DType::f64, Shape(2), device_, stream_);
    WEFT_CUDA_CHECK(cudaMemsetAsync(scalars_.raw(), 0, scalars_.bytes(), stream_));
  }

  std::int64_t count_foreground() {
    launch(counter(0), nullptr);
    return read_scalar(0);
  }

  /// i32 D over the whole mask (no bounded variant) and its maximum over the counted planes.
  std::int64_t counted_max_distance() {
    distance_ = Array::device(DType::i32, mask_.shape(), device_, stream_);
    if (element_ != Element::octahedron)
      stacks_ = Array::device(DType::i32, Shape(3 * dims_.z, dims_.y, dims_.x), device_, stream_);
    int* maximum = reinterpret_cast<int*>(counter(1));
    WEFT_CUDA_CHECK(cudaMemsetAsync(maximum, 0, sizeof(int), stream_));
    cuda::SeedRule seeds{mask_.data<std::uint8_t>(), nullptr, 0};
    cuda::launch_distance_transform(seeds, distance_.data<std::int32_t>(), stacks(), dims_, element_, stream_);
    cuda::launch_max(distance_.data<std::int32_t>() + plane_offset(planes_.first), planes_.count() * plane(),
                     maximum, stream_);
    return read_maximum(maximum);
  }

  std::int64_t distance_to_background() {
    work_ = Array::device(DType::i32, mask_.shape(), device_, stream_);
    int* maximum = reinterpret_cast<int*>(counter(1));
    WEFT_CUDA_CHECK(cudaMemsetAsync(maximum, 0, sizeof(int), stream_));
    const std::int64_t bound = (std::int64_t{max_size_} + 1) * (max_size_ + 1);
    // The openings of sizes up to N + 1 read D on the counted planes ± (N + 1) only: the bounded
    // transforms' z passes write those planes alone (a slab's halo is twice as wide, for the
    // input those planes' distances need), and the maximum and levels are taken there.
    const std::int64_t z0 = planes_.from(max_size_ + 1), z1 = planes_.to(max_size_ + 1);
    const std::int64_t used = (z1 - z0) * plane();
    if (element_ == Element::ball && max_size_ >= 0 && bound < 0xFFFF) {
      // Sizes up to N only compare D with n² ≤ (N + 1)²: D exact up to that bound, in u16, from
      // windowed passes (no envelope stacks). Its maximum is exact or bound + 1, which decides
      // every r < max D the same way for r ≤ bound.
      distance16_ = Array::device(DType::u16, mask_.shape(), device_, stream_);
      cuda::launch_bounded_ball_distance(mask_.data<std::uint8_t>(), distance16_.data<std::uint16_t>(),
                                         static_cast<std::uint16_t*>(work_.raw()), dims_, bound, stream_, z0, z1);
      cuda::launch_max_u16(distance16_.data<std::uint16_t>() + z0 * plane(), used, maximum, stream_);
      if (!ball_windowed_) {  // ⌈√D⌉ in u8 for the shell method's pack (half the bytes of D)
        distance8_ = Array::device(DType::u8, mask_.shape(), device_, stream_);
        cuda::launch_ball_levels(distance16_.data<std::uint16_t>() + z0 * plane(),
                                 distance8_.data<std::uint8_t>() + z0 * plane(), used, stream_);
      }
      return read_maximum(maximum);
    }
    if (element_ == Element::octahedron && max_size_ >= 0 && max_size_ + 1 < 255) {
      // Sizes up to N only compare D with n ≤ N + 1 < 255: min(D, 255) in u8 decides them all.
      distance8_ = Array::device(DType::u8, mask_.shape(), device_, stream_);
      cuda::launch_clamped_l1_distance(mask_.data<std::uint8_t>(), distance8_.data<std::uint8_t>(), dims_, stream_);
      cuda::launch_max_u8(distance8_.data<std::uint8_t>(), dims_.voxels(), maximum, stream_);
      return read_maximum(maximum);
    }
    if (element_ == Element::cube && max_size_ >= 0 && max_size_ + 1 <= cuda::DistancePolicy::kPackedMaxRadius &&
        dims_.x % 4 == 0) {
      // Sizes up to N only compare D with n ≤ N + 1: D exact up to N + 1 (N + 2 beyond) in u8.
      distance8_ = Array::device(DType::u8, mask_.shape(), device_, stream_);
      cuda::launch_bounded_chessboard_distance(mask_.data<std::uint8_t>(), distance8_.data<std::uint8_t>(),
                                               static_cast<std::uint8_t*>(work_.raw()), dims_, max_size_ + 1,
                                               stream_, z0, z1);
      cuda::launch_max_u8(distance8_.data<std::uint8_t>() + z0 * plane(), used, maximum, stream_);
      return read_maximum(maximum);
    }
    distance_ = Array::device(DType::i32, mask_.shape(), device_, stream_);
    if (element_ != Element::octahedron)
      stacks_ = Array::device(DType::i32, Shape(3 * dims_.z, dims_.y, dims_.x), device_, stream_);
    cuda::SeedRule seeds{mask_.data<std::uint8_t>(), nullptr, 0};
    cuda::launch_distance_transform(seeds, distance_.data<std::int32_t>(), stacks(), dims_, element_, stream_);
    cuda::launch_max(distance_.data<std::int32_t>(), dims_.voxels(), maximum, stream_);
    if (element_ != Element::ball) {  // u8 copy of D for the seeds of sizes < 255
      distance8_ = Array::device(DType::u8, mask_.shape(), device_, stream_);
      cuda::launch_clamp_u8(distance_.data<std::int32_t>(), distance8_.data<std::uint8_t>(), dims_.voxels(), stream_);
    }
    return read_maximum(maximum);
  }

  void init_size_map() {
    size_map_ = Array::device(DType::i32, Shape(planes_.count(), dims_.y, dims_.x), device_, stream_);
    WEFT_CUDA_CHECK(cudaMemsetAsync(scalars_.raw(), 0, sizeof(unsigned long long), stream_));
    launch(counter(0), size_map_.data<std::int32_t>());
  }

  void opening_count(int n, std::int64_t r, bool update_size_map, std::int64_t* count) {
    if (counts_.empty()) {
      counts_ = Array::device(DType::f64, Shape(1024), device_, stream_);
      WEFT_CUDA_CHECK(cudaMemsetAsync(counts_.raw(), 0, counts_.bytes(), stream_));
    }
    if (pending_.size() == 1024) flush();
    auto* slot = reinterpret_cast<unsigned long long*>(counts_.raw()) + pending_.size();
    pending_.push_back(count);
    if (element_ != Element::ball && r >= 0xFFFF)
      throw ConfigError("granulometry_gpu: sizes up to 65534 for octahedra and cubes, asked " + std::to_string(r));
    // The opening of size n on planes [from(n), to(n)) only (granulometry_driver.hpp says why).
    const std::int64_t z0 = planes_.from(n), at = plane_offset(z0);
    const cuda::VolumeDims box{planes_.to(n) - z0, dims_.y, dims_.x};
    cuda::launch_opening_count(distance_.empty() ? nullptr : distance_.data<std::int32_t>() + at,
                               distance16_.empty() ? nullptr : distance16_.data<std::uint16_t>() + at,
                               distance8_.empty() ? nullptr : distance8_.data<std::uint8_t>() + at, r, work_.raw(),
                               stacks(), box, element_, update_size_map ? size_map_.data<std::int32_t>() : nullptr,
                               n, plane_offset(planes_.first - z0), planes_.count() * plane(), slot, stream_,
                               bit_steps_, ball_windowed_);
  }

  void flush() {
    if (pending_.empty()) return;
    std::vector<unsigned long long> host(pending_.size());
    WEFT_CUDA_CHECK(cudaMemcpyAsync(host.data(), counts_.raw(), host.size() * sizeof(unsigned long long),
                                    cudaMemcpyDeviceToHost, stream_));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    for (std::size_t i = 0; i < host.size(); ++i) *pending_[i] = static_cast<std::int64_t>(host[i]);
    pending_.clear();
    WEFT_CUDA_CHECK(cudaMemsetAsync(counts_.raw(), 0, counts_.bytes(), stream_));
  }

  Array take_size_map(const SizeMapForm& form) {
    if (form.as_computed()) return std::move(size_map_);
    return size_map_in_form_gpu(std::move(size_map_), form, device_, stream_);
  }

 private:
  unsigned long long* counter(int i) { return reinterpret_cast<unsigned long long*>(scalars_.raw()) + i; }
  std::int32_t* stacks() { return stacks_.empty() ? nullptr : stacks_.data<std::int32_t>(); }
  void launch(unsigned long long* count, std::int32_t* size_map) {
    cuda::launch_count_mask(mask_.data<std::uint8_t>() + plane_offset(planes_.first), planes_.count() * plane(),
                            size_map, count, stream_);
  }
  [[nodiscard]] std::int64_t plane() const { return dims_.y * dims_.x; }
  [[nodiscard]] std::int64_t plane_offset(std::int64_t z) const { return z * plane(); }
  std::int64_t read_maximum(int* maximum) {
    int host = 0;
    WEFT_CUDA_CHECK(cudaMemcpyAsync(&host, maximum, sizeof(int), cudaMemcpyDeviceToHost, stream_));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return host;
  }
  std::int64_t read_scalar(int i) {
    unsigned long long host = 0;
    WEFT_CUDA_CHECK(cudaMemcpyAsync(&host, counter(i), sizeof(host), cudaMemcpyDeviceToHost, stream_));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return static_cast<std::int64_t>(host);
  }

  Array mask_;
  Element element_;
  int max_size_ = -1;
  int bit_steps_ = 0;
  bool ball_windowed_ = false;
  cudaStream_t stream_;
  int device_ = 0;
  cuda::VolumeDims dims_{};
  detail::Planes planes_;
  Array scalars_, distance_, distance16_, distance8_, work_, stacks_, size_map_, counts_;
  std::vector<std::int64_t*> pending_;
};

}  // namespace

GranulometryResult granulometry_gpu(const Array& mask, const GranulometryOptions& options, void* stream) {
  GpuBackend backend(mask, options, static_cast<cudaStream_t>(stream));
  return detail::run_granulometry(backend, options);
}

std::int64_t max_distance_gpu(const Array& mask, Element element, std::int64_t first_plane, std::int64_t end_plane,
                              void* stream) {
  GranulometryOptions counted;
  counted.element = element;
  counted.max_size = 0;
  counted.first_plane = first_plane;
  counted.end_plane = end_plane;
  GpuBackend backend(mask, counted, static_cast<cudaStream_t>(stream));
  if (backend.count_foreground() == 0) return 0;
  return backend.counted_max_distance();
}

}  // namespace weft::morphology
