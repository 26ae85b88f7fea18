// launch_convolve_stream for one element type (see convolve_stream_launch.cuh).
#include "convolve_stream_launch.cuh"

namespace weft::filters::device {

template void launch_convolve_stream<std::uint16_t>(const std::uint16_t*, std::uint16_t*, Extent, const float*,
                                                    const float*, int, int, int, cudaStream_t);
template void launch_convolve_roll<std::uint16_t>(const std::uint16_t*, std::uint16_t*, Extent, const float*,
                                                  const float*, int, int, int, int, bool, cudaStream_t);

}  // namespace weft::filters::device
