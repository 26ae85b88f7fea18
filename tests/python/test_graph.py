"""Graphs from Python: shipped tasks by kind, Python tasks between them, order, errors, the GIL."""
import threading
import time

import numpy as np
import pytest

import weft


def test_a_python_task_between_cpp_tasks_keeps_every_token_in_order():
    arrays = [np.full(16, float(i), np.float32) for i in range(1000)]
    g = weft.Graph()
    src = g.source("numbers", arrays)
    scale = g.add("scale", "Affine", a=2.0, b=1.0)
    seen = []

    def square(x):
        seen.append(float(x[0]))
        return x * x

    py = g.python("square", square)
    shift = g.add("shift", "Affine", a=1.0, b=-1.0)
    out = g.sink("out")
    g.connect(src.out, scale["in"])
    g.connect(scale.out, py["in"])
    g.connect(py.out, shift["in"])
    g.connect(shift.out, out["in"])
    stats = weft.run(g, devices="cpu")
    results = g.results(out)
    assert len(results) == 1000
    for i, r in enumerate(results):
        assert np.array_equal(r, np.full(16, (2.0 * i + 1) ** 2 - 1, np.float32))
    assert seen == [2.0 * i + 1 for i in range(1000)]
    assert {t["task"] for t in stats["tasks"]} >= {"numbers", "scale", "square", "shift", "out"}


def test_tasks_with_several_ports():
    g = weft.Graph()
    a = g.source("a", [np.ones(4, np.float32)] * 3)
    b = g.source("b", [np.full(4, 2.0, np.float32)] * 3)
    both = g.python("both", lambda x, y: (x + y, x - y), inputs=["x", "y"], outputs=["sum", "diff"])
    s, d = g.sink("s"), g.sink("d")
    g.connect(a.out, both["x"])
    g.connect(b.out, both["y"])
    g.connect(both["sum"], s["in"])
    g.connect(both["diff"], d["in"])
    weft.run(g, devices="cpu")
    assert [float(r[0]) for r in g.results("s")] == [3.0] * 3
    assert [float(r[0]) for r in g.results("d")] == [-1.0] * 3


def test_a_python_error_stops_the_run_and_comes_back():
    g = weft.Graph()
    src = g.source("numbers", [np.zeros(2, np.float32)] * 5)

    def fail(x):
        raise KeyError("from the task")

    bad = g.python("bad", fail)
    out = g.sink("out")
    g.connect(src.out, bad["in"])
    g.connect(bad.out, out["in"])
    with pytest.raises(Exception, match="from the task"):
        weft.run(g, devices="cpu")


def test_graph_errors_are_config_errors():
    g = weft.Graph()
    with pytest.raises(weft.ConfigError, match="unknown task kind"):
        g.add("x", "Teleport")
    g.source("s", [np.zeros(2, np.float32)])
    with pytest.raises(weft.ConfigError):
        g.connect("s.out", "nobody.in")
    with pytest.raises(weft.ConfigError):
        weft.run(g, devices="cpu")  # an output connected to nothing


def test_the_gil_is_released_during_a_long_call():
    v = np.random.default_rng(1).integers(0, 256, (24, 512, 512), dtype=np.uint8)
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    t = threading.Thread(target=count)
    t.start()
    start = time.perf_counter()
    weft.median(v, 5, devices="cpu")
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert end - start > 0.05, "the call was too short to tell"
    assert len(during) >= 3, "the other thread did not run during the call"


def test_devices_and_version():
    d = weft.devices()
    assert d and d[0]["rank"] == 0 and d[0]["cpu_cores"] >= 1
    v = weft.version()
    assert v["hdf5"].startswith("1.") and v["version"]
    assert weft.rank() == 0 and weft.size() == 1
