// Linked into every test labelled `gpu`: on a machine without a GPU the program tells ctest it was
// skipped (exit 77, the tests' SKIP_RETURN_CODE) before any case runs, rather than passing cases
// that checked nothing.
#include <cstdio>
#include <cstdlib>

#include "weft/cluster/environment.hpp"

namespace {

const bool kHasGpu = [] {
  if (weft::local_devices().gpus.empty()) {
    std::puts("no GPU on this machine: skipped");
    std::fflush(stdout);
    std::_Exit(77);
  }
  return true;
}();

}  // namespace
