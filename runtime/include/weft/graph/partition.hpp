#pragma once
/// Partition with halos: one array split along its slowest axis into slabs, one task per slab,
/// halo rows exchanged between neighbouring slabs inside a firing (Graph::add_partition); and
/// reductions of values from many tasks, on any ranks, into one (Graph::add_reduce).
///
///   class Smooth : public weft::SlabTask {
///     using SlabTask::SlabTask;
///     void run_slab(weft::Context& ctx, weft::Halo& halo) override {
///       weft::Array u = ctx.take(in), v = ctx.alloc(u.dtype(), u.shape());
///       for (int it = 0; it < 10; ++it) {
///         update(u, v, rows near the neighbours);  // boundary rows first,
///         halo.begin(v);                           // sent while
///         update(u, v, the other rows);            // the interior is computed,
///         halo.end(v);                             // v's halo rows now hold the neighbours' rows
///         std::swap(u, v);
///       }
///       ctx.put(out, u);
///     }
///   };
///   weft::Partition p = g.add_partition("smooth", 4, [](int i) {
///     return std::make_unique<Smooth>("smooth." + std::to_string(i)); }, {.halo = 1});
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/graph/task.hpp"

namespace weft {

namespace detail {
struct SlabAccess;  // the executor binds each slab task to its halo links for a run
}

/// Where a slab lies in the whole array. Rows are indices along the slowest axis; the slab array
/// holds `halo_before` rows of the previous slab, its own `rows`, then `halo_after` rows of the
/// next slab (no halo at the ends of the whole array).
struct Slab {
  int part = 0;
  int parts = 1;
  std::int64_t first_row = 0;    ///< global index of the first row this slab owns
  std::int64_t rows = 0;         ///< rows this slab owns
  std::int64_t halo_before = 0;  ///< halo rows before the owned rows (0 for the first slab)
  std::int64_t halo_after = 0;   ///< halo rows after the owned rows (0 for the last slab)
  std::int64_t global_rows = 0;  ///< rows of the whole array
  /// Rows of the slab array (owned and halo).
  [[nodiscard]] std::int64_t total_rows() const noexcept { return halo_before + rows + halo_after; }
};

/// The halo exchange of one slab task with its neighbours, given to SlabTask::run_slab. Each call
/// of begin(a) sends a's first and last `width` owned rows to the previous and next slab and
/// receives their rows into a's halo rows; end(a) waits for both. Between the two, the task may
/// compute rows that neither read a's halo rows nor write a's boundary rows: that work overlaps the
/// transfer. Every slab of a partition must exchange the same number of times per token.
class Halo {
 public:
  struct Impl;
  explicit Halo(std::unique_ptr<Impl> impl);
  ~Halo();
  Halo(const Halo&) = delete;
  Halo& operator=(const Halo&) = delete;

  /// Starts the exchange of `a` (the slab array of this firing's shape, on the task's place).
  void begin(const Array& a);
  /// Completes it: a's halo rows hold the neighbours' rows, and they have read a's boundary rows.
  void end(const Array& a);
  /// begin(a) for an array laid out as `layout` instead of the slab: another grid over the same
  /// parts (a coarser pyramid level, a per-part scalar) with `layout.rows` owned rows and
  /// layout.halo_before / halo_after rows of its neighbours (one width w at every inner boundary:
  /// w before unless part 0, w after unless the last part, w <= rows). Every slab must use the same
  /// w in the same exchange; a mismatch is an error. end(a) completes it.
  void begin(const Array& a, const Slab& layout);
  /// begin(a) then end(a), for code with nothing to overlap.
  void exchange(const Array& a) {
    begin(a);
    end(a);
  }
  /// begin(a, layout) then end(a).
  void exchange(const Array& a, const Slab& layout) {
    begin(a, layout);
    end(a);
  }
  /// The slab of the token being processed.
  [[nodiscard]] const Slab& slab() const noexcept;
  /// Halo rows on each side of an inner boundary (PartitionOptions::halo).
  [[nodiscard]] int width() const noexcept;

 private:
  friend struct detail::SlabAccess;
  std::unique_ptr<Impl> impl_;
};

/// Base of the tasks made for Graph::add_partition. A slab task takes its slab on `in` (owned
/// rows plus halo rows, on its place) and puts its result on `out`; with a join, the result has
/// the slab's shape (the join keeps the owned rows). It may declare more outputs (per-slab sums for
/// a reduction). run_slab / run_slab_cuda replace run / run_cuda.
class SlabTask : public Task {
 public:
  /// `dtype`: element type required on `in` and `out`, if any.
  explicit SlabTask(std::string name, std::optional<DType> dtype = {});
  In<Array> in;
  In<std::vector<std::int64_t>> where;  ///< the Slab of each token (put by the split, read by the base)
  Out<Array> out;

  /// CPU implementation: arrays are on the host.
  virtual void run_slab(Context& ctx, Halo& halo) = 0;
  /// CUDA implementation (when has_cuda()): arrays on ctx.place()'s GPU, work on its stream.
  virtual void run_slab_cuda(Context& ctx, Halo& halo);

  void run(Context& ctx) final;
  void run_cuda(Context& ctx) final;

 private:
  friend struct detail::SlabAccess;
  void fire(Context& ctx, bool cuda);
  Halo* halo_ = nullptr;  // this run's halo links (set by the executor)
};

struct PartitionOptions {
  int halo = 1;       ///< halo rows exchanged on each side of an inner boundary (0: none)
  bool join = true;   ///< false: no join task; connect the slabs' outputs yourself
};

/// The tasks of a partition: a split (whole array in, one slab per part out), the slab tasks, and
/// a join (the slabs' owned rows assembled, in order) unless PartitionOptions::join is false.
struct Partition {
  std::string name;
  int halo = 1;
  Task* split = nullptr;
  Task* join = nullptr;
  std::vector<SlabTask*> slabs;
  [[nodiscard]] std::pair<Task*, int> in() const { return {split, 0}; }
  [[nodiscard]] std::pair<Task*, int> out() const { return {join, 0}; }
  /// Output `port` of slab `part` (to connect per-slab results to a reduction).
  [[nodiscard]] std::pair<Task*, int> slab_out(int part, int port = 0) const { return {slabs.at(part), port}; }
};

/// Elementwise reductions of Graph::add_reduce.
enum class ReduceOp { sum, min, max };

/// A reduction task: one input per source, one output of the same type.
struct Reduce {
  Task* task = nullptr;
  [[nodiscard]] std::pair<Task*, int> out() const { return {task, 0}; }
};

/// Rows of each part when `rows` are split over `parts` (balanced: the first rows % parts get one
/// more), and the first row of part `part`.
[[nodiscard]] std::int64_t partition_rows(std::int64_t rows, int parts, int part) noexcept;
[[nodiscard]] std::int64_t partition_first_row(std::int64_t rows, int parts, int part) noexcept;

}  // namespace weft
