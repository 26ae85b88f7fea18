"""Generated optical-flow pairs with exact ground truth: the evaluation set of `weft flow`.

How a pair is made (`make_pair`):

* The scene is a stack of layers, back to front: a background that fills the plane and, in the
  layered classes, objects (ellipses, rotated rectangles, wavy discs). Each layer carries its own
  texture, painted on its material: the grey level of a material point is T(p), where p is where
  that point is in frame 0.
* A texture T is continuous and band-limited: a sum of 48 cosines with random orientations and
  phases, radial frequencies drawn log-uniformly in a band (normally 0.02 to 0.3 cycles per pixel,
  below the 0.5 of sampling) and amplitudes falling as 1/f, as in natural images. It is evaluated
  exactly wherever it is needed, so no interpolation error enters either frame or the truth.
* Each layer moves by a known map from frame 0 to frame 1: an affine map (rotation, zoom and
  translation about a centre) for rigid layers, or, for the smooth class, an affine map plus a sum
  of Gaussian bumps, a non-rigid field with every Jacobian's norm below 0.35 so that the map is
  one-to-one.
* Frame 0 at a point x shows the front-most layer whose shape contains x. Frame 1 is rendered
  backwards: at a point y, each layer's map is inverted (in closed form for affine maps; by the
  fixed-point iteration p = y - w(p), a contraction, to 1e-6 px, for the smooth field) and the
  front-most layer whose shape contains the point p it came from is shown, with T(p).
* Each pixel integrates 3 x 3 samples (a box filter, as a sensor does), so that object edges are
  anti-aliased in both frames alike.
* The truth at pixel centre x is the motion w(x) of the front-most layer there. A pixel is
  occluded when, at x + w(x), frame 1 shows another layer or nothing (it left the image). EPE is
  measured on the other pixels; occluded ones are reported apart.
* The camera then acts on the rendered frames: a global gain g and bias b on frame 1
  (frame1 = g (frame1 - 128) + 128 + b), Gaussian blur (each frame its own sigma), Gaussian noise
  (each frame its own draw), and 8-bit quantisation with clipping.

Classes (`CLASSES`): smooth, rigid (layers with occlusions), gain (gain 0.6-0.8 or 1.25-1.5 and
bias -30..30 on frame 1), noise (sigma 4-10 grey levels), blur (sigma 0.8-2.5, different per
frame), small (textures only of 0.12-0.4 cycles per pixel, and small objects), large
(objects moving 8-20 px; the largest displacement of a pair is 13-19 px, none over 20). Smooth is one
non-rigid scene, rigid and large are layered; the other classes alternate between a smooth scene
(pairs 0, 1, 4, 5, 8, 9) and a layered one (pairs 2, 3, 6, 7), so that both halves hold both.

Pair i of class c (0-based within its class) has seed 1000 * (c + 1) + i; pairs with even i form
the tune half (parameters are chosen on it) and pairs with odd i the report half (results are
reported on it). Only numpy is needed.
"""
import math

import numpy as np

CLASSES = ("smooth", "rigid", "gain", "noise", "blur", "small", "large")
PAIRS_PER_CLASS = 10
WIDTH, HEIGHT = 320, 240
SUPERSAMPLE = 3


class Texture:
    """Band-limited grey texture: mean + sum of cosines, amplitudes falling as 1/f."""

    def __init__(self, rng, band=(0.02, 0.3), mean=128.0, std=32.0, count=48):
        f = np.exp(rng.uniform(math.log(band[0]), math.log(band[1]), count))
        theta = rng.uniform(0, math.pi, count)
        self.fx, self.fy = 2 * math.pi * f * np.cos(theta), 2 * math.pi * f * np.sin(theta)
        self.phase = rng.uniform(0, 2 * math.pi, count)
        amp = 1.0 / f
        self.amp = amp * (std * math.sqrt(2.0) / math.sqrt(np.sum(amp ** 2)))  # std of the sum = std
        self.mean = mean

    def __call__(self, x, y):
        out = np.full(x.shape, self.mean, dtype=np.float64)
        for fx, fy, ph, a in zip(self.fx, self.fy, self.phase, self.amp):
            out += a * np.cos(fx * x + fy * y + ph)
        return out


class Affine:
    """q = M (p - c) + c + t, M = zoom * rotation."""

    def __init__(self, centre, t, angle=0.0, zoom=1.0):
        ca, sa = math.cos(angle), math.sin(angle)
        self.m = zoom * np.array([[ca, -sa], [sa, ca]])
        self.minv = np.linalg.inv(self.m)
        self.c, self.t = np.asarray(centre, float), np.asarray(t, float)

    def forward(self, x, y):
        dx, dy = x - self.c[0], y - self.c[1]
        return (self.m[0, 0] * dx + self.m[0, 1] * dy + self.c[0] + self.t[0],
                self.m[1, 0] * dx + self.m[1, 1] * dy + self.c[1] + self.t[1])

    def inverse(self, x, y):
        dx, dy = x - self.c[0] - self.t[0], y - self.c[1] - self.t[1]
        return (self.minv[0, 0] * dx + self.minv[0, 1] * dy + self.c[0],
                self.minv[1, 0] * dx + self.minv[1, 1] * dy + self.c[1])


class Smooth:
    """q = p + w(p): an affine part plus Gaussian bumps, a contraction-safe non-rigid field."""

    def __init__(self, rng, w, h, peak):
        self.affine = Affine((w / 2, h / 2), rng.uniform(-0.4, 0.4, 2) * peak,
                             angle=rng.uniform(-0.01, 0.01), zoom=1 + rng.uniform(-0.01, 0.01))
        n = 5
        self.cx, self.cy = rng.uniform(0, w, n), rng.uniform(0, h, n)
        self.s = rng.uniform(0.15, 0.35, n) * min(w, h)
        d = rng.normal(size=(n, 2))
        d *= (peak * rng.uniform(0.4, 1.0, n) / np.hypot(d[:, 0], d[:, 1]))[:, None]
        # |grad| of a bump peaks at |d| / (s sqrt(e)): keep the sum's Lipschitz bound below 0.35.
        lip = np.sum(np.hypot(d[:, 0], d[:, 1]) / (self.s * math.sqrt(math.e))) + 0.02
        if lip > 0.33:
            d *= 0.33 / lip
        self.d = d

    def displacement(self, x, y):
        qx, qy = self.affine.forward(x, y)
        u, v = qx - x, qy - y
        for cx, cy, s, (dx, dy) in zip(self.cx, self.cy, self.s, self.d):
            g = np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * s * s))
            u, v = u + dx * g, v + dy * g
        return u, v

    def forward(self, x, y):
        u, v = self.displacement(x, y)
        return x + u, y + v

    def inverse(self, x, y):
        px, py = x.copy(), y.copy()
        for _ in range(60):
            u, v = self.displacement(px, py)
            nx, ny = x - u, y - v
            err = max(np.abs(nx - px).max(), np.abs(ny - py).max())
            px, py = nx, ny
            if err < 1e-7:
                break
        return px, py


class Layer:
    def __init__(self, texture, motion, shape=None):
        self.texture, self.motion, self.shape = texture, motion, shape

    def contains(self, x, y):
        return np.ones(x.shape, bool) if self.shape is None else self.shape(x, y)


def random_shape(rng, w, h, size):
    """Ellipse, rotated rectangle or wavy disc centred in the image, radius about `size`."""
    cx, cy = rng.uniform(0.15 * w, 0.85 * w), rng.uniform(0.15 * h, 0.85 * h)
    a, b = size * rng.uniform(0.7, 1.3), size * rng.uniform(0.5, 1.0)
    ang = rng.uniform(0, math.pi)
    kind = rng.integers(3)
    ca, sa = math.cos(ang), math.sin(ang)

    def shape(x, y):
        dx, dy = x - cx, y - cy
        rx, ry = ca * dx + sa * dy, -sa * dx + ca * dy
        if kind == 0:
            return (rx / a) ** 2 + (ry / b) ** 2 <= 1
        if kind == 1:
            return (np.abs(rx) <= a) & (np.abs(ry) <= b)
        r = a * (1 + 0.25 * np.cos(5 * np.arctan2(ry, rx) + ang))
        return rx * rx + ry * ry <= r * r

    return shape, (cx, cy)


def scene(rng, kind, w, h, peak, band=(0.02, 0.3), objects=(3, 5), size=(0.12, 0.22), spin=0.08,
          reach=(0.4, 1.0)):
    """Layers for a smooth scene (one non-rigid layer) or a layered one (rigid background and objects)."""
    if kind == "smooth":
        return [Layer(Texture(rng, band), Smooth(rng, w, h, peak))]
    bg_t = rng.normal(size=2)
    bg_t *= peak * rng.uniform(0.1, 0.6) / np.hypot(*bg_t)
    layers = [Layer(Texture(rng, band), Affine((w / 2, h / 2), bg_t, rng.uniform(-0.02, 0.02),
                                               1 + rng.uniform(-0.02, 0.02)))]
    for _ in range(rng.integers(objects[0], objects[1] + 1)):
        shape, centre = random_shape(rng, w, h, rng.uniform(*size) * min(w, h))
        t = rng.normal(size=2)
        t *= peak * rng.uniform(*reach) / np.hypot(*t)
        mean = 128 + rng.choice([-1, 1]) * rng.uniform(15, 45)  # objects stand out from the background
        # Some objects are faint (std 8), where only the smoothness term can fill the flow in.
        layers.append(Layer(Texture(rng, band, mean=mean, std=rng.uniform(8, 32)),
                            Affine(centre, t, rng.uniform(-spin, spin), 1 + rng.uniform(-spin, spin) / 2), shape))
    return layers


def render(layers, w, h, frame, n=SUPERSAMPLE):
    """Frame 0 or 1 of the layers (float, box-filtered over n x n samples per pixel)."""
    off = (np.arange(n) + 0.5) / n - 0.5
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    acc = np.zeros((h, w))
    for oy in off:
        for ox in off:
            x, y = xs + ox, ys + oy
            val = np.zeros((h, w))
            for layer in layers:
                px, py = (x, y) if frame == 0 else layer.motion.inverse(x, y)
                inside = layer.contains(px, py)
                val[inside] = layer.texture(px[inside], py[inside])
            acc += val
    return acc / (n * n)


def front_layer(layers, x, y, frame):
    """Index of the front-most layer at points (x, y) of frame 0 or 1."""
    idx = np.zeros(x.shape, int)
    for k, layer in enumerate(layers):
        px, py = (x, y) if frame == 0 else layer.motion.inverse(x, y)
        idx[layer.contains(px, py)] = k
    return idx


def truth(layers, w, h):
    """Flow (h, w, 2) at pixel centres of frame 0 and the occlusion mask."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    lab0 = front_layer(layers, xs, ys, 0)
    flow = np.zeros((h, w, 2))
    for k, layer in enumerate(layers):
        sel = lab0 == k
        qx, qy = layer.motion.forward(xs[sel], ys[sel])
        flow[sel, 0], flow[sel, 1] = qx - xs[sel], qy - ys[sel]
    qx, qy = xs + flow[..., 0], ys + flow[..., 1]
    lab1 = front_layer(layers, qx, qy, 1)
    outside = (qx < -0.5) | (qx > w - 0.5) | (qy < -0.5) | (qy > h - 0.5)
    return flow.astype(np.float32), (lab1 != lab0) | outside


def gaussian_blur(img, sigma):
    """Separable Gaussian with mirrored borders (numpy only)."""
    if sigma <= 0:
        return img
    r = int(math.ceil(3 * sigma))
    k = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    k /= k.sum()
    p = np.pad(img, r, mode="symmetric")
    p = np.apply_along_axis(lambda row: np.convolve(row, k, mode="valid"), 1, p)
    return np.apply_along_axis(lambda col: np.convolve(col, k, mode="valid"), 0, p)


def make_pair(cls, index, w=WIDTH, h=HEIGHT):
    """Pair `index` of class `cls`: dict with frame0, frame1 (uint8), flow (f32 h x w x 2),
    occluded (bool), seed, half ('tune' or 'report'), name and the camera settings."""
    if cls not in CLASSES:
        raise ValueError("unknown class %r (expected one of %s)" % (cls, ", ".join(CLASSES)))
    seed = 1000 * (CLASSES.index(cls) + 1) + index
    rng = np.random.default_rng(seed)
    kind = "smooth" if cls == "smooth" else "layered" if cls in ("rigid", "large") else ("smooth", "layered")[index // 2 % 2]
    scale = min(w, h) / 240.0  # motion and objects scale with the picture; the texture band does not
    cam = {"gain": 1.0, "bias": 0.0, "blur": (0.0, 0.0), "noise": (0.0, 0.0)}
    if cls == "large":
        layers = scene(rng, kind, w, h, rng.uniform(12, 20) * scale, size=(0.15, 0.25), spin=0.02,
                       reach=(0.7, 1.0))
    elif cls == "small":
        layers = scene(rng, kind, w, h, rng.uniform(1.5, 4) * scale, band=(0.12, 0.4), objects=(5, 8),
                       size=(0.06, 0.12))
    else:
        layers = scene(rng, kind, w, h, rng.uniform(1, 6) * scale)
    if cls == "gain":
        cam["gain"] = float(rng.choice([rng.uniform(0.6, 0.8), rng.uniform(1.25, 1.5)]))
        cam["bias"] = float(rng.uniform(-30, 30))
    elif cls == "noise":
        cam["noise"] = tuple(float(s) for s in rng.uniform(4, 10, 2))
    elif cls == "blur":
        cam["blur"] = tuple(float(s) for s in rng.uniform(0.8, 2.5, 2))
    frames = []
    for k in (0, 1):
        img = render(layers, w, h, k)
        if k == 1:
            img = cam["gain"] * (img - 128.0) + 128.0 + cam["bias"]
        img = gaussian_blur(img, cam["blur"][k])
        if cam["noise"][k] > 0:
            img = img + rng.normal(0, cam["noise"][k], img.shape)
        frames.append(np.clip(np.rint(img), 0, 255).astype(np.uint8))
    flow, occluded = truth(layers, w, h)
    return {"name": "%s-%d" % (cls, index), "class": cls, "index": index, "seed": seed,
            "half": "tune" if index % 2 == 0 else "report", "scene": kind, "camera": cam,
            "frame0": frames[0], "frame1": frames[1], "flow": flow, "occluded": occluded}


def pairs(half=None, classes=CLASSES, count=PAIRS_PER_CLASS, w=WIDTH, h=HEIGHT):
    """Every generated pair (of one half when `half` is 'tune' or 'report'), class by class."""
    for cls in classes:
        for i in range(count):
            if half is None or (i % 2 == 0) == (half == "tune"):
                yield make_pair(cls, i, w, h)


if __name__ == "__main__":
    import time
    for cls in CLASSES:
        t0 = time.time()
        p = make_pair(cls, 0)
        mag = np.hypot(p["flow"][..., 0], p["flow"][..., 1])
        print("%-7s max |w| %5.2f  occluded %4.1f %%  %.1f s" % (cls, mag.max(), 100 * p["occluded"].mean(), time.time() - t0))
