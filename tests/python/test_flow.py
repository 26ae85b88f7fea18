"""Optical flow on arrays: the same as `weft flow`, sequences, bad inputs."""
import numpy as np
import pytest

import weft
from test_filters import png


def frames(h=48, w=64, shift=1.5):
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    f = lambda dx: (127 + 60 * np.sin(0.25 * (x - dx)) * np.cos(0.2 * y)).astype(np.uint8)
    return f(0.0), f(shift)


def read_flo(path):
    data = path.read_bytes()
    w, h = np.frombuffer(data[4:12], np.int32)
    return np.frombuffer(data[12:], np.float32).reshape(h, w, 2)


def test_flow_is_the_command_lines(tmp_path, program):
    a, b = frames()
    png(tmp_path / "a.png", a)
    png(tmp_path / "b.png", b)
    program("flow", "--devices", "cpu", "--method", "hs", "--frames", tmp_path / "a.png", tmp_path / "b.png",
            "--output", tmp_path / "f.flo", "--no-progress")
    got = weft.flow(a, b, method="hs", devices="cpu")
    assert got.shape == (48, 64, 2) and got.dtype == np.float32
    assert np.array_equal(got, read_flo(tmp_path / "f.flo"))


def test_a_shift_is_found():
    a, b = frames(shift=1.0)
    u = weft.flow(a, b, method="tvl1", devices="cpu")[8:-8, 8:-8, 0]
    assert abs(float(np.median(u)) - 1.0) < 0.2


def test_a_sequence_gives_one_flow_per_pair_in_order():
    a, b = frames(shift=1.0)
    _, c = frames(shift=2.0)
    seq = np.stack([a, b, c])
    flows = weft.flow_sequence(seq, method="hs", devices="cpu", replicas=2)
    assert flows.shape == (2, 48, 64, 2)
    assert np.array_equal(flows[0], weft.flow(a, b, method="hs", devices="cpu"))
    assert np.array_equal(flows[1], weft.flow(b, c, method="hs", devices="cpu"))


def test_options_are_checked():
    a, b = frames()
    with pytest.raises(weft.ConfigError, match="zoom"):
        weft.flow(a, b, zoom=2.0, devices="cpu")
    with pytest.raises(weft.ConfigError, match="unknown option"):
        weft.flow(a, b, colour="blue", devices="cpu")
    with pytest.raises(weft.ConfigError, match="method"):
        weft.flow(a, b, method="magic", devices="cpu")
    with pytest.raises(weft.ConfigError, match="shape"):
        weft.flow(a, b[:-1], devices="cpu")


def test_flow_defaults_are_the_ones_flow_uses():
    a, b = frames(shift=1.0)
    d = weft.flow_defaults("tvl1")
    assert d["texture_threshold"] > 0 and "alpha" not in d and weft.flow_defaults("clg")["texture"] == 0
    # Given explicitly, the defaults change nothing; another value does.
    base = weft.flow(a, b, method="tvl1", devices="cpu")
    assert np.array_equal(base, weft.flow(a, b, method="tvl1", devices="cpu", **d))
    assert not np.array_equal(base, weft.flow(a, b, method="tvl1", devices="cpu", **dict(d, presmooth=0.0)))
