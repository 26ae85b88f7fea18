#pragma once
// The task graphs of Task Bench (Slaughter et al., SC20) that taskbench runs on every peer: a grid
// of `steps` rows of `width` points, task (t, i) depending on tasks (t - 1, j) for j in deps(t, i).
// The definitions follow Task Bench's core (core/core.cc): the same dependence sets, the same
// widths per step. Every peer computes the same values, so a checksum tells that it ran the graph
// it claims (a missed or reordered dependency changes it).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace taskbench {

enum class Pattern { trivial, no_comm, stencil_1d, nearest, spread, fft, tree, all_to_all };

inline const std::vector<Pattern>& all_patterns() {
  static const std::vector<Pattern> all{Pattern::trivial, Pattern::no_comm, Pattern::stencil_1d, Pattern::nearest,
                                        Pattern::spread,  Pattern::fft,     Pattern::tree,       Pattern::all_to_all};
  return all;
}

inline std::string name(Pattern p) {
  switch (p) {
    case Pattern::trivial: return "trivial";
    case Pattern::no_comm: return "no_comm";
    case Pattern::stencil_1d: return "stencil_1d";
    case Pattern::nearest: return "nearest";
    case Pattern::spread: return "spread";
    case Pattern::fft: return "fft";
    case Pattern::tree: return "tree";
    case Pattern::all_to_all: return "all_to_all";
  }
  return "?";
}

/// The graph: a pattern over width x steps, each task busy for `work_us`.
struct Graph {
  Pattern pattern = Pattern::stencil_1d;
  int width = 1;
  int steps = 1;
  double work_us = 0;
  static constexpr int nearest_radix = 5;  // radius 2: i-2 .. i+2 (Task Bench's -radix 5)
  static constexpr int spread_radix = 3;   // Task Bench's default radix
  static constexpr int spread_period = 3;

  /// Points that have a task at step t (the tree grows from one point, doubling each step).
  [[nodiscard]] int width_at(int t) const {
    if (pattern == Pattern::tree) return t >= 30 ? width : std::min(width, 1 << t);
    return width;
  }
  [[nodiscard]] std::int64_t tasks() const {
    std::int64_t n = 0;
    for (int t = 0; t < steps; ++t) n += width_at(t);
    return n;
  }
  [[nodiscard]] int fft_sets() const {
    int s = 0;
    while ((1 << s) < width) ++s;
    return std::max(1, s);
  }
  /// Points of step t - 1 that task (t, i) reads, sorted, without repeats (none at step 0).
  [[nodiscard]] std::vector<int> deps(int t, int i) const {
    std::vector<int> d;
    if (t == 0 || i >= width_at(t)) return d;
    const int w = width;
    switch (pattern) {
      case Pattern::trivial: break;
      case Pattern::no_comm: d = {i}; break;
      case Pattern::stencil_1d:
        for (int j = std::max(0, i - 1); j <= std::min(w - 1, i + 1); ++j) d.push_back(j);
        break;
      case Pattern::nearest:
        for (int j = std::max(0, i - nearest_radix / 2); j <= std::min(w - 1, i + (nearest_radix - 1) / 2); ++j)
          d.push_back(j);
        break;
      case Pattern::spread: {
        const int set = t % spread_period;
        for (int k = 0; k < spread_radix; ++k) d.push_back((i + k * w / spread_radix + (k > 0 ? set : 0)) % w);
        break;
      }
      case Pattern::fft: {
        const int set = (t + fft_sets() - 1) % fft_sets();
        if (i - (1 << set) >= 0) d.push_back(i - (1 << set));
        d.push_back(i);
        if (i + (1 << set) < w) d.push_back(i + (1 << set));
        break;
      }
      case Pattern::tree: d = {i / 2}; break;
      case Pattern::all_to_all:
        for (int j = 0; j < w; ++j) d.push_back(j);
        break;
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
  }
  /// Farthest point (on the line 0 .. width - 1) that any task of step t reads: what a peer that
  /// only talks to its neighbours must relay.
  [[nodiscard]] int reach(int t) const {
    int r = 0;
    for (int i = 0; i < width_at(t); ++i)
      for (int j : deps(t, i)) r = std::max(r, j > i ? j - i : i - j);
    return r;
  }
};

/// The 16-byte payload of a task's output.
struct Payload {
  std::uint64_t value = 0;
  std::uint64_t step = 0;  ///< the step that wrote it, checked by the readers
};

/// The value task (t, i) computes from its inputs' values (in deps order). 40 bits, so that sums
/// over a run fit an int64 (Weft's reductions sum int64 tokens).
inline std::uint64_t mix(int t, int i, const std::uint64_t* in, std::size_t n) {
  auto split = [](std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  std::uint64_t h = split((static_cast<std::uint64_t>(t) << 32) ^ static_cast<std::uint64_t>(i));
  for (std::size_t k = 0; k < n; ++k) h = split(h ^ in[k]);
  return h & ((1ull << 40) - 1);
}

/// The task body: d µs of spinning on the steady clock (Task Bench's busy_wait kernel).
inline void busy(double us) {
  using Clock = std::chrono::steady_clock;
  if (us <= 0) return;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
  while (Clock::now() < until) {
  }
}

/// Sum of every task's value, computed sequentially: what every peer must report.
inline std::uint64_t reference_checksum(const Graph& g) {
  std::vector<std::uint64_t> prev(g.width), cur(g.width), in;
  std::uint64_t sum = 0;
  for (int t = 0; t < g.steps; ++t) {
    for (int i = 0; i < g.width_at(t); ++i) {
      in.clear();
      for (int j : g.deps(t, i)) in.push_back(prev[j]);
      cur[i] = mix(t, i, in.data(), in.size());
      sum += cur[i];
    }
    std::swap(prev, cur);
  }
  return sum;
}

/// One timed run of a peer: seconds from the first task to the last, and its checksum.
struct Run {
  double seconds = 0;
  std::uint64_t checksum = 0;
};

Run run_weft(const Graph& g);
Run run_threads(const Graph& g);
/// StarPU (when found at configure time): started once, with `width` CPU workers.
bool starpu_start(int width, const std::string& scheduler);
Run run_starpu(const Graph& g);
void starpu_stop();
/// What the StarPU peer is ("StarPU 1.3.10, eager, 2 CPU workers") or why it is absent.
std::string starpu_description();

}  // namespace taskbench
