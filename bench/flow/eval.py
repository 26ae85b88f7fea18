#!/usr/bin/env python3
"""Accuracy of `weft flow` on its evaluation set: generated pairs (flow_pairs.py) and the shared
real pairs, against OpenCV's DualTVL1, written to bench/results/flow_eval.json.

Per pair and method: EPE (mean end-point error, px) over the pixels with a known, unoccluded
truth; AAE (mean angular error of (u, v, 1), degrees) and the share of those pixels with an
end-point error over 3 px; the EPE of the occluded pixels apart. Per class: the means over its
pairs and the worst pair. Weft runs on the CPU (devices='cpu', the same flow as the program) at
each method's defaults; OpenCV's DualTVL1 at its defaults (cv2.optflow, python3-opencv) where
installed. The targets: per generated class, TV-L1's mean EPE at most OpenCV's.

    python3 bench/flow/eval.py                        # report half + shared pairs -> flow_eval.json
    python3 bench/flow/eval.py --half tune --no-write --variant notex:tvl1:texture=0
    python3 bench/flow/eval.py --classes '' --real RubberWhale --methods tvl1 --no-write
    python3 bench/flow/eval.py --methods tvl1,hs,clg,opencv   # hs too (about 10x TV-L1's time)

Needs the Python package (PYTHONPATH=build-cpu/python) and numpy.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import flow_pairs  # noqa: E402

try:
    import cv2
except ImportError:  # OpenCV is only the peer; weft's figures do not need it
    cv2 = None

# The shared real pairs: (name, frame0, frame1, truth, occlusion mask or None).
REAL = [
    ("RubberWhale", "middlebury/RubberWhale/frame10.png", "middlebury/RubberWhale/frame11.png",
     "middlebury/RubberWhale/flow10.flo", None),
    ("Hydrangea", "middlebury/Hydrangea/frame10.png", "middlebury/Hydrangea/frame11.png",
     "middlebury/Hydrangea/flow10.flo", None),
    ("SintelEasy", "sintel/easy/frame_0002.png", "sintel/easy/frame_0003.png", "sintel/easy/gt/frame_0002.flo",
     "sintel/easy/gt/occlusions/frame_0002.png"),
    ("SintelMedium", "sintel/medium/frame_0002.png", "sintel/medium/frame_0003.png",
     "sintel/medium/gt/frame_0002.flo", "sintel/medium/gt/occlusions/frame_0002.png"),
]
METHODS = ("tvl1", "hs", "clg", "opencv")
# hs is left out by default: on the CPU it takes about ten times TV-L1's time on these pairs.
DEFAULT_METHODS = ("tvl1", "clg", "opencv")


def read_flo(path):
    with open(path, "rb") as f:
        if abs(np.frombuffer(f.read(4), np.float32)[0] - 202021.25) > 1e-3:
            raise ValueError("%s: not a .flo file" % path)
        w, h = np.frombuffer(f.read(8), np.int32)
        return np.frombuffer(f.read(), np.float32).reshape(h, w, 2)


def write_flo(path, flow):
    h, w = flow.shape[:2]
    with open(path, "wb") as f:
        f.write(np.float32(202021.25).tobytes() + np.array([w, h], np.int32).tobytes())
        f.write(np.ascontiguousarray(flow, np.float32).tobytes())


def errors(flow, truth, occluded=None):
    """EPE, AAE and % over 3 px on known unoccluded pixels; EPE on occluded ones (None if none)."""
    known = (np.abs(truth[..., 0]) < 1e9) & (np.abs(truth[..., 1]) < 1e9)
    occ = np.zeros(known.shape, bool) if occluded is None else occluded
    u, v, ut, vt = flow[..., 0].astype(np.float64), flow[..., 1], truth[..., 0], truth[..., 1]
    d = np.hypot(u - ut, v - vt)
    cosang = (u * ut + v * vt + 1) / np.sqrt((u * u + v * v + 1) * (ut * ut + vt * vt + 1))
    aae = np.degrees(np.arccos(np.clip(cosang, -1, 1)))
    noc = known & ~occ
    out = {"epe": float(d[noc].mean()), "aae": float(aae[noc].mean()), "over3": float(100 * (d[noc] > 3).mean())}
    out["epe_occ"] = float(d[known & occ].mean()) if (known & occ).any() else None
    return out


def run(method, f0, f1, options=None):
    """Flow of one pair: weft on the CPU (method hs/tvl1/clg) or OpenCV's DualTVL1 ('opencv')."""
    if method == "opencv":
        return cv2.optflow.DualTVL1OpticalFlow_create().calc(f0, f1, None)
    import weft
    return weft.flow(f0, f1, method=method, devices="cpu", **(options or {}))


def real_pairs(data, names=None):
    import weft
    for name, a, b, g, occ in REAL:
        if names and name not in names:
            continue
        if not os.path.exists(os.path.join(data, a)):
            continue
        mask = None
        if occ:
            mask = weft.read_image(os.path.join(data, occ)) > 127
        yield {"name": name, "class": "real", "half": "report", "frame0": weft.read_image(os.path.join(data, a)),
               "frame1": weft.read_image(os.path.join(data, b)), "flow": read_flo(os.path.join(data, g)),
               "occluded": mask}


def evaluate(pairs, methods, variants=None, log=lambda line: print(line, flush=True)):
    """Rows {pair, class, method, epe, aae, over3, epe_occ, seconds}; `variants` adds named weft runs
    {name: (method, options)}."""
    rows = []
    jobs = [(m, m, None) for m in methods] + [(n, m, o) for n, (m, o) in (variants or {}).items()]
    for p in pairs:
        line = []
        for name, method, options in jobs:
            t0 = time.perf_counter()
            flow = run(method, p["frame0"], p["frame1"], options)
            row = {"pair": p["name"], "class": p["class"], "method": name, "seconds": time.perf_counter() - t0}
            row.update(errors(flow, p["flow"], p["occluded"]))
            rows.append(row)
            line.append("%s %.3f" % (name, row["epe"]))
        log("%-14s %s" % (p["name"], "  ".join(line)))
    return rows


def summarise(rows):
    """{class: {method: {epe, aae, over3, epe_occ, pairs, worst_pair, worst_epe}}}, 'all' over the generated classes."""
    out = {}
    classes = sorted({r["class"] for r in rows}, key=lambda c: (c not in flow_pairs.CLASSES, c))
    generated = [c for c in classes if c in flow_pairs.CLASSES]
    for cls in classes + (["all"] if generated else []):
        sel_c = [r for r in rows if r["class"] == cls or (cls == "all" and r["class"] in generated)]
        out[cls] = {}
        for method in dict.fromkeys(r["method"] for r in sel_c):
            sel = [r for r in sel_c if r["method"] == method]
            worst = max(sel, key=lambda r: r["epe"])
            occ = [r["epe_occ"] for r in sel if r["epe_occ"] is not None]
            out[cls][method] = {k: round(float(np.mean([r[k] for r in sel])), 4) for k in ("epe", "aae", "over3")}
            out[cls][method].update({"epe_occ": round(float(np.mean(occ)), 4) if occ else None, "pairs": len(sel),
                                     "worst_pair": worst["pair"], "worst_epe": round(worst["epe"], 4)})
    return out


def print_table(summary, methods):
    """Per class: the means (EPE px, AAE degrees, % of pixels over 3 px), then the worst pair's EPE."""
    print("%-8s" % "class" + "".join("%24s" % m for m in methods))
    print("%-8s" % "" + "".join("%24s" % "EPE / AAE / >3px%" for _ in methods))
    for cls, by in summary.items():
        cells = ["%8.3f %6.2f %6.2f" % (by[m]["epe"], by[m]["aae"], by[m]["over3"]) if m in by else "-" for m in methods]
        print("%-8s" % cls + "".join("%24s" % c for c in cells))
        if cls != "all":
            worst = ["%s %.3f" % (by[m]["worst_pair"], by[m]["worst_epe"]) if m in by else "-" for m in methods]
            print("%-8s" % " worst" + "".join("%24s" % c for c in worst))


def git_commit():
    """HEAD, with '+changes' when the working tree differs from it (the figures are then not HEAD's)."""
    try:
        git = lambda *a: subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True,
                                        check=True).stdout.strip()
        return git("rev-parse", "HEAD") + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_device():
    name = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "cpu only (%s, %d logical cores, shared with other work while measured)" % (name, os.cpu_count())


def targets(summary):
    """Per generated class: TV-L1's mean EPE at its defaults (value) at most OpenCV DualTVL1's at its
    defaults (goal). The shared pairs are reported, not targeted (four pairs chose the old defaults)."""
    out = {}
    for cls, by in summary.items():
        if cls in flow_pairs.CLASSES and "tvl1" in by and "opencv" in by:
            value, goal = by["tvl1"]["epe"], by["opencv"]["epe"]
            out["tvl1_mean_epe_le_opencv_%s" % cls] = {"value": value, "goal": goal, "met": bool(value <= goal)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--half", choices=("report", "tune", "all"), default="report",
                    help="generated pairs of this half (default report; the shared pairs are in the report half)")
    ap.add_argument("--classes", default=",".join(flow_pairs.CLASSES), help="generated classes, comma-separated")
    ap.add_argument("--pairs", type=int, default=flow_pairs.PAIRS_PER_CLASS, help="pairs per class (both halves)")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help="of tvl1,hs,clg (weft at its defaults) and opencv (default %(default)s)")
    ap.add_argument("--real", default="all", help="shared pairs: all, none or comma-separated names")
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "flow"))
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:METHOD:key=value,... an extra weft run, e.g. notex:tvl1:texture=0")
    ap.add_argument("--out", default=os.path.join(os.environ.get("WEFT_RESULTS_DIR", os.path.join(ROOT, "bench", "results")),
                                                 "flow_eval.json"))
    ap.add_argument("--no-write", action="store_true", help="print the tables only")
    args = ap.parse_args(argv)
    commit = git_commit()  # the code measured, before anything can change under a long run
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            ap.error("--methods: unknown method '%s' (expected %s)" % (m, ", ".join(METHODS)))
    if "opencv" in methods and (cv2 is None or not hasattr(cv2, "optflow")):
        print("eval: OpenCV's optflow module (python3-opencv) is absent: no OpenCV column", file=sys.stderr)
        methods.remove("opencv")
    classes = [c for c in args.classes.split(",") if c]
    for c in classes:
        if c not in flow_pairs.CLASSES:
            ap.error("--classes: unknown class '%s' (expected %s)" % (c, ", ".join(flow_pairs.CLASSES)))
    variants = {}
    for v in args.variant:
        parts = v.split(":")
        if len(parts) != 3 or parts[1] not in ("tvl1", "hs", "clg"):
            ap.error("--variant: expected NAME:METHOD:key=value,..., got '%s'" % v)
        opts = dict(kv.split("=", 1) for kv in parts[2].split(",") if kv)
        variants[parts[0]] = (parts[1], {k: (int(x) if x.lstrip("-").isdigit() else float(x)) for k, x in opts.items()})
    half = None if args.half == "all" else args.half
    pairs = list(flow_pairs.pairs(half, classes, args.pairs))
    if args.real != "none" and half != "tune":
        pairs += list(real_pairs(args.data, None if args.real == "all" else args.real.split(",")))
        if args.real != "all" and not any(p["class"] == "real" for p in pairs):
            print("eval: --real %s: no such pair under %s" % (args.real, args.data), file=sys.stderr)
            return 2
    rows = evaluate(pairs, methods, variants)
    summary = summarise(rows)
    print_table(summary, methods + list(variants))
    if args.no_write:
        return 0
    import weft
    doc = {"benchmark": "flow_eval", "device": cpu_device(), "commit": commit,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": " ".join(["python3", os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:]),
           "metrics": {"set": {"half": args.half, "classes": classes, "pairs_per_class": args.pairs,
                               "size": [flow_pairs.WIDTH, flow_pairs.HEIGHT],
                               "real": sorted({p["name"] for p in pairs if p["class"] == "real"}),
                               "opencv": cv2.__version__ if "opencv" in methods else None},
                       "defaults": {m: weft.flow_defaults(m) for m in ("tvl1", "hs", "clg")},
                       "variants": {n: {"method": m, "options": o} for n, (m, o) in variants.items()},
                       "classes": summary, "pairs": rows},
           "targets": targets(summary)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(args.out + ".tmp", args.out)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
