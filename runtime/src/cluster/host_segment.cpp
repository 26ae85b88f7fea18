#include "weft/cluster/host_segment.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>

#include "cluster/mpi_check.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft {
namespace {

using detail::mpi_check;

std::size_t page_bytes() {
  static const std::size_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t{4096};
  }();
  return page;
}

}  // namespace

HostSegment::HostSegment(std::size_t bytes, const char* what) {
  const std::size_t page = page_bytes();
  bytes_ = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  const Environment* env = Environment::current();
  MPI_Comm node = MPI_COMM_NULL;
  if (env && env->distributed() && env->size() > 1 && !settings().separate_hosts) {
    mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, env->rank(), MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
    mpi_check(MPI_Comm_rank(node, &host_index_), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(node, &host_ranks_), "MPI_Comm_size");
  }
  const struct Free {
    MPI_Comm* comm;
    ~Free() {
      if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
    }
  } free_node{&node};
  if (host_ranks_ == 1) {  // this process's own memory, zero pages until touched
    void* at = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = at == MAP_FAILED ? nullptr : at;
    if (!data_) logger("cluster")->warn("no memory for {} ({} bytes)", what, bytes_);
    return;
  }
  std::uint64_t largest = bytes_;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UINT64_T, MPI_MAX, node), "MPI_Allreduce");
  bytes_ = static_cast<std::size_t>(largest);
  // The host's first rank creates the segment under a name of its own, the others open it by that
  // name; it is unlinked once every rank of the host has mapped it (it lives until the last unmaps).
  static std::atomic<int> made{0};
  char name[64] = {};
  if (host_index_ == 0) {
    std::snprintf(name, sizeof name, "/weft-%ld-%d", static_cast<long>(getpid()), made.fetch_add(1));
    fd_ = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {  // zero-filled, no pages yet
      close(fd_);
      fd_ = -1;
    }
  }
  mpi_check(MPI_Bcast(name, sizeof name, MPI_CHAR, 0, node), "MPI_Bcast");
  if (host_index_ != 0 && name[0]) {
    // The segment the host's first rank made: refused unless it is this user's and as large as
    // announced (another user's object under that name, or a smaller one, would be a SIGBUS or worse).
    fd_ = shm_open(name, O_RDWR | O_NOFOLLOW, 0600);
    struct stat st {};
    if (fd_ >= 0 && (fstat(fd_, &st) != 0 || st.st_uid != geteuid() || static_cast<std::size_t>(st.st_size) < bytes_)) {
      close(fd_);
      fd_ = -1;
    }
  }
  void* at = fd_ >= 0 ? mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0) : MAP_FAILED;
  int mapped = at != MAP_FAILED ? 1 : 0, everywhere = 0;
  mpi_check(MPI_Allreduce(&mapped, &everywhere, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
  if (host_index_ == 0 && name[0]) shm_unlink(name);
  if (!everywhere) {
    if (at != MAP_FAILED) munmap(at, bytes_);
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    logger("cluster")->warn("the ranks of this host could not share memory for {} (shm_open '{}', {} bytes)", what,
                            name, bytes_);
    return;
  }
  data_ = at;
}

HostSegment::~HostSegment() {
  if (data_) munmap(data_, bytes_);
  if (fd_ >= 0) close(fd_);
}

bool HostSegment::reserve(std::size_t offset, std::size_t bytes) noexcept {
  if (!data_ || offset > bytes_ || bytes > bytes_ - offset) return false;
  if (bytes == 0) return true;
  // posix_fallocate on /dev/shm gives the pages or fails (ENOSPC) here, where a write to a page
  // the full tmpfs cannot give would be a SIGBUS later.
  return fd_ < 0 || posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes)) == 0;
}

bool HostSegment::room(std::size_t bytes) const noexcept {
  if (!data_) return false;
  if (fd_ < 0 || bytes == 0) return true;
  struct statvfs fs {};
  if (fstatvfs(fd_, &fs) != 0) return false;
  return static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize >= bytes;
}

void HostSegment::map(std::size_t offset, std::size_t bytes, bool write) const noexcept {
  if (!data_ || offset > bytes_ || bytes > bytes_ - offset || bytes == 0) return;
  const std::size_t page = page_bytes(), first = offset / page * page, end = (offset + bytes + page - 1) / page * page;
#if defined(MADV_POPULATE_WRITE)
  (void)madvise(static_cast<char*>(data_) + first, end - first, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
#else
  (void)first, (void)end, (void)write;  // the accesses fault the pages in
#endif
}

}  // namespace weft
