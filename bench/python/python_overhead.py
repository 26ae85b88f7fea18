#!/usr/bin/env python3
"""What the Python layer adds to a call of the C++ path: a small image (tens of microseconds are
the goal) and a 1024^3 granulometry (under 2 %), on the GPU where there is one, else the CPUs.

    PYTHONPATH=build/python python3 bench/python/python_overhead.py [--size 1024] [--repeats 200]

The C++ part of each call is timed inside the module (weft._weft._last_call_seconds: building,
mapping and running its graph); the overhead is the call's wall time minus that, over many calls.
Writes bench/results/python_overhead.json (the floor of the overhead is 0 by definition: the
figure is the overhead itself)."""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

import weft
from weft import _weft

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "bench", "common"))
import results  # noqa: E402


def timed(call, repeats):
    walls, inner = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        walls.append(time.perf_counter() - t)
        inner.append(_weft._last_call_seconds())
    over = [w - i for w, i in zip(walls, inner)]
    return statistics.median(walls), statistics.median(inner), statistics.median(over)


def device_name():
    gpus = [g for r in weft.devices() for g in r["gpus"]]
    return "%s x%d" % (gpus[0]["name"], len(gpus)) if gpus else "cpu only (%s, %d cores)" % (
        platform.processor() or platform.machine(), os.cpu_count())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=1024, help="edge of the granulometry volume")
    p.add_argument("--repeats", type=int, default=200, help="calls of the small filter")
    p.add_argument("--output", default=os.path.join(root, "bench", "results", "python_overhead.json"))
    a = p.parse_args()
    devices = "gpu" if any(r["gpus"] for r in weft.devices()) else "cpu"
    image = np.random.default_rng(1).integers(0, 256, (256, 256), dtype=np.uint8)
    for _ in range(10):
        weft.median(image, 3, devices=devices)  # warm: pools, streams, first launches
    wall, inner, over = timed(lambda: weft.median(image, 3, devices=devices), a.repeats)
    print("median 3x3 of 256x256 on %s: call %.1f us, C++ %.1f us, Python adds %.1f us"
          % (devices, wall * 1e6, inner * 1e6, over * 1e6))

    rng = np.random.default_rng(2)
    n = a.size
    volume = (rng.random((n, n, n), dtype=np.float32) < 0.45).astype(np.uint8)  # porous noise
    weft.granulometry(volume[: min(n, 64)], element="ball", max_size=4, devices=devices)
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        weft.granulometry(volume, element="ball", max_size=50, devices=devices)
        runs.append((time.perf_counter() - t, _weft._last_call_seconds()))
    g_wall, g_inner = min(runs)
    share = (g_wall - g_inner) / g_inner
    print("granulometry ball N=50 of %d^3 on %s: call %.3f s, C++ %.3f s, Python adds %.2f %%"
          % (n, devices, g_wall, g_inner, 100 * share))

    metrics = {
        "small_call": {"what": "weft.median 3x3 of a 256x256 uint8 image", "devices": devices,
                       "repeats": a.repeats, "call_us": wall * 1e6, "cpp_us": inner * 1e6,
                       "python_us": over * 1e6},
        "granulometry": {"what": "weft.granulometry ball N=50", "edge": n, "devices": devices,
                         "call_s": g_wall, "cpp_s": g_inner, "python_share": share},
    }
    targets = {
        "Python adds to a small call <= 100 us": {"value": over * 1e6, "goal": 100.0, "met": over * 1e6 <= 100.0},
        "Python adds to a %d^3 granulometry <= 2 %%" % n: {"value": 100 * share, "goal": 2.0,
                                                           "met": 100 * share <= 2.0},
    }
    results.write(a.output, "python_overhead", device_name(), metrics, targets)


if __name__ == "__main__":
    main()
