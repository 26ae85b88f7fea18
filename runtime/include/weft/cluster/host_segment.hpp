#pragma once
/// Memory that the ranks of one host share: a POSIX shared-memory segment whose name the host's
/// first rank chooses and sends to the others over MPI. Made collectively; alone (no MPI, or the
/// only rank of its host) it is this process's own memory, so callers need no second path.
#include <cstddef>

namespace weft {

class HostSegment {
 public:
  /// Under MPI, collective over every rank of the job: call it at the same point on every rank,
  /// outside a run. The segment has the largest `bytes` asked on its host, zero-filled, its pages
  /// given only as they are touched or reserved. Where the host's ranks cannot map one segment (no
  /// /dev/shm), a warning naming `what` is logged and data() is null on every rank of that host.
  HostSegment(std::size_t bytes, const char* what);
  ~HostSegment();
  HostSegment(const HostSegment&) = delete;
  HostSegment& operator=(const HostSegment&) = delete;

  /// The segment (page-aligned), or null where the host's ranks could not share one.
  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// Ranks on this host (1 without MPI) and this rank's index among them (in rank order).
  [[nodiscard]] int host_ranks() const noexcept { return host_ranks_; }
  [[nodiscard]] int host_index() const noexcept { return host_index_; }

  /// Gives the pages of [offset, offset + bytes) their memory now (fallocate where shared), so
  /// that no later write finds /dev/shm full (a SIGBUS). False, with nothing else changed, where
  /// the host lacks the memory. Not collective.
  [[nodiscard]] bool reserve(std::size_t offset, std::size_t bytes) noexcept;
  /// Whether the host's shared memory has `bytes` free now (fstatvfs of /dev/shm; always true for
  /// this process's own memory): a quick check before reserving later, off the critical path
  /// (giving a 107 MB halo slot its pages took 20 ms on a 2xH200 host). Not collective.
  [[nodiscard]] bool room(std::size_t bytes) const noexcept;
  /// Maps the pages of [offset, offset + bytes) into this process, for writing or only reading
  /// (pages another rank reserved), so that the accesses after it do not fault. Best effort. Slow
  /// in a virtual machine (halo slots of 107 MB given and mapped by every graph made its setup
  /// 62-102 ms on 4xH200 hosts, granulometry.json setup_seconds): call it off the critical path,
  /// on a thread of its own.
  void map(std::size_t offset, std::size_t bytes, bool write) const noexcept;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  int fd_ = -1;  // the shared segment's descriptor (for reserve), -1 for this process's own memory
  int host_ranks_ = 1, host_index_ = 0;
};

}  // namespace weft
