"""nonzero, flatnonzero, argwhere and compress against NumPy: every backend x
filter rung (returning indices) x dtype x layout, on data where zeros and
nonzeros alternate in runs and at the warp, block and tile edges, with the
values NumPy's rule turns on (-0.0 is zero, NaN is not, a bool byte of 2 or
255 is True), so a rung that drops or repeats an index, writes the element
instead of its index, loses order, or tests x != 0 differently gives
another answer."""
import functools

import numpy as np
import pytest
from conftest import BACKENDS, CUDA, DTYPES, filter_refusal, host, placed, requires_cuda, where_params

import cuatomic
from cuatomic import _C

SIZES = [0, 1, 31, 32, 33, 255, 256, 257, 4095, 4097, 70_001, (1 << 20) + 3]
NUMPY2 = int(np.__version__.split(".")[0]) >= 2


@functools.lru_cache(maxsize=None)
def data(dtype, n, density=0.3, seed=0):
    """n elements of dtype, each nonzero with probability `density`, zeros
    also in long runs (whole tiles) and nonzeros that are only barely so
    (the smallest subnormal, NaN, -1, the type's extremes); floats carry
    -0.0 among the zeros. Read-only, cached."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed + 7919 * n + 131 * dt.num + int(density * 1000))
    on = rng.random(n) < density
    if n > 20_000:
        on[5000:15_000] = False  # a run of zeros across whole tiles
        on[16_000:16_500] = True
    if dt.kind == "b":
        return _frozen(on)
    if dt.kind == "f":
        x = np.where(on, rng.standard_normal(n), 0.0).astype(dt)
        specials = [np.nan, np.finfo(dt).smallest_subnormal, -np.inf, -1.0]
        zeros = np.flatnonzero(~on)
        if zeros.size:
            x[zeros[::3]] = -0.0
    else:
        info = np.iinfo(dt)
        x = np.where(on, rng.integers(info.min, info.max, n, dtype=dt, endpoint=True), 0).astype(dt)
        x[on & (x == 0)] = 1
        specials = [info.min, info.max, 1] + ([-1] if dt.kind == "i" else [])
    picks = np.flatnonzero(on)[:len(specials)]
    x[picks] = np.array(specials, dtype=dt)[:len(picks)]
    return _frozen(x)


def _frozen(x):
    x.flags.writeable = False
    return x


def call(fn, x, backend, method, **kw):
    """cuatomic.<fn>(x, ...) -- or None where the rung refuses these data
    (pipelined's limits on a GPU), after checking the refusal raises."""
    why = filter_refusal(x, method=method, backend=backend)
    if why is None:
        return fn(x, method=method, backend=backend, **kw)
    with pytest.raises(ValueError, match=f"method '{method}'"):
        fn(x, method=method, backend=backend, **kw)
    return None


def ordered(backend, method):
    return method == "auto" or cuatomic._backend.rung("filter", backend, method).has(_C.F_ORDERED)


PARAMS = where_params("filter") + [pytest.param(be, "auto", where, id=f"{be}-auto-{where}") for be in BACKENDS
                                   for where in (["host", "device"] if be == "cuda" else ["host"])]


@pytest.mark.parametrize("backend,method,where", PARAMS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_flatnonzero_matches_numpy(backend, method, where, dtype):
    keep_order = ordered(backend, method)
    for n in SIZES:
        for density in (0.3, 0.97):
            x = data(dtype, n, density)
            got = call(cuatomic.flatnonzero, placed(x, backend, where), backend, method, ordered=keep_order)
            if got is None:
                continue
            assert isinstance(got, cuatomic.DeviceArray) == (where == "device")
            got = host(got)
            want = np.flatnonzero(x)
            assert got.dtype == np.intp, (n, got.dtype)
            if keep_order:
                assert np.array_equal(got, want), (n, density)
            else:  # the same indices, each once, in any order
                assert got.size == want.size and np.array_equal(np.sort(got), want), (n, density)


@pytest.mark.parametrize("backend,method,where", [p for p in PARAMS if p.values[1] in ("auto", "lookback", "ordered")])
@pytest.mark.parametrize("shape", [(7, 9), (3, 0, 2), (4, 5, 6), (300, 301), (2, 3, 4, 5, 6), (1,) * 16])
def test_nonzero_and_argwhere_shapes(backend, method, where, shape):
    n = int(np.prod(shape))
    x = data(np.float32, n, 0.4).reshape(shape)
    got = cuatomic.nonzero(placed(x, backend, where), method=method, backend=backend)
    want = np.nonzero(x)
    assert len(got) == len(want) == len(shape)
    for g, w in zip(got, want):
        assert isinstance(g, cuatomic.DeviceArray) == (where == "device")
        assert host(g).dtype == np.intp and np.array_equal(host(g), w)
    aw = cuatomic.argwhere(placed(x, backend, where), method=method, backend=backend)
    assert aw.shape == np.argwhere(x).shape and np.array_equal(host(aw), np.argwhere(x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["fortran", "strided", "reversed", "swapped"])
def test_layouts(backend, layout):
    x = np.asarray(data(np.int16, 120 * 97, 0.5)).reshape(120, 97)
    a = {"fortran": np.asfortranarray(x), "strided": x[::2, 1::3], "reversed": x[::-1],
         "swapped": x.astype(x.dtype.newbyteorder())}[layout]
    for got, want in zip(cuatomic.nonzero(a, backend=backend), np.nonzero(a)):
        assert np.array_equal(got, want)
    assert np.array_equal(cuatomic.argwhere(a, backend=backend), np.argwhere(a))
    assert np.array_equal(cuatomic.flatnonzero(a, backend=backend), np.flatnonzero(a))


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_rules(backend):
    b = np.array([0, 2, 255, 0, 1], np.uint8).view(bool)
    assert np.array_equal(cuatomic.flatnonzero(b, backend=backend), np.flatnonzero(b))
    f = np.array([np.nan, -0.0, 0.0, 5e-324, -np.inf, 0.0])
    assert cuatomic.flatnonzero(f, backend=backend).tolist() == [0, 3, 4]
    assert cuatomic.flatnonzero([0, 1, 0, 2], backend=backend).tolist() == [1, 3]  # a list
    e = cuatomic.nonzero(np.zeros((3, 0)), backend=backend)
    assert len(e) == 2 and all(v.shape == (0,) and v.dtype == np.intp for v in e)
    assert cuatomic.argwhere(np.zeros((0, 4)), backend=backend).shape == np.argwhere(np.zeros((0, 4))).shape == (0, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_d(backend):
    for v in (0, 3):
        a = np.array(v)
        assert cuatomic.argwhere(a, backend=backend).shape == np.argwhere(a).shape
        assert np.array_equal(cuatomic.flatnonzero(a, backend=backend), np.flatnonzero(a))
    if NUMPY2:
        for v in (np.array(3), np.array(True), np.array(0.5, np.float32)):
            with pytest.raises(ValueError) as want:
                np.nonzero(v)
            with pytest.raises(ValueError, match="0d arrays is not allowed") as got:
                cuatomic.nonzero(v, backend=backend)
            assert str(got.value) == str(want.value)  # NumPy's words, every sentence (bool's has one more)
    else:
        with pytest.warns(DeprecationWarning):
            got = cuatomic.nonzero(np.array(3), backend=backend)
        assert got[0].tolist() == [0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors(backend):
    with pytest.raises(ValueError, match="no particular order"):
        cuatomic.nonzero(np.ones(4), method="atomic", backend=backend)
    with pytest.raises(ValueError, match="method"):
        cuatomic.flatnonzero(np.ones(4), method="nope", backend=backend)
    with pytest.raises(TypeError):
        cuatomic.nonzero(np.ones(4, np.complex64), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.argwhere(np.ma.masked_array([1, 0]), backend=backend)
    with pytest.raises(ValueError, match="ordered="):  # a flag read as NumPy reads one: no truth value
        cuatomic.flatnonzero(np.ones(4), ordered=np.ones(2), backend=backend)


COMPRESS_CASES = [([1, 0, 1, 1], None), ([0, 1, 1, 1, 0, 0, 0], None), ([True, False], 0), ([0, 1, 1], 1),
                  ([0, 1, 1], -1), ([], None), ([2, 0.5, 0], None), ([1, 0, 0, 1], 2), ([0] * 9, 1)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cond_where", ["host", "device"])
@pytest.mark.parametrize("a_where", ["host", "device"])
def test_compress_matches_numpy(backend, cond_where, a_where):
    if "device" in (cond_where, a_where) and backend != "cuda":
        pytest.skip("device arrays need the cuda backend")
    a = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) * 1.5
    for cond, axis in COMPRESS_CASES:
        c = np.asarray(cond, dtype=np.float64 if not cond else None)
        want = np.compress(c, a, axis=axis)
        got = cuatomic.compress(placed(c, backend, cond_where), placed(a, backend, a_where), axis=axis,
                                backend=backend)
        assert isinstance(got, cuatomic.DeviceArray) == (a_where == "device")
        assert host(got).dtype == want.dtype and np.array_equal(host(got), want), (cond, axis)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_compress_errors(backend, where):
    if where == "device" and backend != "cuda":
        pytest.skip("device arrays need the cuda backend")
    a = placed(np.arange(6, dtype=np.int64).reshape(2, 3), backend, where)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        cuatomic.compress([1, 0, 1, 1], a, axis=1, backend=backend)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        cuatomic.compress([0, 0, 0, 0, 0, 0, 1], a, backend=backend)
    with pytest.raises(ValueError, match="condition must be a 1-d array"):
        cuatomic.compress([[1, 0]], a, axis=0, backend=backend)
    with pytest.raises(ValueError, match="condition must be a 1-d array"):
        cuatomic.compress(1, a, backend=backend)
    with pytest.raises(np.exceptions.AxisError if NUMPY2 else np.AxisError):
        cuatomic.compress([1, 0], a, axis=2, backend=backend)
    with pytest.raises(ValueError, match="no particular order"):
        cuatomic.compress([1, 0], a, axis=0, method="atomic", backend=backend)


@requires_cuda
def test_compress_large_device():
    """The take kernel over every width and a long middle axis."""
    rng = np.random.default_rng(3)
    for dt in (np.int8, np.int16, np.float32, np.float64):
        a = rng.integers(-100, 100, (5, 70_001, 3)).astype(dt)
        cond = rng.random(70_001) < 0.4
        got = cuatomic.compress(cuatomic.to_device(cond), cuatomic.to_device(a), axis=1)
        assert np.array_equal(got.copy_to_host(), np.compress(cond, a, axis=1))


@requires_cuda
def test_peer_device_arrays():
    """CuPy and PyTorch inputs give device results with NumPy's indices."""
    x = np.asarray(data(np.int32, 70_007, 0.3)).reshape(7, -1)
    peers = []
    try:
        import cupy
        peers.append(cupy.asarray(x))
    except ImportError:
        pass
    try:
        import torch
        peers.append(torch.as_tensor(x, device="cuda"))
    except ImportError:
        pass
    if not peers:
        pytest.skip("neither CuPy nor PyTorch")
    for p in peers:
        for g, w in zip(cuatomic.nonzero(p), np.nonzero(x)):
            assert isinstance(g, cuatomic.DeviceArray) and np.array_equal(g.copy_to_host(), w)


def test_cpu_and_cuda_agree_when_both():
    if not CUDA:
        pytest.skip("one backend")
    x = data(np.float64, 70_001, 0.5)
    assert np.array_equal(cuatomic.flatnonzero(x, backend="cpu"), cuatomic.flatnonzero(x, backend="cuda"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_review_cases(backend):
    """Found by a cold review: a masked `a` in compress is refused (np.take
    would drop its mask), a subclass stays one, more than 16 dimensions
    unravel, a 0-d `a` compresses as 1-D."""
    with pytest.raises(TypeError):
        cuatomic.compress([1, 0, 1], np.ma.masked_array([1, 2, 3], mask=[1, 0, 0]), backend=backend)
    m = np.matrix([[0, 1], [2, 0]])
    assert type(cuatomic.compress([0, 1], m, axis=0, backend=backend)) is np.matrix
    x = np.zeros((1,) * 17 + (3,))
    x[..., 1] = 1
    for got, want in zip(cuatomic.nonzero(x, backend=backend), np.nonzero(x)):
        assert np.array_equal(got, want)
    assert np.array_equal(cuatomic.compress([1], np.array(5), axis=0, backend=backend), [5])
    with pytest.raises(ValueError, match="compress needs a method that keeps order"):
        cuatomic.compress([1, 0], np.arange(2), method="atomic", backend=backend)
    if backend == "cuda":
        d = cuatomic.to_device(x)
        assert all(np.array_equal(g.copy_to_host(), w) for g, w in zip(cuatomic.nonzero(d), np.nonzero(x)))
        got = cuatomic.compress([1], cuatomic.to_device(np.array(5)), axis=0)
        assert np.array_equal(got.copy_to_host(), [5])
        big = np.zeros((1 << 24) + 5, np.int8)  # past the count-first size: counted, then compacted
        big[[0, 7, 1 << 23, (1 << 24) + 4]] = 1
        assert np.array_equal(cuatomic.flatnonzero(cuatomic.to_device(big)).copy_to_host(), np.flatnonzero(big))
