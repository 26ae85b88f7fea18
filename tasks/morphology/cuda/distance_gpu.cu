// CUDA distance transforms: x-rows by block scans (nearest seed left and right), y- and z-lines
// one thread each with the per-line math shared with the CPU (line_transforms.hpp).
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

__device__ __forceinline__ bool is_seed(const SeedRule& s, std::int64_t i) {
  return s.mask ? s.mask[i] == 0 : s.distance[i] > s.above;
}

/// One x-row: f[i] = |i − nearest seed| (squared for balls). Forward scan stores the nearest seed
/// on the left in f, backward scan combines it with the nearest seed on the right.
template <class Policy, class Scan>
__device__ void row_distance_tile(const SeedRule& seeds, std::int64_t first, int n, bool squared, std::int32_t* f,
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
      if (i < n) f[first + i] = items[j] > carry ? items[j] : carry;
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
      const int left = f[first + i];
      int d = kInfinity;
      if (left > -kInfinity) d = i - left;
      if (right < kInfinity && right - i < d) d = right - i;
      f[first + i] = (d < kInfinity && squared) ? d * d : d;
    }
    carry = aggregate < carry ? aggregate : carry;
    __syncthreads();
  }
}

}  // namespace device

namespace {

using weft::morphology::device::kInfinity;

template <class Policy>
__global__ __launch_bounds__(Policy::kRowThreads) void row_distance_kernel(SeedRule seeds, std::int32_t* f,
                                                                          std::int64_t rows, int n, bool squared) {
  using Scan = cub::BlockScan<int, Policy::kRowThreads>;
  __shared__ typename Scan::TempStorage temp;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    device::row_distance_tile<Policy, Scan>(seeds, row * n, n, squared, f, temp);
}

/// Lines of the y axis (inner = X, outer = Y·X) or the z axis (inner = Y·X): one thread per line.
template <class Policy>
__global__ __launch_bounds__(Policy::kColumnThreads) void column_distance_kernel(
    std::int32_t* f, std::int64_t lines, std::int64_t inner, std::int64_t outer, std::int64_t stride, int n,
    Element element, std::int32_t* stacks) {
  for (std::int64_t l = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += std::int64_t(gridDim.x) * blockDim.x) {
    std::int32_t* line = f + (l / inner) * outer + l % inner;
    if (element == Element::octahedron) {
      weft::morphology::device::cone_line(line, stride, n);
    } else if (element == Element::ball) {
      weft::morphology::device::envelope_line<weft::morphology::device::Parabola>(
          line, stride, n, stacks + l, stacks + lines * n + l, stacks + 2 * lines * n + l, lines);
    } else {
      weft::morphology::device::envelope_line<weft::morphology::device::Chessboard>(
          line, stride, n, stacks + l, stacks + lines * n + l, stacks + 2 * lines * n + l, lines);
    }
  }
}

template <class Policy>
__global__ __launch_bounds__(Policy::kReduceThreads) void count_within_kernel(const std::int32_t* f,
                                                                             std::int64_t voxels, std::int64_t r,
                                                                             std::int32_t* size_map, int n,
                                                                             unsigned long long* count) {
  using Reduce = cub::BlockReduce<unsigned long long, Policy::kReduceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  unsigned long long c = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < voxels;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if (f[i] <= r) {
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

}  // namespace

void launch_distance_transform(const SeedRule& seeds, std::int32_t* f, std::int32_t* stacks, const VolumeDims& d,
                               Element element, cudaStream_t stream) {
  using P = DistancePolicy;
  if (d.voxels() == 0) return;
  const std::int64_t rows = d.z * d.y;
  row_distance_kernel<P><<<grid_for(rows, 1), P::kRowThreads, 0, stream>>>(seeds, f, rows, static_cast<int>(d.x),
                                                                           element == Element::ball);
  check_launch("row_distance_kernel", stream);
  const std::int64_t y_lines = d.z * d.x;
  column_distance_kernel<P><<<grid_for(y_lines, P::kColumnThreads), P::kColumnThreads, 0, stream>>>(
      f, y_lines, d.x, d.y * d.x, d.x, static_cast<int>(d.y), element, stacks);
  check_launch("column_distance_kernel(y)", stream);
  const std::int64_t z_lines = d.y * d.x;
  column_distance_kernel<P><<<grid_for(z_lines, P::kColumnThreads), P::kColumnThreads, 0, stream>>>(
      f, z_lines, z_lines, 0, z_lines, static_cast<int>(d.z), element, stacks);
  check_launch("column_distance_kernel(z)", stream);
}

void launch_count_within(const std::int32_t* f, std::int64_t voxels, std::int64_t r, std::int32_t* size_map, int n,
                         unsigned long long* count, cudaStream_t stream) {
  using P = DistancePolicy;
  count_within_kernel<P><<<grid_for(voxels, P::kReduceThreads * 8), P::kReduceThreads, 0, stream>>>(
      f, voxels, r, size_map, n, count);
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
