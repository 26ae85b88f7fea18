#pragma once
/// Splitting a volume into slabs along z for several places (and more slabs than places when a
/// slab must fit a memory budget): each slab counts its own planes and carries a halo of planes
/// on each side, clamped at the volume's faces, as wide as the largest element needs for the
/// counts to be exact (granulometry_driver.hpp proves it).
#include <cstdint>
#include <optional>
#include <vector>

#include "weft/tasks/morphology/element.hpp"

namespace weft::morphology {

/// One slab: own planes [first, end) of the volume, read with its halo as [read_first, read_end).
struct Slab {
  std::int64_t first = 0, end = 0;
  std::int64_t read_first = 0, read_end = 0;
  [[nodiscard]] bool empty() const { return end <= first; }
  [[nodiscard]] std::int64_t read_planes() const { return read_end - read_first; }
};

/// Slabs of `planes` own planes each, slab s handled by worker s mod workers in round s / workers.
/// Every worker has rounds() slabs, the ones past the volume empty (so that per-round sums over
/// workers see one value from each). With one round and `edge_cost` > 0 the slabs are balanced
/// instead: a slab computes its own planes plus about `edge_cost` planes' worth of work for each
/// side with a halo (the distances on the halo, the openings of size n on n planes beyond), so the
/// two end slabs, with one such side, get `edge_cost` more own planes than the others.
///
/// With `read_cost` > 0 (the workers of one host, whose readers take turns: ReadTurn within a
/// process, SlabReadTurns between its ranks), a single
/// round of two or more slabs is also balanced for the reading: slab i starts its openings once
/// slabs 0..i are read, the planes [0, end_i + halo) (a slab's leading halo comes from the slab
/// before: add_slab_granulometry), so slab i gets the own planes that make
/// own_i + sides_i · edge_cost + read_cost · (min(depth, end_i + halo) + again_i) equal for every
/// i: the first slabs, which start early, get more planes than the last ones. again_i counts the
/// planes read twice up to slab i: 2 · halo for every slab j ≤ i marked in `rereads` (one of
/// another rank of the host than slab j − 1, whose shared halo it reads again: add_slab_granulometry
/// without HostHalos), so that the slabs after such a turn, which start later, get fewer planes.
struct SlabPlan {
  std::int64_t depth = 0;   ///< Z of the volume
  std::int64_t height = 0;  ///< Y
  std::int64_t width = 0;   ///< X
  std::int64_t halo = 0;    ///< planes read beyond each side of a slab (clamped at the faces)
  std::int64_t planes = 1;  ///< own planes per slab
  int workers = 1;
  std::int64_t edge_cost = 0;  ///< planes of work one halo side adds (balances a single round)
  double read_cost = 0;        ///< planes of openings that reading one plane costs (0: reads not in turns)
  std::int64_t max_read = 0;   ///< most planes a slab may read (what its place's budget holds); 0: planes + 2 halo
  /// Per worker of a single round: whether its slab reads again the halo it shares with the slab
  /// before (halos_read_twice); empty: none does. Only the read_cost balance looks at it.
  std::vector<bool> rereads;

  [[nodiscard]] int slabs() const { return static_cast<int>((depth + planes - 1) / planes); }
  [[nodiscard]] int rounds() const { return (slabs() + workers - 1) / workers; }
  [[nodiscard]] Slab slab(int round, int worker) const;
  /// Whether slab() balances the slabs of the single round: by `read_cost` and `edge_cost` (2 or
  /// more workers, when every slab keeps an own plane and reads no more than `max_read` planes),
  /// else by `edge_cost` alone (more than 2 workers, every middle slab keeping an own plane).
  [[nodiscard]] bool balanced() const;

 private:
  [[nodiscard]] std::int64_t boundary(int i) const;  ///< first own plane of worker i's balanced slab
  /// First own plane of every slab by the read_cost balance, and depth (workers + 1 values); none
  /// where that balance does not apply (read_cost 0, one worker, several rounds) or would leave a
  /// slab without own planes or above the budget's slab.
  [[nodiscard]] std::optional<std::vector<std::int64_t>> read_boundaries() const;
};

/// SlabPlan::read_cost for GPU places, from the rates measured on a 4×H200 host
/// (granulometry_slabs_bench): the slabs' values read from host memory at about 125 GB/s by their
/// turns' reading threads and packed to bits (the 8.6 GB of a 2048³ u8 volume in 0.066 s over the
/// four turns in a WEFT_TRACE; about 90 GB/s when two turns shared the threads, before the sources
/// read their next chunks ahead), openings up to `max_size` at about
/// 3.8 ps per voxel and size for octahedra and balls, 5.0 for cubes (sizes 1..N + 1). Hosts
/// differ (the one-slab read took 0.064 to 0.123 s on the 4xH200 hosts used), and the slabs'
/// costs also depend on their content (sizes beyond a slab's largest distance are skipped), which
/// no such model sees: a few percent either way.
[[nodiscard]] double gpu_read_cost(Element element, int max_size, std::int64_t value_bytes) noexcept;

/// SlabPlan::edge_cost for GPU places: the planes of work one halo side adds to a slab, which
/// decides how many more own planes the two end slabs (one side) get than the middle ones (two).
/// Octahedra halo / 5, balls halo / 6, cubes 5 · halo / 16: 20, 17 and 31 planes for N = 50.
/// Fitted to the per-slab compute times of every four-GPU run of 2048³, N = 50 on 4×H200 hosts
/// (26 runs each in bench/results/granulometry.json, own_planes_each and compute_seconds_each;
/// compute_i = a (own_i + sides_i · e) + c by least squares over the four slabs of a run): median
/// e = 21.1 planes for octahedra, 17.4 for balls, 32.2 for cubes (spread ± 2-3). The octahedron's
/// bit dilations shrink their box by their steps, so a side costs about N / 3 planes of them, plus
/// its share of the distance transform on the halo; the cube's z pass reads the box, its y and x
/// passes run on the counted planes only. Halo / 4 for octahedra and balls and 3 · halo / 8 for
/// cubes, guessed before the fit, let the end slabs finish 3-11 ms after the middle ones.
[[nodiscard]] std::int64_t gpu_edge_cost(Element element, std::int64_t halo) noexcept;

/// The GPU balance of `plan` (openings up to `max_size` ≥ 0 on GPU places), as `weft granulometry`
/// sets it and the slab benchmark reproduces it: edge_cost = gpu_edge_cost unless the planes were
/// forced, read_cost = gpu_read_cost of `value_bytes`-byte values where the places read in turns
/// (`reads_in_turns`: one host holds them all, its ranks read in turns, and the reading does
/// nothing but read), else 0.
void balance_for_gpus(SlabPlan& plan, Element element, int max_size, std::int64_t value_bytes, bool planes_forced,
                      bool reads_in_turns) noexcept;

/// Planes of halo the openings of sizes up to N + 1 need (the curve's last spectrum value uses
/// the opening N + 1): 2 (N + 1), the distance transform reaching n planes further than the
/// dilation of size n (granulometry_driver.hpp).
[[nodiscard]] constexpr std::int64_t halo_for(int max_size) noexcept { return 2 * (std::int64_t{max_size} + 1); }

/// Bytes per voxel a slab needs on a place while its openings run (mask, erosion distances and
/// work arrays; the size map if asked; twice the mask for the next slab arriving meanwhile).
[[nodiscard]] double slab_bytes_per_voxel(Element element, int max_size, bool size_map, bool gpu) noexcept;

/// Chooses the slabs of a depth × height × width volume for `workers` places: `forced_planes` own
/// planes per slab if > 0, else as many as fit `budget_bytes` per place at `bytes_per_voxel` (0:
/// no limit) with their halo, at most ⌈depth / workers⌉ (max_read: the planes the budget holds, or
/// depth without one; 0 with forced planes). Throws ConfigError (naming
/// `budget_option`) when not even one plane and its halo fits. A single round of more than two
/// slabs (planes not forced) is balanced with edge_cost = halo / 4: for N = max size, (N + 1) / 2
/// planes, between the openings' mean extent n ≈ N / 2 beyond a side and the distances' 2 (N + 1).
[[nodiscard]] SlabPlan plan_slabs(std::int64_t depth, std::int64_t height, std::int64_t width, std::int64_t halo,
                                  int workers, std::int64_t forced_planes, double budget_bytes,
                                  double bytes_per_voxel, const char* budget_option = "--device-memory");

}  // namespace weft::morphology
