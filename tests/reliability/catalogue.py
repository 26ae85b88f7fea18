#!/usr/bin/env python3
"""The reliability catalogue: bad inputs, options, output paths and faults, through the `weft`
program as a user (or a hostile local user) meets them, on 1, 2 and 4 ranks.

Every case asserts
- the exit code (2 for anything the user can mend, never a crash or a hang: each run has a deadline),
- that the message names the file or option (and value) at fault,
- that no temporary file or staging folder is left in the work folder,
- that an output that existed before the run is byte-identical after it.

Usage: catalogue.py --weft BIN --work DIR [--mpiexec BIN] [--only SUBSTRING]
"""
import argparse
import hashlib
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
import zlib

import h5py
import numpy as np

ARGS = None
WORK = None


# ---------------------------------------------------------------------------------------------
# Fixtures: written by the test itself, small.

def png_bytes(pixels, colour=False):
    """An 8-bit grey (or RGB) PNG of a 2D (or HxWx3) uint8 array."""
    h, w = pixels.shape[:2]
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    header = struct.pack(">IIBBBBB", w, h, 8, 2 if colour else 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def tiff_bytes(width, height, samples=1, stored=None, bits=8, values=None):
    """A little-endian one-page TIFF of 8-bit grey pixels, its one strip of `stored` bytes (every
    pixel's by default) at the end of the file: headers that can claim what the file does not hold."""
    entries = 9
    data = 8 + 2 + entries * 12 + 4
    stored = width * height * samples if stored is None else stored
    b = b"II*\0" + struct.pack("<IH", 8, entries)
    for tag, kind, value in [(256, 4, width), (257, 4, height), (258, 3, bits), (259, 3, 1), (262, 3, 1),
                             (273, 4, data), (277, 3, samples), (278, 4, height), (279, 4, stored)]:
        b += struct.pack("<HHII", tag, kind, 1, value if kind == 4 else value & 0xFFFF)
    pixels = values if values is not None else b"\x01" * stored
    return b + struct.pack("<I", 0) + pixels[:stored]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def frame(seed, h=48, w=64):
    y, x = np.mgrid[0:h, 0:w]
    return (127 + 100 * np.sin(0.3 * x + 0.2 * y + seed)).astype(np.uint8)


def fixtures():
    p = lambda name: os.path.join(WORK, name)
    rng = np.random.default_rng(7)
    vol = (rng.random((24, 24, 24)) > 0.6).astype(np.uint8)
    with h5py.File(p("vol.h5"), "w") as f:
        f.create_dataset("data", data=vol, chunks=(8, 8, 8), compression="gzip")
        f.create_dataset("plain", data=vol)
        f.create_dataset("flat", data=vol[0])
        f.create_dataset("int64", data=vol.astype(np.int64))
        f.create_dataset("bool", data=vol.astype(bool))
        f.create_dataset("ct", data=vol.astype(np.int16) * 1200 - 300)  # a reconstruction: -300 and 900
        f.create_dataset("complex", data=vol.astype(np.complex64))
        f.create_dataset("half", data=vol.astype(np.float16))
        f.create_dataset("empty", shape=(0, 4, 4), dtype=np.uint8)
        f.create_dataset("lzf", data=vol, chunks=(8, 8, 8), compression="lzf")
        f.create_dataset("video", data=np.stack([frame(i) for i in range(3)]))
        sparse = f.create_dataset("sparse", shape=(64, 64, 64), chunks=(16, 16, 16), dtype=np.uint8)
        sparse[0:16, 0:16, 0:16] = 1  # one chunk of 64 written
    # A gzip dataset whose first chunk's bytes are damaged (the file stays a valid HDF5 file).
    shutil.copy(p("vol.h5"), p("corrupt.h5"))
    with h5py.File(p("corrupt.h5"), "r") as f:
        info = f["data"].id.get_chunk_info(0)
        offset, size = info.byte_offset, info.size
    with open(p("corrupt.h5"), "r+b") as f:
        f.seek(offset + 2)
        f.write(bytes((b ^ 0x5a) for b in range(min(size - 4, 64))))
    whole = open(p("vol.h5"), "rb").read()
    write(p("cut.h5"), whole[: len(whole) // 2])
    write(p("text.h5"), b"not an HDF5 file at all")
    write(p("vol.raw"), vol.tobytes())
    write(p("a.png"), png_bytes(frame(0)))
    write(p("b.png"), png_bytes(frame(1)))
    write(p("c.png"), png_bytes(frame(2)))
    write(p("small.png"), png_bytes(frame(0, 32, 32)))
    write(p("rgb.png"), png_bytes(np.stack([frame(0)] * 3, axis=-1), colour=True))
    good = open(p("a.png"), "rb").read()
    write(p("cut.png"), good[: len(good) // 2])
    write(p("huge.pgm"), b"P5\n100000 100000\n255\n" + b"\x00" * 8)  # 30 bytes claiming 10 GB
    write(p("huge.png"), png_bytes(frame(0))[:16] + struct.pack(">II", 1 << 20, 1 << 20) + png_bytes(frame(0))[24:])
    for i in range(3):
        write(p("seq%03d.png" % i), png_bytes(frame(i)))
    # TIFF: a stack of good slices, one of them damaged or of another size, headers claiming more
    # than their files hold.
    for name in ("stack", "stack_mixed", "stack_cut"):
        os.makedirs(p(name), exist_ok=True)
        for z in range(6):
            write(p("%s/slice_%d.tif" % (name, z)), tiff_bytes(24, 24, values=(vol[z] * 255).tobytes()))
    write(p("stack_mixed/slice_3.tif"), tiff_bytes(24, 23))
    write(p("stack_cut/slice_4.tif"), tiff_bytes(24, 24)[:-10])
    os.makedirs(p("stack_empty"), exist_ok=True)
    write(p("huge.tif"), tiff_bytes(100000, 100000, stored=8))  # 130 bytes claiming 10 GB
    write(p("rgb.tif"), tiff_bytes(24, 24, samples=3))
    write(p("bilevel.tif"), tiff_bytes(24, 24, bits=1, stored=72))
    write(p("text.tif"), b"not a TIFF file at all")
    write(p("kernel_bad.txt"), b"1 2 x\n")
    write(p("kernel3.txt"), b"1 2 1\n2 4 2\n1 2 1\n")
    write(p("kernel_edge.txt"), b"-1 0 1\n-2 0 2\n-1 0 1\n")  # sums to 0
    write(p("config_bad.cfg"), b"tokens = -3\n")
    write(p("config_unknown.cfg"), b"colour = blue\n")
    os.makedirs(p("somedir"), exist_ok=True)
    mapping = lambda text: text.encode()
    write(p("map_dup.yaml"), mapping("places:\n  scale: cpu\n  scale: rank:0/cpu\n"))
    write(p("map_seq.yaml"), mapping("places:\n  scale: [cpu, gpu:0]\n"))
    write(p("map_keyseq.yaml"), mapping("places:\n  [a, b]: cpu\n"))
    write(p("map_bad.yaml"), mapping("places: {scale: cpu\n"))
    write(p("map_task.yaml"), mapping("places:\n  nosuchtask: cpu\n"))
    write(p("map_rank.yaml"), mapping("places:\n  scale: {rank: 5, device: cpu}\n"))
    write(p("map_ranks.yaml"), mapping("ranks: [1]\nplaces:\n  scale: cpu\n"))
    write(p("map_top.yaml"), mapping("ranks: 1\nranks: 2\nplaces:\n  scale: cpu\n"))
    write(p("map0.yaml"), mapping("places:\n  scale: rank:0/cpu\n"))
    write(p("map1.yaml"), mapping("places:\n  scale: rank:1/cpu\n"))
    write(p("foreign.ctl"), b"somebody else's file\n")
    write(p("precious.h5"), b"precious data that must never be truncated\n")
    os.symlink(p("precious.h5"), p("planted.ctl"))
    # Per-rank folders holding different volumes under one name (ranks that disagree).
    for r in range(4):
        os.makedirs(p("rank%d" % r), exist_ok=True)
        with h5py.File(p("rank%d/vol.h5" % r), "w") as f:
            f.create_dataset("data", data=(rng.random((16, 16, 16)) > 0.5).astype(np.uint8))
    os.makedirs(p("only0"), exist_ok=True)
    shutil.copy(p("vol.h5"), p("only0/vol.h5"))


# ---------------------------------------------------------------------------------------------
# Cases.

class Case:
    def __init__(self, name, args, code=2, names=(), ranks=(1,), outputs=(), env=None, wrapper=None,
                 deadline=60, before=None, after=None, message_on_every_rank=False):
        self.name, self.args, self.code, self.names = name, args, code, names
        self.ranks, self.outputs, self.env, self.wrapper = ranks, outputs, env or {}, wrapper
        self.deadline, self.before, self.after = deadline, before, after
        self.every_rank = message_on_every_rank


def w(name):
    return os.path.join(WORK, name)


def curve_rows(folder):
    """curve.csv of an output folder without its '#' lines (the provenance differs between runs)."""
    with open(w(folder + "/curve.csv")) as f:
        return [line for line in f if not line.startswith("#")]


def same_curve(a, b):
    return os.path.isfile(w(a + "/curve.csv")) and curve_rows(a) == curve_rows(b)


def cases():
    g = ["granulometry", "--devices", "cpu", "--no-progress"]
    out = w("gout")  # a granulometry output folder holding a good earlier result
    demo0 = ["demo", "--length", "16"]  # without the options some cases give themselves
    demo = demo0 + ["--devices", "cpu", "--tokens", "20"]
    fl = ["flow", "--devices", "cpu", "--no-progress", "--scales", "2", "--iterations", "5"]
    sal = ["saliency", "--devices", "cpu", "--no-progress", "--pathway", "static"]
    flt = ["filter", "--devices", "cpu"]
    c = [
        # Options every subcommand shares (through demo).
        Case("negative count", demo0 + ["--tokens", "-5"], names=["--tokens", "-5"]),
        Case("count not a number", demo0 + ["--tokens", "many"], names=["--tokens", "many"]),
        Case("length zero", demo + ["--length", "0"], names=["--length"]),
        Case("length too large", demo + ["--length", "99999999999"], names=["--length"]),
        Case("log level unknown", demo + ["--log-level", "loud"], names=["--log-level", "loud"]),
        Case("log level env unknown", demo, env={"WEFT_LOG_LEVEL": "bogus"}, names=["WEFT_LOG_LEVEL", "bogus"]),
        Case("config is a folder", demo + ["--config", w("somedir")], names=["--config", "somedir"]),
        Case("config missing", demo + ["--config", w("nope.cfg")], names=["--config", "nope.cfg"]),
        Case("config negative", demo0 + ["--config", w("config_bad.cfg")], names=["--tokens", "-3"]),
        Case("config unknown option", demo + ["--config", w("config_unknown.cfg")], names=["--config", "colour"]),
        Case("drain unknown rank", demo + ["--drain", "rank:9/cpu"], names=["--drain", "rank:9/cpu"]),
        Case("drain missing gpu", demo + ["--drain", "gpu:7"], names=["--drain", "gpu:7"]),
        Case("drain malformed", demo + ["--drain", "rank:x"], names=["--drain", "rank:x"]),
        Case("balance unknown", demo + ["--balance", "sideways"], names=["--balance", "sideways"]),
        Case("balance period nan", demo + ["--balance-period", "nan"], names=["--balance-period", "nan"]),
        Case("balance period negative", demo + ["--balance-period", "-1"], names=["--balance-period"]),
        Case("overlap unknown", demo + ["--overlap", "maybe"], names=["--overlap", "maybe"]),
        Case("devices unknown", demo0 + ["--devices", "tpu"], names=["--devices", "tpu"]),
        Case("unknown option", demo + ["--colour", "blue"], names=["colour"]),
        Case("option parser placeholder in a value", demo0 + ["--tokens", "%value%"], names=["%value%"], deadline=10),
        Case("option parser placeholder in a name", demo + ["--x%canonical_option%"], names=["%canonical_option%"],
             deadline=10),
        Case("unknown command", ["frobnicate"], names=["frobnicate"]),
        Case("mapping missing", demo + ["--mapping", w("nope.yaml")], names=["--mapping", "nope.yaml"]),
        Case("mapping is a folder", demo + ["--mapping", w("somedir")], names=["--mapping", "somedir"]),
        Case("mapping duplicate key", demo + ["--mapping", w("map_dup.yaml")], names=["map_dup.yaml", "scale", "twice"]),
        Case("mapping duplicate field", demo + ["--mapping", w("map_top.yaml")], names=["map_top.yaml", "ranks", "twice"]),
        Case("mapping list for a place", demo + ["--mapping", w("map_seq.yaml")], names=["map_seq.yaml", "scale"]),
        Case("mapping list as a key", demo + ["--mapping", w("map_keyseq.yaml")], names=["map_keyseq.yaml"]),
        Case("mapping list for ranks", demo + ["--mapping", w("map_ranks.yaml")], names=["map_ranks.yaml", "ranks"]),
        Case("mapping malformed", demo + ["--mapping", w("map_bad.yaml")], names=["map_bad.yaml"]),
        Case("mapping unknown task", demo + ["--mapping", w("map_task.yaml")], names=["map_task.yaml", "nosuchtask"]),
        Case("mapping unknown rank", demo + ["--mapping", w("map_rank.yaml")], names=["map_rank.yaml"]),
        Case("trace folder missing", demo + ["--trace", w("nodir/t.json")], names=["--trace", "nodir"]),
        Case("trace is a folder", demo + ["--trace", w("somedir")], names=["--trace", "somedir"]),
        Case("trace over good file kept on failure", demo0 + ["--trace", w("trace.json"), "--tokens", "-1"],
             names=["--tokens"], outputs=["trace.json"]),
        Case("write-mapping folder missing", demo + ["--write-mapping", w("nodir/m.yaml")],
             names=["--write-mapping", "nodir"]),
        Case("ctl foreign file", demo + ["--ctl", w("foreign.ctl")], names=["--ctl", "foreign.ctl"],
             outputs=["foreign.ctl"]),
        Case("ctl planted symlink", demo + ["--ctl", w("planted.ctl")], names=["--ctl", "planted.ctl"],
             outputs=["precious.h5"]),
        Case("ctl env on existing data", demo, env={"WEFT_CTL": w("precious.h5")}, names=["precious.h5"],
             outputs=["precious.h5"]),
        Case("ctl bad name", demo + ["--ctl", ".."], names=["--ctl"]),
        # weft ctl.
        Case("ctl send without file", ["ctl", "drain", "cpu"], names=["--ctl"], env={"WEFT_CTL": ""}),
        Case("ctl send unknown action", ["ctl", "explode", "cpu", "--ctl", w("foreign.ctl")], names=["explode"],
             outputs=["foreign.ctl"]),
        Case("ctl send to missing file", ["ctl", "drain", "cpu", "--ctl", w("nojob.ctl")], names=["nojob.ctl"]),
        Case("ctl send through symlink", ["ctl", "drain", "cpu", "--ctl", w("planted.ctl")], names=["planted.ctl"],
             outputs=["precious.h5"]),
        Case("ctl send to shared file", ["ctl", "drain", "cpu", "--ctl", w("shared.ctl")], names=["shared.ctl"],
             before=lambda: (write(w("shared.ctl"), b""), os.chmod(w("shared.ctl"), 0o666)), outputs=["shared.ctl"]),
        Case("ctl send spaces in task", ["ctl", "migrate", "a b", "--to", "cpu", "--ctl", w("foreign.ctl")],
             names=["white space"], outputs=["foreign.ctl"]),
        Case("ctl send long task", ["ctl", "migrate", "t" * 400, "--to", "cpu", "--ctl", w("foreign.ctl")],
             names=["longer"], outputs=["foreign.ctl"]),
        # Granulometry.
        Case("granulometry no input", g + ["--output", out], names=["--input"], outputs=["gout"]),
        Case("granulometry missing file", g + ["--input", w("nope.h5") + ":/data", "--output", out],
             names=["nope.h5"], outputs=["gout"]),
        Case("granulometry missing dataset", g + ["--input", w("vol.h5") + ":/nope", "--output", out],
             names=["vol.h5", "/nope"], outputs=["gout"]),
        Case("granulometry not hdf5", g + ["--input", w("text.h5") + ":/data", "--output", out],
             names=["text.h5"], outputs=["gout"]),
        Case("granulometry truncated hdf5", g + ["--input", w("cut.h5") + ":/data", "--output", out],
             names=["cut.h5"], outputs=["gout"]),
        Case("granulometry 2d dataset", g + ["--input", w("vol.h5") + ":/flat", "--output", out],
             names=["vol.h5:/flat", "2D"], outputs=["gout"]),
        Case("granulometry complex", g + ["--input", w("vol.h5") + ":/complex", "--output", out],
             names=["vol.h5:/complex", "not a number"], outputs=["gout"]),
        Case("granulometry float16", g + ["--input", w("vol.h5") + ":/half", "--output", out],
             names=["vol.h5:/half", "f16"], outputs=["gout"]),
        Case("granulometry int64 with a median", g + ["--input", w("vol.h5") + ":/int64", "--median", "3",
                                                     "--output", out], names=["--median", "i64"], outputs=["gout"]),
        Case("granulometry threshold nan", g + ["--input", w("vol.h5") + ":/ct", "--threshold", "nan", "--output", out],
             names=["--threshold", "nan"], outputs=["gout"]),
        Case("granulometry voxel size", g + ["--input", w("vol.h5") + ":/data", "--voxel-size", "-0.5um",
                                           "--output", out], names=["--voxel-size", "-0.5um"], outputs=["gout"]),
        Case("granulometry voxel unit", g + ["--input", w("vol.h5") + ":/data", "--voxel-size", "0.5 m/s",
                                           "--output", out], names=["--voxel-size", "0.5 m/s"], outputs=["gout"]),
        Case("granulometry size map as", g + ["--input", w("vol.h5") + ":/data", "--size-map", "--size-map-as",
                                            "volume", "--output", out], names=["--size-map-as", "volume"],
             outputs=["gout"]),
        Case("granulometry tiff claims 10 GB", g + ["--input", w("huge.tif"), "--output", out],
             names=["huge.tif", "page 0"], outputs=["gout"], deadline=20),
        Case("granulometry tiff colour", g + ["--input", w("rgb.tif"), "--output", out],
             names=["rgb.tif", "samples per pixel"], outputs=["gout"]),
        Case("granulometry tiff 1 bit", g + ["--input", w("bilevel.tif"), "--output", out],
             names=["bilevel.tif", "1-bit"], outputs=["gout"]),
        Case("granulometry not tiff", g + ["--input", w("text.tif"), "--output", out],
             names=["text.tif", "TIFF"], outputs=["gout"]),
        Case("granulometry tiff stack of two sizes", g + ["--input", w("stack_mixed"), "--output", out],
             names=["slice_3.tif", "24x24"], outputs=["gout"]),
        Case("granulometry tiff stack truncated slice", g + ["--input", w("stack_cut"), "--output", out],
             names=["slice_4.tif", "truncated"], outputs=["gout"]),
        Case("granulometry tiff empty folder", g + ["--input", w("stack_empty"), "--output", out],
             names=["stack_empty", ".tif"], outputs=["gout"]),
        Case("granulometry tiff pattern", g + ["--input", w("stack/none_*.tif"), "--output", out],
             names=["none_*.tif"], outputs=["gout"]),
        Case("granulometry empty", g + ["--input", w("vol.h5") + ":/empty", "--output", out],
             names=["vol.h5:/empty"], outputs=["gout"]),
        Case("granulometry lzf", g + ["--input", w("vol.h5") + ":/lzf", "--output", out],
             names=["vol.h5:/lzf", "lzf"], outputs=["gout"]),
        Case("granulometry corrupt chunk", g + ["--input", w("corrupt.h5") + ":/data", "--output", out],
             names=["corrupt.h5", "deflate"], outputs=["gout"]),
        Case("granulometry one chunk of 64", g + ["--input", w("vol.h5") + ":/sparse", "--output", out],
             names=["vol.h5:/sparse", "1 of its 64 chunks"], outputs=["gout"], deadline=20),
        Case("granulometry raw without shape", g + ["--input", w("vol.raw"), "--output", out],
             names=["vol.raw", "--shape"], outputs=["gout"]),
        Case("granulometry raw shape overflow",
             g + ["--input", w("vol.raw"), "--shape", "4294967296x4294967296x4", "--dtype", "u8", "--output", out],
             names=["--shape", "4294967296"], outputs=["gout"]),
        Case("granulometry raw shape mismatch",
             g + ["--input", w("vol.raw"), "--shape", "24x24x25", "--dtype", "u8", "--output", out],
             names=["vol.raw", "24x24x25"], outputs=["gout"]),
        Case("granulometry raw negative shape",
             g + ["--input", w("vol.raw"), "--shape", "-24x24x24", "--dtype", "u8", "--output", out],
             names=["--shape"], outputs=["gout"]),
        Case("granulometry raw dtype", g + ["--input", w("vol.raw"), "--shape", "24x24x24", "--dtype", "c64",
                                          "--output", out], names=["--dtype", "c64"], outputs=["gout"]),
        Case("granulometry output is a file", g + ["--input", w("vol.h5") + ":/data", "--output", w("precious.h5")],
             names=["--output", "precious.h5"], outputs=["precious.h5"]),
        Case("granulometry output unwritable", g + ["--input", w("vol.h5") + ":/data", "--output", "/proc/weft-out"],
             names=["--output", "/proc"]),
        Case("granulometry element", g + ["--input", w("vol.h5") + ":/data", "--output", out, "--element", "sphere"],
             names=["sphere"], outputs=["gout"]),
        Case("granulometry max size", g + ["--input", w("vol.h5") + ":/data", "--output", out, "--max-size", "-3"],
             names=["--max-size", "-3"], outputs=["gout"]),
        Case("granulometry threshold", g + ["--input", w("vol.h5") + ":/data", "--output", out, "--threshold", "abc"],
             names=["abc"], outputs=["gout"]),
        Case("granulometry median", g + ["--input", w("vol.h5") + ":/data", "--output", out, "--median", "4"],
             names=["--median", "4"], outputs=["gout"]),
        Case("granulometry device memory", g + ["--input", w("vol.h5") + ":/data", "--output", out,
                                              "--device-memory", "0"], names=["--device-memory"], outputs=["gout"]),
        Case("granulometry read chunk", g + ["--input", w("vol.h5") + ":/data", "--output", out, "--read-chunk", "xyz"],
             names=["--read-chunk", "xyz"], outputs=["gout"]),
        Case("granulometry slab planes", g + ["--input", w("vol.h5") + ":/data", "--output", out, "--slab-planes", "-1"],
             names=["--slab-planes"], outputs=["gout"]),
        Case("granulometry sample folder missing", ["granulometry", "--generate-sample", w("nodir/s.h5")],
             names=["--generate-sample", "nodir"]),
        Case("granulometry sample size", ["granulometry", "--generate-sample", w("s.h5"), "--sample-size", "5"],
             names=["--sample-size", "5"]),
        Case("granulometry good run", g + ["--input", w("vol.h5") + ":/data", "--output", w("fresh")], code=0,
             after=lambda: all(os.path.isfile(w("fresh/" + f)) for f in ("curve.csv", "curve.svg", "granulometry.h5"))),
        Case("granulometry stale stage removed", g + ["--input", w("vol.h5") + ":/data", "--output", w("fresh")],
             code=0, before=plant_stale_stage, after=lambda: not stale_stages()),
        Case("granulometry tiff stack", g + ["--input", w("stack/slice_*.tif"), "--output", w("from_tiff")], code=0,
             after=lambda: os.path.isfile(w("from_tiff/curve.csv"))),
        Case("granulometry int16 threshold", g + ["--input", w("vol.h5") + ":/ct", "--threshold", "0", "--size-map",
                                                "--output", w("from_ct")], code=0,
             after=lambda: same_curve("from_ct", "fresh")),
        Case("granulometry bool", g + ["--input", w("vol.h5") + ":/bool", "--output", w("from_bool")], code=0,
             after=lambda: same_curve("from_bool", "fresh")),
        # Flow.
        Case("flow one frame", fl + ["--frames", w("a.png"), "--output", w("f.flo")], names=["2 frames"]),
        Case("flow missing frame", fl + ["--frames", w("a.png"), w("nope.png"), "--output", w("f.flo")],
             names=["nope.png"]),
        Case("flow truncated png", fl + ["--frames", w("a.png"), w("cut.png"), "--output", w("f.flo")],
             names=["cut.png"]),
        Case("flow forged pgm header", fl + ["--frames", w("a.png"), w("huge.pgm"), "--output", w("f.flo")],
             names=["huge.pgm"], deadline=10),
        Case("flow forged png header", fl + ["--frames", w("a.png"), w("huge.png"), "--output", w("f.flo")],
             names=["huge.png"], deadline=10),
        Case("flow frame sizes differ", fl + ["--frames", w("a.png"), w("small.png"), "--output", w("f.flo")],
             names=["small.png"]),
        Case("flow method", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("f.flo"), "--method", "magic"],
             names=["--method", "magic"]),
        Case("flow precision", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("f.flo"), "--precision", "fp8"],
             names=["--precision", "fp8"]),
        Case("flow output folder missing", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("nodir/f.flo")],
             names=["--output", "nodir"]),
        Case("flow sequence to flo", fl + ["--frames", w("a.png"), w("b.png"), w("c.png"), "--output", w("f.flo")],
             names=["--output", "f.flo"]),
        Case("flow zoom", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("f.flo"), "--zoom", "2"],
             names=["zoom"]),
        Case("flow iterations", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("f.flo"), "--iterations", "-1"],
             names=["iterations"]),
        Case("flow video not 3d", fl + ["--input", w("vol.h5") + ":/flat", "--output", w("f.h5")],
             names=["vol.h5:/flat"]),
        Case("flow png is a folder", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("f.flo"),
                                          "--png", w("somedir")], names=["--png", "somedir"]),
        Case("flow good output kept on failure", fl + ["--frames", w("a.png"), w("b.png"), "--output", w("good.flo"),
                                                      "--warps", "-2"], names=["warps"], outputs=["good.flo"]),
        # Saliency.
        Case("saliency pattern %s", sal + ["--input", w("seq%s.png"), "--output", w("sal.h5")], names=["%s"]),
        Case("saliency pattern %n", sal + ["--input", w("seq%n%n%n.png"), "--output", w("sal.h5")], names=["%n"]),
        Case("saliency pattern positional", sal + ["--input", w("seq%5$d.png"), "--output", w("sal.h5")],
             names=["seq%5$d.png"]),
        Case("saliency pattern two numbers", sal + ["--input", w("seq%d%d.png"), "--output", w("sal.h5")],
             names=["seq%d%d.png"]),
        Case("saliency pattern no match", sal + ["--input", w("none%03d.png"), "--output", w("sal.h5")],
             names=["none%03d.png"]),
        Case("saliency missing video", sal + ["--input", w("nope.h5") + ":/frames", "--output", w("sal.h5")],
             names=["nope.h5"]),
        Case("saliency pathway", sal + ["--input", w("vol.h5") + ":/video", "--output", w("sal.h5"), "--pathway", "x"],
             names=["--pathway"]),
        Case("saliency output missing", sal + ["--input", w("vol.h5") + ":/video"], names=["--output"]),
        Case("saliency output is a folder", sal + ["--input", w("vol.h5") + ":/video", "--output", w("somedir")],
             names=["--output", "somedir"]),
        Case("saliency frames", sal + ["--input", w("vol.h5") + ":/video", "--output", w("sal.h5"), "--frames", "-1"],
             names=["--frames"]),
        Case("saliency farm", sal + ["--input", w("vol.h5") + ":/video", "--output", w("sal.h5"), "--farm", "x"],
             names=["--farm"]),
        Case("saliency truncated frame", sal + ["--input", w("a.png") + "," + w("cut.png"), "--output", w("sal.h5")],
             names=["cut.png"]),
        Case("saliency sample size", ["saliency", "--generate-sample", w("v.h5"), "--sample-size", "99999x99999"],
             names=["--sample-size"]),
        Case("saliency good output kept on failure", sal + ["--input", w("vol.h5") + ":/video", "--output",
                                                           w("good.h5"), "--gabor-groups", "5"],
             names=["gabor"], outputs=["good.h5"]),
        # Filter.
        Case("filter kind", flt + ["blur", "--input", w("a.png"), "--output", w("o.png")], names=["blur"]),
        Case("filter missing input", flt + ["median", "--input", w("nope.png"), "--output", w("o.png"), "--size", "3"],
             names=["nope.png"]),
        Case("filter truncated input", flt + ["median", "--input", w("cut.png"), "--output", w("o.png"), "--size", "3"],
             names=["cut.png"]),
        Case("filter forged header", flt + ["median", "--input", w("huge.pgm"), "--output", w("o.png"), "--size", "3"],
             names=["huge.pgm"], deadline=10),
        Case("filter output kind", flt + ["median", "--input", w("a.png"), "--output", w("o.jpg"), "--size", "3"],
             names=["o.jpg"]),
        Case("filter output folder missing", flt + ["median", "--input", w("a.png"), "--output", w("nodir/o.png"),
                                                   "--size", "3"], names=["--output", "nodir"]),
        Case("filter kernel missing", flt + ["convolve", "--input", w("a.png"), "--output", w("o.png"), "--kernel",
                                            w("nope.txt")], names=["--kernel", "nope.txt"]),
        Case("filter kernel not numbers", flt + ["convolve", "--input", w("a.png"), "--output", w("o.png"),
                                                "--kernel", w("kernel_bad.txt")], names=["kernel_bad.txt", "x"]),
        Case("filter colour to pgm", flt + ["median", "--input", w("rgb.png"), "--output", w("o.pgm"), "--size", "3"],
             names=["--output", "o.pgm", "--colour grey"]),
        Case("filter colour value", flt + ["median", "--input", w("rgb.png"), "--output", w("o.png"), "--size", "3",
                                          "--colour", "rgb"], names=["--colour", "rgb"]),
        Case("filter normalize zero sum", flt + ["correlate", "--input", w("a.png"), "--output", w("o.png"),
                                                "--kernel", w("kernel_edge.txt"), "--normalize"],
             names=["--normalize", "kernel_edge.txt"]),
        Case("filter normalize median", flt + ["median", "--input", w("a.png"), "--output", w("o.png"), "--size", "3",
                                              "--normalize"], names=["--normalize"]),
        Case("filter even size", flt + ["median", "--input", w("a.png"), "--output", w("o.png"), "--size", "4"],
             names=["4"]),
        Case("filter border", flt + ["median", "--input", w("a.png"), "--output", w("o.png"), "--size", "3",
                                    "--border", "wrap"], names=["--border", "wrap"]),
        Case("filter sigma", flt + ["gaussian", "--input", w("a.png"), "--output", w("o.png"), "--sigma", "-1"],
             names=["--sigma"]),
        Case("filter lzf volume", flt + ["median", "--input", w("vol.h5") + ":/lzf", "--output", w("o.h5") + ":/m",
                                        "--size", "3"], names=["lzf"]),
        Case("filter good output kept on failure", flt + ["median", "--input", w("a.png"), "--output", w("good.png"),
                                                         "--size", "2"], names=["2"], outputs=["good.png"]),
        # weft mapping check.
        Case("mapping check missing", ["mapping", "check", w("nope.yaml"), "--app", "demo"], names=["nope.yaml"]),
        Case("mapping check duplicate", ["mapping", "check", w("map_dup.yaml"), "--app", "demo"],
             names=["map_dup.yaml", "twice"]),
        # Several ranks: every rank stops, with the message, and nothing hangs.
        Case("ranks negative count", demo0 + ["--tokens", "-5"], names=["--tokens"], ranks=(2, 4),
             message_on_every_rank=True),
        Case("ranks missing input", g + ["--input", w("nope.h5") + ":/data", "--output", out], names=["nope.h5"],
             ranks=(2, 4), outputs=["gout"], message_on_every_rank=True),
        Case("ranks different mappings", demo, names=["disagree", "--mapping"], ranks=(2, 4),
             wrapper='exec "$WEFT" "$@" --mapping "$WORK/map$(( ${OMPI_COMM_WORLD_RANK:-0} % 2 )).yaml"',
             message_on_every_rank=True),
        Case("ranks different volumes", g + ["--input", "vol.h5:/data", "--output", out], names=["disagree", "--input"],
             ranks=(2, 4), wrapper='cd "$WORK/rank${OMPI_COMM_WORLD_RANK:-0}" && exec "$WEFT" "$@"', outputs=["gout"],
             message_on_every_rank=True),
        Case("ranks input on one rank only", g + ["--input", "vol.h5:/data", "--output", out], names=["rank", "vol.h5"],
             ranks=(2, 4), wrapper='if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ]; then cd "$WORK/only0"; '
                                   'else cd "$WORK/somedir"; fi; exec "$WEFT" "$@"',
             outputs=["gout"], message_on_every_rank=True),
        Case("ranks stopped rank", ["demo", "--devices", "cpu", "--tokens", "1000000000", "--length", "16"], code=None,
             names=["rank 1", "not been heard from"], ranks=(2, 4), env={"WEFT_LIVENESS_TIMEOUT": "3"},
             wrapper='if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then (sleep 2; kill -STOP $$) & fi; exec "$WEFT" "$@"',
             deadline=40),
        Case("ranks killed rank", ["demo", "--devices", "cpu", "--tokens", "1000000000", "--length", "16"], code=None,
             ranks=(2,), wrapper='if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then (sleep 2; kill -KILL $$) & fi; '
                                 'exec "$WEFT" "$@"', deadline=40),
        Case("ranks good run", demo + ["--trace", w("ranks_trace.json")], code=0, ranks=(2, 4),
             after=lambda: os.path.isfile(w("ranks_trace.json"))),
    ]
    return c


def plant_stale_stage():
    host = os.uname().nodename.replace("/", "_").replace(".", "_")
    dead = 4194301  # above the default pid_max: no process has it
    os.makedirs(w(".fresh.weft-tmp.%s.%d.abcdef" % (host, dead)), exist_ok=True)
    write(w(".fresh.weft-tmp.%s.%d.abcdef/curve.csv" % (host, dead)), b"stale")


def stale_stages():
    return [n for n in os.listdir(WORK) if ".weft-tmp." in n]


# ---------------------------------------------------------------------------------------------
# The runner.

def snapshot(paths):
    out = {}
    for rel in paths:
        p = w(rel)
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                out[rel + "/" + name] = hashlib.sha256(open(os.path.join(p, name), "rb").read()).hexdigest()
        elif os.path.lexists(p):
            out[rel] = hashlib.sha256(open(p, "rb").read()).hexdigest() if os.path.isfile(p) else "link"
    return out


def leftovers():
    found = []
    for root, dirs, files in os.walk(WORK):
        for n in dirs + files:
            if ".tmp-" in n or ".weft-tmp." in n:
                found.append(os.path.relpath(os.path.join(root, n), WORK))
    return found


def command(case, ranks):
    env = dict(os.environ, WORK=WORK, WEFT=ARGS.weft, OMPI_MCA_rmaps_base_oversubscribe="1")
    env.update(case.env)
    base = [ARGS.weft] + case.args
    if case.wrapper:
        base = ["bash", "-c", case.wrapper, "weft"] + case.args
    if ranks == 1:
        return base, env
    launcher = [ARGS.mpiexec, "-n", str(ranks), "--oversubscribe"]
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    for k in list(case.env) + ["WORK", "WEFT"]:
        launcher += ["-x", k]
    return launcher + base, env


def run_case(case, ranks):
    if case.before:
        case.before()
    before = snapshot(case.outputs)
    cmd, env = command(case, ranks)
    start = time.time()
    p = subprocess.Popen(cmd, cwd=WORK, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=case.deadline)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return ["hung: no exit within %d s" % case.deadline]
    text = (out + err).decode(errors="replace")
    problems = []
    rc = p.returncode
    if rc < 0 and case.code is not None:
        problems.append("killed by signal %d" % -rc)
    if case.code is None:
        if rc == 0:
            problems.append("exit 0 where the run had to stop")
    elif rc != case.code:
        problems.append("exit %d, expected %d" % (rc, case.code))
    for name in case.names:
        if name not in text:
            problems.append("the message does not name %r" % name)
    if case.code == 2:
        errors = [l for l in text.splitlines() if l.startswith("weft: ")]
        if not errors:
            problems.append("no 'weft: error' line")
        if case.every_rank and len(errors) < ranks:
            problems.append("%d error line(s) for %d ranks" % (len(errors), ranks))
        if "HDF5-DIAG" in text or "Traceback" in text:
            problems.append("a raw diagnostic stack reached the terminal")
    if case.after and not case.after():
        problems.append("its result check failed")
    after = snapshot(case.outputs)
    if after != before:
        problems.append("an earlier output changed: %s" % sorted(set(before.items()) ^ set(after.items())))
    left = leftovers()
    if left:
        problems.append("left temporary files: %s" % left)
        for n in left:  # so that the next case starts clean
            full = w(n)
            shutil.rmtree(full, ignore_errors=True) if os.path.isdir(full) else os.remove(full)
    if problems:
        problems.append("output:\n    " + "\n    ".join(text.splitlines()[-8:]))
    return problems


def prepare_outputs():
    """Good earlier results: a granulometry folder, a trace, a .flo, an HDF5 file, a PNG."""
    r = subprocess.run([ARGS.weft, "granulometry", "--devices", "cpu", "--no-progress", "--input",
                        w("vol.h5") + ":/data", "--output", w("gout")], cwd=WORK, capture_output=True)
    if r.returncode != 0:
        sys.exit("catalogue: the good granulometry run failed: " + r.stderr.decode())
    write(w("trace.json"), b'{"traceEvents":[]}\n')
    write(w("good.flo"), b"an earlier flow result\n")
    write(w("good.h5"), b"an earlier saliency result\n")
    write(w("good.png"), png_bytes(frame(5)))


def signal_cases():
    """SIGINT/SIGTERM in the middle of a run: the earlier output stays, no temporary file is left."""
    problems = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        before = snapshot(["trace.json"])
        p = subprocess.Popen([ARGS.weft, "demo", "--devices", "cpu", "--tokens", "1000000000", "--length", "16",
                              "--trace", w("trace.json")], cwd=WORK, stderr=subprocess.PIPE, stdout=subprocess.PIPE)
        time.sleep(1.0)
        p.send_signal(sig)
        try:
            p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            problems.append("%s: the run did not stop" % sig.name)
        if p.returncode != -sig:
            problems.append("%s: exit %s, expected death by the signal" % (sig.name, p.returncode))
        if snapshot(["trace.json"]) != before:
            problems.append("%s: the earlier trace changed" % sig.name)
        if leftovers():
            problems.append("%s: left %s" % (sig.name, leftovers()))
    return problems


def main():
    global ARGS, WORK
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--mpiexec", default=shutil.which("mpiexec") or "")
    parser.add_argument("--only", default="")
    ARGS = parser.parse_args()
    WORK = os.path.abspath(ARGS.work)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    fixtures()
    prepare_outputs()
    failed, count, multi = [], 0, 0
    for case in cases():
        if ARGS.only and ARGS.only not in case.name:
            continue
        for ranks in case.ranks:
            if ranks > 1 and not ARGS.mpiexec:
                continue
            count += 1
            multi += ranks > 1
            t0 = time.time()
            problems = run_case(case, ranks)
            label = "%s (%d rank%s)" % (case.name, ranks, "s" if ranks > 1 else "")
            print("%-60s %s %.1f s" % (label, "FAIL" if problems else "ok", time.time() - t0), flush=True)
            if problems:
                failed.append(label)
                for line in problems:
                    print("    " + line)
    if not ARGS.only:
        count += 2
        problems = signal_cases()
        print("%-60s %s" % ("SIGTERM and SIGINT mid-run", "FAIL" if problems else "ok"))
        if problems:
            failed.append("signals")
            for line in problems:
                print("    " + line)
    print("catalogue: %d cases (%d on several ranks), %d failed" % (count, multi, len(failed)))
    if failed:
        print("failed: " + ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
