#pragma once
// Internal: the halo links of one run. Every slab task of a partition mapped to this rank gets a
// Halo for the run; neighbours in this process hand their boundary rows over through a mailbox
// (the receiver copies straight out of the sender's array, then acknowledges), neighbours on other
// ranks through the progress thread's MPI messages (pinned host rows; device rows staged).
// These links are not graph edges: they are used inside a firing, in both directions.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <functional>
#include <memory>
#include <vector>

#include "weft/exec/executor.hpp"
#include "weft/graph/partition.hpp"

namespace weft::detail {

class RemoteLinks;
class TraceRecorder;

class HaloLinks {
 public:
  /// Binds every local slab task of `graph`'s partitions to a Halo; `remote` carries the links
  /// to other ranks (may be null on one rank). The time each end() waits is traced in the
  /// task's lane ("halo" spans).
  HaloLinks(const Graph& graph, const Mapping& mapping, int rank, RemoteLinks* remote, const ExecutorOptions& options,
            TraceRecorder& trace, const std::function<int(const Task&)>& lane);
  ~HaloLinks();  ///< unbinds the tasks
  HaloLinks(const HaloLinks&) = delete;
  HaloLinks& operator=(const HaloLinks&) = delete;
  /// Wakes every task waiting for a neighbour (they throw); called when the run stops.
  void cancel();

  struct Shared;  // the mailboxes (lock-free, one per direction between two slabs) and the cancellation flag

 private:
  std::unique_ptr<Shared> shared_;
  std::vector<std::pair<SlabTask*, std::unique_ptr<Halo>>> halos_;
};

/// The executor's access to slab tasks and their halos.
struct SlabAccess {
  static void bind(SlabTask& task, Halo* halo) noexcept { task.halo_ = halo; }
  [[nodiscard]] static Halo* bound(const SlabTask& task) noexcept { return task.halo_; }
  [[nodiscard]] static Halo::Impl& impl(Halo& halo) noexcept { return *halo.impl_; }
};

}  // namespace weft::detail
