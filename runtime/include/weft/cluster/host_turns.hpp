#pragma once
/// Turns that the ranks of one host take at something they should not do at once, such as reading
/// their slabs of a volume from the page cache at the rate of every core: turn t starts once turns
/// 0 .. t − 1 of the host have ended. The count of ended turns lives in memory shared by the
/// host's ranks (POSIX shared memory, its name agreed over MPI), so no message is sent per turn.
#include <cstdint>
#include <functional>
#include <memory>

#include "weft/cluster/host_segment.hpp"

namespace weft {

class HostTurns {
 public:
  /// Under MPI, collective over every rank of the job: call it at the same point on every rank,
  /// outside a run. Alone, the turns are this process's. Where the host's ranks cannot share
  /// memory (no /dev/shm), a warning is logged and wait() never blocks: no turns, nothing stuck.
  HostTurns();
  ~HostTurns();
  HostTurns(const HostTurns&) = delete;
  HostTurns& operator=(const HostTurns&) = delete;

  /// Ranks on this host (1 without MPI) and this rank's index among them (in rank order).
  [[nodiscard]] int host_ranks() const noexcept { return segment_->host_ranks(); }
  [[nodiscard]] int host_index() const noexcept { return segment_->host_index(); }

  /// Blocks until turns 0 .. turn − 1 of this host have ended (polling every 50 µs); a turn
  /// nobody ends keeps the later ones waiting, so end() every turn taken, on errors too. Returns
  /// false, without waiting further, as soon as `stop` (if given) returns true.
  [[nodiscard]] bool wait(std::int64_t turn, const std::function<bool()>& stop = {}) const;
  /// Ends `turn` (and any before it): the next may start. Never undoes a later end.
  void end(std::int64_t turn) noexcept;
  /// Turns ended so far.
  [[nodiscard]] std::int64_t ended() const noexcept;

 private:
  std::unique_ptr<HostSegment> segment_;
  std::int64_t* count_ = nullptr;  // in segment_: shared by the host's ranks, this process's own, or none (no turns)
};

}  // namespace weft
