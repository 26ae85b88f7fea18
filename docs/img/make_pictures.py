#!/usr/bin/env python3
"""Makes the pictures of README.md and docs/ from generated inputs, with the `weft` program:

    /usr/bin/python3 docs/img/make_pictures.py build/apps/weft

granulometry.svg   the curve and pattern spectrum of the sample volume (weft granulometry)
flow.png           the Middlebury colour coding of a synthetic rotation, with its key (weft flow)
saliency.png       a heat map of the sample video with its colour bar (weft saliency)
filter.png         a noisy image and its 5x5 median, side by side (weft filter)
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("make_pictures: %s failed:\n%s" % (" ".join(map(str, args)), r.stderr))


def write_png(path, pixels):
    """An 8-bit grey (2D) or RGB (3D) PNG."""
    h, w = pixels.shape[:2]
    colour = pixels.ndim == 3
    raw = b"".join(b"\x00" + np.ascontiguousarray(pixels[y]).tobytes() for y in range(h))
    chunk = lambda k, d: struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2 if colour else 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def read_png_grey(path):
    """The pixels of an 8-bit grey PNG written by weft (no interlace, filter bytes undone)."""
    data = open(path, "rb").read()
    w, h, depth, kind = struct.unpack(">IIBB", data[16:26])
    assert depth == 8 and kind == 0, "expected 8-bit grey"
    idat, at = b"", 8
    while at < len(data):
        n, k = struct.unpack(">I4s", data[at:at + 8])
        if k == b"IDAT":
            idat += data[at + 8:at + 8 + n]
        at += 12 + n
    raw = zlib.decompress(idat)
    out = np.zeros((h, w), np.uint8)
    prev = np.zeros(w, np.int32)
    for y in range(h):
        f, row = raw[y * (w + 1)], np.frombuffer(raw[y * (w + 1) + 1:(y + 1) * (w + 1)], np.uint8).astype(np.int32)
        cur = np.zeros(w, np.int32)
        for x in range(w):
            a = cur[x - 1] if x else 0
            b, c = prev[x], prev[x - 1] if x else 0
            pred = [0, a, b, (a + b) // 2, 0][f] if f < 4 else None
            if f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (row[x] + pred) & 0xff
        out[y], prev = cur, cur
    return out


def main():
    weft = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/apps/weft")
    work = tempfile.mkdtemp(prefix="weft-pictures-")
    common = ["--devices", "cpu", "--no-progress"]
    try:
        # Granulometry of the sample volume (overlapping balls).
        run(weft, "granulometry", "--generate-sample", os.path.join(work, "s.h5"), "--sample-size", 96)
        run(weft, "granulometry", *common, "--input", os.path.join(work, "s.h5") + ":/exchange/data",
            "--element", "ball", "--output", os.path.join(work, "g"))
        shutil.copy(os.path.join(work, "g", "curve.svg"), os.path.join(here, "granulometry.svg"))

        # Flow of a textured disc turning by 3 degrees: every direction of the wheel appears.
        h, w = 160, 200
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        texture = lambda xx, yy: 128 + 60 * np.sin(0.21 * xx) * np.cos(0.17 * yy) + 40 * np.sin(0.05 * (xx + yy))
        a = np.deg2rad(3.0)
        cx, cy = w / 2, h / 2
        xr = cx + np.cos(a) * (x - cx) + np.sin(a) * (y - cy)
        yr = cy - np.sin(a) * (x - cx) + np.cos(a) * (y - cy)
        write_png(os.path.join(work, "f0.png"), np.clip(texture(x, y), 0, 255).astype(np.uint8))
        write_png(os.path.join(work, "f1.png"), np.clip(texture(xr, yr), 0, 255).astype(np.uint8))
        run(weft, "flow", *common, "--method", "tvl1", "--frames", os.path.join(work, "f0.png"),
            os.path.join(work, "f1.png"), "--output", os.path.join(work, "f.flo"), "--png", os.path.join(here, "flow.png"))

        # Saliency of the sample video: a bright bar crossing a textured background.
        run(weft, "saliency", "--generate-sample", os.path.join(work, "v.h5"), "--sample-size", "240x160",
            "--sample-frames", 8)
        run(weft, "saliency", *common, "--input", os.path.join(work, "v.h5") + ":/frames", "--output",
            os.path.join(work, "sal.h5"), "--png", os.path.join(work, "heat"))
        shutil.copy(os.path.join(work, "heat", "saliency_0005.png"), os.path.join(here, "saliency.png"))

        # Median 5x5 of an image with salt and pepper noise, before and after.
        rng = np.random.default_rng(7)
        clean = np.clip(texture(x, y), 0, 255).astype(np.uint8)
        noisy = clean.copy()
        spots = rng.random(clean.shape)
        noisy[spots < 0.06] = 0
        noisy[spots > 0.94] = 255
        write_png(os.path.join(work, "noisy.png"), noisy)
        run(weft, "filter", "median", *common, "--input", os.path.join(work, "noisy.png"), "--size", 5,
            "--output", os.path.join(work, "median.png"))
        after = read_png_grey(os.path.join(work, "median.png"))
        gap = np.full((h, 6), 255, np.uint8)
        write_png(os.path.join(here, "filter.png"), np.concatenate([noisy, gap, after], axis=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("make_pictures: wrote granulometry.svg, flow.png, saliency.png, filter.png in " + here)


if __name__ == "__main__":
    main()
