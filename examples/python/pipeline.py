"""A Python task between two C++ tasks in a streaming graph: Gaussian blur (on a GPU when there is
one) -> a NumPy gradient magnitude in Python -> a median filter; 100 frames through it.

    PYTHONPATH=build/python python3 examples/python/pipeline.py
    mpirun -n 2 env PYTHONPATH=build/python python3 examples/python/pipeline.py"""
import numpy as np

import weft

rng = np.random.default_rng(1)
frames = [rng.integers(0, 256, (240, 320)).astype(np.float32) for _ in range(100)]


def gradient(x):
    gy, gx = np.gradient(x)
    return np.hypot(gx, gy).astype(np.float32)


g = weft.Graph()
src = g.source("frames", frames)
blur = g.add("blur", "Gaussian", sigma=1.5)
grad = g.python("gradient", gradient)
med = g.add("median", "Median", size=3)
out = g.sink("out")
g.connect(src.out, blur["in"])
g.connect(blur.out, grad["in"])
g.connect(grad.out, med["in"])
g.connect(med.out, out["in"])
stats = weft.run(g)
if weft.rank() == 0:
    results = g.results(out)
    print("%d frames in %.3f s" % (len(results), stats["seconds"]))
    for t in stats["tasks"]:
        print("  %-9s on %-12s busy %.3f s" % (t["task"], t["place"], t["busy_seconds"]))
