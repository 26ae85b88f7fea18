"""Granulometry of an HDF5 volume read with h5py; the curve plotted with matplotlib when present.

    PYTHONPATH=build/python python3 examples/python/granulometry_h5py.py [volume.h5:/exchange/data]

Without an argument, a sample volume of overlapping balls is written first (as `weft granulometry
--generate-sample` does)."""
import sys

import h5py
import numpy as np

import weft

if len(sys.argv) > 1:
    path, name = sys.argv[1].rsplit(":", 1)
else:
    rng = np.random.default_rng(2026)
    z, y, x = np.indices((64, 64, 64))
    v = np.zeros((64, 64, 64), np.uint8)
    for _ in range(40):
        c, r = rng.uniform(0, 64, 3), rng.uniform(2, 9)
        v[(z - c[0]) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2 <= r * r] = 1
    path, name = "sample.h5", "/exchange/data"
    with h5py.File(path, "w") as f:
        f.create_dataset(name, data=v, chunks=(32, 32, 32), compression="gzip")

with h5py.File(path) as f:
    result = weft.granulometry(f[name], element="ball", size_map=True, voxel_size=1.0)
print(result)
for n, left, removed in zip(result.sizes, result.curve, result.spectrum):
    print("n = %2d  remaining %9d  removed %8d" % (n, left, removed))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, ax = plt.subplots()
ax.plot(result.radius, result.fraction, label="remaining fraction")
ax.bar(result.radius, result.spectrum / result.curve[0], alpha=0.5, label="pattern spectrum")
ax.set_xlabel("ball radius (voxels)")
ax.legend()
fig.savefig("granulometry.png")
print("wrote granulometry.png")
