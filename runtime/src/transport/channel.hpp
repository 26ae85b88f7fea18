#pragma once
// Internal: a bounded, ordered, cancellable channel of tokens (one edge of the graph).
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "device/device.hpp"
#include "weft/graph/value.hpp"

namespace weft::detail {

struct Token {
  std::uint64_t index = 0;
  bool end = false;
  Value value;
  std::shared_ptr<Event> ready;  // device arrays: completes when the producer's work is done
  // Migration (migration/migration.hpp): > 0 marks the end of an instance's epoch, the task moving to
  // candidate `marker - 1`. On an end token sent to a migratable task's instance, index 1 says
  // "you are the current instance".
  int marker = 0;
  // Bytes the producer already copied to the host for this consumer (a GPU task's output to a
  // task on a CPU of its rank: the copy is issued with the firing, `ready` completes with it).
  std::uint64_t copied = 0;
};

class Channel {
 public:
  explicit Channel(std::size_t capacity) : capacity_(capacity ? capacity : 1) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// Blocks while full; false if the run was cancelled.
  bool push(Token token) {
    spin_until([&] { return size_.load(std::memory_order_acquire) < capacity_; });
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return cancelled_ || queue_.size() < capacity_; });
    if (cancelled_) return false;
    queue_.push_back(std::move(token));
    max_size_ = std::max(max_size_, queue_.size());
    size_.store(queue_.size(), std::memory_order_release);
    lock.unlock();
    not_empty_.notify_one();
    if (on_push_) on_push_();
    return true;
  }
  /// Called after every push (set before the run starts): counts arrivals for Task::input_arrivals.
  void on_push(std::function<void()> f) { on_push_ = std::move(f); }
  /// Blocks while empty; false if the run was cancelled.
  bool pop(Token& token) {
    spin_until([&] { return size_.load(std::memory_order_acquire) > 0; });
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return cancelled_ || !queue_.empty(); });
    if (cancelled_) return false;
    token = std::move(queue_.front());
    queue_.pop_front();
    size_.store(queue_.size(), std::memory_order_release);
    lock.unlock();
    not_full_.notify_one();
    return true;
  }
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
      cancelled_flag_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }
  [[nodiscard]] std::size_t max_size() const {
    std::lock_guard lock(mutex_);
    return max_size_;
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  /// Takes back, from channels that carry the inputs of one consumer (one per port, fed in step),
  /// the tokens none of its firings has started: those from the largest front index on, with all
  /// channels locked at once so that a firing half-way through its inputs keeps them. Returns one
  /// list per channel, equally long; nothing if a channel holds anything but plain tokens.
  static std::vector<std::deque<Token>> take_back(const std::vector<Channel*>& channels) {
    std::vector<std::unique_lock<std::mutex>> locks;
    for (Channel* c : channels) locks.emplace_back(c->mutex_);
    std::vector<std::deque<Token>> taken(channels.size());
    std::uint64_t from = 0;
    for (Channel* c : channels) {
      if (c->cancelled_ || c->queue_.empty()) return taken;
      for (const Token& t : c->queue_)
        if (t.end || t.marker) return taken;
      from = std::max(from, c->queue_.front().index);
    }
    for (std::size_t i = 0; i < channels.size(); ++i) {
      auto& q = channels[i]->queue_;
      auto first = std::find_if(q.begin(), q.end(), [&](const Token& t) { return t.index >= from; });
      taken[i].assign(std::make_move_iterator(first), std::make_move_iterator(q.end()));
      q.erase(first, q.end());
      channels[i]->size_.store(q.size(), std::memory_order_release);
      if (taken[i].size() != taken[0].size()) throw std::logic_error("channels fed in step hold different tokens");
    }
    locks.clear();
    for (Channel* c : channels) c->not_full_.notify_all();
    return taken;
  }

 private:
  // Before sleeping on the condition variable, spin a few microseconds where cores are plenty:
  // a futex wake-up costs several microseconds, far more than a task's dispatch should.
  template <class Ready> void spin_until(Ready ready) const {
    static const int spins = std::thread::hardware_concurrency() >= 8 ? 4000 : 0;
    for (int i = 0; i < spins && !ready(); ++i) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      if (cancelled_flag_.load(std::memory_order_relaxed)) return;
    }
  }
  mutable std::mutex mutex_;
  std::atomic<std::size_t> size_{0};
  std::atomic<bool> cancelled_flag_{false};
  std::condition_variable not_empty_, not_full_;
  std::deque<Token> queue_;
  std::size_t capacity_;
  std::size_t max_size_ = 0;
  std::function<void()> on_push_;
  bool cancelled_ = false;
};

}  // namespace weft::detail
