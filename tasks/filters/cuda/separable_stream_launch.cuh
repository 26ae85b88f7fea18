#pragma once
// Launchers of the fused separable streaming convolutions (convolve_stream.cuh) up to radius
// kFusedMaxRadius, kRows = 4, 8 or 16 output rows per thread. Weights travel by value. Each
// element type is instantiated in its own separable_stream_<type>_gpu.cu (parallel compilation).
#include <cstdint>
#include <string>

#include "convolve_stream.cuh"
#include "filters_gpu.cuh"

namespace weft::filters {
namespace device {

template <int R, int kRows, class T>
__global__ void __launch_bounds__(32 * kStreamWarps) separable_stream_kernel(const T* src, T* dst, Extent e,
                                                                            const SeparableWeights<2 * R + 1> w,
                                                                            int border, bool aligned) {
  const StreamStrip s = stream_strip<R, kRows>(e, aligned);
  if (s.y0 >= e.ny) return;
  if (s.inside) separable_stream_strip<R, kRows, true>(src, dst, e, w, border, blockIdx.z, s.y0, s.xs, s.vector_store);
  else separable_stream_strip<R, kRows, false>(src, dst, e, w, border, blockIdx.z, s.y0, s.xs, s.vector_store);
}

}  // namespace device

namespace {

template <int R, int kRows, class T>
void separable_rows(const T* src, T* dst, device::Extent e, const float* h_row, const float* h_column, int border,
                    cudaStream_t stream) {
  constexpr int K = 2 * R + 1;
  device::SeparableWeights<K> w;
  for (int i = 0; i < K; ++i) w.row[i] = h_row[i], w.column[i] = h_column[i];
  const device::StreamLaunch l = device::stream_launch(src, dst, e, kRows);
  device::separable_stream_kernel<R, kRows><<<l.grid, l.block, 0, stream>>>(src, dst, e, w, border, l.aligned);
  check_launch("separable_stream_kernel", stream);
}

template <int R, class T>
void separable_radius(int rows, const T* src, T* dst, device::Extent e, const float* h_row, const float* h_column,
                      int border, cudaStream_t s) {
  switch (rows) {
    case 4: return separable_rows<R, 4>(src, dst, e, h_row, h_column, border, s);
    case 8: return separable_rows<R, 8>(src, dst, e, h_row, h_column, border, s);
    default: return separable_rows<R, 16>(src, dst, e, h_row, h_column, border, s);
  }
}

}  // namespace

namespace device {

template <class T>
void launch_separable_stream(const T* src, T* dst, Extent e, const float* h_row, const float* h_column, int ksize,
                             int rows, int border, cudaStream_t s) {
  static_assert(kFusedMaxRadius == 7, "instantiated for radius 0 .. 7");
  switch (ksize / 2) {
    case 0: return separable_radius<0>(rows, src, dst, e, h_row, h_column, border, s);
    case 1: return separable_radius<1>(rows, src, dst, e, h_row, h_column, border, s);
    case 2: return separable_radius<2>(rows, src, dst, e, h_row, h_column, border, s);
    case 3: return separable_radius<3>(rows, src, dst, e, h_row, h_column, border, s);
    case 4: return separable_radius<4>(rows, src, dst, e, h_row, h_column, border, s);
    case 5: return separable_radius<5>(rows, src, dst, e, h_row, h_column, border, s);
    case 6: return separable_radius<6>(rows, src, dst, e, h_row, h_column, border, s);
    case 7: return separable_radius<7>(rows, src, dst, e, h_row, h_column, border, s);
    default: throw ConfigError("convolve: the fused separable kernel takes sizes up to 15, not " + std::to_string(ksize));
  }
}
}  // namespace device
}  // namespace weft::filters
