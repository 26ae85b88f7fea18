// The floor-ish peer: one std::thread per point, the previous step's payloads in shared memory, a
// spinning barrier between steps. No runtime at all: what remains is the barrier (a few cache-line
// transfers) and the reads of the neighbours' 16 bytes. Patterns without cross-point dependencies
// (trivial, no_comm) need no barrier and have none.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "pattern.hpp"

namespace taskbench {
namespace {

/// Sense-reversing barrier; spins, then yields, so that it still progresses when the machine has
/// fewer free cores than threads (the 2-core development machine shares them with builds).
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n), left_(n) {}
  void arrive_and_wait(bool& sense) {
    sense = !sense;
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      left_.store(n_, std::memory_order_relaxed);
      flag_.store(sense, std::memory_order_release);
      return;
    }
    for (int spins = 0; flag_.load(std::memory_order_acquire) != sense; ++spins)
      if (spins > 2000) std::this_thread::yield();
  }

 private:
  const int n_;
  std::atomic<int> left_;
  std::atomic<bool> flag_{false};
};

struct alignas(64) Slot {  // one cache line per point, so that writers do not share lines
  Payload p;
};

}  // namespace

Run run_threads(const Graph& g) {
  const bool coupled = g.pattern != Pattern::trivial && g.pattern != Pattern::no_comm;
  std::vector<Slot> buf[2] = {std::vector<Slot>(g.width), std::vector<Slot>(g.width)};
  std::vector<std::uint64_t> sums(g.width * 8);  // padded per point
  SpinBarrier barrier(g.width);
  // The threads start before the clock (as StarPU's workers do) and wait for `go`: the clock
  // measures the steps, not thread creation (about 50 µs a thread here).
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < g.width; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      bool sense = false;
      std::uint64_t sum = 0;
      std::vector<std::uint64_t> in;
      for (int t = 0; t < g.steps; ++t) {
        if (i < g.width_at(t)) {
          in.clear();
          for (int j : g.deps(t, i)) {
            const Payload& p = buf[(t + 1) % 2][j].p;
            if (p.step != static_cast<std::uint64_t>(t - 1)) std::abort();  // a missed dependency
            in.push_back(p.value);
          }
          busy(g.work_us);
          const std::uint64_t v = mix(t, i, in.data(), in.size());
          buf[t % 2][i].p = {v, static_cast<std::uint64_t>(t)};
          sum += v;
        }
        if (coupled) barrier.arrive_and_wait(sense);
      }
      sums[i * 8] = sum;
    });
  }
  while (ready.load() < g.width) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < g.width; ++i) r.checksum += sums[i * 8];
  return r;
}

}  // namespace taskbench
