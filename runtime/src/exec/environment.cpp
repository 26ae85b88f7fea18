#include "weft/exec/environment.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "exec/device.hpp"
#include "exec/remote.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

namespace weft {
namespace {

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

void mpi_check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw MpiError(std::string(call) + " failed: " + std::string(text, len), code);
}

}  // namespace

RankInfo local_devices(int rank) {
  RankInfo r;
  r.rank = rank;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  r.host = host;
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
    detail::RemoteLinks::initialize();
  }
  set_log_rank(rank_);
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
  g_current = this;
}

Environment::~Environment() {
  g_current = nullptr;
  if (owns_mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
}

Environment* Environment::current() noexcept { return g_current; }

void Environment::abort_all(int code) const {
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace weft
