// The `weft._weft` extension module: the runtime and the applications on numpy arrays. The Python
// package (python/weft/__init__.py) gives them their documented signatures.
#include "bindings.hpp"

PYBIND11_MODULE(_weft, m) {
  m.doc() = "Weft's C++ runtime and applications (use the `weft` package)";
  weft::python::bind_errors(m);
  weft::python::bind_runtime(m);
  weft::python::bind_graph(m);
  weft::python::bind_filters(m);
  weft::python::bind_flow(m);
  weft::python::bind_saliency(m);
  weft::python::bind_granulometry(m);
}
