// Builds without CUDA: the GPU stages exist (tasks hold them) but are never reached, since the
// tasks report has_cuda() == false and the mapper refuses to place them on a GPU.
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {
[[noreturn]] void no_cuda() { throw Error("saliency: this build has no CUDA support"); }
}  // namespace
struct RetinaGpu::Plan {};
struct GaborGpu::Plan {};
RetinaGpu::RetinaGpu() = default;
RetinaGpu::~RetinaGpu() = default;
Array RetinaGpu::run(const Array&, int, void*) { no_cuda(); }
GaborGpu::GaborGpu(int first_orientation, int orientations) : first_(first_orientation), count_(orientations) {}
GaborGpu::~GaborGpu() = default;
Array GaborGpu::run(const Array&, int, void*) { no_cuda(); }
Interacted interactions_gpu(const std::vector<Array>&, int, void*) { no_cuda(); }
Array normalize_gpu(const Array&, const Array&, int, void*) { no_cuda(); }
Array motion_frame_gpu(const Array&, int, int, void*) { no_cuda(); }
Array dominant_motion_gpu(const Array&, const Array&, const MotionParams&, int, void*) { no_cuda(); }
Array compensate_gpu(const Array&, const Array&, const Array&, int, void*) { no_cuda(); }
Array temporal_median_gpu(const std::vector<Array>&, int, void*) { no_cuda(); }
Array dynamic_map_gpu(const Array&, std::int64_t, std::int64_t, int, int, void*) { no_cuda(); }
Array fusion_gpu(const Array&, const Array&, int, void*) { no_cuda(); }
Array upload_gpu(const Array&, int, void*) { no_cuda(); }
Array residual_flow_gpu(const Array&, const Array&, const MotionParams&, int, void*) { no_cuda(); }
}  // namespace weft::saliency
