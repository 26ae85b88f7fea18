#pragma once
/// Demo tasks used by the tests, the benchmarks, the examples and `weft demo`:
/// ArraySource → Affine (CPU or GPU) → ... → Checksum, plus Add for fan-in.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "weft/graph/task.hpp"

namespace weft::tasks {

/// Emits `count` f32 arrays of `length` elements; element i of token k is k + i / length.
class ArraySource final : public Task {
 public:
  ArraySource(std::string name, std::uint64_t count, std::int64_t length);
  Out<Array> out = output<Array>("out", DType::f32, 1);
  void run(Context& ctx) override;
  /// The value ArraySource puts at element i of token k (for checks).
  [[nodiscard]] static float value(std::uint64_t k, std::int64_t i, std::int64_t length);

 private:
  std::uint64_t count_;
  std::int64_t length_;
};

/// y = a·x + b elementwise on f32 arrays; CPU and CUDA give bit-identical results (fmaf).
class Affine final : public Task {
 public:
  Affine(std::string name, float a, float b);
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
  [[nodiscard]] float a() const { return a_; }
  [[nodiscard]] float b() const { return b_; }

 private:
  float a_, b_;
};

/// Elementwise sum of two f32 arrays (fan-in).
class Add final : public Task {
 public:
  explicit Add(std::string name);
  In<Array> lhs = input<Array>("lhs", DType::f32);
  In<Array> rhs = input<Array>("rhs", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;
};

/// Records, for every token, its index and its arrays' contents (shared with the caller).
class Collect final : public Task {
 public:
  struct Record {
    std::mutex mutex;
    std::vector<std::uint64_t> indices;
    std::vector<std::vector<float>> arrays;  ///< kept only if keep_data
  };
  Collect(std::string name, std::shared_ptr<Record> record, bool keep_data = true);
  In<Array> in = input<Array>("in", DType::f32);
  void run(Context& ctx) override;

 private:
  std::shared_ptr<Record> record_;
  bool keep_data_;
};

/// Integer tokens for overhead measurements: a source of 0..count-1, a pass-through (CPU, or a
/// GPU task launching one empty kernel per token), and a sink counting what it saw.
class Counter final : public Task {
 public:
  Counter(std::string name, std::uint64_t count);
  Out<std::int64_t> out = output<std::int64_t>("out");
  void run(Context& ctx) override;

 private:
  std::uint64_t count_;
};
class PassThrough final : public Task {
 public:
  PassThrough(std::string name, bool gpu_kernel);
  In<std::int64_t> in = input<std::int64_t>("in");
  Out<std::int64_t> out = output<std::int64_t>("out");
  void run(Context& ctx) override;
  [[nodiscard]] bool has_cuda() const override;
  void run_cuda(Context& ctx) override;

 private:
  bool gpu_kernel_;
};
class CountSink final : public Task {
 public:
  CountSink(std::string name, std::shared_ptr<std::atomic<std::int64_t>> seen, std::shared_ptr<std::atomic<bool>> in_order);
  In<std::int64_t> in = input<std::int64_t>("in");
  void run(Context& ctx) override;

 private:
  std::shared_ptr<std::atomic<std::int64_t>> seen_;
  std::shared_ptr<std::atomic<bool>> in_order_;
};

namespace cuda {
/// CUDA launchers (defined only when built with CUDA).
void affine(const float* x, float* y, std::int64_t n, float a, float b, void* stream);
void add(const float* x, const float* y, float* z, std::int64_t n, void* stream);
void empty(void* stream);
}  // namespace cuda

}  // namespace weft::tasks
