#!/usr/bin/env python3
"""The size map against the curve, whole process as a user runs it: `weft granulometry` on a
generated sample (`--generate-sample`, overlapping balls) with and without `--size-map`, wall time
and peak resident memory of the process, per edge and element. Writes
bench/results/granulometry_size_map.json.

    python3 bench/granulometry/size_map_bench.py --weft build/apps/weft [--sizes 512,1024]
        [--elements ball,octahedron] [--max-size 50] [--workdir /tmp] [--repeats 2]

Floor: the same run without the size map (what the size map adds is the number to bring to 0);
the ratio printed is (with size map) / (curve only). The input is read from the page cache after
the first run. PoreSpy's and Fiji's local thickness are the peers (docs/granulometry.md compares
the definitions); neither is installable on the GPU machine, so none runs here.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "common"))
import results  # noqa: E402

# Targets of the size map (one H200, whole process): 1024^3 ball <= 1.5 s, 2048^3 <= 7 s, peak
# host RSS <= 2 GB plus the input's page cache (the cache is not in the process's RSS).
TIME_GOALS = {1024: 1.5, 2048: 7.0}
RSS_GOAL_GB = 2.0


def run(cmd):
    """Runs `cmd`; returns (seconds, peak RSS of that process in GB). Stops on a non-zero exit."""
    with tempfile.TemporaryFile(mode="w+") as err:
        t = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own resource usage
        seconds = time.perf_counter() - t
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            sys.exit("size_map_bench: %s failed (%d): %s" % (" ".join(cmd), child.returncode, err.read().strip()[-400:]))
    return seconds, usage.ru_maxrss / 1024.0 / 1024.0  # kB -> GB


def device_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.strip().splitlines()
    except OSError:
        out = []
    return "1x " + out[0].strip() if out else "CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weft", required=True, help="the weft program")
    p.add_argument("--sizes", default="512,1024")
    p.add_argument("--elements", default="ball,octahedron")
    p.add_argument("--max-size", type=int, default=50)
    p.add_argument("--workdir", default="/tmp")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--output", default=os.path.join(ROOT, "bench", "results", "granulometry_size_map.json"))
    a = p.parse_args()
    rows, targets = [], {}
    for edge in [int(s) for s in a.sizes.split(",")]:
        sample = os.path.join(a.workdir, "weft_size_map_%d.h5" % edge)
        gen_s, _ = run([a.weft, "granulometry", "--generate-sample", sample, "--sample-size", str(edge)])
        print("%d^3 sample generated in %.1f s" % (edge, gen_s), flush=True)
        for element in a.elements.split(","):
            times = {}
            for size_map in (False, True):
                out = os.path.join(a.workdir, "weft_size_map_out")
                cmd = [a.weft, "granulometry", "--input", sample + ":/exchange/data", "--element", element,
                       "--max-size", str(a.max_size), "--output", out, "--no-progress"]
                if size_map:
                    cmd.append("--size-map")
                best = None
                for _ in range(a.repeats):
                    shutil.rmtree(out, ignore_errors=True)
                    s, rss = run(cmd)
                    if best is None or s < best[0]:
                        best = (s, rss)
                map_bytes = os.path.getsize(os.path.join(out, "granulometry.h5")) if size_map else 0
                times[size_map] = best
                rows.append({"edge": edge, "element": element, "max_size": a.max_size, "size_map": size_map,
                             "seconds": best[0], "peak_rss_gb": best[1], "granulometry_h5_bytes": map_bytes})
            ratio = times[True][0] / times[False][0]
            print("%d^3 %s N=%d: curve %.2f s, with size map %.2f s (%.2fx the curve, the floor), peak RSS %.2f GB"
                  % (edge, element, a.max_size, times[False][0], times[True][0], ratio, times[True][1]), flush=True)
            if element == "ball" and edge in TIME_GOALS:
                goal = TIME_GOALS[edge]
                targets["%d^3 ball with size map <= %.1f s" % (edge, goal)] = {
                    "value": times[True][0], "goal": goal, "met": times[True][0] <= goal}
                targets["%d^3 ball with size map: peak RSS <= %.0f GB" % (edge, RSS_GOAL_GB)] = {
                    "value": times[True][1], "goal": RSS_GOAL_GB, "met": times[True][1] <= RSS_GOAL_GB}
        os.remove(sample)
    results.write(a.output, "granulometry_size_map", device_name(),
                  {"floor": "the same run without --size-map", "rows": rows}, targets)


if __name__ == "__main__":
    main()
