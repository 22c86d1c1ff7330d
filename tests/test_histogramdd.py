"""histogramdd and histogram2d against NumPy: every backend x rung (from the
tables) x dtype, points planted on every edge (the last edge closed, the
others half-open), outside each dimension's range, NaN in one coordinate,
and every bins/range form NumPy takes, so a rung that drops a point, bins an
edge on the wrong side, mixes up the dimensions' order or place values, or
loses a tile gives other counts."""
import functools

import numpy as np
import pytest
from conftest import BACKENDS, CUDA, host, requires_cuda

import cuatomic
from cuatomic import _backend

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def rungs():
    out = []
    for be in BACKENDS:
        for name, _, _ in cuatomic.methods("histogramdd", be):
            for where in (["host", "device"] if be == "cuda" else ["host"]):
                out.append(pytest.param(be, name, where, id=f"{be}-{name}-{where}"))
        for where in (["host", "device"] if be == "cuda" else ["host"]):
            out.append(pytest.param(be, "auto", where, id=f"{be}-auto-{where}"))
    return out


@functools.lru_cache(maxsize=None)
def sample(dtype, n, d, seed=0):
    """n points of d dimensions, (n, d), C order, read-only: values over a
    small range so that every edge of bins=5 over it is hit exactly, plus
    points outside and (floats) NaN in one coordinate."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed + 31 * n + d + dt.num)
    if dt.kind == "b":
        s = rng.random((n, d)) < 0.4
    elif dt.kind == "f":
        s = rng.integers(-2, 13, (n, d)).astype(dt) + (rng.random((n, d)) < 0.5).astype(dt) * dt.type(0.5)
        if n > 10:
            s[3, d - 1] = np.nan
            s[5, 0] = -np.inf
    else:
        lo = 0 if dt.kind == "u" else -2
        s = rng.integers(lo, 13, (n, d)).astype(dt)
    s.flags.writeable = False
    return s


def placed(a, backend, where):
    return cuatomic.to_device(np.ascontiguousarray(a), backend=backend) if where == "device" else a


def check(got, want):
    hist, edges = got
    assert isinstance(edges, list) and len(edges) == len(want[1])
    for e, w in zip(edges, want[1]):
        assert e.dtype == w.dtype and np.array_equal(e, w)
    h = host(hist)
    assert h.dtype == want[0].dtype and h.shape == want[0].shape
    assert np.array_equal(h, want[0]), np.argwhere(h != want[0])[:5]


def call(backend, method, fn, *args, **kw):
    """fn(...) -- or None when the rung refuses these cells (shared on a GPU
    with more cells than its shared memory holds), after checking it
    raises a ValueError naming the rung."""
    try:
        return fn(*args, method=method, backend=backend, **kw)
    except ValueError as e:
        # shared past a block's shared memory; cluster for cells one copy holds (both backends), past 8
        # blocks', before sm_90, or in a PTX-only build
        if (method == "cluster" or method == "shared" and backend == "cuda") and f"method '{method}'" in str(e):
            return None
        raise


@pytest.mark.parametrize("backend,method,where", rungs())
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_matches_numpy(backend, method, where, dtype):
    for n, d, bins, range_ in [(0, 2, 5, None), (1, 1, 3, None), (257, 2, 5, [(0, 10), (0, 10)]),
                               (2000, 3, (4, 5, 6), None), (70_001, 2, (7, 9), [(-1, 11), None]),
                               (5000, 4, 3, [(0, 12)] * 4)]:
        x = sample(dtype, n, d)
        if np.dtype(dtype).kind == "f" and (range_ is None or None in range_) and n > 10:
            x = np.nan_to_num(x, nan=1.5, neginf=-2.0)  # an autodetected range needs finite values
        want = np.histogramdd(x, bins, range_)
        got = call(backend, method, cuatomic.histogramdd, placed(x, backend, where), bins, range_)
        if got is not None:
            assert isinstance(got[0], cuatomic.DeviceArray) == (where == "device")
            check(got, want)


@pytest.mark.parametrize("backend,method,where", rungs())
def test_many_cells(backend, method, where):
    """256 x 256 cells (past a Hopper block's shared memory: shared refuses,
    tiled cuts them in two tiles) and 32^3."""
    rng = np.random.default_rng(5)
    xy = rng.random((300_000, 2), dtype=np.float32) * 1.2 - 0.1
    # (1100 x 1000 cells: several tiles on either backend -- the CPU's tile is 2^20 cells -- and the CPU's cluster)
    for pts, bins in [(xy, 256), (rng.random((100_000, 3)), 32), (xy[:50_000], (1100, 1000))]:
        got = call(backend, method, cuatomic.histogramdd, placed(pts, backend, where), bins, [(0, 1)] * pts.shape[1])
        if got is not None:
            check(got, np.histogramdd(pts, bins, [(0, 1)] * pts.shape[1]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_bins_forms(backend):
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(3000), rng.standard_normal(3000) * 2
    for bins in [10, (5, 7), [np.linspace(-3, 3, 8), 4], np.array([-2, -1, 0, 0.5, 3]),
                 [np.array([-2, 0, 2]), np.array([-4, 0, 1, 4])], [[-2, 0, 2], [-1, 1]]]:
        for range_ in [None, [(-2, 2), (-3, 3)], [None, (-1, 1)]]:
            for density in (False, True):
                h, xe, ye = cuatomic.histogram2d(x, y, bins, range_, density, backend=backend)
                H, XE, YE = np.histogram2d(x, y, bins, range_, density)
                assert np.array_equal(xe, XE) and np.array_equal(ye, YE)
                if density:
                    np.testing.assert_allclose(h, H, rtol=1e-14, atol=0)
                else:
                    assert np.array_equal(h, H)
    # the sample as a list of arrays, and as one 1-D array
    check(cuatomic.histogramdd([x, y], 6, backend=backend), np.histogramdd([x, y], 6))
    check(cuatomic.histogramdd(x, 6, backend=backend), np.histogramdd(x, 6))
    check(cuatomic.histogramdd(list(x[:50]), 6, backend=backend), np.histogramdd(list(x[:50]), 6))


@pytest.mark.parametrize("backend", BACKENDS)
def test_weights(backend):
    rng = np.random.default_rng(4)
    pts = rng.random((20_000, 3))
    w = rng.standard_normal(20_000) * 1e3
    for bins in (4, (3, 5, 2)):
        h, e = cuatomic.histogramdd(pts, bins, weights=w, backend=backend)
        H, E = np.histogramdd(pts, bins, weights=w)
        # float sums: as accurate as NumPy's against the exact sums
        cells = np.ravel_multi_index([np.clip(np.searchsorted(E[k], pts[:, k], "right") - 1, 0, len(E[k]) - 2)
                                      for k in range(3)], H.shape)
        import math
        exact = np.array([math.fsum(w[cells == c]) for c in range(H.size)]).reshape(H.shape)
        assert np.all(np.abs(h - exact) <= np.abs(H - exact) + 1e-9 * np.abs(exact))
        for _ in range(3):  # the same bits every call (on a GPU, auto sums by at's fixed-point rung)
            h2, _ = cuatomic.histogramdd(pts, bins, weights=w, backend=backend)
            assert np.array_equal(h, h2)
        if backend == "cuda":  # device input, device weights: the same sums, bit for bit
            d, _ = cuatomic.histogramdd(cuatomic.to_device(pts), bins, weights=cuatomic.to_device(w))
            assert np.array_equal(d.copy_to_host(), h)
    iw = rng.integers(0, 5, 20_000)
    check(cuatomic.histogramdd(pts, 3, weights=iw, backend=backend), np.histogramdd(pts, 3, weights=iw))


@pytest.mark.parametrize("backend", BACKENDS)
def test_edges_and_nan(backend):
    e = np.array([0.0, 1.0, 2.0, 3.0])
    pts = np.array([[0, 0], [1, 1], [3, 3], [3.0000001, 1], [-1e-300, 1], [np.nan, 1], [2, np.inf], [2.5, 3]])
    check(cuatomic.histogramdd(pts, [e, e], backend=backend), np.histogramdd(pts, [e, e]))
    dup = np.array([0.0, 1.0, 1.0, 2.0, 2.0])  # repeated edges, a zero-width last bin
    check(cuatomic.histogramdd(pts, [dup, e], backend=backend), np.histogramdd(pts, [dup, e]))
    big = np.array([[2**62, 1], [-(2**62), 2], [5, 3]], dtype=np.int64)
    check(cuatomic.histogramdd(big, 3, backend=backend), np.histogramdd(big, 3))
    ie = np.arange(-3, 7)
    check(cuatomic.histogramdd(big, [ie, ie], backend=backend), np.histogramdd(big, [ie, ie]))
    # NumPy's layouts: Fortran order, a strided view, non-native byte order
    m = np.asfortranarray(sample(np.float64, 999, 3))
    m = np.nan_to_num(m, nan=0.5, neginf=0.0)
    for a in (m, m[::3], m.astype(m.dtype.newbyteorder())):
        check(cuatomic.histogramdd(a, 4, backend=backend), np.histogramdd(a, 4))


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors(backend):
    pts = np.zeros((10, 2))
    for kw in [dict(bins=(3, 4, 5)), dict(range=[(0, 1)]), dict(bins=[-1, 2]), dict(bins=[[3, 2, 1], 2]),
               dict(bins=2.5), dict(range=[(1, 0), None])]:
        with pytest.raises(Exception) as theirs:
            np.histogramdd(pts, **kw)
        with pytest.raises(type(theirs.value), match=str(theirs.value)[:30].replace("[", r"\[").replace("(", r"\(")):
            cuatomic.histogramdd(pts, backend=backend, **kw)
    with pytest.raises(ValueError, match="autodetected range"):
        cuatomic.histogram2d(np.array([1.0, np.nan]), np.array([1.0, 2.0]), backend=backend)
    with pytest.raises(ValueError, match="weights"):
        cuatomic.histogramdd(pts, weights=np.ones(9), backend=backend)
    with pytest.raises(ValueError, match="at most 16"):
        cuatomic.histogramdd(np.zeros((3, 17)), 2, backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogramdd(np.zeros((3, 2), np.complex64), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogramdd(np.ma.masked_array(pts), backend=backend)
    with pytest.raises(ValueError, match="method"):
        cuatomic.histogramdd(pts, method="nope", backend=backend)


@requires_cuda
def test_device_forms():
    """A sequence of device arrays, CuPy/PyTorch columns, device weights."""
    rng = np.random.default_rng(9)
    x, y = rng.random(50_000), rng.random(50_000)
    dx, dy = cuatomic.to_device(x), cuatomic.to_device(y)
    h, xe, ye = cuatomic.histogram2d(dx, dy, bins=(16, 8))
    H, XE, YE = np.histogram2d(x, y, bins=(16, 8))
    assert isinstance(h, cuatomic.DeviceArray) and np.array_equal(h.copy_to_host(), H)
    w = rng.random(50_000)
    h, _, _ = cuatomic.histogram2d(dx, dy, bins=4, weights=cuatomic.to_device(w))
    np.testing.assert_allclose(h.copy_to_host(), np.histogram2d(x, y, bins=4, weights=w)[0], rtol=1e-12)
    try:
        import cupy
        c = cupy.asarray(np.stack([x, y], axis=1))
        check(cuatomic.histogramdd(c, 5), np.histogramdd(np.stack([x, y], axis=1), 5))
        check(cuatomic.histogramdd(c[:, ::-1], 5), np.histogramdd(np.stack([y, x], axis=1), 5))
    except ImportError:
        pass


def test_backends_agree():
    if not CUDA:
        pytest.skip("one backend")
    pts = sample(np.float32, 70_001, 3)
    pts = np.nan_to_num(pts, nan=0.0, neginf=0.0)
    a = cuatomic.histogramdd(pts, 7, backend="cpu")[0]
    b = cuatomic.histogramdd(pts, 7, backend="cuda")[0]
    assert np.array_equal(a, b)


def test_methods_listed():
    for be in BACKENDS:
        assert [r.name for r in _backend.table("histogramdd", be)] == ["global", "shared", "tiled", "cluster"]
