"""One graph over two ranks from Python (mpirun -n 2): a source on rank 0, a Python task on rank 1,
a sink on rank 0; every token back, in order. `mpi4py` as the first argument imports it first
(MPI initialised by mpi4py, joined by Weft); exit 77 (skipped) when mpi4py is asked for but absent."""
import sys

if len(sys.argv) > 1 and sys.argv[1] == "mpi4py":
    try:
        from mpi4py import MPI  # noqa: F401  (initialises MPI before Weft)
    except ImportError:
        print("no mpi4py: skipped")
        sys.exit(77)

import numpy as np

import weft

assert weft.size() == 2, "run under mpirun -n 2"
g = weft.Graph()
src = g.source("numbers", [np.full(8, float(i), np.float32) for i in range(200)])
double = g.python("double", lambda x: 2 * x)
out = g.sink("out")
g.connect(src.out, double["in"])
g.connect(double.out, out["in"])
g.place("numbers", "rank:0/cpu")
g.place("double", "rank:1/cpu")
g.place("out", "rank:0/cpu")
weft.run(g, devices="cpu")
if weft.rank() == 0:
    results = g.results("out")
    assert len(results) == 200, len(results)
    for i, r in enumerate(results):
        assert np.array_equal(r, np.full(8, 2.0 * i, np.float32)), (i, r)
    print("two ranks: 200 tokens through a Python task on rank 1, in order")
