"""Ranks that wait for each other for good are stopped by Weft's watch (cluster/liveness.hpp), with a
message, within the timeout: here two ranks run graphs that do not match (rank 1's sink waits for
tokens rank 0 never sends), which the program's own checks would have refused before the run.

    python3 stalled_ranks.py MPIEXEC        (runs itself under MPIEXEC -n 2)"""
import os
import subprocess
import sys
import time

if len(sys.argv) > 1 and sys.argv[1] != "--rank":
    env = dict(os.environ, WEFT_LIVENESS_TIMEOUT="3")
    cmd = [sys.argv[1], "-n", "2", "--oversubscribe", "-x", "WEFT_LIVENESS_TIMEOUT", "-x", "PYTHONPATH"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    start = time.time()
    r = subprocess.run(cmd + [sys.executable, __file__, "--rank"], env=env, capture_output=True, text=True, timeout=120)
    took = time.time() - start
    out = r.stdout + r.stderr
    assert r.returncode != 0, "the stalled job ended with exit 0:\n" + out
    assert "no rank made progress" in out, "no message from the watch:\n" + out
    assert took < 60, "stopped after %.0f s" % took
    print("stalled ranks stopped in %.1f s with: %s" % (took, [l for l in out.splitlines() if "progress" in l][0]))
    sys.exit(0)

import numpy as np

import weft

g = weft.Graph()
if weft.rank() == 0:
    src = g.source("numbers", [np.zeros(4, np.float32)] * 3)
    out = g.sink("here")
    g.connect(src.out, out["in"])
    g.place("numbers", "rank:0/cpu")
    g.place("here", "rank:0/cpu")
else:
    src = g.source("numbers", [np.zeros(4, np.float32)] * 3)
    out = g.sink("there")
    g.connect(src.out, out["in"])
    g.place("numbers", "rank:0/cpu")  # rank 0 has no such edge: this sink waits for ever
    g.place("there", "rank:1/cpu")
weft.run(g, devices="cpu")
time.sleep(300)  # rank 0 finished its own graph; it waits here while rank 1 waits for tokens
