#include "weft/exec/host_turns.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "exec/mpi_check.hpp"
#include "weft/exec/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

namespace weft {
namespace {

using detail::mpi_check;

constexpr std::size_t kBytes = sizeof(std::int64_t);

}  // namespace

HostTurns::HostTurns() : count_(&own_) {
  const Environment* env = Environment::current();
  if (!env || !env->distributed() || env->size() == 1) return;
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, env->rank(), MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  const struct Free {
    MPI_Comm* comm;
    ~Free() { MPI_Comm_free(comm); }
  } free_node{&node};
  mpi_check(MPI_Comm_rank(node, &host_index_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(node, &host_ranks_), "MPI_Comm_size");
  if (host_ranks_ == 1) return;
  // The host's first rank creates the segment under a name of its own, the others open it by that
  // name; it is unlinked once every rank of the host has mapped it (it lives until the last unmaps).
  static std::atomic<int> made{0};
  char name[64] = {};
  int fd = -1;
  if (host_index_ == 0) {
    std::snprintf(name, sizeof name, "/weft-turns-%ld-%d", static_cast<long>(getpid()), made.fetch_add(1));
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0 && ftruncate(fd, kBytes) != 0) {  // zero-filled
      close(fd);
      fd = -1;
    }
  }
  mpi_check(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, node), "MPI_Bcast");
  if (host_index_ != 0) fd = shm_open(name, O_RDWR, 0600);
  void* at = fd >= 0 ? mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (fd >= 0) close(fd);
  int mapped = at != MAP_FAILED ? 1 : 0, everywhere = 0;
  mpi_check(MPI_Allreduce(&mapped, &everywhere, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
  if (host_index_ == 0 && name[0]) shm_unlink(name);
  if (!everywhere) {
    if (at != MAP_FAILED) munmap(at, kBytes);
    // Every rank of the host goes on without turns (wait() returns at once), as it would read
    // without them: slower, never stuck.
    logger("runtime")->warn("the ranks of this host could not share memory for their turns (shm_open '{}'); "
                            "they go on without turns",
                            name);
    count_ = nullptr;
    return;
  }
  count_ = static_cast<std::int64_t*>(at);
}

HostTurns::~HostTurns() {
  if (count_ && count_ != &own_) munmap(count_, kBytes);
}

bool HostTurns::wait(std::int64_t turn, const std::function<bool()>& stop) const {
  if (!count_) return true;  // no turns on this host
  const std::atomic_ref<std::int64_t> count(*count_);
  while (count.load(std::memory_order_acquire) < turn) {
    if (stop && stop()) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

void HostTurns::end(std::int64_t turn) noexcept {
  if (!count_) return;
  const std::atomic_ref<std::int64_t> count(*count_);
  std::int64_t seen = count.load(std::memory_order_relaxed);
  while (seen < turn + 1 && !count.compare_exchange_weak(seen, turn + 1, std::memory_order_release)) {
  }
}

std::int64_t HostTurns::ended() const noexcept {
  return count_ ? std::atomic_ref<std::int64_t>(*count_).load(std::memory_order_acquire) : 0;
}

}  // namespace weft
