#pragma once
/// The process's place in the job: MPI (when launched by mpirun/srun), devices of every rank.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/device/gpu_info.hpp"

namespace weft {
namespace detail {
class Watchdog;
}

struct RankInfo {
  int rank = 0;
  std::string host;
  int cpu_cores = 0;
  std::uint64_t memory_bytes = 0;
  std::vector<GpuInfo> gpus;
};
/// Every rank's devices, identical on all ranks.
struct Cluster {
  std::vector<RankInfo> ranks;
  [[nodiscard]] int size() const noexcept { return static_cast<int>(ranks.size()); }
  [[nodiscard]] int gpu_count() const noexcept;  ///< over all ranks
};

/// Devices of this process only.
[[nodiscard]] RankInfo local_devices(int rank = 0);

/// One per process, created first in main(): initialises MPI when launched by mpirun/srun
/// (MPI_THREAD_MULTIPLE; errors returned, never aborting), discovers every rank's devices, and
/// finalises at the end. Without a launcher the job is one rank and MPI is not touched.
class Environment {
 public:
  Environment(int& argc, char**& argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  [[nodiscard]] static Environment* current() noexcept;
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] bool distributed() const noexcept { return mpi_; }
  [[nodiscard]] const Cluster& cluster() const noexcept { return cluster_; }
  /// Under MPI, collective over every rank: whether `mine` is true on every rank (a choice each
  /// rank makes alone, from its environment variables say, made the same everywhere).
  [[nodiscard]] bool every_rank(bool mine) const;
  /// Aborts every rank with `code` (used after an error on one rank, so that none hangs).
  [[noreturn]] void abort_all(int code) const;

  /// Collective: runs `check` on every rank. When it throws on any rank, every rank throws: the
  /// failing rank its own error, the others a RemoteError with that rank's message and exit code.
  /// Programs check their options and inputs this way, so a bad input seen by one rank stops
  /// every rank with one message before any work.
  void check_everywhere(const std::function<void()>& check) const;
  /// Collective: every rank describes the job as it sees it, field by field (the options that
  /// matter, the mapping, each input's shape, type, size and a sample of its bytes). When a field
  /// differs, every rank throws ConfigError naming the field and the ranks that disagree.
  void agree_on(const std::vector<std::pair<std::string, std::string>>& fields) const;
  /// Ends the process after an error that `code` describes: under MPI, when every rank reaches
  /// this within a few seconds (they all met the error) MPI is finalised and the process exits
  /// with `code`; otherwise every rank is aborted, so that none is left waiting.
  [[noreturn]] void exit_after_error(int code);

 private:
  int rank_ = 0;
  int size_ = 1;
  bool mpi_ = false;
  bool owns_mpi_ = false;
  Cluster cluster_;
  std::unique_ptr<detail::Watchdog> watch_;  ///< liveness of the ranks (runtime/src/cluster/liveness.hpp)
};

}  // namespace weft
