"""Saliency of arrays: the same as `weft saliency`."""
import h5py
import numpy as np
import pytest

import weft


def video(t=5, h=48, w=64):
    z, y, x = np.mgrid[0:t, 0:h, 0:w].astype(np.float32)
    v = 120 + 40 * np.sin(0.3 * x + 0.2 * y) + 30 * np.cos(0.1 * (x - 3 * z))
    v[:, 20:28, :] += 60 * ((x[:, 20:28, :] - 4 * z[:, 20:28, :]) % 20 < 4)
    return np.clip(v, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("pathway", ["static", "dynamic", "fused"])
def test_maps_are_the_command_lines(tmp_path, program, pathway):
    v = video()
    with h5py.File(tmp_path / "v.h5", "w") as f:
        f.create_dataset("frames", data=v)
    program("saliency", "--devices", "cpu", "--no-progress", "--farm", "0", "--pathway", pathway,
            "--input", str(tmp_path / "v.h5") + ":/frames", "--output", tmp_path / "s.h5")
    with h5py.File(tmp_path / "s.h5") as f:
        want = f["saliency"][()]
    got = weft.saliency(v, pathway=pathway, devices="cpu", farm=0)
    assert got.shape == v.shape and got.dtype == np.float32
    assert np.array_equal(got, want)


def test_a_farm_gives_the_same_maps():
    v = video()
    assert np.array_equal(weft.saliency(v, pathway="fused", devices="cpu", farm=2),
                          weft.saliency(v, pathway="fused", devices="cpu", farm=0))


def test_bad_videos_raise():
    with pytest.raises(weft.ConfigError, match="pathway"):
        weft.saliency(video(), pathway="both")
    with pytest.raises(weft.ConfigError, match="T, H, W"):
        weft.saliency(np.zeros((4, 4), np.uint8))
