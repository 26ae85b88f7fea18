#pragma once
// Internal: an MPI call's return code (under MPI_ERRORS_RETURN) turned into MpiError.
#include <mpi.h>

#include <string>

#include "weft/util/error.hpp"

namespace weft::detail {

/// Throws MpiError("<call> failed: <MPI's text>") unless `code` is MPI_SUCCESS.
inline void mpi_check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw MpiError(std::string(call) + " failed: " + std::string(text, len), code);
}

/// A duplicate of MPI_COMM_WORLD that returns errors instead of aborting: each layer that talks
/// over MPI (runs, agreements, the liveness watch) has its own, so their messages never meet.
/// Collective: every rank makes it at the same point.
[[nodiscard]] inline MPI_Comm duplicate_world() {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}

/// The communicator of every run (edges, halos, state transfers, run control), made once on all
/// ranks when the Environment starts; runs on it are told apart by tags (cluster/tags.hpp).
[[nodiscard]] inline MPI_Comm run_communicator() {
  static const MPI_Comm comm = duplicate_world();
  return comm;
}

}  // namespace weft::detail
