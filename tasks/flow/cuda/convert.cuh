#pragma once
// Load/store conversions between storage types (float, __half, their pairs) and float math.
#include <cuda_fp16.h>

namespace weft::flow::device {

__device__ __forceinline__ float ld(float x) { return x; }
__device__ __forceinline__ float ld(__half x) { return __half2float(x); }
__device__ __forceinline__ float ld(unsigned char x) { return float(x); }
__device__ __forceinline__ float ld(unsigned short x) { return float(x); }
__device__ __forceinline__ float ld(double x) { return float(x); }
__device__ __forceinline__ float2 ld2(float2 x) { return x; }
__device__ __forceinline__ float2 ld2(__half2 x) { return __half22float2(x); }

template <class S> __device__ __forceinline__ S st(float x);
template <> __device__ __forceinline__ float st<float>(float x) { return x; }
template <> __device__ __forceinline__ __half st<__half>(float x) { return __float2half_rn(x); }
template <class P> __device__ __forceinline__ P st2(float a, float b);
template <> __device__ __forceinline__ float2 st2<float2>(float a, float b) { return make_float2(a, b); }
template <> __device__ __forceinline__ __half2 st2<__half2>(float a, float b) { return __floats2half2_rn(a, b); }

}  // namespace weft::flow::device
