#!/usr/bin/env python3
"""Weft's size map next to the local thickness of PoreSpy and of Fiji, on a digital ball and on
plates (docs/granulometry.md, "The size map and local thickness"):

    PYTHONPATH=build/python /usr/bin/python3 docs/local_thickness_example.py
    /usr/bin/python3 docs/local_thickness_example.py build/apps/weft     # without the Python package

Weft's size map comes from the `weft` Python package, or else from the program. PoreSpy's
local_thickness is run where PoreSpy is importable; otherwise its definition (method 'dt') is
written out with scipy. Fiji's Local Thickness is written out from its definition
(Hildebrand-Ruegsegger as the plugin draws it: a sphere of squared radius round(EDT²) around every
foreground voxel, the thickness twice the largest radius covering a voxel), without the plugin's
final clean-up of the map's edges. Needs numpy and scipy (and h5py without the Python package).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import ndimage as ndi


def weft_radius(volume):
    """Weft's size map (radius n in voxels, -1 on the background) for balls."""
    try:
        import weft
        return weft.granulometry(volume, element="ball", size_map=True, devices="cpu").size_map
    except ImportError:
        import h5py
        program = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WEFT_PROGRAM", "weft")
        with tempfile.TemporaryDirectory() as tmp:
            with h5py.File(os.path.join(tmp, "v.h5"), "w") as f:
                f.create_dataset("v", data=volume.astype(np.uint8))
            subprocess.run([program, "granulometry", "--input", os.path.join(tmp, "v.h5") + ":/v", "--element",
                            "ball", "--size-map", "--devices", "cpu", "--no-progress", "--output",
                            os.path.join(tmp, "out")], check=True, capture_output=True)
            with h5py.File(os.path.join(tmp, "out", "granulometry.h5")) as f:
                stored = f["size_map"]
                n = stored[()].astype(np.int32)
                n[stored[()] == stored.attrs["background"]] = -1
                return n


def porespy_radius(volume):
    """PoreSpy's local thickness: the radius r of the largest sphere {|d| < r} inside the
    foreground that covers the voxel (0 on the background)."""
    try:
        import porespy
        return porespy.filters.local_thickness(volume, method="dt"), "porespy " + porespy.__version__
    except ImportError:
        dt = ndi.distance_transform_edt(volume)  # distance to the nearest background voxel centre
        lt = np.zeros(volume.shape)
        for r in range(int(np.floor(dt.max())), 0, -1):  # porespy's local_thickness_dt, largest first
            seeds = dt >= r
            if seeds.any():
                covered = ndi.distance_transform_edt(~seeds) < r
                lt[(lt == 0) & covered] = r
        return lt, "PoreSpy's definition (method 'dt'), written out"


def fiji_thickness(volume):
    """Fiji's local thickness: 2·sqrt of the largest round(EDT²) among the spheres covering the voxel."""
    dt = ndi.distance_transform_edt(volume)
    squared = np.zeros(volume.shape)
    for p in zip(*np.nonzero(volume)):
        r = dt[p]
        r2 = int(r * r + 0.5)
        k = int(np.ceil(r))
        lo = [max(0, c - k) for c in p]
        hi = [min(s, c + k + 1) for c, s in zip(p, volume.shape)]
        z, y, x = np.ogrid[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        inside = (z - p[0]) ** 2 + (y - p[1]) ** 2 + (x - p[2]) ** 2 <= r2
        box = squared[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        box[inside] = np.maximum(box[inside], r2)
    return np.where(volume, 2 * np.sqrt(squared), 0.0)


def report(name, volume, where):
    n = weft_radius(volume)
    lt, how = porespy_radius(volume)
    tau = fiji_thickness(volume)
    fg = volume.astype(bool)
    print("%s (%d voxels):" % (name, fg.sum()))
    for label, at in where:
        print("  %-28s weft n = %d (diameter %d)   porespy r = %g (2r = %g)   fiji = %.3f"
              % (label, n[at], 2 * n[at] + 1, lt[at], 2 * lt[at], tau[at]))
    print("  %-28s weft n %.3f (diameter %.3f)   porespy r %.3f (2r %.3f)   fiji %.3f"
          % ("mean over the foreground:", n[fg].mean(), (2 * n[fg] + 1).mean(), lt[fg].mean(), 2 * lt[fg].mean(),
             tau[fg].mean()))
    return how


if __name__ == "__main__":
    R = 5
    z, y, x = np.indices((2 * R + 5,) * 3) - (R + 2)
    ball = (z * z + y * y + x * x <= R * R).astype(np.uint8)  # the digital ball of radius 5: 515 voxels
    c = R + 2
    how = report("digital ball of radius %d" % R, ball,
                 [("centre", (c, c, c)), ("(5,0,0), |d|² = 25", (c + 5, c, c)), ("(4,3,0), |d|² = 25", (c + 4, c + 3, c)),
                  ("(3,2,2), |d|² = 17", (c + 3, c + 2, c + 2))])
    for t in (5, 6):
        plate = np.zeros((t + 4, 24, 24), np.uint8)
        plate[2:2 + t] = 1  # a plate t voxels thick, wider than the box: its edges touch the faces
        report("plate %d voxels thick" % t, plate, [("middle", (2 + t // 2, 12, 12)), ("face", (2, 12, 12))])
    print("(PoreSpy: %s)" % how)
