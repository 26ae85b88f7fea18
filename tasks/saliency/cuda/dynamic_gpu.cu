// GPU stages of the dynamic pathway and the fusion over weft::Array: buffers from the device pool
// ordered on the task's stream, everything enqueued on that stream, no synchronisation.
#include <string>
#include <vector>

#include "dynamic_gpu.cuh"
#include "weft/cuda.hpp"
#include "weft/tasks/flow/flow.hpp"
#include "weft/tasks/saliency/dynamic_pathway.hpp"
#include "weft/util/error.hpp"

namespace weft::saliency {
namespace {

int compute_capability(int device) {
  int major = 0, minor = 0;
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}
device::DynamicPolicy policy_on(int device) {
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  return device::dynamic_policy(compute_capability(device));
}
void check_on_device(const Array& a, int device, const char* stage) {
  if (a.memory() != Memory::on_device(device))
    throw Error(std::string(stage) + ": input is not on GPU " + std::to_string(device));
}
void check_plane(const Array& a, int device, const char* stage) {
  if (a.dtype() != DType::f32 || a.shape().ndim() != 2)
    throw ConfigError(std::string(stage) + ": expected f32 [H, W], got " + std::string(dtype_name(a.dtype())) + " " +
                      a.shape().str());
  check_on_device(a, device, stage);
}
void check_scale(int k, const char* stage) {
  if (k != 1 && k != 2 && k != 4 && k != 8)
    throw ConfigError(std::string(stage) + ": working resolution divisor must be 1, 2, 4 or 8, got " + std::to_string(k));
}

}  // namespace

Array upload_gpu(const Array& host, int device, void* stream) {
  WEFT_CUDA_CHECK(cudaSetDevice(device));
  Array d = Array::device(host.dtype(), host.shape(), device, stream);
  if (host.bytes() > 0)
    WEFT_CUDA_CHECK(cudaMemcpyAsync(d.raw(), host.raw(), host.bytes(), cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
  return d;
}

Array motion_frame_gpu(const Array& frame, int k, int device, void* stream) {
  check_scale(k, "motion input");
  if (frame.shape().ndim() != 2) throw ConfigError("motion input: expected a 2D frame, got " + frame.shape().str());
  check_on_device(frame, device, "motion input");
  float scale = 1.0f;
  if (frame.dtype() == DType::u8) scale = 1.0f / 255.0f;
  else if (frame.dtype() == DType::u16) scale = 1.0f / 65535.0f;
  else if (frame.dtype() != DType::f32)
    throw ConfigError("motion input: frames must be u8, u16 or f32, got " + std::string(dtype_name(frame.dtype())));
  const device::DynamicPolicy p = policy_on(device);
  const std::int64_t rows = frame.shape()[0], cols = frame.shape()[1];
  const std::int64_t h = working_extent(rows, k), w = working_extent(cols, k);
  Array out = Array::device(DType::f32, Shape(h, w), device, stream);
  device::launch_motion_frame(p, frame.raw(), frame.dtype(), scale, rows, cols, k, h, w, out.data<float>(),
                              static_cast<cudaStream_t>(stream));
  return out;
}

Array dominant_motion_gpu(const Array& cur, const Array& prev, const MotionParams& params, int device, void* stream) {
  check_plane(cur, device, "dominant motion");
  check_plane(prev, device, "dominant motion");
  if (cur.shape() != prev.shape())
    throw ConfigError("dominant motion: frames " + cur.shape().str() + " and " + prev.shape().str() + " differ");
  const device::DynamicPolicy p = policy_on(device);
  const auto s = static_cast<cudaStream_t>(stream);
  const std::int64_t h0 = cur.shape()[0], w0 = cur.shape()[1];
  // Pyramid (level 0 is the input), sizes as dominant_motion_cpu.
  std::vector<Array> c{cur}, q{prev};
  std::vector<std::int64_t> hs{h0}, ws{w0};
  while (static_cast<int>(c.size()) < params.levels && hs.back() / 2 >= kMinLevelSide && ws.back() / 2 >= kMinLevelSide) {
    const std::int64_t h = hs.back() / 2, w = ws.back() / 2;
    c.push_back(Array::device(DType::f32, Shape(h, w), device, stream));
    q.push_back(Array::device(DType::f32, Shape(h, w), device, stream));
    device::launch_half_size(p, c[c.size() - 2].data<float>(), hs.back(), ws.back(), c.back().data<float>(), s);
    device::launch_half_size(p, q[q.size() - 2].data<float>(), hs.back(), ws.back(), q.back().data<float>(), s);
    hs.push_back(h);
    ws.push_back(w);
  }
  Array theta = Array::device(DType::f64, Shape(kAffineParams), device, stream);
  Array sigma = Array::device(DType::f64, Shape(1), device, stream);
  Array hist = Array::device(DType::i32, Shape(kResidualBins + 1), device, stream);
  Array partials = Array::device(DType::f32, Shape(device::affine_blocks(p, h0, w0), kAffineSums), device, stream);
  WEFT_CUDA_CHECK(cudaMemsetAsync(theta.raw(), 0, theta.bytes(), s));
  WEFT_CUDA_CHECK(cudaMemsetAsync(sigma.raw(), 0, sigma.bytes(), s));  // 0: least squares first
  WEFT_CUDA_CHECK(cudaMemsetAsync(hist.raw(), 0, hist.bytes(), s));
  for (int level = static_cast<int>(c.size()) - 1; level >= 0; --level)
    for (int it = 0; it < params.iterations; ++it)
      device::launch_affine_step(p, c[level].data<float>(), q[level].data<float>(), hs[level], ws[level],
                                 affine_frame(h0, w0, level), theta.data<double>(), sigma.data<double>(),
                                 static_cast<unsigned*>(hist.raw()), partials.data<float>(), s);
  return theta;
}

Array compensate_gpu(const Array& cur, const Array& prev, const Array& theta, int device, void* stream) {
  check_plane(cur, device, "compensate");
  check_plane(prev, device, "compensate");
  if (cur.shape() != prev.shape())
    throw ConfigError("compensate: frames " + cur.shape().str() + " and " + prev.shape().str() + " differ");
  if (theta.dtype() != DType::f64 || theta.size() != kAffineParams)
    throw ConfigError("compensate: expected f64 [6] affine parameters, got " + theta.shape().str());
  check_on_device(theta, device, "compensate");
  const device::DynamicPolicy p = policy_on(device);
  const std::int64_t h = prev.shape()[0], w = prev.shape()[1];
  Array out = Array::device(DType::f32, Shape(h, w), device, stream);
  device::launch_compensate(p, cur.data<float>(), prev.data<float>(), h, w, theta.data<double>(), out.data<float>(),
                            static_cast<cudaStream_t>(stream));
  return out;
}

Array temporal_median_gpu(const std::vector<Array>& flows, int device, void* stream) {
  if (flows.empty() || flows.size() > static_cast<std::size_t>(kMaxMedianFrames))
    throw ConfigError("temporal median: expected 1 to 9 flows, got " + std::to_string(flows.size()));
  const Shape& shape = flows[0].shape();
  device::FlowPlanes planes{};
  planes.count = static_cast<int>(flows.size());
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const Array& f = flows[i];
    if (f.dtype() != DType::f32 || f.shape().ndim() != 3 || f.shape()[2] != 2 || f.shape() != shape)
      throw ConfigError("temporal median: expected f32 [H, W, 2] flows of one shape, got " + f.shape().str());
    check_on_device(f, device, "temporal median");
    planes.flow[i] = f.data<float>();
  }
  const device::DynamicPolicy p = policy_on(device);
  Array out = Array::device(DType::f32, Shape(shape[0], shape[1]), device, stream);
  device::launch_temporal_median(p, planes, shape[0] * shape[1], out.data<float>(), static_cast<cudaStream_t>(stream));
  return out;
}

Array dynamic_map_gpu(const Array& median, std::int64_t height, std::int64_t width, int k, int device, void* stream) {
  check_plane(median, device, "dynamic map");
  check_scale(k, "dynamic map");
  const device::DynamicPolicy p = policy_on(device);
  const std::int64_t h = median.shape()[0], w = median.shape()[1];
  Array partials = Array::device(DType::f32, Shape(std::max<std::int64_t>(1, device::dynamic_tiles(h, w)), 2), device, stream);
  Array norm = Array::device(DType::f32, Shape(3), device, stream);
  Array out = Array::device(DType::f32, Shape(height, width), device, stream);
  device::launch_dynamic_map(p, median.data<float>(), h, w, k, height, width, partials.data<float>(),
                             norm.data<float>(), out.data<float>(), static_cast<cudaStream_t>(stream));
  return out;
}

Array fusion_gpu(const Array& static_map, const Array& dynamic_map, int device, void* stream) {
  check_plane(static_map, device, "fusion");
  check_plane(dynamic_map, device, "fusion");
  const std::int64_t h = dynamic_map.shape()[0], w = dynamic_map.shape()[1], ws = static_map.shape()[1];
  if (static_map.shape()[0] != h || ws < w)
    throw ConfigError("fusion: static map " + static_map.shape().str() + " does not cover the dynamic map " +
                      dynamic_map.shape().str());
  const device::DynamicPolicy p = policy_on(device);
  Array partials = Array::device(DType::f64, Shape(p.reduce_blocks, 4), device, stream);
  Array weights = Array::device(DType::f32, Shape(2), device, stream);
  Array out = Array::device(DType::f32, Shape(h, w), device, stream);
  device::launch_fusion(p, static_map.data<float>(), ws, dynamic_map.data<float>(), h, w, partials.data<double>(),
                        weights.data<float>(), out.data<float>(), static_cast<cudaStream_t>(stream));
  return out;
}

Array residual_flow_gpu(const Array& cur, const Array& prev, const MotionParams& params, int device, void* stream) {
  const Array theta = dominant_motion_gpu(cur, prev, params, device, stream);
  const Array compensated = compensate_gpu(cur, prev, theta, device, stream);
  WEFT_CUDA_CHECK(cudaSetDevice(device));  // compute_cuda works on the current device
  return flow::compute_cuda(cur, compensated, params.flow, stream);
}

}  // namespace weft::saliency
