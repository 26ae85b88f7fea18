#pragma once
/// A stateful demo task for migration tests and benchmarks: the running sum of its input
/// arrays, y_k = x_0 + ... + x_k elementwise in float, on a CPU or a GPU. The state (the sum, plus
/// an optional `ballast` of opaque bytes standing for a large model) lives where the task runs:
/// host memory on a CPU, device memory on a GPU. save()/load() move it at a token boundary.
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
  /// The sum after the last token this object processed (host copy; after stop()).
  [[nodiscard]] const std::vector<float>& sum() const noexcept { return h_sum_; }
  [[nodiscard]] std::size_t state_bytes() const noexcept { return h_sum_.size() * sizeof(float) + ballast_bytes_; }

 private:
  void to_host();  // device state → host vectors, device memory freed
  std::size_t ballast_bytes_;
  std::vector<float> h_sum_;
  std::vector<std::byte> h_ballast_;
  int device_ = -1;  // >= 0: the state is on this GPU
  mutable bool saved_ = false;  // save() since the last token: stop() need not copy the state back
  float* d_sum_ = nullptr;
  std::byte* d_ballast_ = nullptr;
};

namespace cuda {
/// y = sum += x elementwise (defined only when built with CUDA).
void running_sum(const float* x, float* sum, float* y, std::int64_t n, void* stream);
/// Device memory of the current GPU, and synchronous copies for state hand-over.
[[nodiscard]] void* state_alloc(std::size_t bytes);
void state_free(void* p);
void state_to_host(void* host, const void* device, std::size_t bytes);
void state_to_device(void* device, const void* host, std::size_t bytes);
}  // namespace cuda

}  // namespace weft::tasks
