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
        rows = list(csv.DictReader(f))
    with h5py.File(tmp_path / "out" / "granulometry.h5") as f:
        size_map = f["size_map"][()] if "size_map" in f else None
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
