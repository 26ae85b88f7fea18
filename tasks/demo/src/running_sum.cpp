// RunningSum: CPU path and the state's format (n floats of sum, then the ballast bytes).
#include "weft/tasks/demo/running_sum.hpp"

#include <cstring>

#include "weft/util/error.hpp"

namespace weft::tasks {
namespace {
#ifdef WEFT_HAVE_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif
}  // namespace

RunningSum::RunningSum(std::string name, std::size_t ballast_bytes)
    : Task(std::move(name)), ballast_bytes_(ballast_bytes), h_ballast_(ballast_bytes) {
  for (std::size_t i = 0; i < ballast_bytes; ++i) h_ballast_[i] = static_cast<std::byte>(i * 131 + 7);
}

RunningSum::~RunningSum() {
  if (device_ >= 0) {
    try {
      to_host();
    } catch (...) {
    }
  }
}

bool RunningSum::has_cuda() const { return kCuda; }

void RunningSum::run(Context& ctx) {
  saved_ = false;
  if (device_ >= 0) to_host();
  Array x = ctx.take(in);
  if (h_sum_.empty()) h_sum_.assign(static_cast<std::size_t>(x.size()), 0.0f);
  if (h_sum_.size() != static_cast<std::size_t>(x.size()))
    throw Error("task '" + name() + "': token of " + std::to_string(x.size()) + " elements after " +
                std::to_string(h_sum_.size()));
  Array y = ctx.alloc(DType::f32, x.shape());
  for (std::size_t i = 0; i < h_sum_.size(); ++i) y.data<float>()[i] = h_sum_[i] += x.data<float>()[i];
  ctx.put(out, std::move(y));
}

void RunningSum::run_cuda(Context& ctx) {
  saved_ = false;
  Array x = ctx.take(in);
  std::size_t n = static_cast<std::size_t>(x.size());
  if (h_sum_.empty() && device_ < 0) h_sum_.assign(n, 0.0f);
  if (device_ != ctx.place().device) {
    if (device_ >= 0) to_host();
    d_sum_ = static_cast<float*>(cuda::state_alloc(n * sizeof(float)));
    cuda::state_to_device(d_sum_, h_sum_.data(), n * sizeof(float));
    if (ballast_bytes_) {
      d_ballast_ = static_cast<std::byte*>(cuda::state_alloc(ballast_bytes_));
      cuda::state_to_device(d_ballast_, h_ballast_.data(), ballast_bytes_);
    }
    device_ = ctx.place().device;
  }
  if (h_sum_.size() != n)
    throw Error("task '" + name() + "': token of " + std::to_string(n) + " elements after " + std::to_string(h_sum_.size()));
  Array y = ctx.alloc(DType::f32, x.shape());
  cuda::running_sum(x.data<float>(), d_sum_, y.data<float>(), x.size(), ctx.stream());
  ctx.put(out, std::move(y));
}

void RunningSum::to_host() {
  cuda::state_to_host(h_sum_.data(), d_sum_, h_sum_.size() * sizeof(float));
  if (ballast_bytes_) cuda::state_to_host(h_ballast_.data(), d_ballast_, ballast_bytes_);
  cuda::state_free(d_sum_);
  cuda::state_free(d_ballast_);
  d_sum_ = nullptr;
  d_ballast_ = nullptr;
  device_ = -1;
}

void RunningSum::stop(Context&) {
  // The executor synchronised the task's stream before. After a save() (a migration) the state
  // has left with it, so the device copy is only freed: a 1 GiB state is not copied twice.
  if (device_ < 0) return;
  if (!saved_) return to_host();
  cuda::state_free(d_sum_);
  cuda::state_free(d_ballast_);
  d_sum_ = nullptr;
  d_ballast_ = nullptr;
  device_ = -1;
}

void RunningSum::save(std::vector<std::byte>& out) const {
  saved_ = true;
  std::size_t sum_bytes = h_sum_.size() * sizeof(float);
  out.resize(sizeof(std::uint64_t) + sum_bytes + ballast_bytes_);
  std::uint64_t n = h_sum_.size();
  std::memcpy(out.data(), &n, sizeof n);
  std::byte* p = out.data() + sizeof n;
  if (device_ >= 0) {  // straight from the device into the message
    cuda::state_to_host(p, d_sum_, sum_bytes);
    if (ballast_bytes_) cuda::state_to_host(p + sum_bytes, d_ballast_, ballast_bytes_);
  } else {
    if (sum_bytes) std::memcpy(p, h_sum_.data(), sum_bytes);
    if (ballast_bytes_) std::memcpy(p + sum_bytes, h_ballast_.data(), ballast_bytes_);
  }
}

void RunningSum::load(std::span<const std::byte> in) {
  std::uint64_t n = 0;
  if (in.size() < sizeof n) throw Error("task '" + name() + "': state of " + std::to_string(in.size()) + " bytes");
  std::memcpy(&n, in.data(), sizeof n);
  std::size_t sum_bytes = n * sizeof(float);
  if (in.size() != sizeof n + sum_bytes + ballast_bytes_)
    throw Error("task '" + name() + "': state of " + std::to_string(in.size()) + " bytes, expected " +
                std::to_string(sizeof n + sum_bytes + ballast_bytes_));
  if (device_ >= 0) {  // this object last ran on a GPU of this rank: drop that copy
    cuda::state_free(d_sum_);
    cuda::state_free(d_ballast_);
    d_sum_ = nullptr;
    d_ballast_ = nullptr;
    device_ = -1;
  }
  h_sum_.resize(n);
  if (sum_bytes) std::memcpy(h_sum_.data(), in.data() + sizeof n, sum_bytes);
  if (ballast_bytes_) std::memcpy(h_ballast_.data(), in.data() + sizeof n + sum_bytes, ballast_bytes_);
}

#ifndef WEFT_HAVE_CUDA
namespace cuda {
void running_sum(const float*, float*, float*, std::int64_t, void*) { throw Error("built without CUDA"); }
void* state_alloc(std::size_t) { throw Error("built without CUDA"); }
void state_free(void*) {}
void state_to_host(void*, const void*, std::size_t) { throw Error("built without CUDA"); }
void state_to_device(void*, const void*, std::size_t) { throw Error("built without CUDA"); }
}  // namespace cuda
#endif

}  // namespace weft::tasks
