#!/usr/bin/env python3
"""OpenCV DualTVL1 peer of the flow benchmark, on the CPU of the development machine.

Runs cv2.optflow.DualTVL1OpticalFlow_create() at its defaults (tau 0.25, lambda 0.15, theta 0.3,
5 scales, scale step 0.8, 5 warps, epsilon 0.01, 30 x 10 iterations, median 5) on the shared pairs
and writes bench/results/flow_opencv_cpu.json (EPE, seconds, machine). The GPU benchmark
(flow_bench) reads that file for the speed and EPE ratios, since the GPU machine has no cv2.
Usage: python3 bench/flow/opencv_peer.py [--data DIR] [--repeat N]
"""
import argparse, datetime, json, os, platform, subprocess, sys, time

import numpy as np

try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None

PAIRS = [
    ("RubberWhale", "middlebury/RubberWhale/frame10.png", "middlebury/RubberWhale/frame11.png", "middlebury/RubberWhale/flow10.flo"),
    ("Hydrangea", "middlebury/Hydrangea/frame10.png", "middlebury/Hydrangea/frame11.png", "middlebury/Hydrangea/flow10.flo"),
    ("SintelEasy", "sintel/easy/frame_0002.png", "sintel/easy/frame_0003.png", "sintel/easy/gt/frame_0002.flo"),
]


def read_flo(path):
    with open(path, "rb") as f:
        tag = np.frombuffer(f.read(4), np.float32)[0]
        if abs(tag - 202021.25) > 1e-3:
            raise ValueError(f"{path}: not a .flo file")
        w, h = np.frombuffer(f.read(8), np.int32)
        return np.frombuffer(f.read(), np.float32).reshape(h, w, 2)


def epe(flow, truth):
    known = (np.abs(truth[..., 0]) < 1e9) & (np.abs(truth[..., 1]) < 1e9)
    d = np.hypot(flow[..., 0] - truth[..., 0], flow[..., 1] - truth[..., 1])
    return float(d[known].mean())


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(root, "..", "shared", "data", "flow"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(os.environ.get("WEFT_RESULTS_DIR", os.path.join(root, "bench", "results")),
                                                 "flow_opencv_cpu.json"))
    args = ap.parse_args()
    doc = {"benchmark": "flow_opencv_cpu", "date": datetime.datetime.utcnow().isoformat() + "Z",
           "machine": {"cpu": cpu_name(), "logical_cores": os.cpu_count(), "threads_used": None,
                       "note": "development machine, shared with other engineers while measured"},
           "command": " ".join([sys.executable] + sys.argv), "pairs": {}}
    if cv2 is None or not hasattr(cv2, "optflow"):
        doc["available"] = False
        doc["note"] = "cv2.optflow (opencv-contrib) absent; use the EPEs of the shared data README"
    else:
        doc["available"] = True
        doc["opencv"] = cv2.__version__
        doc["machine"]["threads_used"] = cv2.getNumThreads()
        for name, a, b, g in PAIRS:
            i0 = cv2.imread(os.path.join(args.data, a), cv2.IMREAD_GRAYSCALE)
            i1 = cv2.imread(os.path.join(args.data, b), cv2.IMREAD_GRAYSCALE)
            truth = read_flo(os.path.join(args.data, g))
            times = []
            for _ in range(args.repeat):
                tvl1 = cv2.optflow.DualTVL1OpticalFlow_create()
                t0 = time.perf_counter()
                flow = tvl1.calc(i0, i1, None)
                times.append(time.perf_counter() - t0)
            doc["pairs"][name] = {"width": int(i0.shape[1]), "height": int(i0.shape[0]), "epe": epe(flow, truth),
                                  "seconds": float(np.median(times)), "repeat": args.repeat}
            print(f"{name:12s} {i0.shape[1]}x{i0.shape[0]}  EPE {doc['pairs'][name]['epe']:.3f}  "
                  f"{doc['pairs'][name]['seconds']:.2f} s")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, args.out)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
