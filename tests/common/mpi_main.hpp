#pragma once
// The main() of the multi-rank tests (weft_add_test(... MPI_MAIN)): MPI through weft::Environment,
// results printed by rank 0 only. Tests reach the environment through weft::test::env.
#include "weft/exec/environment.hpp"

namespace weft::test {
extern Environment* env;  ///< set before any test runs
}  // namespace weft::test
