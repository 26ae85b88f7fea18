#pragma once
/// Umbrella header of the Weft runtime (CUDA helpers are opt-in: weft/cuda.hpp).
#include "weft/data/array.hpp"
#include "weft/data/dtype.hpp"
#include "weft/exec/environment.hpp"
#include "weft/exec/executor.hpp"
#include "weft/exec/host_segment.hpp"
#include "weft/exec/host_turns.hpp"
#include "weft/graph/graph.hpp"
#include "weft/graph/task.hpp"
#include "weft/graph/value.hpp"
#include "weft/mapping/mapping.hpp"
#include "weft/mapping/place.hpp"
#include "weft/util/error.hpp"
