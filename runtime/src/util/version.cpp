#include "weft/util/version.hpp"

#include <mpi.h>

#include <string>

#if defined(WEFT_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif
#if defined(WEFT_HAVE_NCCL)
#include <nccl.h>
#endif

namespace weft {
namespace detail {
extern const char* const kGitCommit;  // generated (cmake/version.cmake)
}  // namespace detail

#if defined(WEFT_HAVE_CUDA)
namespace {

std::string dotted(int v) {  // CUDA's 12040 -> 12.4
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace
#endif

BuildInfo build_info() {
  BuildInfo info;
  info.version = WEFT_VERSION;
  info.commit = detail::kGitCommit;
#if defined(WEFT_HAVE_CUDA)
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  info.cuda = "runtime " + dotted(runtime) + (driver > 0 ? ", driver " + dotted(driver) : ", no driver");
#else
  info.cuda = "not built with CUDA";
#endif
#if defined(WEFT_HAVE_NCCL)
  int nccl = 0;
  ncclGetVersion(&nccl);
  info.nccl = std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." + std::to_string(nccl % 100);
#else
  info.nccl = "not built with NCCL";
#endif
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(mpi, &length);  // callable before MPI_Init
  info.mpi = std::string(mpi, static_cast<std::size_t>(length));
  if (const auto nl = info.mpi.find_first_of("\r\n"); nl != std::string::npos) info.mpi.resize(nl);
  if (const auto comma = info.mpi.find(", package"); comma != std::string::npos) info.mpi.resize(comma);
  return info;
}

}  // namespace weft
