"""Granulometry of arrays and datasets: the same as `weft granulometry`, dtypes, size map, errors."""
import csv

import h5py
import numpy as np
import pytest

import weft


def balls(shape=(28, 30, 26), seed=4):
    rng = np.random.default_rng(seed)
    z, y, x = np.indices(shape)
    v = np.zeros(shape, np.uint8)
    for _ in range(12):
        c = rng.uniform(0, shape)
        r = rng.uniform(2, 6)
        v[(z - c[0]) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2 <= r * r] = 1
    return v


def cli_curve(program, tmp_path, volume, *args):
    with h5py.File(tmp_path / "v.h5", "w") as f:
        f.create_dataset("data", data=volume, chunks=(8, 8, 8), compression="gzip")
    program("granulometry", "--devices", "cpu", "--no-progress", "--input", str(tmp_path / "v.h5") + ":/data",
            "--output", tmp_path / "out", *args)
    with open(tmp_path / "out" / "curve.csv") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    with h5py.File(tmp_path / "out" / "granulometry.h5") as f:
        size_map = None
        if "size_map" in f:  # stored as uint8 or uint16, the background the type's largest value
            stored = f["size_map"]
            size_map = stored[()].astype(np.int32)
            size_map[stored[()] == stored.attrs["background"]] = -1
    return np.array([int(r["remaining"]) for r in rows]), size_map


@pytest.mark.parametrize("element", ["octahedron", "cube", "ball"])
def test_curve_and_size_map_are_the_command_lines(tmp_path, program, element):
    v = balls()
    want, want_map = cli_curve(program, tmp_path, v, "--element", element, "--size-map")
    r = weft.granulometry(v, element=element, size_map=True, devices="cpu")
    assert np.array_equal(r.curve, want)
    assert np.array_equal(r.size_map, want_map)
    assert np.array_equal(r.spectrum, r.curve - np.append(r.curve[1:], 0))
    assert r.curve[0] == int(v.sum())


@pytest.mark.parametrize("max_size, as_, dtype", [(None, "radius", np.uint8), (300, "radius", np.uint16),
                                                 (6, "diameter", np.uint8)])
def test_size_map_file_is_read_by_h5py(tmp_path, program, max_size, as_, dtype):
    """The command line's size map: uint8 or uint16 as N asks, gzip, the background 255 or 65535,
    values n or 2n + 1 (the attributes say which), the same as the Python package's int32 map."""
    v = balls()
    with h5py.File(tmp_path / "v.h5", "w") as f:
        f.create_dataset("data", data=v)
    extra = [] if max_size is None else ["--max-size", str(max_size)]
    program("granulometry", "--devices", "cpu", "--no-progress", "--input", str(tmp_path / "v.h5") + ":/data",
            "--element", "ball", "--size-map", "--size-map-as", as_, "--slab-planes", "7", "--output",
            tmp_path / "out", *extra)
    want = weft.granulometry(v, element="ball", max_size=max_size, size_map=True, devices="cpu").size_map
    with h5py.File(tmp_path / "out" / "granulometry.h5") as f:
        stored = f["size_map"]
        assert stored.dtype == dtype and stored.compression == "gzip"
        background = int(stored.attrs["background"])
        assert background == np.iinfo(dtype).max
        assert stored.attrs["quantity"] == as_.encode()
        got = stored[()].astype(np.int64)
    expect = np.where(want < 0, background, want if as_ == "radius" else 2 * want + 1)
    assert np.array_equal(got, expect)


def test_slabs_give_the_same_curve():
    v = balls()
    whole = weft.granulometry(v, element="ball", max_size=6, devices="cpu")
    split = weft.granulometry(v, element="ball", max_size=6, devices="cpu", slab_planes=7)
    assert np.array_equal(whole.curve, split.curve)


def test_dtypes_and_thresholds():
    v = balls()
    base = weft.granulometry(v, element="cube", devices="cpu").curve
    assert np.array_equal(weft.granulometry(v.astype(bool), element="cube", devices="cpu").curve, base)
    ct = v.astype(np.int16) * 1200 - 300  # a reconstructed CT: foreground 900, background -300
    assert np.array_equal(weft.granulometry(ct, element="cube", threshold=0, devices="cpu").curve, base)
    assert np.array_equal(weft.granulometry(v.astype(np.float64), element="cube", devices="cpu").curve, base)
    r = weft.granulometry(v.astype(np.float32) * 200, element="cube", threshold="otsu", devices="cpu")
    assert np.array_equal(r.curve, base) and r.threshold_rule == "otsu"


def test_every_number_type_in_place():
    v = balls()
    base = weft.granulometry(v, element="octahedron", devices="cpu").curve
    for dtype in (np.int8, np.int16, np.uint32, np.int64, np.uint64):
        scaled = v.astype(dtype) * 100 + 7  # background 7, foreground 107
        r = weft.granulometry(scaled, element="octahedron", threshold=50, devices="cpu")
        assert np.array_equal(r.curve, base), dtype
    # Past 2**53 an integer threshold is compared exactly: a float64 would take 2**53 + 1 as 2**53.
    big = v.astype(np.uint64) + np.uint64(2 ** 53)  # background 2**53, foreground 2**53 + 1
    r = weft.granulometry(big, element="octahedron", threshold=2 ** 53 + 1, devices="cpu")
    assert np.array_equal(r.curve, base)
    # int32 past 2**24, with Otsu (no float32 on the way): two levels a float32 cannot tell apart.
    i32 = v.astype(np.int32) + 16777216
    r = weft.granulometry(i32, element="octahedron", threshold="otsu", devices="cpu")
    assert np.array_equal(r.curve, base) and r.threshold_rule == "otsu"
    swapped = (v.astype(np.int16) * 1000).astype(">i2")  # another byte order: converted first
    assert np.array_equal(weft.granulometry(swapped, element="octahedron", threshold=1, devices="cpu").curve, base)
    assert np.allclose(weft.granulometry(v, element="octahedron", devices="cpu").cumulative[-1], 1.0)


def test_datasets_of_every_type(tmp_path):
    v = balls()
    base = weft.granulometry(v, element="cube", devices="cpu").curve
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f.create_dataset("bool", data=v.astype(bool))
        f.create_dataset("ct", data=v.astype(np.int16) * 1200 - 300, chunks=(5, 30, 26), compression="gzip")
        f.create_dataset("u64", data=v.astype(np.uint64) * 10)
    assert np.array_equal(weft.granulometry(str(tmp_path / "t.h5") + ":/bool", element="cube", devices="cpu").curve, base)
    ct = weft.granulometry(str(tmp_path / "t.h5") + ":/ct", element="cube", threshold=0, devices="cpu", slab_planes=6)
    assert np.array_equal(ct.curve, base)
    u64 = weft.granulometry(str(tmp_path / "t.h5") + ":/u64", element="cube", threshold="otsu", devices="cpu")
    assert np.array_equal(u64.curve, base)


def test_datasets_are_read_by_slabs(tmp_path):
    v = balls()
    with h5py.File(tmp_path / "v.h5", "w") as f:
        ds = f.create_dataset("data", data=v, chunks=(4, 30, 26))
        by_h5py = weft.granulometry(ds, element="octahedron", devices="cpu", slab_planes=9)
    by_path = weft.granulometry(str(tmp_path / "v.h5") + ":/data", element="octahedron", devices="cpu")
    in_memory = weft.granulometry(v, element="octahedron", devices="cpu")
    assert np.array_equal(by_h5py.curve, in_memory.curve)
    assert np.array_equal(by_path.curve, in_memory.curve)


def test_units():
    r = weft.granulometry(balls(), element="ball", voxel_size=0.65, devices="cpu")
    assert np.allclose(r.radius, r.sizes * 0.65)
    assert np.allclose(r.diameter, (2 * r.sizes + 1) * 0.65)
    assert r.fraction[0] == pytest.approx(r.curve[0] / balls().size)


def test_bad_inputs_raise():
    with pytest.raises(weft.ConfigError, match="3D"):
        weft.granulometry(np.zeros((4, 4), np.uint8))
    with pytest.raises(weft.ConfigError, match="element"):
        weft.granulometry(balls(), element="sphere")
    with pytest.raises(weft.ConfigError, match="background"):
        weft.granulometry(np.ones((8, 8, 8), np.uint8), devices="cpu", slab_planes=3)
    with pytest.raises(weft.ConfigError, match="boolean"):
        weft.granulometry(balls().astype(bool), threshold=1)
    with pytest.raises(weft.IoError):
        weft.granulometry("/nonexistent/v.h5:/data")
