#!/usr/bin/env python3
"""Opcode counts per kernel from `cuobjdump -sass` output (stdin), for the kernels whose mangled
name contains every --match text; opcodes without their modifiers (IMAD.IADD counts as IMAD.IADD,
IMAD.MOV.U32 as IMAD.MOV, VIMNMX3.U16x2 as VIMNMX3). Static counts: each instruction once,
whatever its loop trips. Usage: cuobjdump -sass X.o | sass_ops.py --match median3_aligned --top 12"""
import argparse
import collections
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--match", action="append", default=[])
ap.add_argument("--top", type=int, default=14)
args = ap.parse_args()

kernels = collections.OrderedDict()
name = None
for line in sys.stdin:
    m = re.match(r"\s*Function : (\S+)", line)
    if m:
        name = m.group(1)
        kernels[name] = collections.Counter()
        continue
    m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)", line)
    if m and name:
        op, mods = m.group(1), m.group(2)
        if op == "IMAD" and mods.startswith((".IADD", ".MOV", ".SHL", ".WIDE")):
            op += "." + mods[1:].split(".")[0]
        kernels[name][op] += 1
for name, ops in kernels.items():
    if not all(t in name for t in args.match):
        continue
    total = sum(ops.values())
    top = ", ".join(f"{op} {n}" for op, n in ops.most_common(args.top))
    print(f"{name}: {total} instructions: {top}")
