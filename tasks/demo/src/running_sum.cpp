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
  if (device_ != ctx.place().device) {  // first token here: the state comes from the host vectors
    if (device_ >= 0) to_host();
    const int device = ctx.place().device;
    d_sum_ = Array::device(DType::f32, Shape(static_cast<std::int64_t>(h_sum_.size())), device, nullptr);
    cuda::state_to_device(d_sum_.raw(), h_sum_.data(), h_sum_.size() * sizeof(float));
    if (ballast_bytes_) {
      d_ballast_ = Array::device(DType::u8, Shape(static_cast<std::int64_t>(ballast_bytes_)), device, nullptr);
      cuda::state_to_device(d_ballast_.raw(), h_ballast_.data(), ballast_bytes_);
    }
    device_ = device;
  }
  if (static_cast<std::size_t>(d_sum_.size()) != n)
    throw Error("task '" + name() + "': token of " + std::to_string(n) + " elements after " +
                std::to_string(d_sum_.size()));
  Array y = ctx.alloc(DType::f32, x.shape());
  cuda::running_sum(x.data<float>(), d_sum_.data<float>(), y.data<float>(), x.size(), ctx.stream());
  ctx.put(out, std::move(y));
}

void RunningSum::drop_device() {
  d_sum_ = Array();
  d_ballast_ = Array();
  device_ = -1;
}

void RunningSum::to_host() {
  h_sum_.resize(static_cast<std::size_t>(d_sum_.size()));
  cuda::state_to_host(h_sum_.data(), d_sum_.raw(), h_sum_.size() * sizeof(float));
  if (ballast_bytes_) cuda::state_to_host(h_ballast_.data(), d_ballast_.raw(), ballast_bytes_);
  drop_device();
}

void RunningSum::stop(Context&) {
  // The executor synchronised the task's stream before. After a save() (a migration) the state
  // has left with it (save_arrays() gave the device arrays away): nothing is copied back.
  if (device_ < 0) return;
  if (!saved_) return to_host();
  drop_device();
}

// The state's bytes: the element count, then 1 if the state follows as arrays (it is on a GPU),
// else 0 and the sum and the ballast inline.
void RunningSum::save(std::vector<std::byte>& out) const {
  saved_ = true;
  const bool arrays = device_ >= 0;
  std::uint64_t n = arrays ? static_cast<std::uint64_t>(d_sum_.size()) : h_sum_.size();
  std::size_t sum_bytes = arrays ? 0 : n * sizeof(float);
  out.resize(sizeof n + 1 + (arrays ? 0 : sum_bytes + ballast_bytes_));
  std::memcpy(out.data(), &n, sizeof n);
  out[sizeof n] = std::byte{arrays ? std::uint8_t(1) : std::uint8_t(0)};
  if (arrays) return;
  std::byte* p = out.data() + sizeof n + 1;
  if (sum_bytes) std::memcpy(p, h_sum_.data(), sum_bytes);
  if (ballast_bytes_) std::memcpy(p + sum_bytes, h_ballast_.data(), ballast_bytes_);
}

void RunningSum::save_arrays(std::vector<Array>& out) {
  if (device_ < 0) return;
  out.push_back(std::move(d_sum_));
  if (ballast_bytes_) out.push_back(std::move(d_ballast_));
  drop_device();
}

void RunningSum::load(std::span<const std::byte> in) {
  std::uint64_t n = 0;
  if (in.size() < sizeof n + 1) throw Error("task '" + name() + "': state of " + std::to_string(in.size()) + " bytes");
  std::memcpy(&n, in.data(), sizeof n);
  arrays_pending_ = in[sizeof n] != std::byte{0};
  std::size_t sum_bytes = n * sizeof(float);
  std::size_t expected = sizeof n + 1 + (arrays_pending_ ? 0 : sum_bytes + ballast_bytes_);
  if (in.size() != expected)
    throw Error("task '" + name() + "': state of " + std::to_string(in.size()) + " bytes, expected " +
                std::to_string(expected));
  if (device_ >= 0) drop_device();  // this object last ran on a GPU of this rank: drop that copy
  h_sum_.resize(n);
  if (arrays_pending_) return;
  if (sum_bytes) std::memcpy(h_sum_.data(), in.data() + sizeof n + 1, sum_bytes);
  if (ballast_bytes_) std::memcpy(h_ballast_.data(), in.data() + sizeof n + 1 + sum_bytes, ballast_bytes_);
}

void RunningSum::load_arrays(std::vector<Array> in) {
  if (!arrays_pending_) {
    if (!in.empty()) throw Error("task '" + name() + "': state arrays without a state saying so");
    return;
  }
  arrays_pending_ = false;
  const std::size_t expected = ballast_bytes_ ? 2 : 1;
  if (in.size() != expected || static_cast<std::size_t>(in[0].size()) != h_sum_.size() ||
      (ballast_bytes_ && in[1].bytes() != ballast_bytes_))
    throw Error("task '" + name() + "': " + std::to_string(in.size()) + " state arrays, expected " +
                std::to_string(expected) + " of the saved sizes");
  if (in[0].memory().is_host()) {  // moved to a CPU
    std::memcpy(h_sum_.data(), in[0].raw(), in[0].bytes());
    if (ballast_bytes_) std::memcpy(h_ballast_.data(), in[1].raw(), ballast_bytes_);
    return;
  }
  device_ = in[0].memory().device_index;
  d_sum_ = std::move(in[0]);
  if (ballast_bytes_) d_ballast_ = std::move(in[1]);
}

#ifndef WEFT_HAVE_CUDA
namespace cuda {
void running_sum(const float*, float*, float*, std::int64_t, void*) { throw Error("built without CUDA"); }
void state_to_host(void*, const void*, std::size_t) { throw Error("built without CUDA"); }
void state_to_device(void*, const void*, std::size_t) { throw Error("built without CUDA"); }
}  // namespace cuda
#endif

}  // namespace weft::tasks
