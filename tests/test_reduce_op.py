"""reduce, min and max against NumPy: every backend x rung (from the tables)
x ufunc x dtype, on data chosen so that a fold that drops, repeats or
mis-orders elements, or answers a constant, gives another answer."""
import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import BACKENDS, CUDA, DTYPES, FLOAT_DTYPES, assert_float_close, host, is_wide, placed, \
    requires_cuda, where_params

import cuatomic
from cuatomic import _C, _backend

OPS = ["add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"]
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
SIZES = [0, 1, 31, 32, 33, 255, 256, 257, 2000, (1 << 20) + 3]
EXACT_PRODUCT_MAX = 4096  # floats products up to this many terms are checked against the exact (Fraction) one


def op_dtypes():
    """(op, dtype) for every loop NumPy has: no bitwise op on floats."""
    return [pytest.param(op, dt, id=f"{op}-{np.dtype(dt).name}") for op in OPS for dt in DTYPES
            if not (op in BITWISE and np.dtype(dt).kind == "f")]


@functools.lru_cache(maxsize=None)
def data(op, dtype, n, seed=0):
    """Test data for `op` over `n` elements of `dtype` (read-only, cached:
    every rung reads the same array). Minimum and maximum have a unique
    extreme away from the type's limits, planted at a random place; and/or
    fold a fixed mask with one planted bit; products of integers are odd
    (never 0 modulo 2^64); float products stay near 1 (exactly checkable
    up to EXACT_PRODUCT_MAX terms, powers of two beyond); bools planted
    with one False (True) on odd sizes."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed + 7919 * n + 131 * dt.num + OPS.index(op))
    x = _data(op, dt, n, rng) if n else np.empty(0, dt)
    x.flags.writeable = False
    return x


def _data(op, dt, n, rng):
    where = int(rng.integers(n))
    if dt.kind == "b":
        if op in ("add", "bitwise_xor"):
            return rng.random(n) < 0.5
        x = np.full(n, op in ("minimum", "bitwise_and", "multiply"))
        if n % 2:
            x[where] = not x[where]
        return x
    if dt.kind == "f":
        if op == "multiply" and n <= EXACT_PRODUCT_MAX:
            return (1 + rng.standard_normal(n) / 16).astype(dt)
        if op == "multiply":  # +-1 and a few 2s and halves: the product is a power of two, no rounding
            return rng.choice(np.array([1, -1, 2, 0.5], dt), size=n, p=[0.4996, 0.4996, 0.0004, 0.0004])
        return rng.standard_normal(n).astype(dt) * dt.type(100)
    info = np.iinfo(dt)
    bits = np.dtype(f"u{dt.itemsize}")
    if op == "multiply":
        return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True) | dt.type(1)
    if op in ("minimum", "maximum"):
        lo, hi = info.min // 2, info.max // 2
        x = rng.integers(lo + 1, hi, n, dtype=dt)
        x[where] = lo if op == "minimum" else hi
        return x
    raw = rng.integers(0, np.iinfo(bits).max, n, dtype=bits, endpoint=True)
    mask = bits.type(rng.integers(1, np.iinfo(bits).max, dtype=bits, endpoint=True) | bits.type(1))
    if op == "bitwise_and":
        raw |= mask
        raw[where] &= ~bits.type(1)
    elif op == "bitwise_or":
        raw &= mask & ~bits.type(1)
        raw[where] |= bits.type(1)
    return raw.view(dt)


def numpy_reduce(a, op, dtype=None):
    with np.errstate(all="ignore"):  # inf - inf, products past the range: the answer is the point
        return getattr(np, op).reduce(np.asarray(a).ravel(), dtype=dtype)


@functools.lru_cache(maxsize=None)
def _exact_product_cached(key, values):
    p = Fraction(1)
    for v in values:
        p *= Fraction(v)
    return float(p)


def exact_product(x):
    """The exact product of float values, rounded once to float64."""
    x = np.asarray(x, np.float64).ravel()
    return _exact_product_cached(x.tobytes(), tuple(x.tolist()))


def assert_same(got, ref):
    """Bit for bit: the same type and value; a NaN where NumPy's is NaN; a
    zero of NumPy's sign."""
    assert type(got) is type(ref), (type(got), type(ref))
    if ref.dtype.kind == "f":
        assert np.isnan(got) == np.isnan(ref), (got, ref)
        if np.isnan(ref):
            return
        assert np.signbit(got) == np.signbit(ref), (got, ref)
    assert got == ref, (got, ref)


def check(got, a, op, *, dtype=None, wide=True, exact=None):
    """got is NumPy's answer: exactly, or for a float sum or product as
    close to the exact answer as cuatomic promises (twice NumPy's error or
    two ulps; the tutorial's rungs also by their own order's error).
    `exact`: a float product's exact value, when the caller knows it."""
    ref = numpy_reduce(a, op, dtype)
    if ref.dtype.kind != "f" or op not in ("add", "multiply") or not np.isfinite(ref):
        assert_same(got, ref)
        return
    assert type(got) is type(ref), (type(got), type(ref))
    x = np.asarray(a, dtype=ref.dtype).ravel().astype(np.float64)
    if op == "add":  # every rung adds in float64: a float32 result is held to the strict bound
        assert_float_close(got, math.fsum(x), ref, ref.dtype, wide=wide or ref.dtype == np.float32, n=x.size,
                           abs_sum=float(np.abs(x).sum()))
        return
    if exact is None and x.size > EXACT_PRODUCT_MAX:  # powers of two: every rung is exact
        assert_same(got, ref)
        return
    exact = exact_product(x) if exact is None else exact
    bound = max(2 * abs(float(ref) - exact), 2 * float(np.spacing(np.abs(ref.dtype.type(exact)))))
    if not wide:  # the tutorial's rungs multiply in float64, one rounding per element
        bound = max(bound, x.size * float(np.finfo(np.float64).eps) * abs(exact))
    assert bound < abs(exact)
    assert abs(float(got) - exact) <= bound, f"{got} vs exact {exact} (NumPy {ref}, bound {bound})"


def run(a, op, backend, method, where, **kw):
    return cuatomic.reduce(placed(a, backend, where), op, method=method, backend=backend, **kw)


# ------------------------------------------------------------ the main grid

@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("op,dtype", op_dtypes())
@pytest.mark.parametrize("n", SIZES)
def test_reduce_matches_numpy(backend, method, where, op, dtype, n):
    a = data(op, dtype, n)
    if n == 0 and op in ("minimum", "maximum"):
        with pytest.raises(ValueError, match=f"zero-size array to reduction operation {op} which has no identity"):
            run(a, op, backend, method, where)
        return
    check(run(a, op, backend, method, where), a, op, wide=is_wide("reduce", backend, method))


@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_min_and_max_are_numpys(backend, method, where, dtype):
    for n in (1, 257, 100_003):
        for fn, ref, op in ((cuatomic.min, np.min, "minimum"), (cuatomic.max, np.max, "maximum")):
            a = data(op, dtype, n, seed=1)
            assert_same(fn(placed(a, backend, where), method=method, backend=backend), ref(a))
    for fn in (cuatomic.min, cuatomic.max):
        with pytest.raises(ValueError, match="zero-size array"):
            fn(placed(np.empty(0, dtype), backend, where), method=method, backend=backend)


@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("op,dtype", op_dtypes())
def test_one_value_everywhere(backend, method, where, op, dtype):
    """No contention pattern, no data-dependent shortcut: 100_003 copies of
    one value (-3 for signed types, so products and sums wrap)."""
    dt = np.dtype(dtype)
    n = 100_003
    value = True if dt.kind == "b" else (dt.type(-3) if dt.kind in "if" else dt.type(3))
    exact = None
    if op == "multiply" and dt.kind == "f":  # (-(1 + 2^-23))^n: NumPy's float32 product is 7e-5 off
        value = dt.type(-1.0000001)
        exact = float(Fraction(float(value)) ** n)
    a = np.full(n, value, dt)
    check(run(a, op, backend, method, where), a, op, wide=is_wide("reduce", backend, method), exact=exact)


# ------------------------------------------------------ float special values

@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_nan_propagates_wherever_it_is(backend, method, where, dtype):
    for n in (1, 33, 2000, 100_003):
        base = data("add", dtype, n)
        for at in sorted({0, n // 2, n - 1}):
            a = base.copy()
            a[at] = np.nan
            for op in ("add", "multiply", "minimum", "maximum"):
                got = run(a, op, backend, method, where)
                assert np.isnan(got) and np.isnan(numpy_reduce(a, op)), (op, n, at, got)
        for op in ("minimum", "maximum"):  # and no NaN without one
            assert_same(run(base, op, backend, method, where), numpy_reduce(base, op))


@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_infinities(backend, method, where, dtype):
    inf = np.inf
    cases = [([1.0, inf, 2.0], "add"), ([inf, -inf], "add"), ([-inf, 5.0, inf], "minimum"),
             ([-inf, 5.0, inf], "maximum"), ([inf, 0.0], "multiply"), ([-inf, 2.0, 3.0], "multiply"),
             ([-inf, -inf], "maximum"), ([inf, inf], "minimum"), ([np.nan, -inf], "minimum"),
             ([inf, np.nan], "maximum")]
    for values, op in cases:
        a = np.array(values * 11, dtype)  # 22 or 33 elements: more than one thread's share
        assert_same(run(a, op, backend, method, where), numpy_reduce(a, op))


@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_signed_zeros(backend, method, where, dtype):
    """Where NumPy's sign of a zero is defined, it is NumPy's (minimum and
    maximum of zeros of one sign, any sum, a product's sign). Where it
    depends on the zeros' positions (minimum/maximum of +0.0 and -0.0),
    cuatomic answers IEEE 754-2019's: -0.0 is the minimum, +0.0 the maximum."""
    for n in (1, 33, 2000, 100_003):
        for sign in (1.0, -1.0):
            zeros = np.full(n, sign * 0.0, dtype)
            for op in ("add", "minimum", "maximum", "multiply"):
                assert_same(run(zeros, op, backend, method, where), numpy_reduce(zeros, op))
        if n > 1:
            for at in sorted({0, n // 2, n - 1}):
                mixed = np.zeros(n, dtype)
                mixed[at] = -0.0
                for rest, op, want in ((mixed, "minimum", True), (mixed, "maximum", False),
                                       (-mixed, "minimum", True), (-mixed, "maximum", False)):
                    got = run(rest, op, backend, method, where)
                    assert got == 0 and bool(np.signbit(got)) == want, (op, n, at, got)
                    assert numpy_reduce(rest, op) == 0  # NumPy's is a zero too, of either sign
    a = np.array([-0.0, 2.0, 3.0] * 11, dtype)
    assert_same(run(a, "multiply", backend, method, where), numpy_reduce(a, "multiply"))  # -0.0


# ------------------------------------------------------------ empty inputs

@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("op,dtype", op_dtypes())
def test_empty_input_is_the_identity_or_numpys_error(backend, method, where, op, dtype):
    a = np.empty((0, 3), dtype)
    if op in ("minimum", "maximum"):
        with pytest.raises(ValueError, match=f"zero-size array to reduction operation {op}"):
            run(a, op, backend, method, where)
        return
    assert_same(run(a, op, backend, method, where), numpy_reduce(a, op))


# ------------------------------------------------------ launch configuration

@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("blocks,threads", [(1, 1), (3, 37), (7, 64), (5, 33), (64, 1024), (1000, 32)])
def test_odd_launch_configurations(backend, method, where, blocks, threads):
    for op, dtype in (("add", np.int64), ("maximum", np.int8), ("minimum", np.float32), ("bitwise_xor", np.uint16),
                      ("add", np.float64), ("multiply", np.int32)):
        a = data(op, dtype, 50_001)
        got = run(a, op, backend, method, where, blocks=blocks, threads=threads)
        check(got, a, op, wide=is_wide("reduce", backend, method))
        ran = cuatomic.last_launch()  # (the CPU's vector rung reports its SIMD lanes as its threads)
        assert ran["method"] == method and 1 <= ran["blocks"] <= blocks and ran["threads"] >= 1


@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
def test_a_forced_method_is_the_one_that_ran(backend, method, where):
    a = data("maximum", np.int32, 2000)
    assert run(a, "maximum", backend, method, where) == a.max()
    ran = cuatomic.last_launch()
    assert (ran["op"], ran["backend"], ran["method"], ran["chunks"]) == ("reduce", backend, method, 1)


@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
def test_flagged_rungs_give_the_same_bits_every_call(backend, method, where):
    if not _backend.rung("reduce", backend, method).has(_C.F_DETERMINISTIC):
        pytest.skip("the rung does not promise a fixed order")
    for op, dtype in (("add", np.float32), ("add", np.float64), ("multiply", np.float64)):
        a = data(op, dtype, 300_007)
        first = run(a, op, backend, method, where)
        for _ in range(7):
            assert run(a, op, backend, method, where).tobytes() == first.tobytes()


# ------------------------------------------------------------ accuracy

@pytest.mark.parametrize("backend,method,where", where_params("reduce"))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_float_sums_hard_cases(backend, method, where, dtype):
    """Cancellation and a small value repeated, for the rungs that promise
    NumPy's accuracy or better: held to twice NumPy's error (a float32 result
    of any rung: all of them add in float64)."""
    if not is_wide("reduce", backend, method) and dtype != np.float32:
        pytest.skip("the tutorial's rungs add float64 in the order their atomics allow: no promise")
    rng = np.random.default_rng(5)
    big = rng.standard_normal(20_000) * 1e6
    cases = [np.full(1_000_000, 0.1, dtype),
             np.concatenate([big, -big, rng.standard_normal(20_000)]).astype(dtype),
             (rng.standard_normal(300_001) * np.exp(rng.uniform(-20, 20, 300_001))).astype(dtype)]
    for a in cases:
        check(run(a, "add", backend, method, where), a, "add", wide=is_wide("reduce", backend, method))


def test_the_accuracy_rung_is_what_auto_runs_for_float_folds():
    for be in BACKENDS:
        for op in ("add", "multiply"):
            choice = cuatomic.explain("reduce", np.ones(1000, np.float32), op, backend=be)
            assert _backend.rung("reduce", be, choice.method).has(_C.F_WIDE | _C.F_DETERMINISTIC)
            cuatomic.reduce(np.ones(1000, np.float32), op, backend=be)
            assert cuatomic.last_launch()["method"] == choice.method
        choice = cuatomic.explain("reduce", np.ones(1000, np.int8), "maximum", backend=be)
        assert choice.facts == {"n": 1000, "dtype": "int8", "op": "maximum"} and choice.reason


# -------------------------------------------------------- dtype= and input

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,src,dtype", [
    ("add", np.int8, np.int16), ("add", np.uint8, np.int8), ("add", np.float64, np.float32),
    ("add", np.float32, np.float64), ("add", np.int32, np.float64), ("add", np.float64, np.int64),
    ("add", np.bool_, np.int8), ("add", np.int32, np.bool_), ("add", np.bool_, np.bool_),
    ("multiply", np.int16, np.uint8), ("multiply", np.float64, np.float32), ("multiply", np.int8, np.bool_),
    ("minimum", np.int8, np.uint8), ("minimum", np.int8, np.int64), ("minimum", np.float32, np.float64),
    ("maximum", np.uint16, np.int8), ("maximum", np.int32, np.float32), ("maximum", np.bool_, np.int8),
    ("bitwise_and", np.int8, np.uint64), ("bitwise_or", np.int64, np.int8), ("bitwise_xor", np.uint8, np.int32),
    ("bitwise_and", np.float64, np.int16), ("bitwise_or", np.int32, np.bool_),
])
def test_dtype_argument_is_numpys(backend, op, src, dtype):
    a = data(op, src, 10_007)
    if np.dtype(src).kind == "f" and np.dtype(dtype).kind in "iub":
        a = (a / 7).round()  # float -> int casts stay defined
    if op == "multiply" and np.dtype(src).kind == "f":
        a = data(op, src, 2000)
    check(cuatomic.reduce(a, op, dtype=dtype, backend=backend), a, op, dtype=dtype)


@requires_cuda
def test_device_input_converted_only_when_it_must_be():
    d = cuatomic.to_device(data("add", np.int8, 5000))
    x = host(d)
    check(cuatomic.reduce(d, "add", dtype=np.int16, backend="cuda"), x, "add", dtype=np.int16)  # the low bits
    check(cuatomic.reduce(d, "minimum", dtype=np.int64, backend="cuda"), x, "minimum", dtype=np.int64)
    check(cuatomic.reduce(d, "bitwise_xor", dtype=np.uint8, backend="cuda"), x, "bitwise_xor", dtype=np.uint8)
    for op, dtype in (("add", np.float32), ("minimum", np.uint8), ("bitwise_and", np.bool_)):
        with pytest.raises(TypeError, match="to_device"):
            cuatomic.reduce(d, op, dtype=dtype, backend="cuda")


@pytest.mark.parametrize("backend", BACKENDS)
def test_layouts_and_array_likes(backend):
    base = data("bitwise_xor", np.int32, 60 * 40).reshape(60, 40)
    swapped = base.astype(base.dtype.newbyteorder())
    for a in (base, np.asfortranarray(base), base[::3, 1::2], base.T, swapped, base[5]):
        for op in OPS:
            assert_same(cuatomic.reduce(a, op, backend=backend), numpy_reduce(a, op))
    assert_same(cuatomic.reduce([1, 5, 3], "maximum", backend=backend), numpy_reduce([1, 5, 3], "maximum"))
    assert_same(cuatomic.reduce(np.float64(2.5), "multiply", backend=backend), np.float64(2.5))
    assert_same(cuatomic.reduce(np.arange(10), np.bitwise_or, backend=backend), np.bitwise_or.reduce(np.arange(10)))


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_are_numpys_and_come_before_anything_runs(backend):
    x = np.arange(10, dtype=np.int32)
    cuatomic.sum(x, backend="cpu")
    before = cuatomic.last_launch()
    floats = np.ones(4, np.float32)
    bad = [
        (ValueError, "expected one of add, multiply, minimum, maximum, bitwise_and, bitwise_or, bitwise_xor",
         lambda: cuatomic.reduce(x, "subtract", backend=backend)),
        (ValueError, "unknown reduce op", lambda: cuatomic.reduce(x, np.subtract, backend=backend)),
        (ValueError, "unknown reduce op", lambda: cuatomic.reduce(x, 3, backend=backend)),
        (TypeError, "bitwise_and", lambda: cuatomic.reduce(floats, "bitwise_and", backend=backend)),
        (TypeError, "bitwise_xor", lambda: cuatomic.reduce(floats, np.bitwise_xor, backend=backend)),
        (TypeError, "bitwise_or", lambda: cuatomic.reduce(x, "bitwise_or", dtype=np.float64, backend=backend)),
        (TypeError, "unsupported dtype complex128", lambda: cuatomic.reduce(x.astype(complex), "add", backend=backend)),
        (TypeError, "float16", lambda: cuatomic.reduce(x.astype(np.float16), "maximum", backend=backend)),
        (TypeError, "object", lambda: cuatomic.reduce(x, "add", dtype=object, backend=backend)),
        (TypeError, "float16", lambda: cuatomic.reduce(x, "add", dtype=np.float16, backend=backend)),
        (TypeError, "mask", lambda: cuatomic.reduce(np.ma.array(x, mask=x > 3), "add", backend=backend)),
        (ValueError, "unknown method", lambda: cuatomic.reduce(x, "add", method="fastest", backend=backend)),
        (TypeError, "method must be a string", lambda: cuatomic.reduce(x, "add", method=1, backend=backend)),
        (ValueError, "blocks must be between", lambda: cuatomic.reduce(x, "add", blocks=0, backend=backend)),
        (ValueError, "threads must be between", lambda: cuatomic.reduce(x, "add", threads=2048, backend=backend)),
        (ValueError, "unknown backend", lambda: cuatomic.reduce(x, "add", backend="tpu")),
        (ValueError, "zero-size array to reduction operation minimum",
         lambda: cuatomic.reduce(x[:0], "minimum", backend=backend)),
        (ValueError, "zero-size array to reduction operation maximum", lambda: cuatomic.max([], backend=backend)),
    ]
    for exc, words, call in bad:
        with pytest.raises(exc, match=words):
            call()
        assert cuatomic.last_launch() == before, words


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_core_rechecks_what_would_reach_a_kernel(backend):
    """_C.reduce refuses by itself what Python normally stops first."""
    be, rung = _backend.backend_id(backend), _backend.rung("reduce", backend, "vector").index
    floats, ints = np.ones(8, np.float32), np.ones(8, np.int32)

    def call(x, op, out, n=8, dtype=None):
        dtype = _C.DTYPES.index(x.dtype.name) if dtype is None else dtype
        return _C.reduce(backend=be, rung=rung, x=x, n=n, dtype=dtype, op=op, blocks=-1, threads=-1, stream=None,
                         out_type=out)

    with pytest.raises(TypeError, match="bitwise_and is not defined for floats"):
        call(floats, _C.REDUCE_OPS.index("bitwise_and"), np.dtype(np.float32).num)
    with pytest.raises(ValueError, match="reduce op id"):
        call(ints, 7, np.dtype(np.int32).num)
    with pytest.raises(ValueError, match="zero-size"):
        call(ints, _C.REDUCE_OPS.index("maximum"), np.dtype(np.int32).num, n=0)
    with pytest.raises(SystemError, match="NumPy type"):
        call(ints, _C.REDUCE_OPS.index("maximum"), np.dtype(np.float64).num)
    with pytest.raises(SystemError, match="not normalized"):
        call(ints, _C.REDUCE_OPS.index("add"), np.dtype(np.int64).num, n=9)
    assert call(ints, _C.REDUCE_OPS.index("add"), np.dtype(np.int64).num) == 8


def test_the_ops_are_the_abis_and_numpys():
    assert _C.REDUCE_OPS == tuple(OPS) and list(cuatomic._reduce_op.OPS) == OPS
    assert all(isinstance(getattr(np, op), np.ufunc) for op in OPS)
    for be in BACKENDS:
        rows = cuatomic.methods("reduce", be)
        assert [(name, step) for name, step, _ in rows] == [("atomic", 1), ("cas", 2), ("block_tree", 3),
                                                            ("vector", 4)]


# ------------------------------------------------------ host and device data

@requires_cuda
@pytest.mark.parametrize("method", [r[0] for r in cuatomic.methods("reduce", "cuda")] if CUDA else [])
def test_large_host_arrays_stream_in_chunks(monkeypatch, method):
    """A host array larger than two staging buffers is streamed to the GPU
    in chunks; their results combine with the op (a float add of the
    compensated rung as unrounded pairs)."""
    monkeypatch.setenv("CUATOMIC_PIPELINE_CHUNK", str(1 << 16))  # 64 KiB buffers
    for op, dtype in (("add", np.float64), ("add", np.int32), ("multiply", np.float32), ("multiply", np.int64),
                      ("minimum", np.float32), ("maximum", np.int16), ("bitwise_and", np.uint8),
                      ("bitwise_or", np.int64), ("bitwise_xor", np.int32), ("add", np.bool_)):
        n = 200_003 if op == "multiply" and np.dtype(dtype).kind == "f" else (1 << 20) + 7
        a = np.array(data(op, dtype, n))
        check(cuatomic.reduce(a, op, method=method, backend="cuda"), a, op, wide=is_wide("reduce", "cuda", method))
        assert cuatomic.last_launch()["chunks"] > 1, (op, dtype)


@requires_cuda
def test_foreign_device_arrays():
    from test_interop import DLOnly, FakeCAI
    a = data("bitwise_xor", np.int16, 100_003)
    d = cuatomic.to_device(a)
    for op in OPS:
        assert_same(cuatomic.reduce(FakeCAI(d), op, backend="cuda"), numpy_reduce(a, op))
        assert_same(cuatomic.reduce(DLOnly(d), op, backend="cuda"), numpy_reduce(a, op))
    assert_same(cuatomic.min(FakeCAI(d)), np.min(a))
