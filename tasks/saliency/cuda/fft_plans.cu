// GPU stages of the static pathway over weft::Array: cuFFT plans cached per stage object and frame
// size (one R2C per frame; one batched C2R, cufftPlanMany, per Gabor group), buffers from the
// device pool ordered on the task's stream, everything enqueued on that stream.
#include <cufft.h>

#include <algorithm>
#include <string>

#include "static_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/saliency/static_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

void check_cufft(cufftResult code, const char* call) {
  if (code != CUFFT_SUCCESS)
    throw CudaError(std::string("cuFFT call ") + call + " failed with code " + std::to_string(static_cast<int>(code)),
                    static_cast<int>(code));
}
#define WEFT_SALIENCY_CUFFT(call) check_cufft((call), #call)

int compute_capability(int device) {
  int major = 0, minor = 0;
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

void check_on_device(const Array& a, int device, const char* stage) {
  if (a.memory() != Memory::on_device(device))
    throw Error(std::string(stage) + ": input is not on GPU " + std::to_string(device));
}

/// A cuFFT plan for one (device, size, batch); recreated when any of them changes.
struct CachedPlan {
  cufftHandle handle = 0;
  bool valid = false;
  int device = -1;
  std::int64_t h = 0, wf = 0;
  int batch = 0;
  ~CachedPlan() { reset(); }
  void reset() {
    if (valid) cufftDestroy(handle);
    valid = false;
  }
  bool matches(int d, std::int64_t hh, std::int64_t ww, int b) const {
    return valid && device == d && h == hh && wf == ww && batch == b;
  }
};

}  // namespace

struct RetinaGpu::Plan : CachedPlan {};
struct GaborGpu::Plan : CachedPlan {};

RetinaGpu::RetinaGpu() : plan_(new Plan) {}
RetinaGpu::~RetinaGpu() { delete plan_; }

Array RetinaGpu::run(const Array& frame, int device, void* stream) {
  if (frame.shape().ndim() != 2) throw ConfigError("retina: expected a 2D frame, got " + frame.shape().str());
  check_on_device(frame, device, "retina");
  float scale = 1.0f;
  if (frame.dtype() == DType::u8) scale = 1.0f / 255.0f;
  else if (frame.dtype() == DType::u16) scale = 1.0f / 65535.0f;
  else if (frame.dtype() != DType::f32)
    throw ConfigError("retina: frames must be u8, u16 or f32, got " + std::string(dtype_name(frame.dtype())));
  const auto s = static_cast<cudaStream_t>(stream);
  const std::int64_t h = frame.shape()[0], w = frame.shape()[1], wf = fft_width(w), wc = wf / 2 + 1;
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  const device::StaticPolicy policy = device::static_policy(compute_capability(device));
  Array windowed = Array::device(DType::f32, Shape(h, wf), device, stream);
  Array spectrum = Array::device(DType::f32, Shape(h, wc, 2), device, stream);
  device::launch_window(policy, frame.raw(), frame.dtype(), scale, h, w, wf, windowed.data<float>(), s);
  if (h * wf == 0) return spectrum;
  if (!plan_->matches(device, h, wf, 1)) {
    plan_->reset();
    // A single row is a 1D transform (cuFFT's 2D plans want both extents above 1).
    if (h == 1) WEFT_SALIENCY_CUFFT(cufftPlan1d(&plan_->handle, static_cast<int>(wf), CUFFT_R2C, 1));
    else WEFT_SALIENCY_CUFFT(cufftPlan2d(&plan_->handle, static_cast<int>(h), static_cast<int>(wf), CUFFT_R2C));
    plan_->valid = true;
    plan_->device = device;
    plan_->h = h;
    plan_->wf = wf;
    plan_->batch = 1;
  }
  WEFT_SALIENCY_CUFFT(cufftSetStream(plan_->handle, s));
  WEFT_SALIENCY_CUFFT(cufftExecR2C(plan_->handle, windowed.data<float>(), reinterpret_cast<cufftComplex*>(spectrum.raw())));
  return spectrum;
}

GaborGpu::GaborGpu(int first_orientation, int orientations)
    : first_(first_orientation), count_(orientations), plan_(new Plan) {
  if (first_ < 0 || count_ < 1 || first_ + count_ > kOrientations)
    throw ConfigError("gabor: orientations " + std::to_string(first_) + "+" + std::to_string(count_) + " outside 0.." +
                      std::to_string(kOrientations - 1));
}
GaborGpu::~GaborGpu() { delete plan_; }

Array GaborGpu::run(const Array& spectrum, int device, void* stream) {
  if (spectrum.dtype() != DType::f32 || spectrum.shape().ndim() != 3 || spectrum.shape()[2] != 2)
    throw ConfigError("gabor: expected a f32 [H, W/2+1, 2] spectrum, got " + spectrum.shape().str());
  check_on_device(spectrum, device, "gabor");
  const auto s = static_cast<cudaStream_t>(stream);
  const std::int64_t h = spectrum.shape()[0], wc = spectrum.shape()[1], wf = 2 * (wc - 1);
  const int batch = count_ * kBands;
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  const device::StaticPolicy policy = device::static_policy(compute_capability(device));
  Array filtered = Array::device(DType::f32, Shape(batch, h, wc * 2), device, stream);
  Array out = Array::device(DType::f32, Shape(batch, h, wf), device, stream);
  if (h * wf == 0) return out;
  // The inverse transforms are normalised here: the gains carry 1 / (H · Wf).
  device::launch_gabor(policy, static_cast<const float2*>(spectrum.raw()), h, wf, first_, count_,
                       1.0f / static_cast<float>(h * wf), static_cast<float2*>(filtered.raw()), s);
  if (!plan_->matches(device, h, wf, batch)) {
    plan_->reset();
    // A single row is a batch of 1D transforms (cuFFT's 2D plans want both extents above 1).
    const int rank = h == 1 ? 1 : 2;
    int n[2] = {static_cast<int>(h), static_cast<int>(wf)};
    int inembed[2] = {static_cast<int>(h), static_cast<int>(wc)};
    int onembed[2] = {static_cast<int>(h), static_cast<int>(wf)};
    const int skip = 2 - rank;
    WEFT_SALIENCY_CUFFT(cufftPlanMany(&plan_->handle, rank, n + skip, inembed + skip, 1, static_cast<int>(h * wc),
                                      onembed + skip, 1, static_cast<int>(h * wf), CUFFT_C2R, batch));
    plan_->valid = true;
    plan_->device = device;
    plan_->h = h;
    plan_->wf = wf;
    plan_->batch = batch;
  }
  WEFT_SALIENCY_CUFFT(cufftSetStream(plan_->handle, s));
  WEFT_SALIENCY_CUFFT(cufftExecC2R(plan_->handle, reinterpret_cast<cufftComplex*>(filtered.raw()), out.data<float>()));
  return out;
}

Interacted interactions_gpu(const std::vector<Array>& groups, int device, void* stream) {
  if (groups.empty() || kOrientations % static_cast<int>(groups.size()) != 0)
    throw ConfigError("interactions: expected 1, 2, 3 or 6 Gabor groups, got " + std::to_string(groups.size()));
  const Shape& s0 = groups[0].shape();
  const std::int64_t h = s0[1], w = s0[2];
  device::ResponsePlanes planes{};
  const int per_group = kMaps / static_cast<int>(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Array& a = groups[g];
    check_on_device(a, device, "interactions");
    if (a.dtype() != DType::f32 || a.shape().ndim() != 3 || a.shape()[0] != per_group ||
        a.shape()[1] != h || a.shape()[2] != w)
      throw ConfigError("interactions: group responses " + a.shape().str() + " do not match " + s0.str());
    for (int k = 0; k < per_group; ++k) planes.plane[static_cast<int>(g) * per_group + k] = a.data<float>() + k * h * w;
  }
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  const device::StaticPolicy policy = device::static_policy(compute_capability(device));
  Interacted r{Array::device(DType::f32, Shape(kMaps, h, w), device, stream),
               Array::device(DType::f64, Shape(kMaps, 3), device, stream)};
  Array partials = Array::device(
      DType::f32, Shape(std::max<std::int64_t>(1, device::stat_tiles(h) * device::stat_tiles(w)), 2 * kMaps), device,
      stream);
  device::launch_interactions(policy, planes, h, w, r.maps.data<float>(), partials.data<float>(),
                              r.stats.data<double>(), static_cast<cudaStream_t>(stream));
  return r;
}

Array normalize_gpu(const Array& maps, const Array& stats, int device, void* stream) {
  if (maps.dtype() != DType::f32 || maps.shape().ndim() != 3 || maps.shape()[0] != kMaps)
    throw ConfigError("normalize: expected f32 [24, H, W] maps, got " + maps.shape().str());
  if (stats.dtype() != DType::f64 || stats.size() != 3 * kMaps)
    throw ConfigError("normalize: expected f64 [24, 3] statistics, got " + stats.shape().str());
  check_on_device(maps, device, "normalize");
  check_on_device(stats, device, "normalize");
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  const device::StaticPolicy policy = device::static_policy(compute_capability(device));
  const std::int64_t h = maps.shape()[1], w = maps.shape()[2];
  Array out = Array::device(DType::f32, Shape(h, w), device, stream);
  device::launch_normalize(policy, maps.data<float>(), stats.data<double>(), h * w, out.data<float>(),
                           static_cast<cudaStream_t>(stream));
  return out;
}

}  // namespace weft::saliency
