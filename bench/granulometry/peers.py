#!/usr/bin/env python3
"""Peers of the granulometry benchmark: the same openings with scipy.ndimage (CPU) and
cupyx.scipy.ndimage (GPU, skipped cleanly when CuPy is absent), at the sizes they can finish.

Usage: peers.py --input FILE.h5:/dataset --elements octahedron,cube,ball --sizes 1,2,4
                --json OUT.json [--no-scipy] [--no-cupy] [--budget SECONDS]
Writes {"scipy": {...}, "cupy": {...}} with, per element, the seconds and remaining voxels of
every size done, and the mean seconds per size (the driver extrapolates to N = 50).
Definition as in the issue: outside voxels are ignored (erosion border value 1, dilation 0)."""
import argparse
import json
import sys
import time

import h5py
import numpy as np


def load(ref):
    path, dataset = ref.rsplit(":", 1)
    with h5py.File(path, "r") as f:
        return np.asarray(f[dataset][...]) != 0


def openings(nd, xp, mask, element, n):
    """Opening of `mask` by the element of size n with the ndimage module `nd` over array module `xp`."""
    if element in ("octahedron", "cube"):
        structure = nd.generate_binary_structure(3, 1 if element == "octahedron" else 3)
        # CuPy implements iterated erosions only with brute_force=True (same result).
        kw = {} if xp is np else {"brute_force": True}
        eroded = nd.binary_erosion(mask, structure=structure, iterations=n, border_value=1, **kw)
        return nd.binary_dilation(eroded, structure=structure, iterations=n, border_value=0, **kw)
    # Ball: erosion = squared distance to background > n², dilation = distance to eroded ≤ n.
    d = nd.distance_transform_edt(mask)
    eroded = xp.rint(d * d) > n * n
    if not bool(eroded.any()):
        return xp.zeros_like(mask)
    back = nd.distance_transform_edt(~eroded)
    return xp.rint(back * back) <= n * n


def run(name, nd, xp, sync, mask, elements, sizes, budget, warm_up=False):
    out = {}
    for element in elements:
        if warm_up:  # untimed opening of the whole volume: kernels for its sizes, memory pool grown
            openings(nd, xp, mask, element, 1)
            # and of a small corner at every size: on a fresh machine CuPy compiled kernels per
            # iteration count inside the timed openings (3.97 s and 5.2 s for 512^3 octahedra at
            # n = 1, 2 against 0.021 s and 0.029 s on a machine that had run them before).
            for n in sizes:
                openings(nd, xp, mask[:16, :16, :16], element, n)
            sync()
        rows, spent = [], 0.0
        for n in sizes:
            if spent > budget:
                break
            sync()
            t0 = time.perf_counter()
            kept = openings(nd, xp, mask, element, n)
            count = int(kept.sum())
            sync()
            dt = time.perf_counter() - t0
            spent += dt
            rows.append({"size": n, "seconds": dt, "remaining": count})
            print(f"  {name:5s} {element:10s} n={n:3d} {dt:8.3f} s remaining {count}", file=sys.stderr)
        out[element] = {"sizes": rows,
                        "mean_seconds_per_size": (sum(r["seconds"] for r in rows) / len(rows)) if rows else None}
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input", required=True)
    p.add_argument("--elements", default="octahedron,cube,ball")
    p.add_argument("--sizes", default="1,2,4")
    p.add_argument("--json", required=True)
    p.add_argument("--no-scipy", action="store_true")
    p.add_argument("--no-cupy", action="store_true")
    p.add_argument("--budget", type=float, default=20.0, help="seconds per element and library")
    a = p.parse_args()
    elements = a.elements.split(",")
    sizes = [int(s) for s in a.sizes.split(",")]
    mask = load(a.input)
    result = {"shape": list(mask.shape), "foreground": int(mask.sum())}
    if not a.no_scipy:
        import scipy
        import scipy.ndimage as snd
        result["scipy"] = {"version": scipy.__version__,
                           **run("scipy", snd, np, lambda: None, mask, elements, sizes, a.budget)}
    if not a.no_cupy:
        try:
            import cupy as cp
            import cupyx.scipy.ndimage as cnd
            d_mask = cp.asarray(mask)
            sync = cp.cuda.Stream.null.synchronize
            openings(cnd, cp, d_mask[:8, :8, :8], "ball", 1)  # warm-up: kernel compilation
            openings(cnd, cp, d_mask[:8, :8, :8], "octahedron", 1)
            openings(cnd, cp, d_mask[:8, :8, :8], "cube", 1)
            # The first opening of the whole volume also compiles kernels for its sizes and grows
            # the memory pool (0.6-0.8 s more for a 1024^3 ball than the next ones): warm it up.
            result["cupy"] = {"version": cp.__version__,
                              **run("cupy", cnd, cp, sync, d_mask, elements, sizes, a.budget, warm_up=True)}
        except ImportError as e:
            result["cupy"] = {"skipped": f"CuPy not available ({e})"}
            print(f"  cupy skipped: {e}", file=sys.stderr)
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
