"""Filters on arrays: the same as `weft filter`, scipy's correlate and convolve, dtypes, bad inputs."""
import struct
import zlib

import numpy as np
import pytest

import weft


def png(path, pixels):
    h, w = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))
    chunk = lambda k, d: struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d) & 0xffffffff)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    path.write_bytes(data)


def image(h=37, w=53, seed=3):
    return np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)


def test_median_is_the_command_lines(tmp_path, program):
    a = image()
    png(tmp_path / "in.png", a)
    program("filter", "median", "--devices", "cpu", "--input", tmp_path / "in.png", "--size", 5,
            "--output", tmp_path / "out.png")
    assert np.array_equal(weft.median(a, 5, devices="cpu"), weft.read_image(tmp_path / "out.png"))


def test_gaussian_and_convolve_are_the_command_lines(tmp_path, program):
    a = image()
    png(tmp_path / "in.png", a)
    program("filter", "gaussian", "--devices", "cpu", "--input", tmp_path / "in.png", "--sigma", 1.5,
            "--output", tmp_path / "g.png", "--no-progress")
    assert np.array_equal(weft.gaussian(a, 1.5, devices="cpu"), weft.read_image(tmp_path / "g.png"))
    k = np.array([[1, 2, 0], [0, 1, 3], [1, 0, 0]], dtype=np.float32) / 8
    (tmp_path / "k.txt").write_text("\n".join(" ".join("%g" % v for v in row) for row in k))
    program("filter", "convolve", "--devices", "cpu", "--input", tmp_path / "in.png", "--kernel", tmp_path / "k.txt",
            "--output", tmp_path / "c.png", "--no-progress")
    assert np.array_equal(weft.convolve(a, k, devices="cpu"), weft.read_image(tmp_path / "c.png"))


def test_volumes_are_filtered_in_3d(tmp_path, program):
    h5py = pytest.importorskip("h5py")
    v = np.random.default_rng(9).integers(0, 256, (9, 21, 17), dtype=np.uint8)
    with h5py.File(tmp_path / "v.h5", "w") as f:
        f.create_dataset("v", data=v)
    program("filter", "median", "--devices", "cpu", "--input", str(tmp_path / "v.h5") + ":/v", "--size", 3,
            "--output", str(tmp_path / "m.h5") + ":/m", "--no-progress")
    with h5py.File(tmp_path / "m.h5") as f:
        want = f["m"][()]
    got = weft.median(v, 3, devices="cpu")
    assert got.shape == v.shape and np.array_equal(got, want)
    padded = np.pad(v, 1, mode="edge")
    ref = np.median(np.stack([padded[z:z + 9, y:y + 21, x:x + 17] for z in range(3) for y in range(3)
                              for x in range(3)]), axis=0)
    assert np.array_equal(got, ref.astype(np.uint8))


def test_median_matches_a_plain_reference():
    a = image(16, 19)
    got = weft.median(a, 3, devices="cpu")
    padded = np.pad(a, 1, mode="edge")  # border clamp
    want = np.median(np.stack([padded[y:y + 16, x:x + 19] for y in range(3) for x in range(3)]), axis=0)
    assert np.array_equal(got, want.astype(np.uint8))


def test_correlate_and_convolve_are_scipys():
    ndimage = pytest.importorskip("scipy.ndimage")
    a = image().astype(np.float32)
    k = np.array([[0, 1, 2], [0, 0, 3], [-1, 0, 0]], dtype=np.float32)  # not symmetric
    c = weft.correlate(a, k, border="clamp", devices="cpu")
    v = weft.convolve(a, k, border="clamp", devices="cpu")
    assert np.allclose(c, ndimage.correlate(a, k, mode="nearest"), atol=1e-3)
    assert np.allclose(v, ndimage.convolve(a, k, mode="nearest"), atol=1e-3)
    assert not np.allclose(c, v)


def test_gaussian_blur_keeps_a_constant_image():
    a = np.full((20, 24), 7.0, dtype=np.float32)
    assert np.allclose(weft.gaussian(a, 1.5, devices="cpu"), 7.0, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_dtypes_come_back_as_they_went(dtype):
    a = image().astype(dtype)
    assert weft.median(a, 3, devices="cpu").dtype == dtype


def test_a_strided_view_is_taken_as_well():
    a = image(40, 60)
    view = a[::2, ::3]
    assert np.array_equal(weft.median(view, 3, devices="cpu"), weft.median(np.ascontiguousarray(view), 3, devices="cpu"))


def test_bad_arguments_raise_config_errors():
    a = image()
    with pytest.raises(weft.ConfigError, match="size"):
        weft.median(a, 4, devices="cpu")
    with pytest.raises(weft.ConfigError, match="border"):
        weft.median(a, 3, border="wrap", devices="cpu")
    with pytest.raises(weft.ConfigError):
        weft.median(a.astype(np.int64), 3, devices="cpu")
    with pytest.raises(weft.ConfigError):
        weft.median(np.zeros((2, 2, 2, 2), np.uint8), 3, devices="cpu")
    with pytest.raises(weft.ConfigError, match="kernel"):
        weft.correlate(a, np.ones((3, 4), np.float32), devices="cpu")
    with pytest.raises(weft.ConfigError, match="devices"):
        weft.median(a, 3, devices="tpu")
    with pytest.raises(ValueError):  # a ConfigError is a ValueError too
        weft.gaussian(a, -1.0, devices="cpu")


def test_unreadable_files_raise_io_errors(tmp_path):
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(weft.IoError, match="bad.png"):
        weft.read_image(tmp_path / "bad.png")
    with pytest.raises(OSError):
        weft.read_image(tmp_path / "missing.png")
