#include "weft/tasks/demo/demo.hpp"

#include <cmath>

#include "weft/util/error.hpp"

namespace weft::tasks {

namespace {
#ifdef WEFT_HAVE_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif
}  // namespace

ArraySource::ArraySource(std::string name, std::uint64_t count, std::int64_t length)
    : Task(std::move(name)), count_(count), length_(length) {}

float ArraySource::value(std::uint64_t k, std::int64_t i, std::int64_t length) {
  return static_cast<float>(k % 100000) + static_cast<float>(i) / static_cast<float>(length);
}

void ArraySource::run(Context& ctx) {
  if (ctx.index() >= count_) return ctx.end_stream();
  Array a = Array::host(DType::f32, Shape(length_));
  float* p = a.data<float>();
  for (std::int64_t i = 0; i < length_; ++i) p[i] = value(ctx.index(), i, length_);
  ctx.put(out, std::move(a));
}

Affine::Affine(std::string name, float a, float b) : Task(std::move(name)), a_(a), b_(b) {}

void Affine::run(Context& ctx) {
  Array x = ctx.take(in);
  Array y = ctx.alloc(DType::f32, x.shape());
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (std::int64_t i = 0; i < x.size(); ++i) py[i] = std::fma(a_, px[i], b_);
  ctx.put(out, std::move(y));
}

bool Affine::has_cuda() const { return kCuda; }

void Affine::run_cuda(Context& ctx) {
  Array x = ctx.take(in);
  Array y = ctx.alloc(DType::f32, x.shape());
  cuda::affine(x.data<float>(), y.data<float>(), x.size(), a_, b_, ctx.stream());
  ctx.put(out, std::move(y));
}

Add::Add(std::string name) : Task(std::move(name)) {}

void Add::run(Context& ctx) {
  Array x = ctx.take(lhs), y = ctx.take(rhs);
  if (!(x.shape() == y.shape()))
    throw Error("add: shapes differ (" + x.shape().str() + " and " + y.shape().str() + ")");
  Array z = ctx.alloc(DType::f32, x.shape());
  for (std::int64_t i = 0; i < x.size(); ++i) z.data<float>()[i] = x.data<float>()[i] + y.data<float>()[i];
  ctx.put(out, std::move(z));
}

bool Add::has_cuda() const { return kCuda; }

void Add::run_cuda(Context& ctx) {
  Array x = ctx.take(lhs), y = ctx.take(rhs);
  if (!(x.shape() == y.shape()))
    throw Error("add: shapes differ (" + x.shape().str() + " and " + y.shape().str() + ")");
  Array z = ctx.alloc(DType::f32, x.shape());
  cuda::add(x.data<float>(), y.data<float>(), z.data<float>(), x.size(), ctx.stream());
  ctx.put(out, std::move(z));
}

Collect::Collect(std::string name, std::shared_ptr<Record> record, bool keep_data)
    : Task(std::move(name)), record_(std::move(record)), keep_data_(keep_data) {}

void Collect::run(Context& ctx) {
  Array a = ctx.take(in);
  std::lock_guard lock(record_->mutex);
  record_->indices.push_back(ctx.index());
  if (keep_data_) record_->arrays.emplace_back(a.data<float>(), a.data<float>() + a.size());
}

Counter::Counter(std::string name, std::uint64_t count) : Task(std::move(name)), count_(count) {}

void Counter::run(Context& ctx) {
  if (ctx.index() >= count_) return ctx.end_stream();
  ctx.put(out, static_cast<std::int64_t>(ctx.index()));
}

PassThrough::PassThrough(std::string name, bool gpu_kernel) : Task(std::move(name)), gpu_kernel_(gpu_kernel) {}

void PassThrough::run(Context& ctx) { ctx.put(out, ctx.take(in)); }

bool PassThrough::has_cuda() const { return kCuda; }

void PassThrough::run_cuda(Context& ctx) {
  if (gpu_kernel_) cuda::empty(ctx.stream());
  ctx.put(out, ctx.take(in));
}

CountSink::CountSink(std::string name, std::shared_ptr<std::atomic<std::int64_t>> seen,
                     std::shared_ptr<std::atomic<bool>> in_order)
    : Task(std::move(name)), seen_(std::move(seen)), in_order_(std::move(in_order)) {}

void CountSink::run(Context& ctx) {
  std::int64_t v = ctx.take(in);
  if (v != seen_->load()) *in_order_ = false;
  ++*seen_;
}

#ifndef WEFT_HAVE_CUDA
// Built without CUDA: has_cuda() is false, so these are never called, but the run_cuda overrides
// above still name them.
namespace cuda {
void affine(const float*, float*, std::int64_t, float, float, void*) { throw Error("built without CUDA"); }
void add(const float*, const float*, float*, std::int64_t, void*) { throw Error("built without CUDA"); }
void empty(void*) { throw Error("built without CUDA"); }
}  // namespace cuda
#endif

}  // namespace weft::tasks
