"""The functions on a GPU give the CPU's results (exactly where the kernels are exact, within a
stated tolerance where floats are summed in another order). Skipped without a GPU."""
import numpy as np
import pytest

import weft

pytestmark = pytest.mark.skipif(not any(r["gpus"] for r in weft.devices()), reason="no GPU")


def test_median_and_correlate():
    a = np.random.default_rng(5).integers(0, 256, (301, 257), dtype=np.uint8)
    assert np.array_equal(weft.median(a, 5, devices="gpu"), weft.median(a, 5, devices="cpu"))
    f = a.astype(np.float32)
    k = np.arange(9, dtype=np.float32).reshape(3, 3) - 4
    assert np.allclose(weft.convolve(f, k, devices="gpu"), weft.convolve(f, k, devices="cpu"), atol=1e-2)


def test_granulometry_is_exact_on_a_gpu():
    from test_granulometry import balls
    v = balls((64, 70, 58))
    for element in ("octahedron", "cube", "ball"):
        gpu = weft.granulometry(v, element=element, size_map=True, devices="gpu")
        cpu = weft.granulometry(v, element=element, size_map=True, devices="cpu")
        assert np.array_equal(gpu.curve, cpu.curve), element
        assert np.array_equal(gpu.size_map, cpu.size_map), element


def test_flow_on_a_gpu_is_the_cpus_within_rounding():
    from test_flow import frames
    a, b = frames(96, 128)
    gpu = weft.flow(a, b, method="tvl1", devices="gpu")
    cpu = weft.flow(a, b, method="tvl1", devices="cpu")
    assert float(np.abs(gpu - cpu).mean()) < 0.05


def test_saliency_on_a_gpu():
    from test_saliency import video
    v = video(4, 96, 128)
    gpu = weft.saliency(v, pathway="static", devices="gpu", farm=0)
    cpu = weft.saliency(v, pathway="static", devices="cpu", farm=0)
    assert np.allclose(gpu, cpu, rtol=1e-3, atol=1e-4 * float(cpu.max()))
