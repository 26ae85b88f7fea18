#pragma once
// Internal: the communicator on which the ranks agree outside runs (Environment::check_everywhere,
// agree_on, exit_after_error), apart from the runs' own so that their messages never meet.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <mpi.h>

namespace weft::detail {

/// Duplicated from MPI_COMM_WORLD on first call, which every rank makes (Environment does).
[[nodiscard]] MPI_Comm agreement_comm();

}  // namespace weft::detail
