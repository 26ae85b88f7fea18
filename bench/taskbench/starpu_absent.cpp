// Built instead of starpu_peer.cpp when CMake found no StarPU (pkg-config starpu-1.3): the bench
// still runs Weft and the threads peer, and says the StarPU peer is absent.
#include <stdexcept>

#include "pattern.hpp"

namespace taskbench {

bool starpu_start(int, const std::string&) { return false; }
Run run_starpu(const Graph&) { throw std::logic_error("built without StarPU"); }
void starpu_stop() {}
std::string starpu_description() {
  return "absent (StarPU 1.3 not found at configure time: apt-get install libstarpu-dev, then reconfigure)";
}

}  // namespace taskbench
