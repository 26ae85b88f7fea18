// CUDA convolution: full kernels through a shared-memory tile with register blocking (each thread
// accumulates rows_per_thread outputs in fp32), separable kernels as a row pass into an fp32
// scratch image and a column pass; weights read from global memory (broadcast, cached). Small
// kernels go to the streaming kernels of convolve_stream_launch.cuh (weights by value). Methods are
// chosen by the policy (filters_gpu.cuh) or forced by name (benchmarks, tests).
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "filters_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/filters/cuda.hpp"

namespace weft::filters {
namespace device {

struct ToFloat {
  template <class T> __device__ float operator()(T v) const { return to_float(v); }
};

/// kRadius > 0: compile-time radius (loops unrolled); 0: `radius` at run time. kRows outputs per thread.
template <int kRadius, int kRows, class T>
__device__ void convolve_tile(float* tile, const T* __restrict__ src, T* __restrict__ dst, Extent e,
                              const float* __restrict__ weights, int radius, int border) {
  const int r = kRadius > 0 ? kRadius : radius;
  const int k = 2 * r + 1;
  const int rows = blockDim.y * kRows;
  const long long z = blockIdx.z;
  const long long y0 = static_cast<long long>(blockIdx.y) * rows;
  const long long x0 = static_cast<long long>(blockIdx.x) * blockDim.x;
  load_tile(tile, src, e, z, y0, x0, rows, blockDim.x, r, r, border, ToFloat{});
  __syncthreads();
  const int pitch = blockDim.x + 2 * r;
  float acc[kRows];
#pragma unroll
  for (int q = 0; q < kRows; ++q) acc[q] = 0.0f;
  // Output row ty = threadIdx.y + q·blockDim.y reads tile rows ty .. ty + 2r.
#pragma unroll(kRadius > 0 ? 2 * kRadius + 1 : 1)
  for (int i = 0; i < k; ++i) {
    float partial[kRows];  // one partial sum per kernel row: error grows with 2k, not k² terms
#pragma unroll
    for (int q = 0; q < kRows; ++q) partial[q] = 0.0f;
#pragma unroll(kRadius > 0 ? 2 * kRadius + 1 : 1)
    for (int j = 0; j < k; ++j) {
      const float w = __ldg(weights + i * k + j);
#pragma unroll
      for (int q = 0; q < kRows; ++q)
        partial[q] = fmaf(w, tile[(threadIdx.y + q * blockDim.y + i) * pitch + threadIdx.x + j], partial[q]);
    }
#pragma unroll
    for (int q = 0; q < kRows; ++q) acc[q] += partial[q];
  }
  const long long x = x0 + threadIdx.x;
  if (x >= e.nx) return;
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const long long y = y0 + threadIdx.y + q * blockDim.y;
    if (y < e.ny) dst[(z * e.ny + y) * e.nx + x] = from_float<T>(acc[q]);
  }
}

template <int kRadius, int kRows, class T>
__global__ void __launch_bounds__(kMaxThreads)
    convolve_kernel(const T* src, T* dst, Extent e, const float* weights, int radius, int border) {
  extern __shared__ float conv_smem[];
  convolve_tile<kRadius, kRows>(conv_smem, src, dst, e, weights, radius, border);
}

/// Float4 reads per tile row of the blocked kernel (kCols + 2r values) and the tile's row pitch.
template <int kRadius, int kCols> constexpr int kBlockedVectors = (kCols + 2 * kRadius + 3) / 4;
__host__ __device__ constexpr int blocked_pitch(int cols, int vectors) { return cols + 4 * (vectors - 1); }

/// Blocked full convolution (radius ≤ 3): each thread kCols × kRows outputs; per output one partial
/// sum per kernel row, added in kernel-row order as in convolve_tile.
template <int kRadius, int kRows, int kCols, class T>
__device__ void convolve_blocked_tile(float* tile, const T* __restrict__ src, T* __restrict__ dst, Extent e,
                                      const float* __restrict__ weights, int border, bool aligned) {
  constexpr int K = 2 * kRadius + 1;
  constexpr int kVectors = kBlockedVectors<kRadius, kCols>;
  const int cols = blockDim.x * kCols;
  const int rows = blockDim.y * kRows;
  const int pitch = blocked_pitch(cols, kVectors);
  const long long z = blockIdx.z;
  const long long y0 = static_cast<long long>(blockIdx.y) * rows;
  const long long x0 = static_cast<long long>(blockIdx.x) * cols;
  float w[K * K];
#pragma unroll
  for (int i = 0; i < K * K; ++i) w[i] = __ldg(weights + i);
  load_tile_pitched(tile, pitch, src, e, z, y0, x0, rows, cols, kRadius, kRadius, border, ToFloat{});
  __syncthreads();
  float acc[kRows][kCols];
#pragma unroll
  for (int q = 0; q < kRows; ++q)
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[q][c] = 0.0f;
  const float* base = tile + threadIdx.y * kRows * pitch + threadIdx.x * kCols;
#pragma unroll
  for (int iy = 0; iy < kRows + 2 * kRadius; ++iy) {
    float v[4 * kVectors];
#pragma unroll
    for (int m = 0; m < kVectors; ++m) {
      const float4 f = reinterpret_cast<const float4*>(base + iy * pitch)[m];
      v[4 * m] = f.x, v[4 * m + 1] = f.y, v[4 * m + 2] = f.z, v[4 * m + 3] = f.w;
    }
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      const int i = iy - q;  // kernel row of this input row for output row q
      if (i < 0 || i >= K) continue;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        float partial = 0.0f;
#pragma unroll
        for (int j = 0; j < K; ++j) partial = fmaf(w[i * K + j], v[c + j], partial);
        acc[q][c] += partial;
      }
    }
  }
  const long long x = x0 + threadIdx.x * kCols;
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const long long y = y0 + threadIdx.y * kRows + q;
    if (y >= e.ny || x >= e.nx) continue;
    T* out = dst + (z * e.ny + y) * e.nx + x;
    if constexpr (std::is_same_v<T, float> && kCols == 4) {
      if (aligned && x + 4 <= e.nx) {
        *reinterpret_cast<float4*>(out) = make_float4(acc[q][0], acc[q][1], acc[q][2], acc[q][3]);
        continue;
      }
    }
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (x + c < e.nx) out[c] = from_float<T>(acc[q][c]);
  }
}

template <int kRadius, int kRows, int kCols, class T>
__global__ void __launch_bounds__(kMaxThreads)
    convolve_blocked_kernel(const T* src, T* dst, Extent e, const float* weights, int border, bool aligned) {
  extern __shared__ float4 blocked_smem[];  // float4: the tile rows are read as float4
  convolve_blocked_tile<kRadius, kRows, kCols>(reinterpret_cast<float*>(blocked_smem), src, dst, e, weights, border,
                                               aligned);
}

/// Row pass: each thread kCols outputs spaced blockDim.x apart; writes fp32 scratch.
template <int kCols, class T>
__device__ void row_pass_tile(float* tile, const T* __restrict__ src, float* __restrict__ scratch, Extent e,
                              const float* __restrict__ weights, int r, int border) {
  const int cols = blockDim.x * kCols;
  const long long z = blockIdx.z;
  const long long y0 = static_cast<long long>(blockIdx.y) * blockDim.y;
  const long long x0 = static_cast<long long>(blockIdx.x) * cols;
  load_tile(tile, src, e, z, y0, x0, blockDim.y, cols, 0, r, border, ToFloat{});
  __syncthreads();
  const long long y = y0 + threadIdx.y;
  if (y >= e.ny) return;
  const int pitch = cols + 2 * r;
  const float* line = tile + threadIdx.y * pitch;
#pragma unroll
  for (int q = 0; q < kCols; ++q) {
    const int tx = threadIdx.x + q * blockDim.x;
    float acc = 0.0f;
    for (int j = 0; j <= 2 * r; ++j) acc = fmaf(__ldg(weights + j), line[tx + j], acc);
    const long long x = x0 + tx;
    if (x < e.nx) scratch[(z * e.ny + y) * e.nx + x] = acc;
  }
}

/// Column pass over the fp32 scratch image: each thread kRows outputs; writes T.
template <int kRows, class T>
__device__ void column_pass_tile(float* tile, const float* __restrict__ scratch, T* __restrict__ dst, Extent e,
                                 const float* __restrict__ weights, int r, int border) {
  const int rows = blockDim.y * kRows;
  const long long z = blockIdx.z;
  const long long y0 = static_cast<long long>(blockIdx.y) * rows;
  const long long x0 = static_cast<long long>(blockIdx.x) * blockDim.x;
  load_tile(tile, scratch, e, z, y0, x0, rows, blockDim.x, r, 0, border, [](float v) { return v; });
  __syncthreads();
  const long long x = x0 + threadIdx.x;
  if (x >= e.nx) return;
  const int pitch = blockDim.x;
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    const int ty = threadIdx.y + q * blockDim.y;
    float acc = 0.0f;
    for (int i = 0; i <= 2 * r; ++i) acc = fmaf(__ldg(weights + i), tile[(ty + i) * pitch + threadIdx.x], acc);
    const long long y = y0 + ty;
    if (y < e.ny) dst[(z * e.ny + y) * e.nx + x] = from_float<T>(acc);
  }
}

template <int kCols, class T>
__global__ void __launch_bounds__(kMaxThreads)
    row_pass_kernel(const T* src, float* scratch, Extent e, const float* weights, int r, int border) {
  extern __shared__ float conv_smem[];
  row_pass_tile<kCols>(conv_smem, src, scratch, e, weights, r, border);
}
template <int kRows, class T>
__global__ void __launch_bounds__(kMaxThreads)
    column_pass_kernel(const float* scratch, T* dst, Extent e, const float* weights, int r, int border) {
  extern __shared__ float conv_smem[];
  column_pass_tile<kRows>(conv_smem, scratch, dst, e, weights, r, border);
}

}  // namespace device

namespace {

constexpr int kConvRows = device::convolve_policy(90).rows_per_thread;
constexpr int kSepCols = device::separable_policy(90).columns_per_thread;
constexpr int kSepRows = device::separable_policy(90).rows_per_thread;

template <int kRadius, class T>
void convolve_blocked(const T* src, T* dst, device::Extent e, const float* w, int border, cudaStream_t stream) {
  constexpr device::ConvolvePolicy p = device::convolve_policy(90);
  constexpr int kCols = p.blocked_columns;
  constexpr int kRows = p.blocked_rows;
  const int cols = p.blocked_block_x * kCols;
  const int rows = p.blocked_block_y * kRows;
  const int pitch = device::blocked_pitch(cols, device::kBlockedVectors<kRadius, kCols>);
  const std::size_t shared = sizeof(float) * pitch * (rows + 2 * kRadius);  // r = 3: 21 KB
  const dim3 block(p.blocked_block_x, p.blocked_block_y);
  const dim3 grid(static_cast<unsigned>((e.nx + cols - 1) / cols), static_cast<unsigned>((e.ny + rows - 1) / rows),
                  static_cast<unsigned>(e.slices));
  const bool aligned = reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && e.nx % 4 == 0;  // float4 stores
  device::convolve_blocked_kernel<kRadius, kRows, kCols><<<grid, block, shared, stream>>>(src, dst, e, w, border, aligned);
  check_launch("convolve_blocked_kernel", stream);
}

/// The tile kernel with kRows outputs per thread ("tile": the policy's rows_per_thread; "tile1": one,
/// four times the threads, for small images where the grid does not fill the GPU). Radii up to 5
/// compile-time (loops unrolled); larger ones at run time.
template <int kRows, class T>
void convolve_tile_rows(const T* src, T* dst, device::Extent e, const float* d_w, int r, int border,
                        cudaStream_t stream) {
  constexpr device::ConvolvePolicy p = device::convolve_policy(90);
  const int rows = p.block_y * kRows;
  const dim3 block(p.block_x, p.block_y);
  const dim3 grid(static_cast<unsigned>((e.nx + p.block_x - 1) / p.block_x),
                  static_cast<unsigned>((e.ny + rows - 1) / rows), static_cast<unsigned>(e.slices));
  const std::size_t shared = sizeof(float) * (rows + 2 * r) * (p.block_x + 2 * r);
  // Largest tile (r = 31): 94 × 94 floats = 35 KB, under the 48 KB default: no opt-in needed.
  switch (r) {
    case 1: device::convolve_kernel<1, kRows><<<grid, block, shared, stream>>>(src, dst, e, d_w, r, border); break;
    case 2: device::convolve_kernel<2, kRows><<<grid, block, shared, stream>>>(src, dst, e, d_w, r, border); break;
    case 3: device::convolve_kernel<3, kRows><<<grid, block, shared, stream>>>(src, dst, e, d_w, r, border); break;
    case 4: device::convolve_kernel<4, kRows><<<grid, block, shared, stream>>>(src, dst, e, d_w, r, border); break;
    case 5: device::convolve_kernel<5, kRows><<<grid, block, shared, stream>>>(src, dst, e, d_w, r, border); break;
    default: device::convolve_kernel<0, kRows><<<grid, block, shared, stream>>>(src, dst, e, d_w, r, border); break;
  }
  check_launch("convolve_kernel", stream);
}

[[noreturn]] void unknown_method(std::string_view what, std::string_view name) {
  throw ConfigError(std::string(what) + ": method '" + std::string(name) +
                    "' does not exist for this size (see convolve_methods / separable_methods)");
}

template <class T>
void convolve_typed(const void* in, void* out, device::Extent e, const float* h_w, const float* d_w, int ksize,
                    int border, cudaStream_t stream, std::string_view name) {
  constexpr device::ConvolvePolicy p = device::convolve_policy(90);
  const int r = ksize / 2;
  const T* src = static_cast<const T*>(in);
  T* dst = static_cast<T*>(out);
  device::Method m = device::parse_method(name);
  if (name.empty()) {
    const device::ConvolveChoice c = p.method_for(ksize, e.slices * e.ny * e.nx, device::kTensorType<T>);
    m = {c.kind, c.rows};
  }
  if constexpr (device::kTensorType<T>)
    if (m.kind == "tensor" && (m.rows == 0 || m.rows == 1 || m.rows == 2 || m.rows == 4))
      return device::launch_convolve_tensor(src, dst, e, h_w, d_w, ksize, m.rows, border, stream);
  if (m.kind == "fft" && m.rows == 0) return device::launch_convolve_fft(src, dst, e, d_w, ksize, border, stream);
  if (m.kind == "stream" && (m.rows == 4 || m.rows == 8 || m.rows == 16) && r <= device::kStreamMaxRadius)
    return device::launch_convolve_stream(src, dst, e, h_w, d_w, ksize, m.rows, border, stream);
  // Rolling strips with rows ahead: roll 2 and rolls 1 in registers, rollq 3 in a shared-memory ring,
  // rollp the same with even strips paired (convolve_roll_pair_kernel).
  if ((m.kind == "roll" || m.kind == "rolls" || m.kind == "rollq" || m.kind == "rollp") && m.rows >= 0 &&
      r <= device::kStreamMaxRadius) {
    const int ahead = m.kind == "rolls" ? 1 : m.kind == "rollq" || m.kind == "rollp" ? 3 : 2;
    return device::launch_convolve_roll(src, dst, e, h_w, d_w, ksize, m.rows, ahead, border, m.kind == "rollp",
                                        stream);
  }
  if (m.kind == "blocked" && m.rows == 0 && r <= p.blocked_max_radius) {
    switch (r) {
      case 0: return convolve_blocked<0>(src, dst, e, d_w, border, stream);
      case 1: return convolve_blocked<1>(src, dst, e, d_w, border, stream);
      case 2: return convolve_blocked<2>(src, dst, e, d_w, border, stream);
      case 3: return convolve_blocked<3>(src, dst, e, d_w, border, stream);
      case 4: return convolve_blocked<4>(src, dst, e, d_w, border, stream);
      default: return convolve_blocked<5>(src, dst, e, d_w, border, stream);
    }
  }
  if (m.kind != "tile" || (m.rows != 0 && m.rows != 1)) unknown_method("convolve", name);
  if (m.rows == 1) return convolve_tile_rows<1>(src, dst, e, d_w, r, border, stream);
  return convolve_tile_rows<kConvRows>(src, dst, e, d_w, r, border, stream);
}

template <class T>
void separable_typed(const void* in, void* out, float* scratch, device::Extent e, const float* h_row,
                     const float* h_col, const float* row_w, const float* col_w, int ksize, int border,
                     cudaStream_t stream, std::string_view name) {
  const device::SeparablePolicy p = device::separable_policy(90);
  const int r = ksize / 2;
  device::Method m = device::parse_method(name);
  if (name.empty()) {
    const int rows = p.fused_rows_for(ksize, e.slices * e.ny * e.nx);
    m = rows ? device::Method{"fused", rows} : device::Method{"two_pass"};
  }
  if (m.kind == "fused" && (m.rows == 4 || m.rows == 8 || m.rows == 16) && r <= device::kFusedMaxRadius)
    return device::launch_separable_stream(static_cast<const T*>(in), static_cast<T*>(out), e, h_row, h_col, ksize,
                                           m.rows, border, stream);
  if (m.kind != "two_pass" || m.rows != 0) unknown_method("convolve_separable", name);
  if (scratch == nullptr) throw ConfigError("convolve_separable: the two-pass method needs a scratch image");
  const dim3 block(p.block_x, p.block_y);
  const int cols = p.block_x * kSepCols;
  const dim3 row_grid(static_cast<unsigned>((e.nx + cols - 1) / cols),
                      static_cast<unsigned>((e.ny + p.block_y - 1) / p.block_y), static_cast<unsigned>(e.slices));
  device::row_pass_kernel<kSepCols><<<row_grid, block, sizeof(float) * p.block_y * (cols + 2 * r), stream>>>(
      static_cast<const T*>(in), scratch, e, row_w, r, border);
  check_launch("row_pass_kernel", stream);
  const int rows = p.block_y * kSepRows;
  const dim3 col_grid(static_cast<unsigned>((e.nx + p.block_x - 1) / p.block_x),
                      static_cast<unsigned>((e.ny + rows - 1) / rows), static_cast<unsigned>(e.slices));
  device::column_pass_kernel<kSepRows><<<col_grid, block, sizeof(float) * (rows + 2 * r) * p.block_x, stream>>>(
      scratch, static_cast<T*>(out), e, col_w, r, border);
  check_launch("column_pass_kernel", stream);
}

template <class F> void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::f16: return f(Half{});
    case DType::f32: return f(float{});
    default: throw ConfigError("convolve: element type " + std::string(dtype_name(t)) + " not supported");
  }
}

}  // namespace

void gpu::launch_convolve(const void* d_in, void* d_out, DType type, long long slices, long long ny, long long nx,
                          const float* h_kernel, const float* d_kernel, int ksize, Border b, cudaStream_t stream,
                          std::string_view method) {
  if (ksize < 1 || ksize > 63 || ksize % 2 == 0) throw ConfigError("convolve: unsupported size " + std::to_string(ksize));
  if (slices * ny * nx == 0) return;
  dispatch(type, [&](auto tag) {
    convolve_typed<decltype(tag)>(d_in, d_out, {slices, ny, nx}, h_kernel, d_kernel, ksize, static_cast<int>(b), stream,
                                  method);
  });
}

void gpu::launch_convolve_separable(const void* d_in, void* d_out, float* d_scratch, DType type, long long slices,
                                    long long ny, long long nx, const float* h_row, const float* h_column,
                                    const float* d_row, const float* d_column, int ksize, Border b,
                                    cudaStream_t stream, std::string_view method) {
  if (ksize < 1 || ksize > 63 || ksize % 2 == 0) throw ConfigError("convolve: unsupported size " + std::to_string(ksize));
  if (slices * ny * nx == 0) return;
  dispatch(type, [&](auto tag) {
    separable_typed<decltype(tag)>(d_in, d_out, d_scratch, {slices, ny, nx}, h_row, h_column, d_row, d_column, ksize,
                                   static_cast<int>(b), stream, method);
  });
}

std::vector<std::string> gpu::convolve_methods(int ksize, DType type) {
  const int r = ksize / 2;
  std::vector<std::string> names{"tile", "tile1", "fft"};
  if (type == DType::u8 || type == DType::f16)
    for (const char* n : {"tensor1", "tensor2", "tensor4"}) names.emplace_back(n);  // "tensor": the default
  if (r <= device::convolve_policy(90).blocked_max_radius) names.emplace_back("blocked");
  if (r <= device::kStreamMaxRadius)
    for (const char* n : {"stream4", "stream8", "stream16", "roll", "rolls", "roll16", "rollq", "rollq4", "rollp"})
      names.emplace_back(n);
  return names;
}

std::vector<std::string> gpu::separable_methods(int ksize) {
  std::vector<std::string> names{"two_pass"};
  if (ksize / 2 <= device::kFusedMaxRadius)
    for (const char* n : {"fused4", "fused8", "fused16"}) names.emplace_back(n);
  return names;
}

bool gpu::separable_needs_scratch(int ksize, long long pixels) {
  return device::separable_policy(90).fused_rows_for(ksize, pixels) == 0;
}

}  // namespace weft::filters
