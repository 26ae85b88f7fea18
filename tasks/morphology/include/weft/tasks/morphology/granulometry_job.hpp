#pragma once
/// A whole granulometry of a volume split into slabs over any places, as `weft granulometry` and
/// the Python package run it: the largest size N found first when not given (a pass over the
/// slabs), the slabs planned for the places' memory and balanced for reads in turns, then the
/// curve, the pattern spectrum and, if asked, the size map delivered slab by slab.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/tasks/morphology/slab_tasks.hpp"

namespace weft::morphology {

struct GranulometryJob {
  Shape shape;                         ///< Z, Y, X of the volume
  MaskReader reader;                   ///< foreground bits of planes [first, first + count)
  Element element = Element::octahedron;
  int max_size = -1;                   ///< N; -1: found first, up to the largest distance to the background
  bool size_map = false;               ///< also the opening function, through the SizeMapWriter
  /// Hand the size map out in SizeMapForm::smallest(N, size_map_diameter), made where each slab
  /// was computed when N is known before the slabs start (else on the collecting rank), instead
  /// of i32 radii as computed.
  bool size_map_smallest = false;
  bool size_map_diameter = false;
  std::vector<Place> places;           ///< where slabs are computed (slab_places)
  const Cluster* cluster = nullptr;
  double budget = 0;                   ///< bytes a slab may use per place (0: no limit)
  std::int64_t slab_planes = 0;        ///< own planes per slab (0: as many as fit the budget)
  std::int64_t read_chunk = kSlabChunkBytes;  ///< bytes of a slab read at a time (one per voxel)
  std::int64_t value_bytes = 1;        ///< bytes per voxel of the stored volume (the balance's read cost)
  bool host_turns = false;             ///< the ranks of a host read their slabs in turns (SlabReadTurns)
  bool handover = false;               ///< and hand their shared halos over (halo_handover_requested)
  bool reads_alone = true;             ///< reading does nothing but read (no filter on the host)
  /// Progress: (done, total, what) after each size (one slab) or each round of slabs; may be empty.
  std::function<void(int, int, const char*)> on_progress;
};

/// Bytes a slab may use on each place when the user says nothing: 70 % of the smallest GPU used
/// (leaving room to the pools and the slab arriving next), else half a rank's memory.
[[nodiscard]] double default_slab_budget(const std::vector<Place>& places, const Cluster& cluster);

/// Maps and runs one graph: the caller's rules first (API, mapping file), then `slabs`, then its
/// automatic mapper. `preliminary`: the pass that finds N, which a mapping file was not written for.
using GraphRunner = std::function<void(Graph& graph, const Mapper& slabs, bool preliminary)>;

/// Receives the size map (host) of planes [first, first + map.shape()[0]), in any order, on the
/// rank that collects the results, as each slab's map arrives. Its values: the largest n ≤ N
/// whose opening keeps the voxel, as i32 with -1 on the background, or in
/// SizeMapForm::smallest(N, diameter) with the job's size_map_smallest; `max_size` is N (known by
/// the first call, also when the job finds it: a writer can choose its storage then).
using SizeMapWriter = std::function<void(std::int64_t first, const Array& map, int max_size)>;

/// How the collector hands the size maps out: `enabled`, the form the slabs send (`sent`, their
/// GranulometryOptions::size_map_form) and, with `smallest`, the form it turns them into once N is
/// known (SizeMapForm::smallest(N, diameter)) where the slabs did not.
struct SizeMapHandout {
  bool enabled = false;
  SizeMapForm sent;
  bool smallest = false;
  bool diameter = false;
};

struct GranulometryOutcome {
  bool collected = false;  ///< this rank collected the results (the others hold no curve)
  std::vector<std::int64_t> remaining;  ///< foreground voxels left by the opening of size n
  std::vector<std::int64_t> spectrum;   ///< remaining[n] - remaining[n + 1]
  int max_size = -1;                    ///< the N used
  SlabPlan plan;                        ///< the slabs (the last run's)
};

/// Adds the task "report" that collects what add_slab_granulometry's graph produces into `out`
/// (curve and spectrum summed over each round's slabs; `size_map` called for each slab's map;
/// `on_progress` after each round when there are several slabs). run_granulometry uses it; it is
/// public for tools that only build the graph (`weft mapping check`).
Task& add_granulometry_collector(Graph& graph, const SlabGraph& slabs, const SlabPlan& plan, const SizeMapHandout& size_map,
                                 std::shared_ptr<GranulometryOutcome> out, SizeMapWriter writer,
                                 std::function<void(int, int, const char*)> on_progress);

/// Runs the job: collective under MPI (every rank calls it alike). The results are collected by
/// the task "report" (on rank 0's CPU unless a mapping places it), which also calls `size_map`.
/// Throws ConfigError for a volume without background when N is to be found.
[[nodiscard]] GranulometryOutcome run_granulometry(const GranulometryJob& job, const GraphRunner& run,
                                                   const SizeMapWriter& size_map = {});

}  // namespace weft::morphology
