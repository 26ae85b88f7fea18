#include "weft/tasks/morphology/slabs.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "weft/util/error.hpp"

namespace weft::morphology {

std::optional<std::vector<std::int64_t>> SlabPlan::read_boundaries() const {
  if (read_cost <= 0 || workers < 2 || rounds() != 1) return std::nullopt;
  // Work of slab i: own_i + sides_i e + ρ (min(D, end_i + h) + a_i), a_i the planes read twice
  // up to slab i (2h for each slab j ≤ i that reads its shared halo again). For a common work T,
  // each own_i follows from end_{i-1}; the last slab takes what remains, and its work falls as T grows.
  const double d = static_cast<double>(depth), h = static_cast<double>(halo), e = static_cast<double>(edge_cost);
  const double rho = read_cost;
  auto again = [&](int i) {  // planes slab i reads again
    return i > 0 && static_cast<std::size_t>(i) < rereads.size() && rereads[static_cast<std::size_t>(i)] ? 2 * h : 0.0;
  };
  auto ends = [&](double t, std::vector<double>& end) {  // returns the last slab's work minus t
    end.assign(static_cast<std::size_t>(workers), 0);
    double at = 0, twice = 0;
    for (int i = 0; i + 1 < workers; ++i) {
      const double sides = i == 0 ? 1 : 2;
      twice += again(i);
      double own = (t - sides * e - rho * (at + h + twice)) / (1 + rho);
      if (at + own + h > d) own = t - sides * e - rho * (d + twice);
      at += own;
      end[static_cast<std::size_t>(i)] = at;
    }
    end.back() = d;
    twice += again(workers - 1);
    return (d - at) + (workers > 1 ? e : 0) + rho * (d + twice) - t;
  };
  std::vector<double> end;
  double lo = 0, hi = 2 * (d + 2 * e + rho * (d + 2 * h * workers)) + 1;
  for (int k = 0; k < 100; ++k) {
    const double t = 0.5 * (lo + hi);
    (ends(t, end) > 0 ? lo : hi) = t;
  }
  (void)ends(0.5 * (lo + hi), end);
  std::vector<std::int64_t> out{0};
  for (double x : end) out.push_back(std::clamp<std::int64_t>(std::llround(x), 0, depth));
  out.back() = depth;
  for (int i = 0; i < workers; ++i) {
    const std::int64_t first = out[static_cast<std::size_t>(i)], last = out[static_cast<std::size_t>(i) + 1];
    if (last <= first) return std::nullopt;
    // No more planes read than the memory budget holds (without one: an unbalanced slab with both halos).
    const std::int64_t most = max_read > 0 ? max_read : planes + 2 * halo;
    if (std::min(depth, last + halo) - std::max<std::int64_t>(0, first - halo) > most) return std::nullopt;
  }
  return out;
}

bool SlabPlan::balanced() const {
  if (read_boundaries()) return true;
  return workers > 2 && edge_cost > 0 && rounds() == 1 && depth - 2 * edge_cost >= workers;
}

std::int64_t SlabPlan::boundary(int i) const {
  if (i <= 0) return 0;
  if (i >= workers) return depth;
  if (const auto b = read_boundaries()) return (*b)[static_cast<std::size_t>(i)];
  // Work per slab t = (depth + (2W − 2) e) / W: end slabs own t − e planes, middle ones t − 2e.
  const double e = static_cast<double>(edge_cost);
  const double t = (static_cast<double>(depth) + (2.0 * workers - 2.0) * e) / workers;
  return std::llround((t - e) + (i - 1) * (t - 2 * e));
}

Slab SlabPlan::slab(int round, int worker) const {
  const std::int64_t s = std::int64_t{round} * workers + worker;
  Slab out;
  if (balanced()) {
    out.first = round == 0 ? boundary(worker) : depth;
    out.end = round == 0 ? boundary(worker + 1) : depth;
  } else {
    out.first = std::min(depth, s * planes);
    out.end = std::min(depth, out.first + planes);
  }
  if (out.empty()) {
    out.first = out.end = out.read_first = out.read_end = 0;
    return out;
  }
  out.read_first = std::max<std::int64_t>(0, out.first - halo);
  out.read_end = std::min(depth, out.end + halo);
  return out;
}

double gpu_read_cost(Element element, int max_size, std::int64_t value_bytes) noexcept {
  constexpr double kReadSecondsPerByte = 1.0 / 125e9;
  const double per_size = element == Element::cube ? 5.0e-12 : 3.8e-12;
  const double sizes = std::max(1, max_size + 1);
  return static_cast<double>(std::max<std::int64_t>(1, value_bytes)) * kReadSecondsPerByte / (per_size * sizes);
}

std::int64_t gpu_edge_cost(Element element, std::int64_t halo) noexcept {
  switch (element) {
    case Element::cube: return 5 * halo / 16;
    case Element::ball: return halo / 6;
    default: return halo / 5;
  }
}

void balance_for_gpus(SlabPlan& plan, Element element, int max_size, std::int64_t value_bytes, bool planes_forced,
                      bool reads_in_turns) noexcept {
  if (!planes_forced) plan.edge_cost = gpu_edge_cost(element, plan.halo);
  plan.read_cost = reads_in_turns ? gpu_read_cost(element, max_size, value_bytes) : 0.0;
}

double slab_bytes_per_voxel(Element element, int max_size, bool size_map, bool gpu) noexcept {
  // CPU: u8 mask, i32 D, i32 work. GPU (granulometry_gpu.cu): u8 mask, bounded D (u8 or u16;
  // balls also its u8 levels) and an i32-sized work array for sizes the bounded paths cover,
  // else i32 D, a u8 copy and three i32 envelope stacks.
  double bytes = 9;
  if (gpu) {
    const bool bounded = max_size >= 0 && (element == Element::ball ? (max_size + 1) * (max_size + 1) < 0xFFFF
                                                                    : max_size + 1 < 150);
    bytes = bounded ? (element == Element::ball ? 8 : 7) : 26;
  }
  return bytes + 2 + (size_map ? 4 : 0);
}

SlabPlan plan_slabs(std::int64_t depth, std::int64_t height, std::int64_t width, std::int64_t halo, int workers,
                    std::int64_t forced_planes, double budget_bytes, double bytes_per_voxel,
                    const char* budget_option) {
  if (depth < 1 || height < 1 || width < 1 || workers < 1 || halo < 0)
    throw ConfigError("slabs: bad volume or workers (" + std::to_string(depth) + "x" + std::to_string(height) + "x" +
                      std::to_string(width) + ", " + std::to_string(workers) + " workers)");
  SlabPlan plan{depth, height, width, halo, 1, workers};
  std::int64_t planes = (depth + workers - 1) / workers;
  if (forced_planes > 0) {
    planes = std::min(depth, forced_planes);
  } else if (budget_bytes > 0) {
    const double plane_bytes = static_cast<double>(height) * static_cast<double>(width) * bytes_per_voxel;
    const auto fit = static_cast<std::int64_t>(std::floor(budget_bytes / plane_bytes));
    plan.max_read = std::max<std::int64_t>(0, fit);
    // A slab that is the whole volume needs no halo.
    if (workers == 1 && fit >= depth) planes = depth;
    else planes = std::min(planes, fit - 2 * halo);
    if (planes < 1)
      throw ConfigError(std::string(budget_option) + ": " + std::to_string(static_cast<long long>(budget_bytes)) +
                        " bytes hold " + std::to_string(std::max<std::int64_t>(fit, 0)) + " planes of " +
                        std::to_string(height) + "x" + std::to_string(width) + " voxels, fewer than one plane and " +
                        std::to_string(2 * halo) + " planes of halo");
  }
  plan.planes = std::max<std::int64_t>(1, planes);
  if (forced_planes <= 0 && budget_bytes <= 0) plan.max_read = depth;
  if (forced_planes <= 0) plan.edge_cost = halo / 4;
  return plan;
}

}  // namespace weft::morphology
