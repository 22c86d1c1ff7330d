"""cuatomic.at / add_at / reduceat against NumPy's ufunc.at and reduceat:
every rung of every backend, every op and dtype, the index forms, the
errors, in place on every kind of array, and the exact rung held to the
correctly rounded sum and to the same bits on every run and backend."""
import json
import math
from fractions import Fraction

import numpy as np
import pytest

import cuatomic
from cuatomic import _C, _backend

from conftest import BACKENDS, CUDA, DTYPES, host, where_params

OPS = ["add", "subtract", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"]


def flags_of(backend, method):
    return _backend.rung("at", backend, method).flags


def numpy_at(a, idx, b, op):
    """NumPy's answer, or the exception type it raises."""
    ref = a.copy()
    try:
        getattr(np, op).at(ref, idx, b)
    except TypeError:
        return TypeError
    return ref


def data(dtype, n, seed, op="add"):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind == "f":
        if op == "multiply":
            return (1 + rng.standard_normal(n) / 64).astype(dt)
        return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
    info = np.iinfo(dt)
    if op == "multiply":
        return rng.integers(-3 if info.min else 0, 4, n).astype(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def rounded(exact, dt):
    """The float of dtype dt nearest the Fraction `exact`, ties to even."""
    guess = dt.type(float(exact))
    best = None
    for c in (np.nextafter(guess, dt.type(-np.inf)), guess, np.nextafter(guess, dt.type(np.inf))):
        if not np.isfinite(c):
            continue
        d = abs(Fraction(float(c)) - exact)
        key = (d, int(c.view(np.uint32 if dt.itemsize == 4 else np.uint64)) & 1)
        if best is None or key < best[0]:
            best = (key, c)
    return best[1]


def exact_sums(a0, idx, b, negate):
    """Per element: the exact sum (a Fraction) of its start value and its updates."""
    m = a0.shape[0]
    sums = [Fraction(float(v)) for v in a0]
    for i, v in zip(np.where(idx < 0, idx + m, idx), b):
        sums[i] += -Fraction(float(v)) if negate else Fraction(float(v))
    return sums


def call(a, idx, b, op, backend, method, **kw):
    """cuatomic.at, or None where the rung refuses the call by its limits
    (checked: a ValueError naming it)."""
    row = _backend.rung("at", backend, method)
    dt = np.dtype(host(a).dtype) if not isinstance(a, np.ndarray) else a.dtype
    from cuatomic import _scatter
    core, negate = _scatter.core_op(_scatter.check_op(op), dt)
    shape = host(a).shape if not isinstance(a, np.ndarray) else a.shape
    why = _scatter.rung_fits(backend, row, math.prod(shape), 1, 1, _C.DTYPES.index(dt.name), core, negate)
    if why is not None:
        with pytest.raises(ValueError, match=f"method '{method}'"):
            cuatomic.at(a, idx, b, op, method=method, backend=backend, **kw)
        return None
    cuatomic.at(a, idx, b, op, method=method, backend=backend, **kw)
    return a


@pytest.mark.parametrize("backend,method,where", where_params("at"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("m,n", [(1, 0), (1, 33), (50, 1000), (7, 257), (3000, 2000)])
def test_matches_numpy(backend, method, where, dtype, op, m, n):
    seed = m * 31 + n
    a0, b = data(dtype, m, seed, op), data(dtype, n, seed + 1, op)
    idx = np.random.default_rng(seed + 2).integers(-m, m, n)
    ref = numpy_at(a0, idx, b, op)
    a = cuatomic.to_device(a0, backend="cuda") if where == "device" else a0.copy()
    if ref is TypeError:
        with pytest.raises(TypeError):
            cuatomic.at(a, idx, b, op, method=method, backend=backend)
        return
    if call(a, idx, b, op, backend, method) is None:
        return
    got = host(a)
    assert got.dtype == ref.dtype
    dt = np.dtype(dtype)
    if dt.kind != "f" or op in ("minimum", "maximum"):
        np.testing.assert_array_equal(got, ref)
        return
    if op == "multiply":
        np.testing.assert_allclose(got, ref, rtol=n * 4 * np.finfo(dt).eps)
        return
    exact = exact_sums(a0, idx, b, op == "subtract")
    flags = flags_of(backend, method)
    for e in range(m):
        err = abs(Fraction(float(got[e])) - exact[e])
        if flags & _C.F_EXACT:
            assert got[e] == rounded(exact[e], dt), (e, got[e])
        else:  # any order of additions: each rounds by half an ulp of at most the sum of |terms|
            count = int(np.sum(np.where(idx < 0, idx + m, idx) == e))
            terms = abs(float(a0[e])) + float(np.abs(b[np.where(idx < 0, idx + m, idx) == e]).astype(float).sum())
            assert err <= Fraction((count + 1) * float(np.finfo(dt).eps) * terms), (e, got[e], float(exact[e]))
        # the exact rung, and NumPy's sequential loop, for comparison
        if flags & _C.F_EXACT:
            assert err <= abs(Fraction(float(ref[e])) - exact[e])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_is_deterministic_and_the_same_on_every_backend(backend, dtype):
    rng = np.random.default_rng(5)
    m, n = 100, 20000
    a0 = rng.standard_normal(m).astype(dtype)
    idx = rng.zipf(1.5, n) % m
    b = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype)
    outs = []
    for method in [r.name for r in _backend.table("at", backend) if r.flags & _C.F_DETERMINISTIC]:
        for blocks, threads in [(None, None), (1, 32), (7, 64), (300, 1024)]:
            a = a0.copy()
            cuatomic.at(a, idx, b, method=method, backend=backend, blocks=blocks, threads=threads)
            outs.append(a.tobytes())
    assert len(set(outs)) == 1
    for be in BACKENDS:
        a = a0.copy()
        cuatomic.at(a, idx, b, backend=be)  # auto: deterministic for float add
        assert cuatomic.last_launch()["method"] in [r.name for r in _backend.table("at", be)
                                                     if r.flags & _C.F_DETERMINISTIC]
        assert a.tobytes() == outs[0], be


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_signed_zeros_nan_inf_and_cancellation(backend):
    a = np.array([-0.0, -0.0, 0.0, np.nan, 1.0, 5.0, 1e308, 1.0])
    idx = [0, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7, 7]
    b = [-0.0, 0.0, -0.0, np.inf, -np.inf, np.inf, 1.0, 1e308, 1e308, -1e308, 1e300, 1.0, -1e300]
    ref = a.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        np.add.at(ref, idx, b)
    exact = [r.name for r in _backend.table("at", backend) if r.flags & _C.F_EXACT]
    assert exact
    for method in exact:
        got = a.copy()
        cuatomic.at(got, idx, b, method=method, backend=backend)
        np.testing.assert_array_equal(got[:6], ref[:6])
        assert list(np.signbit(got[:3])) == [True, False, False], method
        assert got[6] == np.inf  # the exact sum 2e308 is past float64's largest: inf (NumPy's loop too)
        assert got[7] == 2.0  # NumPy's loop loses both 1.0s under 1e300: the exact rungs do not
    assert ref[7] == 0.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", ["narrow", "grown", "wide"])
@pytest.mark.parametrize("m", [1, 3, 5000])
def test_exact_rungs_round_the_exact_sum_through_every_carry(backend, dtype, spread, m):
    """2^16 values of both signs into few elements (or many). "narrow": the
    window is 61 bits, so each value is one integer under 2^62 in the
    accumulator's word 0, which overflows again and again (the narrow
    paths: the cpu's 128-bit adds, the GPU's word-1 atomics and per-sign
    copies); "grown": the same values into start values 2^40 times larger,
    as an output's sums outgrow its updates (the GPU's narrow kernel with
    three words); "wide": values 2^-60 to 2^60 apart (the general paths,
    carries between words). Every element is the correctly rounded exact
    sum."""
    rng = np.random.default_rng(17)
    n = 1 << 16
    top = 60 if spread == "wide" else 38 if dtype == np.float32 else 9
    low = 0 if spread == "narrow" else -60
    signs = np.where(rng.random(n) < 0.7, 1.0, -1.0)  # mostly positive: the positive words overflow too
    b = (signs * (1 + rng.random(n)) * np.exp2(rng.integers(low, top, n))).astype(dtype)
    idx = rng.integers(0, m, n)
    a0 = ((1 + rng.random(m)) * np.exp2(rng.integers(low, top, m) + (40 if spread == "grown" else 0))
          * rng.choice([-1, 1], m)).astype(dtype)
    sums = exact_sums(a0, idx, b, False)
    want = np.array([rounded(x, np.dtype(dtype)) for x in sums], dtype)
    for method in [r.name for r in _backend.table("at", backend) if r.flags & _C.F_EXACT]:
        got = a0.copy()
        cuatomic.at(got, idx, b, method=method, backend=backend)
        assert got.tobytes() == want.tobytes(), (method, np.flatnonzero(got != want)[:5])


def rungs():
    """(backend, method) for every rung of every usable backend."""
    return [pytest.param(be, name, id=f"{be}-{name}") for be in BACKENDS for name, _, _ in cuatomic.methods("at", be)]


@pytest.mark.parametrize("backend,method", rungs())
def test_bad_index_writes_nothing(backend, method):
    for bad in ([0, 1, 3, 2], [0, -4]):
        a = np.arange(3.0)
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
            cuatomic.at(a, bad, 1.0, method=method, backend=backend)
        np.testing.assert_array_equal(a, np.arange(3.0))
    a = np.zeros((2, 3))
    with pytest.raises(IndexError, match="axis 1 with size 3"):
        cuatomic.at(a, ([0, 1], [0, 3]), 1.0, method=method, backend=backend)
    assert not a.any()
    # Many updates, several bad ones: the first position is named (the exact
    # rungs find it in their own pass over the updates, in any order), in
    # host and device outputs, whole rows too; nothing is written.
    idx = np.random.default_rng(3).integers(0, 50, 100_000)
    idx[[80_000, 70_001, 99_999]] = [1000, 50, -51]
    for dt, shape in [(np.int64, (50,)), (np.int32, (50,)), (np.int64, (50, 4))]:
        outs = [np.zeros(shape)] + ([cuatomic.to_device(np.zeros(shape))] if backend == "cuda" else [])
        for a in outs:
            with pytest.raises(IndexError, match=r"index 50 is out of bounds for axis 0 with size 50 \(indices\[70001\]\)"):
                cuatomic.at(a, idx.astype(dt), 1.0, method=method, backend=backend)
            assert not host(a).any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bad_index_is_the_answer_before_an_exact_rung_s_refusal(backend):
    """The exact rungs check indices in their own pass; one that refuses the call first (an integer
    array) still answers a bad index with the IndexError, as the check pass of the other rungs does."""
    for method in [r.name for r in _backend.table("at", backend) if r.flags & _C.F_EXACT]:
        a = np.zeros(3, np.int64)
        with pytest.raises(IndexError, match=r"index 5 is out of bounds .*\(indices\[1\]\)"):
            cuatomic.at(a, [0, 5], 1, method=method, backend=backend)
        with pytest.raises(ValueError, match=f"method '{method}' scatters float add"):
            cuatomic.at(a, [0, 2], 1, method=method, backend=backend)
        assert not a.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_name_the_argument(backend):
    x = np.zeros(3)
    cases = [
        (IndexError, "integer", lambda: cuatomic.at(x, [0.5], 1.0, backend=backend)),
        (TypeError, "booleans", lambda: cuatomic.at(x, [True, False, True], 1.0, backend=backend)),
        (TypeError, "slices", lambda: cuatomic.at(x, slice(None), 1.0, backend=backend)),
        (ValueError, "broadcast", lambda: cuatomic.at(x, [0, 1], [1.0, 2.0, 3.0], backend=backend)),
        (TypeError, "truncates", lambda: cuatomic.at(np.zeros(3, np.int64), [0], 1.5, backend=backend)),
        (TypeError, "rounds to float32", lambda: cuatomic.at(np.zeros(3, np.float32), [0, 0],
                                                             np.array([1.0, 2**-24 + 2**-50]), backend=backend)),
        (TypeError, "outside", lambda: cuatomic.at(np.zeros(3, np.uint8), [0], -1, "minimum", backend=backend)),
        (TypeError, "second operand", lambda: cuatomic.at(x, [0], backend=backend)),
        (TypeError, "bitwise_and", lambda: cuatomic.at(x, [0], 1.0, "bitwise_and", backend=backend)),
        (TypeError, "boolean subtract", lambda: cuatomic.at(np.zeros(3, bool), [0], True, "subtract",
                                                            backend=backend)),
        (ValueError, "unknown op", lambda: cuatomic.at(x, [0], 1.0, "divide", backend=backend)),
        (ValueError, "not a scatter op", lambda: cuatomic.at(x, [0], 1.0, np.divide, backend=backend)),
        (TypeError, "op must be", lambda: cuatomic.at(x, [0], 1.0, 3, backend=backend)),
        (TypeError, "must be an array", lambda: cuatomic.at([0.0, 1.0], [0], 1.0, backend=backend)),
        (IndexError, "too many indices", lambda: cuatomic.at(x, ([0], [0]), 1.0, backend=backend)),
        (ValueError, "unknown method", lambda: cuatomic.at(x, [0], 1.0, method="nope", backend=backend)),
        (ValueError, "method 'exact'", lambda: cuatomic.at(np.zeros(3, np.int32), [0], 1, method="exact",
                                                          backend=backend)),
        (ValueError, "method 'exact'", lambda: cuatomic.at(x, [0], 2.0, "multiply", method="exact",
                                                          backend=backend)),
    ]
    for kind, text, fn in cases:
        with pytest.raises(kind, match=text):
            fn()
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        cuatomic.at(ro, [0], 1.0, backend=backend)


@pytest.mark.parametrize("backend,method", rungs())
def test_rows_tuples_and_broadcasts(backend, method):
    rng = np.random.default_rng(3)
    idx = np.array([[1, 1, 2, 0], [3, 3, -1, 3]])
    forms = [
        (np.zeros((5, 3)), idx, 2.0),                                   # one value
        (np.zeros((5, 3)), idx, np.arange(3.0)),                         # one row for every update
        (np.zeros((5, 3)), idx, np.arange(8.0).reshape(2, 4, 1)),        # one value per update
        (np.zeros((5, 3)), idx, rng.standard_normal((2, 4, 3))),         # every value
        (np.zeros((5, 3)), idx, rng.standard_normal((2, 1, 3))),         # another broadcast
        (np.zeros((5, 3)), (idx, idx % 3), rng.standard_normal((2, 4))),  # one element each
        (np.zeros((4, 2, 3)), ([1, 1, 3], [0, 1, 1]), np.arange(3.0)),  # rows of the axes left
        (np.zeros(6)[::2], [0, 2, 2], 1.5),                              # a strided host array
        (np.zeros(3, ">f8"), [0, 0, 1], 1.25),                           # big-endian
        (np.array(4.0), (), 2.0),                                        # 0-d
    ]
    for a0, ix, b in forms:
        a, ref = a0.copy(), a0.copy()
        np.add.at(ref, ix, b)
        if call(a, ix, b, "add", backend, method) is None:
            continue
        np.testing.assert_allclose(a, ref, rtol=1e-12)
        assert a.dtype == ref.dtype
    base = np.zeros(6)
    view = base[::2]
    if call(view, [0, 2, 2], 1.5, "add", backend, method) is not None:
        np.testing.assert_array_equal(base, [1.5, 0, 0, 0, 3.0, 0])  # written back into the caller's array


@pytest.mark.parametrize("backend", BACKENDS)
def test_shared_refuses_an_output_that_does_not_fit(backend):
    with pytest.raises(ValueError, match="method 'shared'"):
        cuatomic.at(np.zeros(2**20, np.float64), [0], 1.0, method="shared", backend=backend)
    a = np.zeros(2**20)
    cuatomic.at(a, [0, 5, 5], 1.0, "add", backend=backend)  # auto passes it by
    assert a[5] == 2.0 and a.sum() == 3.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_are_cast_as_numpy_casts_them(backend):
    for a0, b in [(np.zeros(3, np.int8), 300), (np.zeros(3, np.int8), np.array([300, 1, 2], np.int16)),
                  (np.zeros(3, np.uint8), -1), (np.zeros(3, bool), True), (np.zeros(3, np.float32), 0.1),
                  (np.zeros(3, np.int8), np.array([127, 127, 127], np.int8))]:
        got, ref = a0.copy(), a0.copy()
        cuatomic.at(got, [0, 1, 1], b, backend=backend)
        np.add.at(ref, [0, 1, 1], b)
        np.testing.assert_array_equal(got, ref)
    got, ref = np.zeros(2), np.zeros(2)
    with pytest.warns(np.exceptions.ComplexWarning if hasattr(np, "exceptions") else np.ComplexWarning):
        cuatomic.at(got, [0, 1], 1 + 2j, backend=backend)
    np.testing.assert_array_equal(got, [1.0, 1.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_add_at_and_ufunc_ops(backend):
    a = np.zeros(4, np.int64)
    cuatomic.add_at(a, [1, 1, 3], 5, backend=backend)
    np.testing.assert_array_equal(a, [0, 10, 0, 5])
    cuatomic.at(a, [1, 3], [2, 9], np.maximum, backend=backend)
    np.testing.assert_array_equal(a, [0, 10, 0, 9])
    assert cuatomic.at(a, [0], 1, np.subtract, backend=backend) is None
    assert a[0] == -1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "minimum", "maximum", "bitwise_or"])
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8])
def test_reduceat(backend, op, dtype):
    x = data(dtype, 1000, 9, op)
    for ix in ([0, 4, 1, 5], [0], [999], [10, 10, 3, 500, 999], list(range(0, 1000, 7))):
        try:
            ref = getattr(np, op).reduceat(x, ix)
        except TypeError:
            with pytest.raises(TypeError):
                cuatomic.reduceat(x, ix, op, backend=backend)
            continue
        got = cuatomic.reduceat(x, ix, op, backend=backend)
        assert got.dtype == ref.dtype
        if np.dtype(dtype).kind == "f" and op in ("add", "subtract", "multiply"):
            np.testing.assert_allclose(got, ref, rtol=1e-9)
        else:
            np.testing.assert_array_equal(got, ref)
    with pytest.raises(IndexError, match="out-of-bounds"):
        cuatomic.reduceat(x, [0, 1000], op, backend=backend)


@pytest.mark.skipif(not CUDA, reason="no usable CUDA device")
def test_device_arrays_are_updated_in_place():
    rng = np.random.default_rng(4)
    a0 = rng.standard_normal(1000)
    idx = rng.integers(0, 1000, 10000)
    b = rng.standard_normal(10000)
    ref = a0.copy()
    cuatomic.at(ref, idx, b, backend="cpu")
    d = cuatomic.to_device(a0)
    cuatomic.at(d, cuatomic.to_device(idx), cuatomic.to_device(b))
    assert d.copy_to_host().tobytes() == ref.tobytes()  # the exact rung: the cpu backend's bits
    for lib in ("cupy", "torch"):
        try:
            mod = __import__(lib)
        except ImportError:
            continue
        if lib == "cupy":
            x, ix, v = mod.asarray(a0), mod.asarray(idx), mod.asarray(b)
            cuatomic.at(x, ix, v)
            assert mod.asnumpy(x).tobytes() == ref.tobytes()
        else:
            x = mod.tensor(a0, device="cuda")
            cuatomic.at(x, mod.tensor(idx, device="cuda"), mod.tensor(b, device="cuda"))
            assert x.cpu().numpy().tobytes() == ref.tobytes()


@pytest.mark.parametrize("backend,method", rungs())
def test_indices_and_values_in_a_s_own_memory(backend, method):
    """NumPy reads indices and values before it writes: so does at, from
    copies, where they share a's memory (an index changed by the update
    would otherwise be read after the check)."""
    if _backend.rung("at", backend, method).flags & _C.F_EXACT:
        a, ref = np.array([1.0, 0.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0])
        cuatomic.at(a, [0, 1, 1], a[1:], method=method, backend=backend)
        np.add.at(ref, [0, 1, 1], ref[1:].copy())
        np.testing.assert_array_equal(a, ref)
        return
    buf = np.zeros(8, np.int64)
    a = buf[:4]
    a[:] = [1, 0, 0, 0]
    cuatomic.at(a, a, 5, method=method, backend=backend, blocks=1, threads=1)
    np.testing.assert_array_equal(buf, [16, 5, 0, 0, 0, 0, 0, 0])
    a = np.array([3, 1, 2, 0], np.int64)
    ref = a.copy()
    cuatomic.at(a, [0, 1, 1, 3], a, method=method, backend=backend)
    np.add.at(ref, [0, 1, 1, 3], ref.copy())
    np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_and_whole_array_indices(backend):
    a = np.arange(6.0).reshape(3, 2)
    for ix, b in [([], 1.0), ((), 1.5), ((), np.array([1.0, 2.0]))]:
        got, ref = a.copy(), a.copy()
        cuatomic.at(got, ix, b, backend=backend)
        np.add.at(ref, ix, b)
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(cuatomic.reduceat(np.arange(8.0), [], backend=backend),
                                  np.add.reduceat(np.arange(8.0), np.array([], np.intp)))
    with pytest.raises(ValueError, match="broadcast"):
        cuatomic.at(np.zeros(3), [0, 1], np.ones((1, 1)), backend=backend)  # NumPy: not broadcastable
    with pytest.raises(ValueError, match="1-D indices"):
        cuatomic.reduceat(np.ones(4), [[0, 1]], backend=backend)
    with pytest.raises(TypeError, match="bool"):
        cuatomic.at(np.array([True, False]), [0], -1, backend=backend)  # NumPy adds in int64: True + -1 is False


def test_cpu_rungs_take_the_threads_the_runtime_starts(tmp_path):
    """OMP_THREAD_LIMIT (or a dynamic team, or nesting) may start fewer
    threads than a rung asks for: every update is still applied."""
    import subprocess
    import sys
    code = (
        "import numpy as np, cuatomic\n"
        "rng = np.random.default_rng(1)\n"
        "idx = rng.integers(0, 1000, 1 << 18); b = rng.integers(-9, 9, 1 << 18)\n"
        "ref = np.zeros(1000, np.int64); np.add.at(ref, idx, b)\n"
        "fb = b.astype(np.float64); fref = np.zeros(1000); np.add.at(fref, idx, fb)\n"
        "for name, _, _ in cuatomic.methods('at', 'cpu'):\n"
        "    if name == 'exact' or name == 'exact_private':\n"
        "        got = np.zeros(1000); cuatomic.at(got, idx, fb, method=name, backend='cpu')\n"
        "        assert np.array_equal(got, fref), name  # small integers: exact in any order\n"
        "    else:\n"
        "        got = np.zeros(1000, np.int64); cuatomic.at(got, idx, b, method=name, backend='cpu')\n"
        "        assert np.array_equal(got, ref), name\n"
        "print('ok')\n")
    import os
    env = dict(os.environ, OMP_NUM_THREADS="4", OMP_THREAD_LIMIT="1", CUATOMIC_BACKEND="cpu")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-2000:]


@pytest.fixture
def at_rules(monkeypatch, tmp_path):
    """A rules file in which at into 10^4 outputs ranks atomic first for
    uniform indices and warp_aggregated first for Zipf ones, on both
    backends: 2x slower on uniform indices for int32, 1.05x (within ROBUST)
    for int64; auto's caches forgotten before and after."""
    from cuatomic import _auto

    def rules(backend):
        return {"backend": backend, "cases": [
            {"op": "at", "dtype": "int32", "n": 1 << 20, "bins": 10**4, "data": "uniform",
             "ms": {"atomic": 1.0, "warp_aggregated": 2.0, "shared": 3.0}},
            {"op": "at", "dtype": "int32", "n": 1 << 20, "bins": 10**4, "data": "zipf",
             "ms": {"atomic": 5.0, "warp_aggregated": 2.0, "shared": 3.0}},
            {"op": "at", "dtype": "int64", "n": 1 << 20, "bins": 10**4, "data": "uniform",
             "ms": {"atomic": 1.0, "warp_aggregated": 1.05, "shared": 3.0}},
            {"op": "at", "dtype": "int64", "n": 1 << 20, "bins": 10**4, "data": "zipf",
             "ms": {"atomic": 5.0, "warp_aggregated": 2.0, "shared": 3.0}}]}

    def use(backend):
        path = tmp_path / f"{backend}.json"
        path.write_text(json.dumps(rules(backend)))
        monkeypatch.setenv("CUATOMIC_AUTO_RULES", str(path))
        forget()

    def forget():
        _auto.forget()
    yield use
    forget()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("on_device", [False, True])
def test_auto_runs_the_rung_measured_for_the_indices_skew(backend, on_device, at_rules):
    """at's auto reads a sample of the indices: uniform ones take the
    uniform case's fastest rung, Zipf(1.2) ones the Zipf case's; below
    SKEW_FROM updates the uniform case's; where the Zipf case's rung is
    within ROBUST of the uniform one's on uniform indices, the Zipf case's
    whatever the sample (int64). explain says the same, with the skew it
    measured; every answer is NumPy's."""
    if on_device and backend != "cuda":
        pytest.skip("device indices: cuda backend")
    from cuatomic import _scatter
    at_rules(backend)
    rng = np.random.default_rng(7)
    m, n = 10**4, 1 << 17
    kinds = {"uniform": rng.integers(0, m, n), "zipf": (rng.zipf(1.2, n) - 1) % m,
             "few zipf": (rng.zipf(1.2, _scatter.SKEW_FROM - 1) - 1) % m}
    want = {("int32", "uniform"): "atomic", ("int32", "zipf"): "warp_aggregated", ("int32", "few zipf"): "atomic",
            ("int64", "uniform"): "warp_aggregated", ("int64", "zipf"): "warp_aggregated",
            ("int64", "few zipf"): "atomic"}
    for (dt, kind), method in want.items():
        idx = kinds[kind]
        vals = rng.integers(-50, 50, idx.size).astype(dt)
        a = np.zeros(m, dt)
        ref = a.copy()
        np.add.at(ref, idx, vals)
        if on_device:
            a, idx, vals = (cuatomic.to_device(x) for x in (a, idx.astype(np.int64), vals))
        choice = cuatomic.explain("at", a, idx, vals, backend=backend)
        assert choice.method == method, (dt, kind, str(choice))
        robust = dt == "int64" and kind != "few zipf"
        assert choice.facts["data"] == ("zipf" if kind == "zipf" or robust else "uniform"), str(choice)
        assert (choice.facts["skew"] >= _scatter.SKEWED) == (kind != "uniform"), str(choice)
        cuatomic.at(a, idx, vals, backend=backend)
        assert cuatomic.last_launch()["method"] == method, (dt, kind)
        np.testing.assert_array_equal(host(a), ref)


def test_skew_of_uniform_and_zipf_samples():
    """skew_of: uniform indices stay under SKEWED at every size (a sample
    of SKEW_SAMPLE = 1024; the most common of 1024 rows comes 5 to 8 times
    where 1 is expected), Zipf(1.2) ones over it from 100 rows on (about 20), far
    over it from 10^4 (hundreds), one
    row is never skewed, and negative indices count as their rows."""
    from cuatomic._scatter import SKEW_SAMPLE, SKEWED, skew_of
    rng = np.random.default_rng(3)
    for m in (2, 100, 1024, 10**4, 10**6, 10**9):
        for seed in range(20):
            sample = np.random.default_rng(seed).integers(0, m, SKEW_SAMPLE)
            assert skew_of(sample, m) < SKEWED, (m, seed)
    for m in (100, 10**4, 10**6):
        assert skew_of((rng.zipf(1.2, SKEW_SAMPLE) - 1) % m, m) >= (1 if m == 100 else 10) * SKEWED, m
    assert skew_of(np.zeros(SKEW_SAMPLE, np.int64), 1) == 1.0
    assert skew_of(np.zeros(0, np.int64), 10) == 1.0
    same = np.array([-1] * 100 + [99] * 100 + list(range(99)))
    assert skew_of(same, 100) == 200 * 100 / same.size


@pytest.mark.skipif(not CUDA, reason="needs the cuda backend")
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_index_sample_reads_the_device_indices_as_the_host_slice(dtype):
    """auto's sample of device indices (one strided copy on the call's
    stream) is the host indices' evenly spaced slice, for sizes below,
    at and above the sample and on a stream of cuatomic's own."""
    from cuatomic import _scatter
    for n in (1, 1000, _scatter.SKEW_SAMPLE, 3 * _scatter.SKEW_SAMPLE + 7, 1 << 20):
        idx = np.random.default_rng(n).integers(-500, 500, n).astype(dtype)
        ix = _scatter.indices_for(cuatomic.to_device(idx), (1000,), "cuda", 0)
        step = max(1, n // _scatter.SKEW_SAMPLE)
        want = idx[::step][:_scatter.SKEW_SAMPLE]
        stream = cuatomic.Stream()
        try:
            for handle in (0, stream.ptr):
                got = _scatter.index_sample(ix, handle)
                np.testing.assert_array_equal(got, want)
                assert got.dtype == idx.dtype
        finally:
            stream.close()


def test_auto_names_every_refusal_when_no_rung_can_run():
    """rung_for's last resort is choose's ValueError naming each refused
    rung (its loop variable once shadowed the `row` length it passes on:
    a TypeError comparing a Rung with an int)."""
    from cuatomic import _auto
    with pytest.raises(ValueError, match=r"^no rung of at on cpu can run this call: .*exact: too big"):
        _auto.rung_for("at", "cpu", 10, "float64", 10, require=_C.F_DETERMINISTIC, fits=lambda r: "too big", row=1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_rungs_bits_on_narrow_windows_with_signed_zeros(backend, dtype):
    """Values whose window is under 64 bits (exact_private's narrow add,
    one signed 128-bit integer per element): negative values, +0.0 and
    -0.0 among them, the start values all -0.0 or not, rows and int32
    indices; both exact rungs give the correctly rounded sum's bits, -0.0
    where every term is -0.0. (A narrow add that sign-extended -0.0's
    zero magnitude went unseen by the tests above.)"""
    dt = np.dtype(dtype)
    bits = np.uint32 if dt.itemsize == 4 else np.uint64
    for seed in range(40):
        rng = np.random.default_rng(seed)
        m, row, n = int(rng.integers(1, 6)), int(rng.integers(1, 3)), int(rng.integers(0, 300))
        scale = 2.0 ** int(rng.integers(-40, 40))  # exponents within 10 bits: float64's window too is under 64
        vals = (rng.integers(-512, 512, (n, row)) * scale).astype(dt)
        vals[rng.random((n, row)) < 0.2] = 0.0
        vals[rng.random((n, row)) < 0.2] = -0.0
        start = np.full((m, row), -0.0, dt) if seed % 3 == 0 else (rng.integers(-8, 8, (m, row)) * scale).astype(dt)
        idx = rng.integers(-m, m, n).astype(np.int32 if seed % 2 else np.int64)
        negate = seed % 4 == 1
        want = np.empty((m, row), dt)
        for j in range(row):
            sums = exact_sums(start[:, j], idx, vals[:, j], negate)
            for e in range(m):
                mine = np.where(idx < 0, idx + m, idx) == e
                terms = np.concatenate(([start[e, j]], -vals[mine, j] if negate else vals[mine, j]))
                want[e, j] = rounded(sums[e], dt) if sums[e] else (-0.0 if np.all(np.signbit(terms)) else 0.0)
        for method in ("exact", "exact_private"):
            a = start if row > 1 else start[:, 0]
            a = cuatomic.to_device(a, backend="cuda") if backend == "cuda" else a.copy()
            cuatomic.at(a, idx, vals if row > 1 else vals[:, 0], "subtract" if negate else "add", method=method,
                        backend=backend)
            got = host(a).reshape(m, row)
            assert np.array_equal(got.view(bits), want.view(bits)), (seed, method, got, want)
