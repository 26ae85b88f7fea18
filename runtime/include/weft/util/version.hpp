#pragma once
/// What this Weft is and what it was built with (weft --version, and the provenance that outputs carry).
#include <string>

namespace weft {

struct BuildInfo {
  std::string version;  ///< the project's version, e.g. "0.1.0"
  std::string commit;   ///< `git describe` of the source at build time, "unknown" outside git
  std::string cuda;     ///< CUDA runtime and driver versions, or "not built with CUDA"
  std::string nccl;     ///< NCCL version, or "not built with NCCL"
  std::string mpi;      ///< the MPI library's own version line
};

/// The runtime's build information (HDF5's version is the I/O library's: io::hdf5_version()).
[[nodiscard]] BuildInfo build_info();

}  // namespace weft
