#pragma once
/// A stateful demo task for migration tests and benchmarks: the running sum of its input
/// arrays, y_k = x_0 + ... + x_k elementwise in float, on a CPU or a GPU. The state (the sum, plus
/// an optional `ballast` of opaque bytes standing for a large model) lives where the task runs:
/// host memory on a CPU, device memory on a GPU. At a token boundary a migration moves it: on a
/// CPU through save()/load()'s bytes, on a GPU as two device arrays (save_arrays/load_arrays), which
/// the runtime copies GPU to GPU in one process and through pinned buffers between ranks.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "weft/graph/task.hpp"

namespace weft::tasks {

class RunningSum final : public Task {
 public:
  explicit RunningSum(std::string name, std::size_t ballast_bytes = 0);
  ~RunningSum() override;
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  void stop(Context& ctx) override;
  [[nodiscard]] bool stateful() const override { return true; }
  void save(std::vector<std::byte>& out) const override;
  void load(std::span<const std::byte> in) override;
  void save_arrays(std::vector<Array>& out) override;
  void load_arrays(std::vector<Array> in) override;
  /// The sum after the last token this object processed (host copy; after stop()).
  [[nodiscard]] const std::vector<float>& sum() const noexcept { return h_sum_; }
  [[nodiscard]] std::size_t state_bytes() const noexcept { return h_sum_.size() * sizeof(float) + ballast_bytes_; }

 private:
  void to_host();        // device state → host vectors, device memory freed
  void drop_device();    // device memory freed, nothing copied
  std::size_t ballast_bytes_;
  std::vector<float> h_sum_;
  std::vector<std::byte> h_ballast_;
  int device_ = -1;  // >= 0: the state is on this GPU
  mutable bool saved_ = false;  // save() since the last token: stop() need not copy the state back
  bool arrays_pending_ = false;  // load() said the state comes as arrays
  Array d_sum_;
  Array d_ballast_;
};

namespace cuda {
/// y = sum += x elementwise (defined only when built with CUDA).
void running_sum(const float* x, float* sum, float* y, std::int64_t n, void* stream);
/// Synchronous copies of the state between host vectors and the device.
void state_to_host(void* host, const void* device, std::size_t bytes);
void state_to_device(void* device, const void* host, std::size_t bytes);
}  // namespace cuda

}  // namespace weft::tasks
