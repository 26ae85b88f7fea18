// launch_convolve_stream_prefetch for f32 images (see convolve_stream_launch.cuh), in its own file so
// that nvcc compiles it beside the policy's streaming kernels.
#include "convolve_stream_launch.cuh"

namespace weft::filters::device {

template void launch_convolve_stream_prefetch<float>(StreamPrefetch, const float*, float*, Extent, const float*,
                                                     const float*, int, int, int, cudaStream_t);

}  // namespace weft::filters::device
