"""cuatomic.dask against NumPy: every function on several chunkings (chunks
of 0 and 1 element included), with dask's threaded scheduler and with a
dask.distributed LocalCluster of two worker processes; exact sums the same
bits for every chunking; a worker killed in the middle of a computation."""
import math
import os
import signal
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import cuatomic  # noqa: E402
import cuatomic.dask as cd  # noqa: E402
from cuatomic import _C, _backend  # noqa: E402

from conftest import BACKENDS  # noqa: E402

N = 5_003
CHUNKINGS = {
    "one": (N,),
    "even": (1_000,) * 5 + (3,),
    "ragged": (0, 1, 1_500, 0, 1, 2_000, 1_501),
    "ones": (1,) * 40 + (N - 40,),
}


def chunked(x, chunks):
    return da.from_array(x, chunks=(chunks,))


def adversarial(n, seed):
    """Values over 50 decades, and two huge ones that cancel in the middle:
    NumPy's sum loses everything below them."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-25, 25, n)
    x[n // 3], x[2 * n // 3] = 1e40, -1e40
    return x


@pytest.fixture(params=list(CHUNKINGS), ids=list(CHUNKINGS))
def chunks(request):
    return CHUNKINGS[request.param]


def compute(result, scheduler="threads"):
    return dask.compute(result, scheduler=scheduler)[0]


def same(got, want):
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)
    else:
        assert got == want or (np.isnan(got) and np.isnan(want)), (got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_sums_dots_and_reductions_are_numpy_s(backend, chunks):
    rng = np.random.default_rng(1)
    for dt in (np.int8, np.uint16, np.int32, np.int64, np.bool_):
        x = rng.integers(0, 2 if dt is np.bool_ else 120, N).astype(dt)
        y = rng.integers(0, 2 if dt is np.bool_ else 120, N).astype(dt)
        dx, dy = chunked(x, chunks), chunked(y, chunks)
        same(compute(cd.sum(dx, backend=backend)), np.sum(x))
        same(compute(cd.dot(dx, dy, backend=backend)), np.dot(x, y))
        if dt is not np.bool_:
            # data for which no fold is trivially 0: odd factors, a common high bit, no zero minimum
            data = {"multiply": x | 1, "bitwise_and": x | 96, "minimum": x + 3}
            for op in ("add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"):
                v = data.get(op, x).astype(dt)
                want = getattr(np, op).reduce(v)
                assert op == "add" or want != 0, op
                same(compute(cd.reduce(chunked(v, chunks), op, backend=backend)), want)
    big = np.full(N, np.iinfo(np.int64).max // 3, np.int64)  # wraps, as NumPy's does
    same(compute(cd.sum(chunked(big, chunks), backend=backend)), np.sum(big))


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_sums_are_the_same_bits_for_every_chunking(backend):
    x = adversarial(N, 2)
    y = adversarial(N, 3)
    want = math.fsum(x)
    for name, chunks in CHUNKINGS.items():
        for method in [r.name for r in _backend.table("sum", backend) if r.has(_C.F_EXACT)]:
            got = compute(cd.sum(chunked(x, chunks), method=method, backend=backend))
            assert type(got) is np.float64 and got == want, (name, method, got, want)
        x32 = (x * 1e-20).astype(np.float32)  # inside float32's range
        got32 = compute(cd.sum(chunked(x32, chunks), method="exact", backend=backend))
        assert type(got32) is np.float32 and got32 == cuatomic.sum(x32, method="exact", backend=backend), name
        got = compute(cd.dot(chunked(x, chunks), chunked(y, chunks), method="exact", backend=backend))
        assert got == cuatomic.dot(x, y, method="exact", backend=backend), name
    assert np.sum(x) != want  # the data is hard: NumPy's own sum is off


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_sums_within_the_in_memory_bound(backend, chunks):
    x = np.random.default_rng(4).random(N)
    exact = math.fsum(x)
    got = compute(cd.sum(chunked(x, chunks), backend=backend))
    assert type(got) is np.float64 and abs(got - exact) <= 2 * np.spacing(exact)
    x32 = x.astype(np.float32)
    got = compute(cd.sum(chunked(x32, chunks), backend=backend))
    assert type(got) is np.float32 and abs(float(got) - math.fsum(x32.astype(np.float64))) <= np.spacing(got)
    # NaN and infinities follow NumPy's rules
    x[7], x[N - 2] = np.inf, -np.inf
    assert np.isnan(compute(cd.sum(chunked(x, chunks), backend=backend)))
    x[N - 2] = 1.0
    assert compute(cd.sum(chunked(x, chunks), method="exact", backend=backend)) == np.inf


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_minimum_maximum_with_nan_and_zeros(backend, chunks):
    x = np.random.default_rng(5).standard_normal(N)
    same(compute(cd.min(chunked(x, chunks), backend=backend)), np.min(x))
    same(compute(cd.max(chunked(x, chunks), backend=backend)), np.max(x))
    x[N // 2] = np.nan
    assert np.isnan(compute(cd.max(chunked(x, chunks), backend=backend)))
    z = np.zeros(N)
    z[N // 3] = -0.0  # one -0.0 among +0.0: the minimum is -0.0 (IEEE 754-2019), as the in-memory call says
    got = compute(cd.min(chunked(z, chunks), backend=backend))
    want = cuatomic.reduce(z, "minimum", backend=backend)
    assert got == 0 and np.signbit(got) and np.signbit(want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_histograms_and_bincount(backend, chunks):
    rng = np.random.default_rng(6)
    x = rng.integers(0, 300, N).astype(np.int32)
    w = rng.standard_normal(N)
    wi = rng.integers(-50, 50, N).astype(np.int16)
    dx = chunked(x, chunks)
    h, e = cd.histogram(dx, 30, (0, 300), backend=backend)
    want, edges = np.histogram(x, 30, (0, 300))
    same(compute(h), want)
    assert np.array_equal(e, edges)
    h, _ = cd.histogram(dx, [0, 7, 100, 101, 299], weights=chunked(wi, chunks), backend=backend)
    same(compute(h), np.histogram(x, [0, 7, 100, 101, 299], weights=wi)[0])
    h, _ = cd.histogram(dx, 30, (0, 300), weights=chunked(w, chunks), backend=backend)
    got, want = compute(h), np.histogram(x, 30, (0, 300), weights=w)[0]
    assert got.dtype == want.dtype and np.allclose(got, want, rtol=0, atol=1e-12 * np.abs(w).sum())
    h, _ = cd.histogram(dx, 30, (0, 300), density=True, backend=backend)
    assert np.allclose(compute(h), np.histogram(x, 30, (0, 300), density=True)[0], rtol=1e-14)
    same(compute(cd.bincount(dx, backend=backend)), np.bincount(x))
    same(compute(cd.bincount(dx, minlength=1000, backend=backend)), np.bincount(x, minlength=1000))
    got = compute(cd.bincount(dx, chunked(w, chunks), backend=backend))
    assert got.dtype == np.float64 and np.allclose(got, np.bincount(x, w), rtol=0, atol=1e-12 * np.abs(w).sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_filter_keeps_order(backend, chunks):
    x = np.random.default_rng(7).integers(-100, 100, N).astype(np.int32)
    f = cd.filter(chunked(x, chunks), ">=", 17, backend=backend)
    assert f.dtype == x.dtype and math.isnan(f.shape[0])
    same(compute(f), x[x >= 17])
    same(compute(cd.filter(chunked(x, chunks), np.greater_equal, 17, backend=backend)), x[x >= 17])  # a ufunc op
    m = x.reshape(1, N)  # n-d: flattened in C order
    same(compute(cd.filter(da.from_array(np.tile(m, (3, 1)), chunks=(2, 1_000)), "<", 0, backend=backend)),
         np.tile(m, (3, 1)).ravel()[np.tile(m, (3, 1)).ravel() < 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dtype_and_float32_bins_are_numpy_s(backend, chunks):
    """dtype= casts every element first, as NumPy; float32 data gets NumPy's
    float32 edges; bool weights as NumPy takes them."""
    big = np.tile(np.array([2**24 + 1, 2**24 + 1, -2**24, -2**24], np.int32), N // 4)
    for method in ("exact", "auto"):
        got = compute(cd.sum(chunked(big[:len(big) // 4 * 4], (len(big) // 4 * 4,)), dtype=np.float32,
                             method=method, backend=backend))
        assert type(got) is np.float32 and got == np.sum(big, dtype=np.float32), method
    x = np.random.default_rng(11).random(N)
    for method in ("exact", "vector"):
        got = compute(cd.sum(chunked(x, chunks), dtype=np.float32, method=method, backend=backend))
        assert type(got) is np.float32 and got == cuatomic.sum(x, dtype=np.float32, method="exact", backend=backend)
    e32 = np.histogram_bin_edges(np.zeros(0, np.float32), 7, (0.1, 0.9))
    f = np.repeat(e32[1:-1], 3).astype(np.float32)  # values on the float32 edges themselves
    f = np.concatenate([f, np.nextafter(f, np.float32(0)), np.zeros(N - 2 * f.size, np.float32)])
    h, e = cd.histogram(chunked(f, chunks), 7, (0.1, 0.9), backend=backend)
    want, edges = np.histogram(f, 7, (0.1, 0.9))
    assert e.dtype == edges.dtype == np.float32 and np.array_equal(e, edges)
    same(compute(h), want)
    wb = (np.arange(N) % 3 == 0)
    h, _ = cd.histogram(chunked(f, chunks), 7, (0.1, 0.9), weights=chunked(wb, chunks), backend=backend)
    same(compute(h), np.histogram(f, 7, (0.1, 0.9), weights=wb)[0])


def test_errors_at_graph_build_time():
    x = da.from_array(np.arange(10.0), chunks=5)
    with pytest.raises(ValueError, match="range"):
        cd.histogram(x, 10)
    with pytest.raises(ValueError, match="chunked"):
        cd.histogram(x, 3, (0, 10), weights=da.from_array(np.ones(10), chunks=3))
    with pytest.raises(ValueError, match="shape"):
        cd.dot(x, da.from_array(np.ones(9), chunks=5))
    with pytest.raises(ValueError, match="chunked"):
        cd.dot(x, da.from_array(np.ones(10), chunks=4))
    with pytest.raises(TypeError, match="dtype"):
        cd.sum(da.from_array(np.array(["a", "b"]), chunks=1))
    with pytest.raises(TypeError):
        cd.sum(da.from_array(np.ones(4, np.complex128), chunks=2))
    for dt in (np.float16, np.longdouble):
        with pytest.raises(TypeError, match="dtype"):
            cd.sum(da.from_array(np.ones(4, dt), chunks=2))
    with pytest.raises(TypeError, match="result"):
        cd.sum(x, dtype=np.complex128)
    with pytest.raises(TypeError):
        cd.bincount(da.from_array(np.arange(4, dtype=np.uint64), chunks=2))  # NumPy's: no safe cast to int64
    with pytest.raises(ValueError, match="unknown method"):
        cd.sum(x, method="fastest")
    with pytest.raises(ValueError, match="unknown reduce op"):
        cd.reduce(x, "subtract")
    with pytest.raises(TypeError):
        cd.reduce(x, "bitwise_xor")  # NumPy's: no bitwise op on floats
    with pytest.raises(ValueError, match="zero-size"):
        cd.min(da.from_array(np.zeros(0), chunks=1))
    with pytest.raises(ValueError, match="order"):
        cd.filter(x, ">", 2, method="atomic")
    with pytest.raises(TypeError):
        cd.bincount(x)
    with pytest.raises(ValueError):
        cd.bincount(da.from_array(np.ones((2, 2), np.int64), chunks=1))
    # negative values are found only when the chunks are read: NumPy's ValueError then
    with pytest.raises(ValueError):
        compute(cd.bincount(da.from_array(np.array([1, -1, 2]), chunks=2)))


@pytest.mark.parametrize("wdt", [np.float64, np.float32, np.int32, np.int64, np.uint64, np.bool_, ">f8"])
@pytest.mark.parametrize("minlength", [0, 3])
def test_bincount_of_empty_input_is_numpy_s_whatever_the_weights(wdt, minlength):
    # NumPy answers empty input with int64 zeros before it reads the weights;
    # the dask graph used to promise (and return) float64.
    want = np.bincount(np.zeros(0, np.int64), weights=np.zeros(0, wdt), minlength=minlength)
    for chunks in ((0,), (0, 0)):
        x = da.from_array(np.zeros(0, np.int64), chunks=(chunks,))
        w = da.from_array(np.zeros(0, wdt), chunks=(chunks,))
        lazy = cd.bincount(x, w, minlength, backend="cpu")
        assert lazy.dtype == want.dtype
        same(compute(lazy), want)
    # the in-memory call agrees
    same(cuatomic.bincount(np.zeros(0, np.int64), np.zeros(0, wdt), minlength, backend="cpu"), want)


@pytest.mark.parametrize("bins,bounds,kind,says", [
    (2.5, (0, 10), TypeError, "`bins` must be an integer"),         # np.histogram's error: 2.5 is not 2 bins
    (np.float64(3.0), (0, 10), TypeError, "`bins` must be an integer"),
    (0, (0, 10), ValueError, "`bins` must be positive"),
    ("auto", (0, 10), ValueError, "bins='auto' estimates them from the data"),
    ("sturges", None, ValueError, "bins='sturges' estimates them from the data"),
    (4, (2**62, 2**63), OverflowError, r"range=\(4611686018427387904, 9223372036854775808\)"),
    (4, (0, "10"), TypeError, "range must be a"),
    (4, (0, np.nan), ValueError, "range"),
], ids=repr)
def test_histogram_bins_and_range_are_checked_as_numpy_checks_them(bins, bounds, kind, says):
    # cuatomic.dask.histogram(x, 2.5, (0, 10)) made 2 bins; 'auto' ended in
    # "invalid literal for int()": the in-memory call's checks, when the graph is built.
    x = da.from_array(np.arange(10.0), chunks=4)
    if not isinstance(bins, str):
        with pytest.raises(kind):
            np.histogram(np.arange(10.0), bins, bounds)
    with pytest.raises(kind, match=says) as info:
        cd.histogram(x, bins, bounds, backend="cpu")
    assert type(info.value) is kind


@pytest.mark.parametrize("dtype,says", [(object, "result dtype object is not supported"),
                                        ("nonsense", r"dtype='nonsense'.*not understood"),
                                        (np.complex128, "result dtype complex128")])
def test_sum_dtype_is_checked_as_the_in_memory_sum_checks_it(dtype, says):
    # dtype=object used to end in "'int' object has no attribute 'dtype'"
    x = da.from_array(np.arange(10), chunks=4)
    for call in (lambda: cd.sum(x, dtype=dtype, backend="cpu"), lambda: cuatomic.sum(np.arange(10), dtype=dtype)):
        with pytest.raises(TypeError, match=says):
            call()


@pytest.mark.parametrize("minlength,kind,says", [(None, TypeError, "use 0 instead of None for minlength"),
                                                 (2.5, TypeError, "minlength must be an integer"),
                                                 (True, TypeError, "minlength must be an integer"),
                                                 (-1, ValueError, "'minlength' must not be negative")])
def test_bincount_minlength_is_checked_as_numpy_checks_it(minlength, kind, says):
    with pytest.raises(kind):
        np.bincount([1], minlength=minlength)
    for call in (lambda: cd.bincount(da.arange(4, chunks=2), minlength=minlength, backend="cpu"),
                 lambda: cuatomic.bincount(np.arange(4), minlength=minlength, backend="cpu")):
        with pytest.raises(kind, match=says):
            call()


@pytest.mark.parametrize("build,kind,says", [
    # each used to build a graph that failed only when the chunks ran
    (lambda x: cd.sum(x, backend="gpu"), ValueError, r"^unknown backend 'gpu'"),
    (lambda x: cd.histogram(x, 3, (0, 10), backend=["cpu"]), ValueError, r"^unknown backend \['cpu'\]"),
    (lambda x: cd.filter(x, "<", "a"), TypeError, r"^value 'a' cannot be compared with int64 elements"),
    (lambda x: cd.filter(x, "<", [1, 2]), ValueError, r"^value must be a scalar"),
    (lambda x: cd.filter(x, ["<"], 1), TypeError, r"^op must be a string"),
    (lambda x: cd.reduce(x, "add", dtype=object), TypeError, r"result dtype object is not supported"),
    (lambda x: cd.reduce(x, np.maximum, dtype="nonsense"), TypeError, r"dtype='nonsense'"),
    (lambda x: cd.reduce(x, np.subtract), ValueError, r"^unknown reduce op"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_arguments_the_chunks_would_refuse_are_refused_when_the_graph_is_built(build, kind, says):
    x = da.from_array(np.arange(10), chunks=4)
    with pytest.raises(kind, match=says) as found:
        build(x)
    assert type(found.value) is kind


# ------------------------------------------------------------ at, add_at

AT_OPS = ["add", "subtract", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"]
AT_DTYPES = [np.float32, np.float64, np.int32, np.int64]
UINT = {4: np.uint32, 8: np.uint64}


def bits(x):
    return np.asarray(x).view(UINT[np.asarray(x).dtype.itemsize])


def same_bits(got, want):
    assert got.dtype == want.dtype and np.array_equal(bits(got), bits(want)), (got, want)


def at_data(dtype, op, n, m, seed):
    """(a, indices, b): n updates into m elements, many to each, of data no
    rounding order or wrong op gets right by chance."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    idx = rng.integers(-m, m, n)
    if dt.kind == "f":
        a = rng.standard_normal(m).astype(dt)
        if op == "multiply":  # powers of two: every product exact, so any order gives these bits
            b = np.where(rng.random(n) < 0.5, -1.0, 1.0) * 2.0 ** rng.integers(-3, 4, n)
        else:  # values over many decades, and a huge one into each element first that the last cancels
            b = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n) / (1e6 if dt.itemsize == 4 else 1)
            idx[:m], idx[-m:] = np.arange(m), np.arange(m)
            b[:m] = rng.standard_normal(m) * (1e15 if dt.itemsize == 4 else 1e20)
            b[-m:] = -b[:m]
        return a, idx, b.astype(dt)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, m, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    if op == "multiply":
        b |= 1  # odd: no product becomes 0
    return a, idx, b


def refusal(call):
    """(the exception type, its message) that call() raises, or None."""
    try:
        call()
    except (TypeError, ValueError, IndexError) as e:
        return type(e), str(e)
    return None


def whole(x):
    return np.asarray(x) if isinstance(x, da.Array) else x


def in_memory(a0, idx, b, op, **kw):
    """cuatomic.at's answer on the whole data, or (its exception type, message)."""
    a = a0.copy()
    return refusal(lambda: cuatomic.at(a, whole(idx), whole(b), op, **kw)) or a


def chunk_by_chunk(a0, idx, b, op, chunks):
    """What a dask at that rounds each chunk's sum into `a` would give."""
    a, start = a0.copy(), 0
    for c in chunks:
        cuatomic.at(a, idx[start:start + c], b[start:start + c], op, backend="cpu")
        start += c
    return a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", AT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", AT_OPS)
def test_at_is_the_in_memory_call_bit_for_bit(backend, dtype, op, chunks):
    a0, idx, b = at_data(dtype, op, N, 23, seed=AT_OPS.index(op))
    want = in_memory(a0, idx, b, op, backend=backend)
    di, db = chunked(idx, chunks), chunked(b, chunks)
    if isinstance(want, tuple):  # bitwise ops on floats: the in-memory call's TypeError, word for word
        with pytest.raises(want[0]) as info:
            cd.at(a0.copy(), di, db, op, backend=backend)
        assert str(info.value) == want[1]
        return
    a = a0.copy()
    assert cd.at(a, di, db, op, backend=backend) is None
    same_bits(a, want)
    if np.dtype(dtype).kind == "i" or op == "multiply":
        ref = a0.copy()
        getattr(np, op).at(ref, idx, b)
        same_bits(a, ref)
    if np.dtype(dtype).kind == "f" and op in ("add", "subtract") and len(chunks) > 1:
        # the data is hard: rounding each chunk's sum into `a` gives other bits
        assert not np.array_equal(bits(chunk_by_chunk(a0, idx, b, op, chunks)), bits(want))


def adversarial_chunks(dt):
    """Updates of 12 elements as a list of chunks of (index, value), each
    case spread over chunks the way that breaks a wrong combination."""
    p = np.finfo(dt).nmant + 1
    huge = float(np.finfo(dt).max) / 1.5
    many = [1.0, 2.0 ** -(p + 7), 2.0 ** -(2 * p + 7), 2.0 ** -(2 * p + 42)]  # a chunk sum of 4 float terms
    nan, inf = float("nan"), float("inf")
    return [
        [(0, 1e30), (0, 1e-20), (1, many[0]), (1, many[1]), (1, many[2]), (1, many[3]), (2, -0.0), (3, inf),
         (4, nan), (5, inf), (6, huge), (6, huge), (7, -0.0), (8, 0.0), (9, 1.0), (10, -inf)],
        [(0, 3.3e-17), (2, -0.0), (5, 2.5), (7, 0.0), (11, -0.0)],
        [(0, -1e30), (1, -1.0), (2, -0.0), (3, -inf), (4, 1.0), (5, inf), (6, -huge), (9, -1.0), (10, 5.0)],
    ]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["add", "subtract"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_at_float_sums_exact_across_chunks(backend, op, dtype):
    dt = np.dtype(dtype)
    parts = adversarial_chunks(dt)
    sizes = tuple(len(c) for c in parts)
    idx = np.array([i for c in parts for i, _ in c])
    with np.errstate(over="ignore"):
        b = np.array([v for c in parts for _, v in c], dt)
    a0 = np.zeros(12, dt)
    a0[[2, 7, 8, 11]] = -0.0  # starts of -0.0: zero sums keep -0.0 only where every update was -0.0 too
    want = in_memory(a0, idx, b, op, backend=backend)
    sign = 1 if op == "add" else -1
    p = np.finfo(dt).nmant + 1
    with np.errstate(invalid="ignore"):
        expected = {0: sign * (dt.type(3.3e-17) + dt.type(1e-20)),     # 1e30 and -1e30 in other chunks cancel
                    1: sign * (2.0 ** -(p + 7) + 2.0 ** -(2 * p + 6)),  # only with the 4th term: else a tie to even
                    3: np.nan, 4: np.nan, 5: sign * np.inf, 6: sign * float(np.finfo(dt).max) / 1.5,
                    9: 0.0, 10: -sign * np.inf}
    for e, v in expected.items():
        assert want[e] == dt.type(v) or (np.isnan(v) and np.isnan(want[e])), (e, want[e], v)
    # without the chunk's 4th term element 1 is a tie that rounds to even, elsewhere
    assert dt.type(2.0 ** -(p + 7)) + dt.type(2.0 ** -(2 * p + 7)) == dt.type(2.0 ** -(p + 7))
    assert list(np.signbit(want[[2, 7, 8, 9, 11]])) == [op == "add", False, op == "subtract", False, op == "add"]
    for name, chunks in {"designed": sizes, "one": (sum(sizes),), "ones": (1,) * sum(sizes),
                         "ragged": (0, 4, 9, 0, sum(sizes) - 13)}.items():
        a = a0.copy()
        cd.at(a, chunked(idx, chunks), chunked(b, chunks), op, backend=backend)
        same_bits(a, want)
        for method in [r.name for r in _backend.table("at", backend) if r.has(_C.F_EXACT)]:
            a = a0.copy()
            cd.at(a, chunked(idx, chunks), chunked(b, chunks), op, method=method, backend=backend)
            same_bits(a, want)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = chunk_by_chunk(a0, idx, b, op, sizes)
    assert naive[0] != want[0] and naive[6] != want[6]  # rounding per chunk loses these
    # rows: a column of -0.0 beside them stays -0.0 (add) while the other needs more terms
    rows0, rows = np.stack([np.full(12, -0.0, dt), a0], axis=1), np.stack([np.full(b.size, -0.0, dt), b], axis=1)
    want = in_memory(rows0, idx, rows, op, backend=backend)
    assert list(np.signbit(want[:, 0])) == [op == "add"] * 12
    a = rows0.copy()
    cd.at(a, chunked(idx, sizes), da.from_array(rows, chunks=(sizes, 1)), op, backend=backend)
    same_bits(a, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,op,method", [(np.float64, "add", "auto"), (np.float32, "subtract", "exact"),
                                             (np.int64, "add", "auto"), (np.int32, "maximum", "atomic"),
                                             (np.float64, "multiply", "auto")])
def test_at_index_out_of_range_in_the_last_chunk_writes_nothing(backend, dtype, op, method):
    a0, idx, b = at_data(dtype, op, 1000, 50, seed=3)
    for bad in (50, -51):
        idx[-2] = bad
        a = a0.copy()
        want = in_memory(a0, idx, b, op, method=method, backend=backend)
        assert want[0] is IndexError
        with pytest.raises(IndexError) as info:
            cd.at(a, chunked(idx, (100,) * 10), chunked(b, (100,) * 10), op, method=method, backend=backend)
        assert str(info.value) == want[1]  # "index 50 is out of bounds for axis 0 with size 50 (indices[998])"
        same_bits(a, a0)


def test_at_refuses_what_the_in_memory_call_refuses():
    idx = np.array([0, 2, 2, 1])
    x, xi = np.arange(4.0), np.arange(4)
    ro = np.zeros(3)
    ro.flags.writeable = False
    cases = [  # (a, indices, b, op, keywords)
        (np.zeros(3, np.int64), idx, x, "add", {}),
        (np.zeros(3, np.float32), idx, x, "add", {}),
        (np.zeros(3, np.float32), idx, da.from_array(x, chunks=2), "add", {}),
        (np.zeros(3, bool), idx, np.ones(4, bool), "subtract", {}),
        (np.zeros(3), idx, x, "bitwise_and", {}),
        (np.zeros(3), idx, x, "divide", {}),
        (np.zeros(3), idx, x, np.divide, {}),
        (np.zeros(3), idx, x, 3, {}),
        (np.zeros(3), idx, None, "add", {}),
        (ro, idx, x, "add", {}),
        ([0.0, 1.0, 2.0], idx, x, "add", {}),
        (np.array(1.0), idx, x, "add", {}),
        (np.zeros(3), idx, x, "add", {"method": "nope"}),
        (np.zeros(3), idx, x, "add", {"backend": "gpu"}),
        (np.zeros(3, np.int32), idx, xi.astype(np.int32), "add", {"method": "exact"}),
        (np.zeros(3), idx, x, "multiply", {"method": "exact_private"}),
        (np.zeros(3), idx.astype(bool), x, "add", {}),
        (np.zeros(3), da.from_array(idx.astype(bool), chunks=2), x, "add", {}),
        (np.zeros(3), idx.astype(float), x, "add", {}),
        (np.zeros(3), da.from_array(idx.astype(float), chunks=2), x, "add", {}),
        (np.zeros(3), idx, np.ones(5), "add", {}),
        (np.zeros(3), idx, da.ones(5, chunks=2), "add", {}),
        (np.zeros(3), idx, da.from_array(np.array(["a"] * 4), chunks=2), "add", {}),
        (np.zeros(3, np.uint8), idx, da.from_array(np.array([1, 2, -1, 3]), chunks=2), "minimum", {}),  # the values
    ]
    for a, ix, b, op, kw in cases:
        kw = {"backend": "cpu", **kw}
        start = np.array(a, copy=True)
        want = refusal(lambda: cuatomic.at(a, whole(ix), whole(b), op, **kw))
        assert want is not None, (a, ix, b, op, kw)
        got = refusal(lambda: cd.at(a, chunked(ix, (2, 2)) if isinstance(ix, np.ndarray) else ix, b, op, **kw))
        assert got == want
        assert np.array_equal(np.asarray(a), start)
    # what only dask arrays can get wrong
    for ix, b, kind, says in [(da.zeros((2, 2), dtype=int, chunks=1), 1.0, ValueError, "1-D indices"),
                              (([0], [1]), 1.0, TypeError, "tuple"),
                              (da.from_array(idx, chunks=2), da.from_array(x, chunks=3), ValueError, "rechunk"),
                              (cd.filter(da.from_array(idx, chunks=2), "<", 2), 1.0, ValueError, "chunk sizes")]:
        with pytest.raises(kind, match=says):
            cd.at(np.zeros(3), ix, b, backend="cpu")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_at_rows_of_a_2d_array(backend, dtype):
    rng = np.random.default_rng(12)
    n, m = 300, 17
    idx = rng.integers(-m, m, n)
    full = (rng.standard_normal((n, 3)) * 10.0 ** rng.integers(-8, 8, (n, 1))).astype(dtype)
    chunks = (1, 99, 0, 150, 50)
    forms = {"every value": da.from_array(full, chunks=(chunks, 2)),
             "one row, dask": da.from_array(full[0], chunks=2),
             "one row, host": full[0],
             "one value per update": da.from_array(full[:, :1], chunks=(chunks, 1)),
             "one value": dtype(3)}
    for what, b in forms.items():
        for a0 in (np.arange(m * 3, dtype=dtype).reshape(m, 3), np.zeros((m, 6), dtype)[:, ::2]):
            a = a0.copy() if what != "every value" else a0  # (a strided view: written back)
            before = a0.copy()
            want = in_memory(before, idx, b, "add", backend=backend)
            cd.at(a, chunked(idx, chunks), b, backend=backend)
            same_bits(a, want)
    cd.add_at(a := np.zeros((m, 3), dtype), chunked(idx, chunks), forms["every value"], backend=backend)
    same_bits(a, in_memory(np.zeros((m, 3), dtype), idx, full, "add", backend=backend))


def test_at_named_rungs_default_backend_and_wrapped_host_arrays():
    rng = np.random.default_rng(13)
    idx = rng.integers(0, 40, N)
    b = rng.integers(-1000, 1000, N).astype(np.float64)  # small integers: exact in any order
    want = in_memory(np.zeros(40), idx, b, "add", backend="cpu")
    for method, _, _ in cuatomic.methods("at", "cpu"):
        a = np.zeros(40)
        cd.at(a, chunked(idx, CHUNKINGS["ragged"]), chunked(b, CHUNKINGS["ragged"]), method=method)
        same_bits(a, want)
    a = np.zeros(40)
    cd.add_at(a, idx, b)  # host arrays, taken as one chunk
    same_bits(a, want)
    a = np.zeros(40, ">f8")
    cd.add_at(a, list(idx), chunked(b, CHUNKINGS["ragged"]), backend="cpu")  # the indices take b's chunks
    assert a.dtype == np.dtype(">f8") and np.array_equal(a, want)
    a = np.zeros(40, np.int8)
    cd.at(a, chunked(idx, CHUNKINGS["even"]), 300, backend="cpu")  # a Python int wraps, as in ufunc.at
    np.add.at(ref := np.zeros(40, np.int8), idx, 300)
    assert a.dtype == np.int8 and np.array_equal(a, ref)


# ------------------------------------------------------------ dask.distributed

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_local_cluster_of_two_processes(client):
    x = adversarial(N, 8)
    i = np.random.default_rng(9).integers(0, 200, N).astype(np.int32)
    for chunks in CHUNKINGS.values():
        dx, di = chunked(x, chunks), chunked(i, chunks)
        got = client.compute(cd.sum(dx, method="exact", backend="cpu")).result()
        assert got == math.fsum(x)
        same(client.compute(cd.sum(di, backend="cpu")).result(), np.sum(i))
        same(client.compute(cd.histogram(di, 20, (0, 200), backend="cpu")[0]).result(),
             np.histogram(i, 20, (0, 200))[0])
        same(client.compute(cd.bincount(di, backend="cpu")).result(), np.bincount(i))
        same(client.compute(cd.filter(di, "<", 30, backend="cpu")).result(), i[i < 30])
        same(client.compute(cd.max(dx, backend="cpu")).result(), np.max(x))
        a = np.zeros(200)
        cd.at(a, di, dx, backend="cpu")  # computed by the client: the chunks' terms cross processes
        same_bits(a, in_memory(np.zeros(200), i, x, "add", backend="cpu"))
    # both workers ran chunk tasks
    who = client.run(lambda dask_worker: len(dask_worker.state.log))
    assert len(who) == 2 and all(n > 0 for n in who.values()), who


def test_a_worker_killed_midway_is_recomputed(client):
    x = adversarial(200_000, 10)
    slow = chunked(x, (2_000,) * 100).map_blocks(lambda b: (time.sleep(0.05), b)[1], dtype=x.dtype)
    future = client.compute(cd.sum(slow, method="exact", backend="cpu"))
    pids = client.run(os.getpid)
    time.sleep(1.0)
    assert not future.done(), "the computation ended before the worker could be killed: make it slower"
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    assert future.result(timeout=120) == math.fsum(x)
    deadline = time.time() + 60
    while len(client.scheduler_info()["workers"]) < 2 and time.time() < deadline:
        time.sleep(0.2)  # the nanny restarts it
    assert len(client.scheduler_info()["workers"]) == 2
    assert victim not in client.run(os.getpid).values()


def test_graph_layers_do_not_grow_with_the_chunks():
    """Issue 25: a delayed call per chunk made one graph layer per chunk,
    which dask merged and ordered in time growing faster than the chunks
    (10,007 one-element chunks: minutes to build and run). Every function
    adds a fixed number of layers to its inputs', and is still right."""
    n = 1_000
    x = np.arange(n, dtype=np.int64) % 100
    w = np.linspace(0.0, 1.0, n)
    a, wa = da.from_array(x, chunks=1), da.from_array(w, chunks=1)
    calls = [(cd.sum(a, method="atomic", backend="cpu"), x.sum()),
             (cd.sum(wa, method="exact", backend="cpu"), math.fsum(w)),
             (cd.dot(a, a, method="partial", backend="cpu"), np.dot(x, x)),
             (cd.reduce(a, "maximum", method="atomic", backend="cpu"), x.max()),
             (cd.histogram(a, 100, (0, 100), method="global", backend="cpu")[0], np.histogram(x, 100, (0, 100))[0]),
             (cd.histogram(a, 100, (0, 100), weights=wa, backend="cpu")[0],
              np.histogram(x, 100, (0, 100), weights=w)[0]),
             (cd.bincount(a, backend="cpu"), np.bincount(x)),
             (cd.filter(a, ">", 90, backend="cpu"), x[x > 90])]
    for got, want in calls:
        # the inputs' layers (one each), the chunk tasks and their combination, the result array
        assert len(got.__dask_graph__().layers) <= 4, got.__dask_graph__().layers.keys()
        assert np.allclose(got.compute(), want, rtol=1e-12, atol=0), (got, want)
