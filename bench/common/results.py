"""Writes a benchmark's results file, bench/results/NAME.json, in the layout every benchmark uses
(the Python side of result.cpp): benchmark, device, commit, date, command, metrics, targets."""
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def commit():
    """WEFT_COMMIT where set (a copied tree without git), else git's HEAD, else "unknown"."""
    if os.environ.get("WEFT_COMMIT"):
        return os.environ["WEFT_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        head = ""
    return head or "unknown"


def write(path, benchmark, device, metrics, targets):
    """Writes the file at `path` and says so; the command is this process's own."""
    doc = {
        "benchmark": benchmark,
        "device": device,
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["python3", os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:]),
        "metrics": metrics,
        "targets": targets,
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print("wrote " + path)
