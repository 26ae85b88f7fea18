"""Optical flow of two PNG frames with Weft's TV-L1, and with OpenCV's DualTVL1 when cv2 is present.

    PYTHONPATH=build/python python3 examples/python/flow_vs_opencv.py frame0.png frame1.png [gt.flo]

With a ground truth (Middlebury .flo), prints the average endpoint error of both."""
import sys
import time

import numpy as np

import weft


def read_flo(path):
    data = open(path, "rb").read()
    w, h = np.frombuffer(data[4:12], np.int32)
    return np.frombuffer(data[12:], np.float32).reshape(h, w, 2)


a, b = weft.read_image(sys.argv[1]), weft.read_image(sys.argv[2])
t = time.perf_counter()
ours = weft.flow(a, b, method="tvl1")
print("weft tvl1: %.3f s" % (time.perf_counter() - t))
theirs = None
try:
    import cv2
    tvl1 = cv2.optflow.DualTVL1OpticalFlow_create() if hasattr(cv2, "optflow") else cv2.DualTVL1OpticalFlow_create()
    t = time.perf_counter()
    theirs = tvl1.calc(a, b, None)
    print("OpenCV DualTVL1: %.3f s" % (time.perf_counter() - t))
except (ImportError, AttributeError):
    print("no OpenCV with DualTVL1 here")
if len(sys.argv) > 3:
    gt = read_flo(sys.argv[3])
    valid = np.abs(gt).max(axis=2) < 1e9
    epe = lambda f: float(np.linalg.norm(f - gt, axis=2)[valid].mean())
    print("EPE weft %.3f" % epe(ours) + ("" if theirs is None else ", OpenCV %.3f" % epe(theirs)))
