import operator

import numpy as np
import pytest
from conftest import DTYPES, SIZES, FakeCAI, filter_refusal, host, make, placed, requires_cuda, where_params

import cuatomic
from cuatomic import _C, _backend

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne}


def reference(a, op, value):
    flat = np.asarray(a).ravel()
    return flat[OPS[op](flat, value)]


def check_filter(got, a, op, value, ordered):
    got = host(got)
    ref = reference(a, op, value)
    assert got.dtype == ref.dtype and got.ndim == 1  # NumPy's dtype, byte order included
    if ordered:
        np.testing.assert_array_equal(got, ref)
    else:  # the same multiset, in any order
        assert got.size == ref.size
        np.testing.assert_array_equal(np.sort(got), np.sort(ref))


def default_value(dtype):
    dt = np.dtype(dtype)
    return True if dt.kind == "b" else (0.25 if dt.kind == "f" else 7)


def ordered_flags(backend, method):
    """ordered= values a rung takes: both if its row keeps order, else False."""
    return [True, False] if _backend.rung("filter", backend, method).has(_C.F_ORDERED) else [False]


@pytest.mark.parametrize("backend,method,where", where_params("filter"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_filter_matches_numpy(backend, method, where, dtype, n):
    a = make(dtype, n)
    for ordered in ordered_flags(backend, method):
        for op in ("<", ">="):
            got = cuatomic.filter(placed(a, backend, where), op, default_value(dtype), ordered=ordered,
                                  method=method, backend=backend)
            check_filter(got, a, op, default_value(dtype), ordered)


@pytest.mark.parametrize("backend,method,where", where_params("filter"))
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64,
                                   np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_filter_every_op_and_value(backend, method, where, op, dtype):
    a = make(dtype, 3001, "skewed")
    a[::97] = make(dtype, a[::97].size, "uniform")
    if np.dtype(dtype).kind == "f":
        a[::101] = np.nan
        a[5], a[6], a[7] = np.inf, -np.inf, -0.0
    values = [0, 1, -1, 3, 300, -2**40, 2**70, 2.5, -0.5, 1e30, np.nan, np.inf, -np.inf, True,
              np.float32(0.1), np.float64(0.1), np.int64(2**63 - 1), np.uint64(2**64 - 1), np.iinfo(np.int64).min,
              float(2**53 + 1)]
    if np.dtype(dtype).kind not in "bf":
        values.append(np.sort(a)[a.size // 2].item())  # an element's own value
    x = placed(a, backend, where)
    for value in values:
        try:
            reference(a, op, value)
        except (TypeError, OverflowError) as e:  # where NumPy refuses a value, so does cuatomic
            with pytest.raises(type(e)):
                cuatomic.filter(x, op, value, ordered=False, method=method, backend=backend)
            continue
        for ordered in ordered_flags(backend, method):
            got = cuatomic.filter(x, op, value, ordered=ordered, method=method, backend=backend)
            check_filter(got, a, op, value, ordered)


@pytest.mark.parametrize("backend,method,where", where_params("filter"))
def test_filter_launch_configs_and_one_value(backend, method, where):
    a = make(np.int32, 100_000, "one")
    ordered = _backend.rung("filter", backend, method).has(_C.F_ORDERED)
    for blocks, threads in [(1, 1), (3, 33), (1000, 1024), (7, 100), (2, 384)]:
        x = placed(a, backend, where)
        call = dict(ordered=ordered, method=method, backend=backend, blocks=blocks, threads=threads)
        if filter_refusal(x, method=method, backend=backend, blocks=blocks, threads=threads):
            with pytest.raises(ValueError, match=f"method '{method}'"):  # its limits, said
                cuatomic.filter(x, "==", 3, **call)
            continue
        check_filter(cuatomic.filter(x, "==", 3, **call), a, "==", 3, ordered)


@requires_cuda
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_filter_lookback_tiles_and_alignment(dtype):
    """The look-back rungs: `pipelined` (sm_80+, its own block of 384
    threads, 16-byte aligned input; 24 KiB tiles) and `lookback` (any
    block size, any alignment). Every tile edge, one block or many,
    nothing, about half or everything kept; what pipelined cannot take it
    refuses, naming its limit, and auto passes it by."""
    itemsize = np.dtype(dtype).itemsize
    tile = 384 * 64 // itemsize
    for n in (1, tile - 1, tile, tile + 1, 3 * tile + 5):
        a = make(dtype, n + 1)
        d = cuatomic.to_device(a)
        cai = d.__cuda_array_interface__
        shifted = FakeCAI(d, data=(cai["data"][0] + itemsize, False), shape=(n,))  # one element in: unaligned
        s = np.sort(a)
        for op, value in ((">=", s[0]), (">=", s[s.size // 2]), (">", s[-1])):
            for blocks, threads in ((None, None), (1, None), (2, None), (None, 256)):
                for x, ref in ((d, a), (shifted, a[1:])):
                    for method in ("lookback", "pipelined"):
                        call = dict(method=method, blocks=blocks, threads=threads)
                        if filter_refusal(x, method=method, backend="cuda", blocks=blocks, threads=threads):
                            assert method == "pipelined" and (x is shifted or threads == 256)
                            with pytest.raises(ValueError, match="method 'pipelined'"):
                                cuatomic.filter(x, op, value, **call)
                            continue
                        check_filter(cuatomic.filter(x, op, value, **call), ref, op, value, True)
        got = cuatomic.filter(shifted, ">=", s[0])  # auto: never a rung that refuses the call
        check_filter(got, a[1:], ">=", s[0], True)
        assert cuatomic.explain("filter", shifted, ">=", s[0]).method == cuatomic.last_launch()["method"]


@requires_cuda
def test_filter_device_result_around_the_trim():
    """A device result is copied to its own buffer when fewer than 1/8 of
    the elements pass, else kept in the call's buffer: both must hold
    exactly the kept elements, and outlive the input."""
    n = 8000
    a = np.arange(n, dtype=np.int64)
    for k in (0, 1, n // 8 - 1, n // 8, n // 8 + 1, n // 2, n):
        d = cuatomic.to_device(a)
        got = cuatomic.filter(d, "<", k)
        del d
        assert isinstance(got, cuatomic.DeviceArray) and got.shape == (k,)
        np.testing.assert_array_equal(got.copy_to_host(), a[:k])
        # fewer than n/8: a buffer of the result's own size; else the call's, for all n
        assert got._buffer.nbytes == a.itemsize * (k if 8 * k < n else n)


@pytest.mark.parametrize("backend", cuatomic.backends())
@pytest.mark.parametrize("method", ["auto", "lookback", "ordered", "atomic"])
def test_filter_repeated_call_plan(backend, method, monkeypatch):
    """A repeated call (no launch options) goes straight to the core with its
    first call's plan: every call still filters its own data with its own
    value's predicate, on the backend CUATOMIC_BACKEND names."""
    from cuatomic import _filter
    monkeypatch.setenv("CUATOMIC_BACKEND", backend)
    _filter._PLANS.clear()
    rng = np.random.default_rng(5)
    ordered = method != "atomic"
    wrap = [lambda d: d] + ([lambda d: FakeCAI(d)] if backend == "cuda" else [])
    for n, value in [(10_007, 3), (10_007, 3), (10_007, 3.0), (10_007, 3.5), (5, 3), (10_007, -0.0), (10_007, 0.0),
                     (0, 3), (10_007, 2**40), (10_007, 3)]:
        a = rng.integers(-10, 10, n).astype(np.int32)
        for w in wrap:
            x = w(cuatomic.to_device(a)) if backend == "cuda" else a
            for op in (">=", "!=", "<"):
                got = cuatomic.filter(x, op, value, ordered=ordered, method=method)
                check_filter(got, a, op, value, ordered)
                assert cuatomic.last_launch()["backend"] == backend
                if method != "auto":
                    assert cuatomic.last_launch()["method"] == method
    assert len(_filter._PLANS) >= 1

    # Once planned, the call no longer resolves anything: the data's new
    # values are still read.
    a = rng.integers(-10, 10, 10_007).astype(np.int32)
    x = cuatomic.to_device(a) if backend == "cuda" else a
    check_filter(cuatomic.filter(x, ">=", 4, ordered=ordered, method=method), a, ">=", 4, ordered)

    if backend == "cuda":  # and a plain __cuda_array_interface__ array's plan
        check_filter(cuatomic.filter(FakeCAI(x), ">=", 4, ordered=ordered, method=method), a, ">=", 4, ordered)

    def unplanned(*args):
        raise AssertionError("a planned call resolved its arguments again")
    monkeypatch.setattr(_filter, "_filter", unplanned)
    a[::3] = 9
    x = cuatomic.to_device(a) if backend == "cuda" else a
    check_filter(cuatomic.filter(x, ">=", 4, ordered=ordered, method=method), a, ">=", 4, ordered)
    if backend == "cuda":
        check_filter(cuatomic.filter(FakeCAI(x), ">=", 4, ordered=ordered, method=method), a, ">=", 4, ordered)


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_filter_plans_are_not_shared(backend, monkeypatch):
    """Calls that differ in what changes the answer -- dtype, value and its
    type, op, order, method -- do not share a plan, and the cache keeps at
    most _PLAN_COUNT of them however many thresholds are asked."""
    from cuatomic import _filter
    monkeypatch.setenv("CUATOMIC_BACKEND", backend)
    base = np.arange(-300, 300)
    for _ in range(2):
        for dtype in (np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64):
            a = base.astype(dtype)
            x = cuatomic.to_device(a) if backend == "cuda" else a
            for value in (3, 3.5, -1, 2**40, -2**40, 1e30, 255, 127):
                for op in ("<", ">", "=="):
                    check_filter(cuatomic.filter(x, op, value), a, op, value, True)
                check_filter(cuatomic.filter(x, ">", value, ordered=False, method="atomic"), a, ">", value, False)
    # An unordered call's plan (any rung) never serves an ordered call.
    a = base.astype(np.int32)
    x = cuatomic.to_device(a) if backend == "cuda" else a
    for ordered in (False, True, False, True):
        check_filter(cuatomic.filter(x, ">", 3, ordered=ordered), a, ">", 3, ordered)
        if ordered:
            assert _backend.rung("filter", backend, cuatomic.last_launch()["method"]).has(_C.F_ORDERED)
    # Equal values of two types, compared apart: int64 against the int 2**63
    # exactly, against the float 2.0**63 (== 2**63) after rounding x to float64.
    a = np.array([2**63 - 1, -5, 2**62, 2**63 - 1024], dtype=np.int64)
    x = cuatomic.to_device(a) if backend == "cuda" else a
    for value in (2**63, 2.0**63, 2**63, 2.0**63):
        check_filter(cuatomic.filter(x, "<", value), a, "<", value, True)
    _filter._PLANS.clear()
    a = np.arange(50, dtype=np.int16)
    x = cuatomic.to_device(a) if backend == "cuda" else a
    for value in range(_filter._PLAN_COUNT + 20):
        got = cuatomic.filter(x, "<", value)
    check_filter(got, a, "<", value, True)
    assert len(_filter._PLANS) == _filter._PLAN_COUNT


@requires_cuda
def test_shared_memory_opt_in_alternating_sizes():
    """A kernel's shared-memory opt-in is one ceiling per GPU: calls that
    need more, less, then more again all launch (the register filter kernel
    with 1024, 512, 1024 threads of int64; the shared histogram with 20000,
    15000, 20000 bins)."""
    a = make(np.int64, 50_000)
    for threads in (1024, 512, 1024, 768):
        got = cuatomic.filter(cuatomic.to_device(a), ">", 0, method="lookback", threads=threads)
        check_filter(got, a, ">", 0, True)
    x = make(np.float64, 40_000)
    for bins in (20_000, 15_000, 20_000):
        counts = cuatomic.histogram(cuatomic.to_device(x), bins, (-300.0, 300.0), method="shared")[0]
        np.testing.assert_array_equal(counts.copy_to_host(), np.histogram(x, bins, (-300.0, 300.0))[0])


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_filter_layouts(backend):
    m = make(np.float64, 30 * 20).reshape(30, 20)
    for a in (m, np.asfortranarray(m), m[::2, 1::3], m.astype(m.dtype.newbyteorder()), m.T):
        check_filter(cuatomic.filter(a, ">", 0.0, backend=backend), a, ">", 0.0, True)
    check_filter(cuatomic.filter([1, 5, 2, 8], ">", 2, backend=backend), np.array([1, 5, 2, 8]), ">", 2, True)


@pytest.mark.parametrize("backend", cuatomic.backends())
@pytest.mark.parametrize("dtype", [">i2", ">i4", ">u8", ">f4", ">f8", "<f8"])
def test_filter_keeps_the_byte_order(backend, dtype):
    # a.ravel()[mask] keeps a's dtype, byte order included: the result used to
    # come back native ('<i4' for a '>i4' array).
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    for method, _, _ in cuatomic.methods("filter", backend):
        got = cuatomic.filter(a, ">", 2, ordered=False, method=method, backend=backend)
        assert got.dtype == a.ravel()[a.ravel() > 2].dtype == np.dtype(dtype), method
        assert sorted(got.tolist()) == list(range(3, 12)), method
    assert cuatomic.filter(a, ">", 100, backend=backend).dtype == np.dtype(dtype)  # nothing kept


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_filter_errors(backend):
    a = np.arange(10)
    with pytest.raises(ValueError, match="unknown op"):
        cuatomic.filter(a, "=~", 3, backend=backend)
    with pytest.raises(ValueError, match="cannot keep input order"):
        cuatomic.filter(a, "<", 3, method="atomic", backend=backend)
    with pytest.raises(ValueError, match="scalar"):
        cuatomic.filter(a, "<", [1, 2], backend=backend)
    with pytest.raises(TypeError):
        cuatomic.filter(a, "<", "three", backend=backend)
    with pytest.raises(TypeError):
        cuatomic.filter(np.array(["a", "b"]), "<", "b", backend=backend)


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_filter_takes_numpys_comparison_ufuncs(backend):
    """op may be NumPy's comparison ufunc (as reduce takes its ufuncs): the
    same result as its string; any other ufunc is a ValueError naming the
    valid ones."""
    a = make(np.int32, 10_001)
    x = cuatomic.to_device(a, backend=backend) if backend == "cuda" else a
    for ufunc, op in ((np.less, "<"), (np.less_equal, "<="), (np.greater, ">"), (np.greater_equal, ">="),
                      (np.equal, "=="), (np.not_equal, "!=")):
        value = int(a[17])
        got = host(cuatomic.filter(x, ufunc, value, backend=backend))
        np.testing.assert_array_equal(got, a[ufunc(a, value)])
        np.testing.assert_array_equal(got, host(cuatomic.filter(x, op, value, backend=backend)))
        assert cuatomic.explain("filter", x, ufunc, value, backend=backend).method == \
            cuatomic.explain("filter", x, op, value, backend=backend).method
    with pytest.raises(ValueError, match=r"unknown op 'add'.*np\.greater"):
        cuatomic.filter(x, np.add, 0, backend=backend)
