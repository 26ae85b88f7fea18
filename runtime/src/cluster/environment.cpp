#include "weft/cluster/environment.hpp"

#include <mpi.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/agreement.hpp"
#include "device/device.hpp"
#include "cluster/liveness.hpp"
#include "cluster/mpi_check.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft {
namespace {

using detail::mpi_check;

Environment* g_current = nullptr;

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

nlohmann::json to_json(const RankInfo& r) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.gpus)
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"memory", g.memory_bytes},
                    {"cc", {g.compute_major, g.compute_minor}}, {"sms", g.multiprocessors}, {"uuid", g.uuid}});
  return {{"rank", r.rank}, {"host", r.host}, {"cores", r.cpu_cores}, {"memory", r.memory_bytes}, {"gpus", gpus}};
}

RankInfo from_json(const nlohmann::json& j) {
  RankInfo r;
  r.rank = j["rank"];
  r.host = j["host"];
  r.cpu_cores = j["cores"];
  r.memory_bytes = j["memory"];
  for (const auto& g : j["gpus"])
    r.gpus.push_back({g["index"], g["name"], g["memory"], g["cc"][0], g["cc"][1], g["sms"], g["uuid"]});
  return r;
}

std::string cpu_list(const cpu_set_t& set) {
  std::string text;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!text.empty()) text += ',';
    text += std::to_string(c);
    if (last > c) text += '-' + std::to_string(last);
    c = last;
  }
  return text;
}

// A launcher binds each rank to one core by default (Open MPI does with 2 ranks or fewer), but
// a rank runs a progress thread, a thread per cross-rank edge and one per task, some of them
// spinning on GPU events: on one core they take turns, and a message waits for its thread's
// turn (hundreds of microseconds per hop on two H200s). Such a rank is given its share of the
// node's CPUs instead: the online CPUs split evenly among the ranks of the node, by local rank.
// WEFT_KEEP_BINDING=1 (or a binding of several CPUs per rank) keeps the launcher's choice.
void widen_binding(int rank) {
  constexpr int kThreadsWanted = 4;
  MPI_Comm node;  // the ranks of this node, numbered
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
  int local = 0, locals = 1;
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &locals);
  MPI_Comm_free(&node);
  if (settings().keep_binding) return;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return;
  const int bound = CPU_COUNT(&mine);
  const int online = get_nprocs();
  if (bound >= kThreadsWanted || online / std::max(locals, 1) <= bound) return;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && static_cast<int>(cpus.size()) < online; ++c) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) cpus.push_back(c);  // online and allowed (cgroups)
  }
  const int usable = static_cast<int>(cpus.size()) / std::max(locals, 1);
  cpu_set_t wide;
  CPU_ZERO(&wide);
  for (int i = local * usable; i < (local + 1) * usable; ++i) CPU_SET(cpus[static_cast<std::size_t>(i)], &wide);
  if (usable <= bound || sched_setaffinity(0, sizeof wide, &wide) != 0) {
    sched_setaffinity(0, sizeof mine, &mine);
    return;
  }
  logger("cluster")->info("the launcher bound this rank to CPU {}; Weft's progress, link and task threads need more: "
                          "now on CPUs {} (WEFT_KEEP_BINDING=1 keeps the launcher's binding)",
                          cpu_list(mine), cpu_list(wide));
}

}  // namespace

RankInfo local_devices(int rank) {
  RankInfo r;
  r.rank = rank;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  r.host = host;
  if (settings().separate_hosts) r.host += "#" + std::to_string(rank);  // every rank a host of its own
  r.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  r.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE));
  r.gpus = detail::list_gpus();
  return r;
}

Environment::Environment(int& argc, char**& argv) {
  if (g_current) throw Error("only one weft::Environment may exist in a process");
  int already = 0;
  MPI_Initialized(&already);
  if (already) {
    mpi_ = true;
  } else if (launched_by_mpi()) {
    int provided = 0;
    mpi_check(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED)
      throw MpiError("the MPI library offers too little thread support (need at least MPI_THREAD_SERIALIZED)", 0);
    owns_mpi_ = mpi_ = true;
  }
  if (mpi_) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    (void)detail::run_communicator();  // collective: every rank makes it here
  }
  set_log_rank(rank_);
  if (mpi_) widen_binding(rank_);
  RankInfo mine = local_devices(rank_);
  if (!mpi_ || size_ == 1) {
    cluster_.ranks.push_back(mine);
  } else {
    std::string text = to_json(mine).dump();
    int len = static_cast<int>(text.size());
    std::vector<int> lens(size_), offsets(size_);
    mpi_check(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
    int total = 0;
    for (int i = 0; i < size_; ++i) {
      offsets[i] = total;
      total += lens[i];
    }
    std::string all(total, '\0');
    mpi_check(MPI_Allgatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR,
                             MPI_COMM_WORLD), "MPI_Allgatherv");
    for (int i = 0; i < size_; ++i)
      cluster_.ranks.push_back(from_json(nlohmann::json::parse(all.substr(offsets[i], lens[i]))));
  }
  if (mpi_ && size_ > 1) {
    (void)detail::agreement_comm();  // collective: made once, alike on every rank
    int level = 0;
    MPI_Query_thread(&level);
    // The watch thread calls MPI beside the progress thread: only with MPI_THREAD_MULTIPLE.
    if (level == MPI_THREAD_MULTIPLE) watch_ = std::make_unique<detail::Watchdog>(rank_, size_, detail::liveness_timeout());
    else logger("cluster")->warn("MPI offers no MPI_THREAD_MULTIPLE: a stopped or lost rank is left to the launcher");
  }
  g_current = this;
}

Environment::~Environment() {
  g_current = nullptr;
  watch_.reset();  // says goodbye: this rank ends normally
  if (owns_mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

Environment* Environment::current() noexcept { return g_current; }

bool Environment::every_rank(bool mine) const {
  if (!mpi_ || size_ == 1) return mine;
  int all = mine ? 1 : 0;
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return all != 0;
}

void Environment::abort_all(int code) const {
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace weft
