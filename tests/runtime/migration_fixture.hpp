#pragma once
// Stateful tasks and a migration driver shared by the migration tests (CPU and GPU).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "executor_fixture.hpp"

namespace weft::test {

/// Running sum over the stream, elementwise in float: out_k = in_0 + ... + in_k. Its state is the
/// sum so far, so a lost, repeated or reordered token, or a state not handed over, shows.
class RunningSum final : public Task {
 public:
  explicit RunningSum(std::string name) : Task(std::move(name)) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    Array x = ctx.take(in);
    if (sum_.empty()) sum_.assign(static_cast<std::size_t>(x.size()), 0.0f);
    Array y = Array::host(DType::f32, x.shape());
    for (std::int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = sum_[i] += x.data<float>()[i];
    ctx.put(out, std::move(y));
  }
  bool stateful() const override { return true; }
  void save(std::vector<std::byte>& out) const override {
    out.resize(sum_.size() * sizeof(float));
    if (!sum_.empty()) std::memcpy(out.data(), sum_.data(), out.size());
  }
  void load(std::span<const std::byte> in) override {
    sum_.resize(in.size() / sizeof(float));
    if (!in.empty()) std::memcpy(sum_.data(), in.data(), in.size());
  }

 private:
  std::vector<float> sum_;
};

/// A 4-tap FIR filter along the stream: out_k = Σ_j c_j · in_{k-j} (zeros before the start),
/// accumulated in float in a fixed order. State: the last three inputs, kept in an array and handed
/// over with save_arrays()/load_arrays() (the runtime carries it: in one process, or over MPI).
class Fir final : public Task {
 public:
  static constexpr float kTaps[4] = {0.5f, 0.25f, -0.125f, 0.0625f};
  explicit Fir(std::string name) : Task(std::move(name)) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override {
    Array x = ctx.take(in);
    std::size_t n = static_cast<std::size_t>(x.size());
    if (history_.empty()) {
      history_ = Array::host(DType::f32, Shape(3, static_cast<std::int64_t>(n)));
      std::fill_n(history_.data<float>(), 3 * n, 0.0f);
    }
    if (!history_.memory().is_host() || static_cast<std::size_t>(history_.shape()[1]) != n)
      throw Error("fir: state of " + std::to_string(history_.size()) + " elements for tokens of " + std::to_string(n));
    float* h = history_.data<float>();
    Array y = Array::host(DType::f32, x.shape());
    for (std::size_t i = 0; i < n; ++i) {
      float v = x.data<float>()[i];
      y.data<float>()[i] = filter(v, h[i], h[n + i], h[2 * n + i]);
      h[2 * n + i] = h[n + i];
      h[n + i] = h[i];
      h[i] = v;
    }
    ctx.put(out, std::move(y));
  }
  /// One output from the newest input and the three before it (newest first).
  static float filter(float x0, float x1, float x2, float x3) {
    return ((kTaps[0] * x0 + kTaps[1] * x1) + kTaps[2] * x2) + kTaps[3] * x3;
  }
  bool stateful() const override { return true; }
  void save_arrays(std::vector<Array>& out) override {
    if (!history_.empty()) out.push_back(std::move(history_));
    history_ = Array();
  }
  void load_arrays(std::vector<Array> in) override {
    if (in.size() > 1) throw Error("fir: " + std::to_string(in.size()) + " state arrays");
    history_ = in.empty() ? Array() : std::move(in[0]);
  }

 private:
  Array history_;
};

/// Reference of source -> Affine(2, 1) -> RunningSum -> Fir for CountingSource tokens (value k + i).
inline std::vector<std::vector<float>> reference_sum_fir(std::uint64_t tokens, std::int64_t n) {
  std::vector<std::vector<float>> out(tokens, std::vector<float>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    float sum = 0, h1 = 0, h2 = 0, h3 = 0;
    for (std::uint64_t k = 0; k < tokens; ++k) {
      float x = std::fma(2.0f, static_cast<float>(k) + static_cast<float>(i), 1.0f);
      sum += x;
      out[k][i] = Fir::filter(sum, h1, h2, h3);
      h3 = h2;
      h2 = h1;
      h1 = sum;
    }
  }
  return out;
}

/// Like Charm++'s RotateLB: while the source has not finished, every `every` tokens it produced,
/// moves a random task of `tasks` to a random one of `places`.
class RandomMigrations {
 public:
  RandomMigrations(RunHandle& run, std::shared_ptr<FlightLog> log, std::int64_t total, std::vector<std::string> tasks,
                   std::vector<Place> places, int every, unsigned seed)
      : thread_([=, &run, this] {
          std::mt19937 random(seed);
          std::int64_t next = every;
          while (!stop_ && log->produced < total) {
            if (log->produced >= next) {
              run.migrate(tasks[random() % tasks.size()], places[random() % places.size()]);
              ++issued_;
              next = log->produced + every;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
        }) {}
  ~RandomMigrations() {
    stop_ = true;
    join();
  }
  /// Waits until the source has produced every token.
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int issued() const { return issued_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> issued_{0};
  std::thread thread_;
};

}  // namespace weft::test
