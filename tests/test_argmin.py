"""argmin and argmax against NumPy: every backend x rung (from the tables) x
dtype, on data where the answer is one index among many candidates: ties
planted before and after the extreme, NaNs, signed zeros, the types' limits,
so that a rung that keeps the last tie, drops a thread's share, compares
floats as NumPy does not, or answers a constant, gives another index."""
import functools

import numpy as np
import pytest
from conftest import BACKENDS, CUDA, DTYPES, host, placed, requires_cuda, where_params

import cuatomic
from cuatomic import _C

SIZES = [1, 2, 31, 32, 33, 255, 256, 257, 2000, 70_001, (1 << 20) + 3]
FUNCS = {"argmin": (cuatomic.argmin, np.argmin), "argmax": (cuatomic.argmax, np.argmax)}


def packed_refuses(dtype, n, method):
    """packed's documented limits: elements of at most 4 bytes and the index in the bits below the key."""
    size = np.dtype(dtype).itemsize
    return method == "packed" and (size == 8 or (size == 4 and n > 1 << 32))


@functools.lru_cache(maxsize=None)
def data(dtype, n, kind, seed=0):
    """n elements of dtype (read-only, cached) whose argmin and argmax are
    single indices away from both ends (the types' limits, or floats far
    beyond the rest), each extreme value repeated at the end and, for
    `kind` "ties", once more between: the first of them must win."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed + 7919 * n + 131 * dt.num + len(kind))
    if dt.kind == "b":
        x = rng.random(n) < 0.5
    elif dt.kind == "f":
        x = (rng.standard_normal(n) * 100).astype(dt)
    else:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if n >= 8 and dt.kind != "b":
        lo, hi = sorted(rng.choice(np.arange(2, n - 4), 2, replace=False))
        small = np.iinfo(dt).min if dt.kind in "iu" else dt.type(-1e30 if dt.itemsize == 8 else -3e38)
        large = np.iinfo(dt).max if dt.kind in "iu" else dt.type(1e30 if dt.itemsize == 8 else 3e38)
        x[lo], x[n - 1] = small, small
        x[hi], x[n - 2] = large, large
        if kind == "ties":
            x[rng.integers(lo + 1, n - 2)] = small
            x[rng.integers(hi + 1, n - 2)] = large
    x.flags.writeable = False
    return x


@pytest.mark.parametrize("backend,method,where", where_params("argmin") + [
    pytest.param(be, "auto", where, id=f"{be}-auto-{where}") for be in BACKENDS
    for where in (["host", "device"] if be == "cuda" else ["host"])])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("func", sorted(FUNCS))
def test_matches_numpy(backend, method, where, dtype, func):
    ours, theirs = FUNCS[func]
    for n in SIZES:
        if method in ("cas", "packed") and n > 70_001:  # one atomic per element on one cell: slow, same code
            continue
        for kind in ("plain", "ties"):
            x = data(dtype, n, kind)
            if packed_refuses(dtype, n, method):
                with pytest.raises(ValueError, match="method 'packed'"):
                    ours(placed(x, backend, where), method=method, backend=backend)
                continue
            got = ours(placed(x, backend, where), method=method, backend=backend)
            assert type(got) is np.intp and got == theirs(x), (n, kind)
            ran = cuatomic.last_launch()
            assert ran["op"] == "argmin" and (method == "auto" or ran["method"] == method), ran


@pytest.mark.parametrize("backend,method,where", where_params("argmin"))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_nan_and_signed_zero_as_numpy(backend, method, where, dtype):
    """The first NaN wins for both; -0.0 equals +0.0 (the first of them wins); infinities order as numbers."""
    if packed_refuses(dtype, 1, method):
        pytest.skip("packed takes elements of at most 4 bytes")
    nan, inf = np.nan, np.inf
    cases = [[1.0, nan, -inf, nan], [-inf, inf, 2.0, nan], [0.0, -0.0, 1.0, -1.0, -0.0], [-0.0, 0.0, -1.0],
             [inf, inf, -inf, -inf], [nan, nan], [1.0, -nan, 5.0], [3.0, 2.0, 2.0, 3.0]]
    rng = np.random.default_rng(3)
    for n in (100, 4099):  # a NaN deep in a large array: every thread's share and the combine keep it
        x = rng.standard_normal(n)
        x[[n // 3, n // 2]] = nan
        cases.append(list(x))
        y = np.zeros(n)
        y[rng.integers(0, n, n // 2)] = -0.0
        y[[n // 5, n - 3]] = -1.0
        cases.append(list(y))
    for case in cases:
        x = np.array(case, dtype)
        for name, (ours, theirs) in FUNCS.items():
            got = ours(placed(x, backend, where), method=method, backend=backend)
            assert got == theirs(x), (name, case[:8])


@pytest.mark.parametrize("backend,method,where", where_params("argmin"))
def test_every_key_the_largest(backend, method, where):
    """Every element's key is the largest the order has (argmin of all UINT64_MAX or INT64_MAX, argmax of
    all 0 or INT64_MIN): no element beats the rungs' empty state, and the answer is still index 0."""
    for dt, lo, hi in [(np.uint64, 0, 2**64 - 1), (np.int64, -2**63, 2**63 - 1), (np.uint32, 0, 2**32 - 1),
                       (np.int8, -128, 127)]:
        if packed_refuses(dt, 1, method):
            continue
        for n in (1, 5, 3000):
            for value, func in ((hi, "argmin"), (lo, "argmax"), (lo, "argmin"), (hi, "argmax")):
                x = np.full(n, value, dt)
                assert FUNCS[func][0](placed(x, backend, where), method=method, backend=backend) == 0, (dt, n)


@pytest.mark.parametrize("backend,method,where", where_params("argmin"))
def test_bools_of_any_byte(backend, method, where):
    """A bool array viewed from other bytes holds 2s and 255s: every nonzero byte is an equal True (NumPy's
    reading), so the first True or False wins, not the largest byte."""
    rng = np.random.default_rng(11)
    for n in (3, 40, 5000):
        raw = rng.choice(np.array([0, 1, 2, 255], np.uint8), n)
        raw[0], raw[n // 2] = 2, 0
        x = raw.view(bool)
        for name, (ours, theirs) in FUNCS.items():
            got = ours(placed(x, backend, where), method=method, backend=backend)
            assert got == theirs(x), (name, n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_layouts_byte_orders_and_shapes(backend):
    """The index is into the flattened array in C order, as NumPy's without axis, whatever the layout."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((37, 53))
    for x in (base, np.asfortranarray(base), base[::2, ::-3], base.T, base.astype(">f8"), base.astype("<f4")[3:, 1:],
              base.reshape(37, 53, 1), np.float64(2.5), rng.integers(0, 5, (4, 3, 2)).astype(">i2")):
        for name, (ours, theirs) in FUNCS.items():
            assert ours(x, backend=backend) == theirs(x), (name, np.shape(x))


@requires_cuda
def test_large_host_array_streams_in_chunks():
    """A host array larger than the pipeline's chunk goes to the GPU in pieces; the chunks' answers combine
    on the host (the earliest of equal keys across chunks)."""
    n = (3 << 26) + 5  # int8: 3 chunks of the default 64 MiB, and a piece
    x = np.zeros(n, np.int8)
    x[[n // 3, n - 2]] = -7
    x[[n // 5, n - 1]] = 9
    for name, want in (("argmin", n // 3), ("argmax", n // 5)):
        got = FUNCS[name][0](x, backend="cuda")
        assert got == want and cuatomic.last_launch()["chunks"] > 1, (name, cuatomic.last_launch())


@pytest.mark.parametrize("backend", BACKENDS)
def test_refusals(backend):
    for name in FUNCS:
        f = FUNCS[name][0]
        with pytest.raises(ValueError, match=f"attempt to get {name} of an empty sequence"):
            f(np.zeros(0), backend=backend)
        with pytest.raises(ValueError, match=f"attempt to get {name} of an empty sequence"):
            f(np.zeros((3, 0)), backend=backend)
        with pytest.raises(ValueError, match="method 'packed'.*8-byte element"):
            f(np.zeros(4), method="packed", backend=backend)
        with pytest.raises(ValueError, match="unknown method 'nope'"):
            f(np.zeros(4), method="nope", backend=backend)
        with pytest.raises(TypeError):
            f(np.zeros(4, np.complex64), backend=backend)
        with pytest.raises(TypeError):
            f(np.zeros(4, np.float16), backend=backend)
        for bad in ((0,), True, 1.0):  # NumPy's TypeErrors: argmin's axis is one integer
            with pytest.raises(TypeError, match="integer"):
                f(np.zeros((2, 2)), axis=bad, backend=backend)
        with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError):
            f(np.zeros((2, 2)), axis=2, backend=backend)
        with pytest.raises(ValueError, match="empty sequence"):
            f(np.zeros((0, 3)), axis=0, backend=backend)
        with pytest.raises(ValueError, match="does not match"):
            f(np.zeros((2, 3)), axis=0, out=np.empty(2, np.intp), backend=backend)
        with pytest.raises(TypeError, match="Cannot cast"):
            f(np.zeros((2, 3)), axis=0, out=np.empty(3, np.float64), backend=backend)
        assert f(np.arange(4.0), axis=None, backend=backend) == FUNCS[name][1](np.arange(4.0), axis=None)
        with pytest.raises(ValueError):
            f(np.zeros(4), blocks=0, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_explain_and_methods(backend):
    assert cuatomic.methods("argmax", backend) == cuatomic.methods("argmin", backend)
    steps = [s for _, s, _ in cuatomic.methods("argmin", backend)]
    assert steps == list(range(1, len(steps) + 1))
    for name in FUNCS:
        choice = cuatomic.explain(name, np.arange(10.0), backend=backend)
        assert choice.op == "argmin" and choice.method in [m for m, _, _ in cuatomic.methods("argmin", backend)]
        FUNCS[name][0](np.arange(10.0), backend=backend)
        assert cuatomic.last_launch()["method"] == choice.method
    # auto passes by what packed cannot take
    assert cuatomic.explain("argmin", np.arange(10.0), backend=backend).method != "packed"
    with pytest.raises(ValueError, match="empty sequence"):
        cuatomic.explain("argmax", np.zeros(0), backend=backend)


def test_backends_share_rung_names():
    tables = {be: [(m, s) for m, s, _ in cuatomic.methods("argmin", be)] for be in BACKENDS}
    assert len({tuple(t) for t in tables.values()}) == 1, tables
    assert all(_C.F_DETERMINISTIC & r.flags for be in BACKENDS for r in cuatomic._backend.table("argmin", be))


@requires_cuda
@pytest.mark.parametrize("method", [m for m, _, _ in (cuatomic.methods("argmin", "cuda") if CUDA else [])])
def test_device_arrays_of_peers(method):
    """A CuPy or PyTorch array is read in place."""
    x = data(np.float32, 5000, "ties")
    for mod in ("cupy", "torch"):
        lib = pytest.importorskip(mod)
        d = lib.asarray(x) if mod == "cupy" else lib.as_tensor(x, device="cuda")
        assert cuatomic.argmin(d, method=method) == np.argmin(x)
        assert cuatomic.argmax(d, method=method) == np.argmax(x)


@pytest.mark.parametrize("backend,method,where", where_params("segmented"))
def test_along_an_axis_matches_numpy(backend, method, where):
    """argmin/argmax with axis (negative too) and keepdims against NumPy's:
    every dtype (8-byte ones take the two-pass path), ties (first index),
    NaN (the first NaN), +-0.0, a length-1 axis, outputs of size 0; the
    segmented rung named by `method` folds the keys."""
    rng = np.random.default_rng(5)
    for dt in (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float32,
               np.float64):
        for shape in ((7,), (3, 4), (2, 3, 5), (6, 1, 9), (33, 257), (1, 0, 3)):
            if dt == np.bool_:
                x = rng.random(shape) < 0.5
            elif np.dtype(dt).kind == "f":
                x = rng.integers(-3, 3, shape).astype(dt)  # ties
                if x.size > 7:
                    x.flat[3], x.flat[5], x.flat[6] = np.nan, -0.0, 0.0
            else:
                x = rng.integers(0, 4, shape).astype(dt)
            d = placed(x, backend, where)
            for axis in range(-len(shape), len(shape)):
                for name in ("argmin", "argmax"):
                    ours, theirs = FUNCS[name]
                    for keepdims in (False, True):
                        try:
                            want = theirs(x, axis=axis, keepdims=keepdims)
                        except ValueError:  # an empty axis
                            with pytest.raises(ValueError, match="empty sequence"):
                                ours(d, axis=axis, keepdims=keepdims, method=method, backend=backend)
                            continue
                        got = ours(d, axis=axis, keepdims=keepdims, method=method, backend=backend)
                        assert isinstance(got, cuatomic.DeviceArray) == (where == "device")
                        got = host(got)
                        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
                        assert np.array_equal(got, want), (name, dt, shape, axis, got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_along_an_axis_out_and_layouts(backend):
    x = np.random.default_rng(6).standard_normal((40, 30, 20))
    for a in (np.asfortranarray(x), x[::2, :, 1::3], x[:, ::-1], x.astype(np.float32)):
        for axis in (0, 1, 2, -1):
            assert np.array_equal(cuatomic.argmin(a, axis=axis, backend=backend), np.argmin(a, axis=axis))
            assert np.array_equal(cuatomic.argmax(a, axis=axis, backend=backend), np.argmax(a, axis=axis))
    o = np.empty((40, 20), np.int32)  # an integer out of another width: cast, as NumPy's
    assert cuatomic.argmax(x, axis=1, out=o, backend=backend) is o
    assert np.array_equal(o, np.argmax(x, axis=1))
    assert np.array_equal(cuatomic.argmin(x, keepdims=True, backend=backend), np.argmin(x, keepdims=True))
    if backend == "cuda":
        d = cuatomic.to_device(x)
        o = cuatomic.DeviceArray.empty((40, 20), np.intp)
        assert cuatomic.argmin(d, axis=1, out=o, backend=backend) is o
        assert np.array_equal(host(o), np.argmin(x, axis=1))
