// launch_separable_stream for one element type (see separable_stream_launch.cuh).
#include "separable_stream_launch.cuh"

namespace weft::filters::device {

template void launch_separable_stream<Half>(const Half*, Half*, Extent, const float*, const float*, int, int, int,
                                            cudaStream_t);

}  // namespace weft::filters::device
