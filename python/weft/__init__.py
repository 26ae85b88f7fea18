"""Weft from Python: numpy in, numpy out, on every GPU of the job.

The applications are functions on arrays (``granulometry``, ``flow``, ``flow_sequence``,
``saliency``, ``median``, ``convolve``, ``correlate``, ``gaussian``); they run the same tasks as the
``weft`` program, on the GPUs of the process (or its CPUs), with the GIL released. ``Graph`` composes
the shipped C++ tasks and Python tasks into a streaming graph. Under ``mpirun -n N python3 script.py``
every rank runs the script and one graph spans the ranks, as with the C++ program.

Errors are ``weft.WeftError`` and its subclasses: ``ConfigError`` (bad arguments or data, also a
``ValueError``), ``IoError`` (unreadable or corrupt files, also an ``OSError``), ``RemoteError``
(another rank failed) and ``InternalError``.
"""
import os as _os

import numpy as _np

from . import _weft
from ._weft import ConfigError, InternalError, IoError, RemoteError, WeftError

__all__ = [
    "WeftError", "ConfigError", "IoError", "RemoteError", "InternalError",
    "devices", "rank", "size", "version", "read_image", "read_dataset",
    "granulometry", "GranulometryResult", "flow", "flow_sequence", "flow_defaults", "saliency",
    "median", "convolve", "correlate", "gaussian", "Graph", "run",
]

_DEVICES = ("auto", "cpu", "gpu", "all")


def _check_devices(devices):
    if devices not in _DEVICES:
        raise ConfigError("devices: expected one of %s, got %r" % (", ".join(_DEVICES), devices))
    return devices


def devices():
    """Every rank's CPUs and GPUs: a list of dicts (rank, host, cpu_cores, memory_bytes, gpus)."""
    return _weft._devices()


def rank():
    """This process's rank in the job (0 without mpirun)."""
    return _weft._rank()


def size():
    """The number of ranks of the job (1 without mpirun)."""
    return _weft._size()


def version():
    """Weft's version and commit, and the CUDA, NCCL, MPI and HDF5 versions it runs with (a dict)."""
    return _weft._version()


def read_image(path):
    """A PNG or PGM image as a 2D array (uint8, or uint16 for 16-bit files; colour as luminance)."""
    return _weft._read_image(_os.fspath(path))


def read_dataset(ref):
    """A whole HDF5 dataset, ``"file.h5:/path"``, as an array (uint8, uint16, int32, float16/32/64)."""
    return _weft._read_dataset(str(ref))


# ---------------------------------------------------------------------------------------------
# Granulometry.

class GranulometryResult:
    """What ``granulometry`` returns.

    Attributes:
        curve: int64 array, the foreground voxels left by the opening of size n (n = 0, 1, ...).
        spectrum: int64 array, ``curve[n] - curve[n + 1]``: the voxels removed between n and n + 1.
        size_map: int32 array of the volume's shape, the largest n whose opening keeps each voxel
            (-1 on the background), or None when not asked. (The command line stores it in
            granulometry.h5 as uint8 or uint16, the background 255 or 65535.)
        sizes: the sizes n (0, 1, ...); ``radius`` and ``diameter`` the same in ``voxel_size``
            units (n is a radius in voxels: the element of size n spans 2n + 1 voxels).
        element, max_size, threshold, threshold_rule, voxel_size: the parameters used.
        fraction: the curve as a fraction of the volume's voxels (curve.csv's volume_fraction).
        cumulative: ``1 - curve[n + 1] / curve[0]``, the share of the foreground removed by the
            openings up to size n + 1 (curve.csv's cumulative; not monotone where a ball curve rises).
    """

    def __init__(self, raw, element, shape, voxel_size):
        self.curve = _np.asarray(raw["remaining"], dtype=_np.int64)
        self.spectrum = _np.asarray(raw["spectrum"], dtype=_np.int64)
        self.size_map = raw["size_map"]
        self.element = element
        self.max_size = raw["max_size"] if raw["max_size"] >= 0 else len(self.curve) - 1
        self.threshold = raw["threshold"]
        self.threshold_rule = raw["threshold_rule"]
        self.voxel_size = voxel_size
        self.sizes = _np.arange(len(self.curve))
        scale = 1.0 if voxel_size is None else float(voxel_size)
        self.radius = self.sizes * scale
        self.diameter = (2 * self.sizes + 1) * scale
        voxels = float(_np.prod(shape))
        self.fraction = self.curve / voxels if voxels else self.curve.astype(float)
        following = self.curve - self.spectrum  # curve[n + 1], also past the last size
        first = float(self.curve[0]) if len(self.curve) else 0.0
        self.cumulative = 1.0 - following / first if first > 0 else _np.zeros(len(self.curve))

    def __repr__(self):
        return "GranulometryResult(element=%r, sizes 0..%d, foreground %d voxels%s)" % (
            self.element, len(self.curve) - 1, self.curve[0] if len(self.curve) else 0,
            ", with size map" if self.size_map is not None else "")


def _dataset_ref(volume):
    """ "file.h5:/data", an h5py.Dataset, or None for an in-memory array."""
    if isinstance(volume, (str, _os.PathLike)):
        text = _os.fspath(volume)
        if ":" not in text:
            raise ConfigError("volume: a path must name a dataset, 'file.h5:/data', got %r" % text)
        return text
    if hasattr(volume, "file") and hasattr(volume, "name") and hasattr(volume, "shape") and hasattr(volume.file, "filename"):
        return "%s:%s" % (volume.file.filename, volume.name)  # an h5py.Dataset: read by Weft, plane by plane
    return None


def granulometry(volume, element="ball", max_size=None, threshold=None, size_map=False, voxel_size=None,
                 devices="auto", slab_planes=0, device_memory=None):
    """Granulometric curve, pattern spectrum and size map of a 3D volume by exact openings.

    Args:
        volume: a 3D numpy array of bool, any integer (8 to 64 bits), float32 or float64 dtype,
            read in place (without a copy) and compared with the threshold in its own type (an
            int64 or uint64 volume is never rounded through a float); other dtypes (float16)
            are converted first. Or, for volumes larger than memory, an h5py.Dataset or a path
            "file.h5:/data" of any of those types, read slab by slab.
        element: "octahedron", "cube" or "ball" (Euclidean).
        max_size: the largest size N; None: until nothing remains.
        threshold: None (foreground = any non-zero value), a number T (value >= T; a Python int
            exactly, even beyond 2**53) or "otsu".
        size_map: also return the opening function (the size map).
        voxel_size: the edge of a voxel in your unit, for ``radius`` and ``diameter``.
        devices: "auto" (every GPU of the job, else CPUs), "gpu", "cpu" or "all".
        slab_planes, device_memory: as the command line's --slab-planes and --device-memory
            (bytes); the volume is split into slabs over every place when it does not fit.

    Returns:
        GranulometryResult. Under mpirun every rank must call it alike; the results are on rank 0
        (the others get a result whose curve is empty).

    The same openings as ``weft granulometry``, and the same numbers for the same volume.
    """
    element = str(element)
    if element not in ("octahedron", "cube", "ball"):
        raise ConfigError("element: expected octahedron, cube or ball, got %r" % element)
    if max_size is not None and (not isinstance(max_size, (int, _np.integer)) or max_size < 0):
        raise ConfigError("max_size: expected an integer >= 0 or None, got %r" % (max_size,))
    if voxel_size is not None and not float(voxel_size) > 0:
        raise ConfigError("voxel_size: expected a positive number, got %r" % (voxel_size,))
    _check_devices(devices)
    ref = _dataset_ref(volume)
    applied = None
    if ref is not None:
        shape = tuple(getattr(volume, "shape", ())) or None
        data, use_threshold = None, threshold
    else:
        data = _np.asarray(volume)
        if data.ndim != 3:
            raise ConfigError("volume: expected a 3D array, got %d dimensions" % data.ndim)
        shape = data.shape
        data, use_threshold, applied = _as_volume(data, threshold)
    raw = _weft._granulometry(data, ref or "", element, -1 if max_size is None else int(max_size), use_threshold,
                              bool(size_map), devices, int(slab_planes), float(device_memory or 0))
    if applied is not None:
        raw["threshold_rule"], raw["threshold"] = applied
    return GranulometryResult(raw, element, shape or (0,), voxel_size)


def _as_volume(data, threshold):
    """The volume as Weft reads it, the threshold Weft applies, and the rule applied here if any.

    bool, integer (8 to 64 bits), float32 and float64 volumes are read in place (in this host's
    byte order) and thresholded by Weft in their own type; float16 is made float32 (exactly)."""
    if data.dtype == _np.bool_ and threshold is not None:
        raise ConfigError("threshold: a boolean volume is its own foreground; give no threshold")
    if data.dtype.kind not in "buif":
        raise ConfigError("volume: dtype %s is not a number" % data.dtype)
    if data.dtype.kind == "f" and data.dtype.itemsize == 2:
        data = data.astype(_np.float32)
    elif data.dtype.itemsize > 8:
        raise ConfigError("volume: dtype %s is wider than 64 bits" % data.dtype)
    if not data.dtype.isnative:
        data = data.astype(data.dtype.newbyteorder("="))
    return _np.ascontiguousarray(data), threshold, None


# ---------------------------------------------------------------------------------------------
# Optical flow, saliency, filters.

def _frames(frames, what):
    arr = _np.ascontiguousarray(frames)
    if arr.dtype not in (_np.uint8, _np.uint16, _np.float32):
        raise ConfigError("%s: dtype %s (expected uint8, uint16 or float32 grey frames)" % (what, arr.dtype))
    return arr


def flow(frame0, frame1, method="tvl1", precision="fp32", devices="auto", **options):
    """Dense optical flow from frame0 to frame1: an (H, W, 2) float32 array of (u, v) in pixels.

    Args:
        frame0, frame1: 2D grey frames of one shape (uint8, uint16 or float32).
        method: "tvl1" (dual TV-L1), "hs" (Horn-Schunck) or "clg" (combined local-global).
        precision: "fp32" or "fp16" (GPU storage; the CPU path computes in float).
        options: the command line's method options, e.g. scales=5, warps=5, iterations=300,
            epsilon=0.01, zoom=0.5, antialias, presmooth, texture, texture_threshold, median=5, tau,
            lambda_, theta, alpha, rho; flow_defaults(method) gives the defaults.
    """
    a, b = _frames(frame0, "frame0"), _frames(frame1, "frame1")
    if a.ndim != 2 or a.shape != b.shape or a.dtype != b.dtype:
        raise ConfigError("flow: frames must be 2D arrays of one shape and dtype, got %s %s and %s %s"
                          % (a.dtype, a.shape, b.dtype, b.shape))
    return flow_sequence(_np.stack([a, b]), method=method, precision=precision, devices=devices, **options)[0]


def flow_defaults(method="tvl1"):
    """The options `flow` uses for `method` when they are not given (a dict; the command line's too)."""
    return dict(_weft._flow_defaults(str(method)))


def flow_sequence(frames, method="tvl1", precision="fp32", devices="auto", replicas=None, **options):
    """Flow between consecutive frames of a (T, H, W) array: a (T-1, H, W, 2) float32 array.

    The pairs are farmed over every GPU of the job (``replicas``: how many flow tasks; None: one
    per GPU, or per rank on CPUs); the flows come back in order.
    """
    arr = _frames(frames, "frames")
    if arr.ndim != 3:
        raise ConfigError("frames: expected (T, H, W), got %d dimensions" % arr.ndim)
    _check_devices(devices)
    if replicas is None:  # as the program: one per GPU of the job, else one per rank
        replicas = max(1, min(_weft._farm_width(devices, 1), arr.shape[0] - 1))
    flows = _weft._flow_sequence(arr, str(method), str(precision), dict(options), int(replicas), devices)
    if not flows:
        return _np.zeros((0,) + arr.shape[1:] + (2,), dtype=_np.float32)
    return _np.stack(flows)


def saliency(video, pathway="fused", devices="auto", farm=None):
    """Spatio-temporal saliency of a (T, H, W) video: a (T, H, W) float32 array.

    Args:
        pathway: "static" (Gabor energies, interactions, normalisation), "dynamic" (residual
            motion after compensating the camera's) or "fused" (both, as the command line).
        farm: replicas of the per-frame work over the GPUs (None: two per GPU, one per rank on
            CPUs, or the staged graph on the CPUs of one rank; 0: the staged graph).
    """
    arr = _frames(video, "video")
    if arr.ndim != 3:
        raise ConfigError("video: expected (T, H, W), got %d dimensions" % arr.ndim)
    if pathway not in ("static", "dynamic", "fused"):
        raise ConfigError("pathway: expected static, dynamic or fused, got %r" % (pathway,))
    _check_devices(devices)
    if farm is None:  # as the program's --farm auto
        farm = _weft._farm_width(devices, 2)
    maps = _weft._saliency(arr, pathway, int(farm), devices)
    return _np.stack([m[:, : arr.shape[2]] for m in maps]) if maps else _np.zeros(arr.shape, _np.float32)


def _image(a, what="image"):
    arr = _np.asarray(a)
    if arr.ndim not in (2, 3):
        raise ConfigError("%s: expected a 2D image or a 3D volume, got %d dimensions" % (what, arr.ndim))
    return arr


def median(image, size, border="clamp", devices="auto"):
    """Median filter of a 2D image (size 3 to 9) or a 3D volume (3 or 5); uint8, uint16 or float32.

    border: "clamp", "mirror" or "zero". The same as ``weft filter median``."""
    return _weft._median(_image(image), int(size), border, _check_devices(devices))


def correlate(image, kernel, border="clamp", devices="auto"):
    """Correlation with a square 2D kernel (or a 1D one, separable: rows then columns), as
    ``scipy.ndimage.correlate``; 3D arrays slice by slice. Accumulates in float32."""
    return _weft._convolve(_image(image), _np.asarray(kernel, dtype=_np.float32), border, False,
                           _check_devices(devices))


def convolve(image, kernel, border="clamp", devices="auto"):
    """Convolution: correlation with the kernel turned by 180 degrees, as
    ``scipy.ndimage.convolve``."""
    return _weft._convolve(_image(image), _np.asarray(kernel, dtype=_np.float32), border, True,
                           _check_devices(devices))


def gaussian(image, sigma, size=0, border="clamp", devices="auto"):
    """Gaussian blur of standard deviation ``sigma`` pixels (size 0: 2*ceil(3*sigma)+1)."""
    return _weft._gaussian(_image(image), float(sigma), int(size), border, _check_devices(devices))


# ---------------------------------------------------------------------------------------------
# Graphs.

class _Task:
    """A task of a Graph, for naming its ports: ``graph.connect(src.out, t["in"])``."""

    def __init__(self, graph, name):
        self._graph, self.name = graph, name

    def __getitem__(self, port):
        return "%s.%s" % (self.name, port)

    def __getattr__(self, port):
        if port.startswith("_"):
            raise AttributeError(port)
        return "%s.%s" % (self.name, port)


class Graph:
    """A streaming graph of tasks: shipped C++ tasks by kind, Python tasks, numpy sources and sinks.

    >>> g = weft.Graph()
    >>> src = g.source("frames", [a, b, c])             # emits the arrays, in order
    >>> f = g.add("smooth", "Gaussian", sigma=2.0)      # a C++ task (on a GPU when there is one)
    >>> p = g.python("edges", lambda x: skimage.filters.sobel(x).astype("float32"))
    >>> out = g.sink("out")
    >>> g.connect(src.out, f["in"]); g.connect(f.out, p["in"]); g.connect(p.out, out["in"])
    >>> weft.run(g)
    >>> g.results("out")                                # the arrays, in token order

    Kinds: Affine(a, b), Add, Median(size, border), Correlate(kernel, border), Convolve(kernel,
    border), Gaussian(sigma, size, border), OpticalFlow(method, precision), StaticSaliency.
    """

    def __init__(self):
        self._g = _weft._Graph()

    def add(self, name, kind, **params):
        """Adds a shipped task of ``kind`` named ``name``; returns it (for its ports)."""
        self._g.add(name, kind, params)
        return _Task(self, name)

    def source(self, name, arrays):
        """A source emitting copies of ``arrays`` in order (port "out")."""
        self._g.source(name, [_np.ascontiguousarray(a) for a in arrays])
        return _Task(self, name)

    def sink(self, name):
        """A sink keeping every array it receives (port "in"); read them with ``results``."""
        self._g.sink(name)
        return _Task(self, name)

    def python(self, name, fn, inputs=("in",), outputs=("out",)):
        """A Python task: each token, ``fn(*arrays)`` is called with the inputs' numpy arrays and
        returns the output array (or a tuple, one per output). It runs on a CPU (rank 0 unless
        placed) and holds the GIL only while it runs."""
        if not callable(fn):
            raise ConfigError("Graph.python: %r is not callable" % (fn,))
        self._g.python(name, fn, list(inputs), list(outputs))
        return _Task(self, name)

    def connect(self, output, input):
        """Connects ``"task.port"`` to ``"task.port"``."""
        self._g.connect(str(output), str(input))

    def place(self, task, place):
        """Pins a task to a place, e.g. ``"gpu:0"``, ``"rank:1/cpu"`` (wins over any mapping)."""
        self._g.place(task.name if isinstance(task, _Task) else str(task), str(place))

    def tasks(self):
        """The tasks with their ports (a list of dicts)."""
        return self._g.tasks()

    def results(self, sink):
        """The arrays a sink received, in token order (on the rank that ran the sink)."""
        return self._g.results(sink.name if isinstance(sink, _Task) else str(sink))


def run(graph, mapping=None, devices="auto", trace=None):
    """Runs a Graph on every rank of the job (collective under mpirun); returns its statistics
    (seconds, and per task its place, tokens and busy time). ``mapping``: a YAML mapping file;
    ``trace``: a Chrome/Perfetto timeline to write. Ctrl-C cancels the run."""
    return _weft._run(graph._g, _check_devices(devices), _os.fspath(mapping) if mapping else "",
                      _os.fspath(trace) if trace else "")
