// CUDA distance transforms: x-rows by block scans (nearest seed left and right), y- and z-lines
// one thread each with the per-line math shared with the CPU (line_transforms.hpp).
// Erosion distances are i32; the per-size dilations of octahedra and cubes run on u16 (half the
// traffic), cubes as three separable window passes without envelope stacks.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "distance_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/morphology/line_transforms.hpp"

namespace weft::morphology::cuda {
namespace device {

using weft::morphology::device::kInfinity;

struct MaxOp {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};
struct MinOp {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

/// What a column pass does to each line.
enum class LineOp : int { cone, window, parabola, chessboard };

__device__ __forceinline__ bool is_seed(const SeedRule& s, std::int64_t i) {
  return s.mask ? s.mask[i] == 0 : s.distance[i] > s.above;
}

template <class T>
__device__ __forceinline__ T saturate(std::int64_t d, T inf) {
  return d >= static_cast<std::int64_t>(inf) ? inf : static_cast<T>(d);
}

/// One x-row: f[i] = |i − nearest seed| (squared for balls), `inf` if the row has no seed. The
/// forward scan stores the distance to the nearest seed on the left, the backward scan combines
/// it with the nearest seed on the right.
template <class Policy, class Scan, class T>
__device__ void row_distance_tile(const SeedRule& seeds, std::int64_t first, int n, bool squared, T inf, T* f,
                                  typename Scan::TempStorage& temp) {
  constexpr int kTile = Policy::kRowThreads * Policy::kRowItems;
  int carry = -kInfinity;
  for (int base = 0; base < n; base += kTile) {
    int items[Policy::kRowItems];
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int i = base + threadIdx.x * Policy::kRowItems + j;
      items[j] = (i < n && is_seed(seeds, first + i)) ? i : -kInfinity;
    }
    int aggregate = 0;
    Scan(temp).InclusiveScan(items, items, MaxOp{}, aggregate);
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int i = base + threadIdx.x * Policy::kRowItems + j;
      const int left = items[j] > carry ? items[j] : carry;
      if (i < n) f[first + i] = left > -kInfinity ? saturate<T>(i - left, inf) : inf;
    }
    carry = aggregate > carry ? aggregate : carry;
    __syncthreads();
  }
  carry = kInfinity;
  for (int base = 0; base < n; base += kTile) {
    int items[Policy::kRowItems];
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int q = base + threadIdx.x * Policy::kRowItems + j;
      const int i = n - 1 - q;
      items[j] = (q < n && is_seed(seeds, first + i)) ? i : kInfinity;
    }
    int aggregate = 0;
    Scan(temp).InclusiveScan(items, items, MinOp{}, aggregate);
    for (int j = 0; j < Policy::kRowItems; ++j) {
      const int q = base + threadIdx.x * Policy::kRowItems + j;
      if (q >= n) continue;
      const int i = n - 1 - q;
      const int right = items[j] < carry ? items[j] : carry;
      const T left = f[first + i];
      std::int64_t d = left >= inf ? std::int64_t{kInfinity} : static_cast<std::int64_t>(left);
      if (right < kInfinity && right - i < d) d = right - i;
      f[first + i] = d >= static_cast<std::int64_t>(inf) ? inf : saturate<T>(squared ? d * d : d, inf);
    }
    carry = aggregate < carry ? aggregate : carry;
    __syncthreads();
  }
}

/// One y- or z-line.
template <LineOp Op, class T>
__device__ __forceinline__ void column_line(T* line, std::int64_t stride, int n, T inf, std::int64_t r,
                                            void* stack_storage, std::int64_t l, std::int64_t lines) {
  T* stacks = static_cast<T*>(stack_storage);  // positions and values, both of type T
  namespace line_math = weft::morphology::device;
  if constexpr (Op == LineOp::cone) {
    line_math::cone_line(line, stride, n, inf);
  } else if constexpr (Op == LineOp::window) {
    line_math::window_line(line, stride, n, inf, r);
  } else if constexpr (Op == LineOp::parabola) {
    line_math::envelope_line<line_math::Parabola>(line, stride, n, inf, stacks + l, stacks + lines * n + l,
                                                  stacks + 2 * lines * n + l, lines);
  } else {
    line_math::envelope_line<line_math::Chessboard>(line, stride, n, inf, stacks + l, stacks + lines * n + l,
                                                    stacks + 2 * lines * n + l, lines);
  }
}

}  // namespace device

namespace {

using weft::morphology::device::kInfinity;
using device::LineOp;

template <class Policy, class T>
__global__ __launch_bounds__(Policy::kRowThreads) void row_distance_kernel(SeedRule seeds, T* f, std::int64_t rows,
                                                                          int n, bool squared, T inf) {
  using Scan = cub::BlockScan<int, Policy::kRowThreads>;
  __shared__ typename Scan::TempStorage temp;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    device::row_distance_tile<Policy, Scan>(seeds, row * n, n, squared, inf, f, temp);
}

/// Lines of the y axis (inner = X, outer = Y·X) or the z axis (inner = Y·X): one thread per line.
template <class Policy, LineOp Op, class T>
__global__ __launch_bounds__(Policy::kColumnThreads) void column_distance_kernel(
    T* f, std::int64_t lines, std::int64_t inner, std::int64_t outer, std::int64_t stride, int n, T inf,
    std::int64_t r, void* stacks) {
  for (std::int64_t l = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += std::int64_t(gridDim.x) * blockDim.x)
    device::column_line<Op>(f + (l / inner) * outer + l % inner, stride, n, inf, r, stacks, l, lines);
}

template <class Policy, class T>
__global__ __launch_bounds__(Policy::kReduceThreads) void count_within_kernel(const T* f, std::int64_t voxels,
                                                                             std::int64_t r, std::int32_t* size_map,
                                                                             int n, unsigned long long* count) {
  using Reduce = cub::BlockReduce<unsigned long long, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  unsigned long long c = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (static_cast<std::int64_t>(f[i]) <= r) {
      ++c;
      if (size_map) size_map[i] = n;
    }
  }
  const unsigned long long total = Reduce(temp).Sum(c);
  if (threadIdx.x == 0 && total) atomicAdd(count, total);
}

template <class Policy>
__global__ __launch_bounds__(Policy::kReduceThreads) void count_mask_kernel(const std::uint8_t* mask,
                                                                           std::int64_t voxels,
                                                                           std::int32_t* size_map,
                                                                           unsigned long long* count) {
  using Reduce = cub::BlockReduce<unsigned long long, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  unsigned long long c = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const bool fg = mask[i] != 0;
    c += fg;
    if (size_map) size_map[i] = fg ? 0 : -1;
  }
  const unsigned long long total = Reduce(temp).Sum(c);
  if (threadIdx.x == 0 && total) atomicAdd(count, total);
}

template <class Policy>
__global__ __launch_bounds__(Policy::kReduceThreads) void max_kernel(const std::int32_t* f, std::int64_t voxels,
                                                                    int* maximum) {
  using Reduce = cub::BlockReduce<int, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  int m = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x)
    m = f[i] > m ? f[i] : m;
  const int best = Reduce(temp).Reduce(m, device::MaxOp{});
  if (threadIdx.x == 0) atomicMax(maximum, best);
}

unsigned grid_for(std::int64_t work, int threads) {
  const std::int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

template <LineOp Op, class T>
void launch_column(T* f, const VolumeDims& d, int axis, T inf, std::int64_t r, void* stacks, cudaStream_t stream) {
  using P = DistancePolicy;
  const std::int64_t lines = axis == 1 ? d.z * d.x : d.y * d.x;
  const std::int64_t inner = axis == 1 ? d.x : d.y * d.x;
  const std::int64_t outer = axis == 1 ? d.y * d.x : 0;
  const std::int64_t stride = axis == 1 ? d.x : d.y * d.x;
  const int n = static_cast<int>(axis == 1 ? d.y : d.z);
  column_distance_kernel<P, Op, T><<<grid_for(lines, P::kColumnThreads), P::kColumnThreads, 0, stream>>>(
      f, lines, inner, outer, stride, n, inf, r, stacks);
  check_launch(axis == 1 ? "column_distance_kernel(y)" : "column_distance_kernel(z)", stream);
}

template <class T>
void launch_rows(const SeedRule& seeds, T* f, const VolumeDims& d, bool squared, T inf, cudaStream_t stream) {
  using P = DistancePolicy;
  const std::int64_t rows = d.z * d.y;
  row_distance_kernel<P, T><<<grid_for(rows, 1), P::kRowThreads, 0, stream>>>(seeds, f, rows, static_cast<int>(d.x),
                                                                              squared, inf);
  check_launch("row_distance_kernel", stream);
}

}  // namespace

void launch_distance_transform(const SeedRule& seeds, std::int32_t* f, std::int32_t* stacks, const VolumeDims& d,
                               Element element, cudaStream_t stream) {
  if (d.voxels() == 0) return;
  launch_rows<std::int32_t>(seeds, f, d, element == Element::ball, kInfinity, stream);
  for (int axis = 1; axis >= 0; --axis) {
    if (element == Element::octahedron) launch_column<LineOp::cone, std::int32_t>(f, d, axis, kInfinity, 0, stacks, stream);
    else if (element == Element::ball) launch_column<LineOp::parabola, std::int32_t>(f, d, axis, kInfinity, 0, stacks, stream);
    else launch_column<LineOp::chessboard, std::int32_t>(f, d, axis, kInfinity, 0, stacks, stream);
  }
}

void launch_opening_count(const std::int32_t* distance, std::int64_t r, void* work, std::int32_t* stacks,
                          const VolumeDims& d, Element element, std::int32_t* size_map, int n,
                          unsigned long long* count, cudaStream_t stream) {
  using P = DistancePolicy;
  if (d.voxels() == 0) return;
  const SeedRule seeds{nullptr, distance, r};
  const unsigned grid = grid_for(d.voxels(), P::kReduceThreads * 8);
  constexpr std::uint16_t kInf = 0xFFFF;
  if (element == Element::ball && r >= kInf) {  // radius ≥ 256: i32 squared distances
    auto* f = static_cast<std::int32_t*>(work);
    launch_distance_transform(seeds, f, stacks, d, element, stream);
    count_within_kernel<P, std::int32_t><<<grid, P::kReduceThreads, 0, stream>>>(f, d.voxels(), r, size_map, n, count);
  } else if (element == Element::ball) {
    // Only squared distances ≤ r matter, so u16 values and u16 envelope stacks (positions < 65536)
    // give the same threshold with half the traffic.
    auto* f = static_cast<std::uint16_t*>(work);
    launch_rows<std::uint16_t>(seeds, f, d, true, kInf, stream);
    for (int axis = 1; axis >= 0; --axis)
      launch_column<LineOp::parabola, std::uint16_t>(f, d, axis, kInf, r, stacks, stream);
    count_within_kernel<P, std::uint16_t><<<grid, P::kReduceThreads, 0, stream>>>(f, d.voxels(), r, size_map, n, count);
  } else {
    auto* f = static_cast<std::uint16_t*>(work);
    launch_rows<std::uint16_t>(seeds, f, d, false, kInf, stream);
    for (int axis = 1; axis >= 0; --axis) {
      if (element == Element::octahedron) launch_column<LineOp::cone, std::uint16_t>(f, d, axis, kInf, r, nullptr, stream);
      else launch_column<LineOp::window, std::uint16_t>(f, d, axis, kInf, r, nullptr, stream);
    }
    count_within_kernel<P, std::uint16_t><<<grid, P::kReduceThreads, 0, stream>>>(f, d.voxels(), r, size_map, n, count);
  }
  check_launch("count_within_kernel", stream);
}

void launch_count_mask(const std::uint8_t* mask, std::int64_t voxels, std::int32_t* size_map,
                       unsigned long long* count, cudaStream_t stream) {
  using P = DistancePolicy;
  count_mask_kernel<P><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(mask, voxels,
                                                                                                 size_map, count);
  check_launch("count_mask_kernel", stream);
}

void launch_max(const std::int32_t* f, std::int64_t voxels, int* maximum, cudaStream_t stream) {
  using P = DistancePolicy;
  max_kernel<P><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(f, voxels, maximum);
  check_launch("max_kernel", stream);
}

}  // namespace weft::morphology::cuda
