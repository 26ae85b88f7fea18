#pragma once
// The main() of the multi-rank tests (weft_add_test(... MPI_MAIN)): MPI through weft::Environment,
// results printed by rank 0 only. Tests reach the environment through weft::test::env.
#include <vector>

#include "weft/cluster/environment.hpp"
#include "weft/graph/place.hpp"

namespace weft::test {
extern Environment* env;  ///< set before any test runs

/// The two CPU places of every rank (its host place and thread group cpu:1): where migration
/// tests move tasks.
inline std::vector<Place> every_cpu_place() {
  std::vector<Place> places;
  for (int r = 0; r < env->size(); ++r) {
    places.push_back(Place::host(r));
    places.push_back(Place{Place::cpu, 1, r});
  }
  return places;
}
}  // namespace weft::test
