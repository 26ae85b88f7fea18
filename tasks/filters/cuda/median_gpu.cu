// CUDA median: a shared-memory tile per block, then each thread gathers its windows into
// registers and runs the forgetful selection (element.hpp), rows_per_thread outputs per thread;
// u8/u16 3×3 and 5×5 on packed 16-bit lanes (packed_median.hpp), 3×3 on interleaved lanes with
// sm_90's three-input min/max (interleaved_median.hpp). Methods are chosen by the policy
// (filters_gpu.cuh) or forced by name (benchmarks, tests).
#include <cstdint>
#include <string>
#include <string_view>

#include "../src/detail/interleaved_median.hpp"
#include "../src/detail/packed_median.hpp"
#include "filters_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/filters/cuda.hpp"

namespace weft::filters {
namespace device {

struct Identity {
  template <class T> __device__ T operator()(T v) const { return v; }
};

/// One tile of a 2D median (layer 3): tile holds (rows + 2r) × (block_x + 2r) values.
template <class T, int K>
__device__ void median2d_tile(T* tile, const T* __restrict__ src, T* __restrict__ dst, Extent e, int border,
                              int rows_per_thread) {
  constexpr int r = K / 2;
  const int rows = blockDim.y * rows_per_thread;
  const long long z = blockIdx.z;
  const long long y0 = static_cast<long long>(blockIdx.y) * rows;
  const long long x0 = static_cast<long long>(blockIdx.x) * blockDim.x;
  load_tile(tile, src, e, z, y0, x0, rows, blockDim.x, r, r, border, Identity{});
  __syncthreads();
  const int pitch = blockDim.x + 2 * r;
  const long long x = x0 + threadIdx.x;
  for (int k = 0; k < rows_per_thread; ++k) {
    const int ty = threadIdx.y + k * blockDim.y;
    const long long y = y0 + ty;
    if (x >= e.nx || y >= e.ny) continue;
    T v[K * K];
#pragma unroll
    for (int i = 0; i < K; ++i)
#pragma unroll
      for (int j = 0; j < K; ++j) v[i * K + j] = tile[(ty + i) * pitch + threadIdx.x + j];
    dst[(z * e.ny + y) * e.nx + x] = forgetful_median(v);
  }
}

/// One tile of a 3D median: K planes of (block_y + 2r) × (block_x + 2r) around slice blockIdx.z.
template <class T, int K>
__device__ void median3d_tile(T* tile, const T* __restrict__ src, T* __restrict__ dst, Extent e, int border) {
  constexpr int r = K / 2;
  const long long z = blockIdx.z;
  const long long y0 = static_cast<long long>(blockIdx.y) * blockDim.y;
  const long long x0 = static_cast<long long>(blockIdx.x) * blockDim.x;
  const int pitch = blockDim.x + 2 * r;
  const int plane = (blockDim.y + 2 * r) * pitch;
  for (int dz = -r; dz <= r; ++dz) {
    const long long zi = border_index(z + dz, e.slices, border);
    T* p = tile + (dz + r) * plane;
    if (zi < 0) {
      for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < plane; i += blockDim.x * blockDim.y) p[i] = T(0);
    } else {
      load_tile(p, src, e, zi, y0, x0, blockDim.y, blockDim.x, r, r, border, Identity{});
    }
  }
  __syncthreads();
  const long long x = x0 + threadIdx.x;
  const long long y = y0 + threadIdx.y;
  if (x >= e.nx || y >= e.ny) return;
  T v[K * K * K];
#pragma unroll
  for (int d = 0; d < K; ++d)
#pragma unroll
    for (int i = 0; i < K; ++i)
#pragma unroll
      for (int j = 0; j < K; ++j) v[(d * K + i) * K + j] = tile[d * plane + (threadIdx.y + i) * pitch + threadIdx.x + j];
  dst[(z * e.ny + y) * e.nx + x] = forgetful_median(v);
}

template <class T, int K>
__global__ void __launch_bounds__(kMaxThreads) median2d_kernel(const T* src, T* dst, Extent e, int border, int rpt) {
  extern __shared__ unsigned char smem[];
  median2d_tile<T, K>(reinterpret_cast<T*>(smem), src, dst, e, border, rpt);
}
template <class T, int K>
__global__ void __launch_bounds__(kMaxThreads) median3d_kernel(const T* src, T* dst, Extent e, int border) {
  extern __shared__ unsigned char smem[];
  median3d_tile<T, K>(reinterpret_cast<T*>(smem), src, dst, e, border);
}

/// One packed strip per thread (u8/u16, K = 3 or 5).
template <class T, int K, int kRows>
__global__ void __launch_bounds__(kMaxThreads)
    median_packed_kernel(const T* src, T* dst, Extent e, int border, bool aligned) {
  const long long x0 = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * Strip<T>::kPixels;
  const long long y0 = (static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y) * kRows;
  if (x0 < e.nx && y0 < e.ny) median_strip<T, K, kRows>(src, dst, e, border, blockIdx.z, y0, x0, aligned);
}

/// One interleaved 3×3 strip per thread (u8/u16; fp16 keys for u8 when kHalfKeys).
template <class T, bool kHalfKeys, int kRows>
__global__ void __launch_bounds__(kMaxThreads)
    median3_interleaved_kernel(const T* src, T* dst, Extent e, int border, bool aligned) {
  constexpr int kPixels = InterleavedKeys<T, kHalfKeys>::kPixels;
  const long long x0 = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * kPixels;
  const long long y0 = (static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y) * kRows;
  if (x0 < e.nx && y0 < e.ny)
    median3_interleaved_strip<T, kHalfKeys, kRows>(src, dst, e, border, blockIdx.z, y0, x0, aligned);
}

/// One aligned 3×3 strip per thread (u8/u16; median3_aligned_rows's preconditions checked by the
/// launcher), in 32-bit indices; blockIdx.z: the plane.
template <class T, int kRows, int kBorder, int kSums>
__global__ void __launch_bounds__(128) median3_aligned_kernel(const T* src, T* dst, int nx, int ny) {
  constexpr int kPixels = InterleavedKeys<T, false>::kPixels;
  const int x0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * kPixels;
  const int y0 = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y) * kRows;
  weft::allow_next_grid();
  if (x0 >= nx || y0 >= ny) return;
  weft::wait_for_prior_grid();
  const std::size_t plane = static_cast<std::size_t>(blockIdx.z) * nx * ny;
  median3_aligned_rows<T, kRows, kBorder, kSums>(src + plane, dst + plane, nx, ny, y0, x0);
}

}  // namespace device

namespace {

using device::Method;
using device::parse_method;

[[noreturn]] void unknown_method(std::string_view name, std::string_view why) {
  throw ConfigError("median: method '" + std::string(name) + "' " + std::string(why));
}

/// 16-byte vector loads and stores need 16-byte aligned row starts.
bool rows_aligned(const void* in, const void* out, long long nx, std::size_t elem) {
  return reinterpret_cast<std::uintptr_t>(in) % 16 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0 &&
         (nx * static_cast<long long>(elem)) % 16 == 0;
}

/// Grid of strips (kPixels × rows outputs per thread), 32 strips wide; block rows halved from
/// `block_y` while the grid has fewer than two blocks per SM (small images).
struct StripGrid {
  dim3 grid, block;
};
StripGrid strip_grid(device::Extent e, int pixels, int rows, int block_y) {
  const long long strips_x = (e.nx + pixels - 1) / pixels;
  const long long strips_y = (e.ny + rows - 1) / rows;
  const long long blocks_x = (strips_x + 31) / 32;
  const int min_blocks = 2 * device::multiprocessor_count();
  while (block_y > 1 && blocks_x * ((strips_y + block_y - 1) / block_y) * e.slices < min_blocks) block_y /= 2;
  return {dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>((strips_y + block_y - 1) / block_y),
               static_cast<unsigned>(e.slices)),
          dim3(32, block_y)};
}

template <class T, int K, int kRows>  // T = u8 or u16, K = 3 or 5
void launch_packed(const void* in, void* out, device::Extent e, int border, cudaStream_t stream) {
  const StripGrid g = strip_grid(e, device::Strip<T>::kPixels, kRows, device::median_policy(90).packed_block_y);
  device::median_packed_kernel<T, K, kRows><<<g.grid, g.block, 0, stream>>>(
      static_cast<const T*>(in), static_cast<T*>(out), e, border, rows_aligned(in, out, e.nx, sizeof(T)));
  check_launch("median_packed_kernel", stream);
}

template <class T, bool kHalfKeys, int kRows>  // T = u8 or u16
void launch_interleaved(const void* in, void* out, device::Extent e, int border, cudaStream_t stream) {
  constexpr int pixels = device::InterleavedKeys<T, kHalfKeys>::kPixels;
  const StripGrid g = strip_grid(e, pixels, kRows, device::median_policy(90).packed_block_y);
  device::median3_interleaved_kernel<T, kHalfKeys, kRows><<<g.grid, g.block, 0, stream>>>(
      static_cast<const T*>(in), static_cast<T*>(out), e, border, rows_aligned(in, out, e.nx, sizeof(T)));
  check_launch("median3_interleaved_kernel", stream);
}

/// Whether median3_aligned_strip applies: whole 16-byte rows, aligned, planes under 2³¹ pixels of
/// at least 2 rows, clamp or mirror border.
bool aligned_applies(const void* in, const void* out, device::Extent e, std::size_t elem, int border) {
  return rows_aligned(in, out, e.nx, elem) && e.nx * e.ny < (1LL << 31) && e.ny >= 2 && border != device::kZero;
}

template <class T, int kRows, int kSums>  // T = u8 or u16
void launch_aligned(const void* in, void* out, device::Extent e, int border, cudaStream_t stream) {
  constexpr int pixels = device::InterleavedKeys<T, false>::kPixels;
  const StripGrid g = strip_grid(e, pixels, kRows, 4);  // 128 threads
  const int nx = static_cast<int>(e.nx), ny = static_cast<int>(e.ny);
  // Chained: its blocks take the SMs as the kernel before leaves them (bench/filters/NOTES.md).
  weft::launch_chained(border == device::kMirror ? device::median3_aligned_kernel<T, kRows, device::kMirror, kSums>
                                                 : device::median3_aligned_kernel<T, kRows, device::kClamp, kSums>,
                       g.grid, g.block, 0, stream, static_cast<const T*>(in), static_cast<T*>(out), nx, ny);
  check_launch("median3_aligned_kernel", stream);
}

template <class T, int kSums>
void launch_aligned_rows(int rows, const void* in, void* out, device::Extent e, int border, cudaStream_t s) {
  switch (rows) {
    case 2: return launch_aligned<T, 2, kSums>(in, out, e, border, s);
    case 4: return launch_aligned<T, 4, kSums>(in, out, e, border, s);
    case 6: return launch_aligned<T, 6, kSums>(in, out, e, border, s);
    default: return launch_aligned<T, 8, kSums>(in, out, e, border, s);
  }
}

/// The aligned strips' method kinds by their sums (device::kNoSums, kSumMedians, kSumColumns):
/// min/max only, the medians as sums, the columns' middle values too.
constexpr const char* kAlignedKinds[] = {"aligned", "sums", "sumc"};

/// The sums of an aligned strips' method kind; −1 for any other kind.
int aligned_sums(std::string_view kind) {
  for (int s = device::kNoSums; s <= device::kSumColumns; ++s)
    if (kind == kAlignedKinds[s]) return s;
  return -1;
}

template <class T, bool kHalfKeys>
void launch_interleaved_rows(int rows, const void* in, void* out, device::Extent e, int border, cudaStream_t s) {
  switch (rows) {
    case 1: return launch_interleaved<T, kHalfKeys, 1>(in, out, e, border, s);
    case 2: return launch_interleaved<T, kHalfKeys, 2>(in, out, e, border, s);
    case 4: return launch_interleaved<T, kHalfKeys, 4>(in, out, e, border, s);
    default: return launch_interleaved<T, kHalfKeys, 8>(in, out, e, border, s);
  }
}

template <class T, int K>
void launch_planar(const void* in, void* out, device::Extent e, int border, cudaStream_t stream) {
  constexpr int r = K / 2;
  const device::MedianPolicy p = device::median_policy(90);
  const int rows = p.block_y * p.rows_per_thread;
  const dim3 block(p.block_x, p.block_y);
  const dim3 grid(static_cast<unsigned>((e.nx + p.block_x - 1) / p.block_x),
                  static_cast<unsigned>((e.ny + rows - 1) / rows), static_cast<unsigned>(e.slices));
  const std::size_t shared = sizeof(T) * (rows + 2 * r) * (p.block_x + 2 * r);
  device::median2d_kernel<T, K><<<grid, block, shared, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), e,
                                                                 border, p.rows_per_thread);
  check_launch("median2d_kernel", stream);
}

template <class T, int K>  // K = 3 or 5
void launch_volume(const void* in, void* out, device::Extent e, int border, cudaStream_t stream) {
  constexpr int r = K / 2;
  const device::MedianPolicy p = device::median_policy(90);
  const dim3 block(p.block_x, p.block_y);
  const dim3 grid(static_cast<unsigned>((e.nx + p.block_x - 1) / p.block_x),
                  static_cast<unsigned>((e.ny + p.block_y - 1) / p.block_y), static_cast<unsigned>(e.slices));
  const std::size_t shared = sizeof(T) * K * (p.block_y + 2 * r) * (p.block_x + 2 * r);
  device::median3d_kernel<T, K><<<grid, block, shared, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), e,
                                                                 border);
  check_launch("median3d_kernel", stream);
}

template <class T>
void launch_sized(const void* in, void* out, device::Extent e, int size, bool volume, int border, cudaStream_t s,
                  std::string_view name) {
  if (volume) {
    if (!name.empty() && name != "tile") unknown_method(name, "does not exist for 3D medians (tile only)");
    if (size == 3) return launch_volume<T, 3>(in, out, e, border, s);
    return launch_volume<T, 5>(in, out, e, border, s);
  }
  constexpr device::MedianPolicy p = device::median_policy(90);
  Method m = parse_method(name);
  if (name.empty()) {  // the policy's choice
    m = {"tile"};
    const long long pixels = e.slices * e.ny * e.nx;
    const bool lanes = sizeof(T) <= 2;  // u8, u16: the packed and interleaved kernels
    if (lanes && size == 3 && p.aligned && aligned_applies(in, out, e, sizeof(T), border))
      m = {kAlignedKinds[p.aligned_sums], p.aligned_rows_for(pixels)};
    else if (lanes && size == 3 && p.interleaved)
      m = {p.interleaved_half_keys && sizeof(T) == 1 ? "half" : "dpx", p.interleaved_rows_for(pixels)};
    else if (lanes && size == 3 && p.packed)
      m = {"packed", p.packed_rows_3};
    else if (lanes && size == 5 && p.packed && pixels >= p.packed_5_min_pixels)
      m = {"packed", p.packed_rows_5};
  }
  if (m.kind == "tile" && m.rows == 0) {
    switch (size) {
      case 3: return launch_planar<T, 3>(in, out, e, border, s);
      case 5: return launch_planar<T, 5>(in, out, e, border, s);
      case 7: return launch_planar<T, 7>(in, out, e, border, s);
      default: return launch_planar<T, 9>(in, out, e, border, s);
    }
  }
  if constexpr (sizeof(T) <= 2) {
    if (m.kind == "packed" && size == 3 && (m.rows == 2 || m.rows == 4)) {
      if (m.rows == 2) return launch_packed<T, 3, 2>(in, out, e, border, s);
      return launch_packed<T, 3, 4>(in, out, e, border, s);
    }
    if (m.kind == "packed" && size == 5 && (m.rows == 1 || m.rows == 2 || m.rows == 4)) {
      if (m.rows == 1) return launch_packed<T, 5, 1>(in, out, e, border, s);
      if (m.rows == 2) return launch_packed<T, 5, 2>(in, out, e, border, s);
      return launch_packed<T, 5, 4>(in, out, e, border, s);
    }
    const int sums = aligned_sums(m.kind);
    if (sums >= 0 && size == 3 && (m.rows == 2 || m.rows == 4 || m.rows == 6 || m.rows == 8)) {
      if (!aligned_applies(in, out, e, sizeof(T), border))  // forced on an image it does not apply to
        return launch_interleaved_rows<T, false>(2, in, out, e, border, s);
      if (sums == device::kSumColumns) return launch_aligned_rows<T, device::kSumColumns>(m.rows, in, out, e, border, s);
      if (sums == device::kSumMedians) return launch_aligned_rows<T, device::kSumMedians>(m.rows, in, out, e, border, s);
      return launch_aligned_rows<T, device::kNoSums>(m.rows, in, out, e, border, s);
    }
    const bool interleaved_rows = m.rows == 1 || m.rows == 2 || m.rows == 4 || m.rows == 8;
    if (m.kind == "dpx" && size == 3 && interleaved_rows)
      return launch_interleaved_rows<T, false>(m.rows, in, out, e, border, s);
    if constexpr (sizeof(T) == 1)
      if (m.kind == "half" && size == 3 && interleaved_rows)
        return launch_interleaved_rows<T, true>(m.rows, in, out, e, border, s);
  }
  unknown_method(name, "does not exist for this size and element type (see median_methods)");
}

}  // namespace

void gpu::launch_median(const void* d_in, void* d_out, DType type, long long slices, long long ny, long long nx,
                        int size, bool volume, Border b, cudaStream_t stream, std::string_view method) {
  if (slices * ny * nx == 0) return;
  if ((volume && size != 3 && size != 5) || (!volume && (size < 3 || size > 9 || size % 2 == 0)))
    throw ConfigError("median: unsupported size " + std::to_string(size));
  const device::Extent e{slices, ny, nx};
  const int border = static_cast<int>(b);
  switch (type) {
    case DType::u8: return launch_sized<std::uint8_t>(d_in, d_out, e, size, volume, border, stream, method);
    case DType::u16: return launch_sized<std::uint16_t>(d_in, d_out, e, size, volume, border, stream, method);
    case DType::f32: return launch_sized<float>(d_in, d_out, e, size, volume, border, stream, method);
    default: throw ConfigError("median: element type " + std::string(dtype_name(type)) + " not supported");
  }
}

std::vector<std::string> gpu::median_methods(DType type, int size, bool volume) {
  std::vector<std::string> names{"tile"};
  if (volume || (type != DType::u8 && type != DType::u16)) return names;
  if (size == 3) {
    for (const char* n : {"packed2", "packed4", "dpx1", "dpx2", "dpx4", "dpx8", "aligned2", "aligned4", "aligned6",
                          "aligned8", "sums2", "sums4", "sums8", "sumc2", "sumc4", "sumc8"})
      names.emplace_back(n);
    if (type == DType::u8)
      for (const char* n : {"half1", "half2", "half4", "half8"}) names.emplace_back(n);
  } else if (size == 5) {
    for (const char* n : {"packed1", "packed2", "packed4"}) names.emplace_back(n);
  }
  return names;
}

}  // namespace weft::filters
