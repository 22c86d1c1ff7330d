"""Reductions along axes against NumPy: sum, prod, min, max, reduce and mean
with axis (int, negative, tuple, adjacent or not), keepdims, dtype, out and
initial, on every backend x rung of the segmented ladder x dtype, C,
Fortran and strided layouts and empty axes. Float sums are checked against
the exact sums (math.fsum) and NumPy's own error on the same data, so a
rung that drops a chunk, folds an output's elements from the wrong stride,
or loses the compensation fails."""
import math

import numpy as np
import pytest
from conftest import BACKENDS, CUDA, DLOnly, FakeCAI, host

import cuatomic

NUMPY2 = int(np.__version__.split(".")[0]) >= 2
AxisError = np.exceptions.AxisError if NUMPY2 else np.AxisError
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
SHAPES = [(6,), (3, 4), (5, 1, 7), (2, 3, 4, 5), (33, 257), (257, 33), (4, 0, 3), (2, 3000), (3000, 2)]


def rungs():
    out = []
    for be in BACKENDS:
        for name, _, _ in cuatomic.methods("segmented", be):
            for where in (["host", "device"] if be == "cuda" else ["host"]):
                out.append(pytest.param(be, name, where, id=f"{be}-{name}-{where}"))
        for where in (["host", "device"] if be == "cuda" else ["host"]):
            out.append(pytest.param(be, "auto", where, id=f"{be}-auto-{where}"))
    return out


def data(dtype, shape, seed, op="add"):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        if op == "multiply":  # products that stay far from overflow in the data's own type
            return rng.uniform(0.9, 1.1, shape).astype(dt)
        x = rng.standard_normal(shape).astype(dt) * 100
        if x.size > 3:
            x.flat[2] = -0.0
        return x
    info = np.iinfo(dt)
    lo, hi = (info.min, info.max) if op != "multiply" else (0 if dt.kind == "u" else -3, 3)
    return rng.integers(lo, hi, shape, dtype=dt, endpoint=True)


def axes_of(shape):
    nd = len(shape)
    forms = [0, -1, None]
    if nd >= 2:
        forms += [1, (0, 1), (-1, 0)]
    if nd >= 3:
        forms += [(0, 2), (1, 2), (0, 1, 2)]
    return forms


def placed(a, backend, where):
    return cuatomic.to_device(np.ascontiguousarray(a), backend=backend) if where == "device" else a


def same(got, want):
    got = host(got) if isinstance(got, cuatomic.DeviceArray) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6 if want.dtype.itemsize == 4 else 1e-12, atol=1e-30,
                                   equal_nan=True)
    else:
        assert np.array_equal(got, want)


def near_exact(got, want, x, op, axis, keepdims, naive=False):
    """A float sum within 2 ulps of its value in long double (the rungs fold
    in float64, float add compensated; a product within the m roundings of
    a float64 product): NumPy's own float32 result may be further off, so
    the comparison is with the exact one.
    `naive`: the atomic rung's plain float64 adds, in the atomics' order,
    within the bound of naive summation in float64 (m * 2^-53 of the sum
    of magnitudes along the axis) plus the final rounding."""
    got = host(got) if isinstance(got, cuatomic.DeviceArray) else np.asarray(got)
    assert got.shape == np.shape(want) and got.dtype == np.asarray(want).dtype
    wide = x.astype(np.longdouble)
    ref = getattr(np, op).reduce(wide, axis=axis, keepdims=keepdims)
    ulp = np.spacing(np.abs(ref).astype(got.dtype)).astype(np.longdouble)
    bound = 2 * ulp
    m = x.size // max(ref.size, 1)
    if naive and op == "add":
        bound = bound + m * 2.0**-53 * np.add.reduce(np.abs(wide), axis=axis, keepdims=keepdims)
    if op == "multiply":  # products are not compensated: m roundings in float64, as NumPy's float64 product
        bound = bound + m * 2.0**-53 * np.abs(ref)
    assert np.all(np.abs(got.astype(np.longdouble) - ref) <= bound), np.max(np.abs(got - ref) / ulp)


@pytest.mark.parametrize("backend,method,where", rungs())
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_ufuncs_match_numpy(backend, method, where, dtype):
    dt = np.dtype(dtype)
    ops = ["add", "multiply", "minimum", "maximum"] + (["bitwise_xor", "bitwise_and"] if dt.kind != "f" else [])
    for k, shape in enumerate(SHAPES):
        for op in ops:
            x = data(dtype, shape, k, op)
            d = placed(x, backend, where)
            for axis in axes_of(shape):
                for keepdims in (False, True):
                    if axis is None and not keepdims:
                        continue  # the flat reduce's own ladder (test_reduce)
                    try:
                        want = getattr(np, op).reduce(x, axis=axis, keepdims=keepdims)
                    except ValueError as e:  # minimum/maximum of an empty axis
                        with pytest.raises(ValueError, match="identity"):
                            cuatomic.reduce(d, op, axis, keepdims=keepdims, method=method, backend=backend)
                        assert "identity" in str(e)
                        continue
                    got = cuatomic.reduce(d, op, axis, keepdims=keepdims, method=method, backend=backend)
                    assert isinstance(got, cuatomic.DeviceArray) == (where == "device")
                    if dt.kind == "f" and op in ("add", "multiply"):
                        near_exact(got, want, x, op, axis, keepdims, naive=method == "atomic")
                    else:
                        same(got, want)


@pytest.mark.parametrize("backend,method,where", rungs())
def test_functions_and_options(backend, method, where):
    x = data(np.float64, (4, 5, 6), 1)
    xi = data(np.int32, (4, 5, 6), 2)
    kw = dict(method=method, backend=backend)
    d, di = placed(x, backend, where), placed(xi, backend, where)
    same(cuatomic.sum(d, axis=1, **kw), np.sum(x, axis=1))
    same(cuatomic.sum(di, axis=(0, 2), **kw), np.sum(xi, axis=(0, 2)))
    same(cuatomic.sum(di, axis=0, dtype=np.int8, **kw), np.sum(xi, axis=0, dtype=np.int8))
    if where == "host":
        same(cuatomic.sum(di, axis=2, dtype=np.float32, **kw), np.sum(xi, axis=2, dtype=np.float32))
    else:  # NumPy converts every element first: a device array is not converted behind the caller's back
        with pytest.raises(TypeError, match="cast it before to_device"):
            cuatomic.sum(di, axis=2, dtype=np.float32, **kw)
    same(cuatomic.prod(placed(data(np.float64, (4, 5), 3, "multiply"), backend, where), axis=0, **kw),
         np.prod(data(np.float64, (4, 5), 3, "multiply"), axis=0))
    same(cuatomic.min(di, axis=-1, **kw), np.min(xi, axis=-1))
    same(cuatomic.max(d, axis=(1, 2), keepdims=True, **kw), np.max(x, axis=(1, 2), keepdims=True))
    same(cuatomic.min(di, axis=0, initial=-5, **kw), np.min(xi, axis=0, initial=-5))
    same(cuatomic.sum(di, axis=1, initial=10, **kw), np.sum(xi, axis=1, initial=10))
    same(cuatomic.max(placed(np.zeros((3, 0)), backend, where), axis=1, initial=2.5, **kw),
         np.max(np.zeros((3, 0)), axis=1, initial=2.5))
    same(cuatomic.sum(placed(np.zeros((3, 0)), backend, where), axis=1, **kw), np.sum(np.zeros((3, 0)), axis=1))
    for a in (x, xi, data(np.uint8, (4, 5, 6), 4), data(np.float32, (4, 5, 6), 5)):
        for axis in (0, (1, 2), -1, None):
            same(cuatomic.mean(placed(a, backend, where), axis=axis, **kw), np.mean(a, axis=axis))
    same(cuatomic.mean(di, axis=1, dtype=np.float32, keepdims=True, **kw),
         np.mean(xi, axis=1, dtype=np.float32, keepdims=True))
    same(cuatomic.sum(d, keepdims=True, **kw), np.sum(x, keepdims=True))
    # out=: written in place, in out's dtype
    if where == "host":
        o = np.empty((4, 6), np.float32)
        assert cuatomic.sum(x, axis=1, out=o, **kw) is o
        same(o, np.sum(x, axis=1, out=np.empty((4, 6), np.float32)))
    else:
        o = cuatomic.DeviceArray.empty((4, 6), np.float64)
        assert cuatomic.sum(d, axis=1, out=o, **kw) is o
        same(o, np.sum(x, axis=1))


@pytest.mark.parametrize("backend,method,where", rungs())
def test_long_axes_cut_in_chunks(backend, method, where):
    """Shapes whose axis the rungs cut into chunks or spans (few long rows,
    a long strided axis under few outputs; row lengths that are not a whole
    number of 16-byte vectors, outputs that are not either): every chunk's
    partial folded once, each output from its own elements."""
    shapes = [((3, 70001), 1), ((70001, 3), 0), ((9000, 40), 0), ((40, 9000), 1), ((2, 5000, 9), 1),
              ((5, 4099), 1), ((4099, 8), 0)]
    for k, (shape, axis) in enumerate(shapes):
        for dtype in (np.float32, np.float64, np.int32, np.uint8, np.int16):
            for op in ("add", "minimum", "maximum"):
                x = data(dtype, shape, 100 + k, op)
                got = cuatomic.reduce(placed(x, backend, where), op, axis, method=method, backend=backend)
                want = getattr(np, op).reduce(x, axis=axis)
                if np.dtype(dtype).kind == "f" and op == "add":
                    near_exact(got, want, x, op, axis, False, naive=method == "atomic")
                else:
                    same(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_layouts(backend):
    x = data(np.float64, (40, 30, 20), 7)
    for a in (np.asfortranarray(x), x[::2, :, 1::3], x[:, ::-1], x.astype(x.dtype.newbyteorder())):
        for axis in (0, 1, 2, (0, 2)):
            same(cuatomic.sum(a, axis=axis, backend=backend), np.sum(a, axis=axis))
            same(cuatomic.max(a, axis=axis, backend=backend), np.max(a, axis=axis))


@pytest.mark.parametrize("backend,method,where", [p for p in rungs() if p.values[1] != "atomic"])
def test_float_sums_accurate_and_deterministic(backend, method, where):
    """Each output within NumPy's own error of the exact sum (or 2 ulps), and
    the same bits on a second call."""
    rng = np.random.default_rng(11)
    for dt in (np.float32, np.float64):
        x = (rng.standard_normal((64, 3001)) * np.exp(rng.uniform(-8, 8, (64, 3001)))).astype(dt)
        for axis in (0, 1):
            got = host(cuatomic.sum(placed(x, backend, where), axis=axis, method=method, backend=backend))
            again = host(cuatomic.sum(placed(x, backend, where), axis=axis, method=method, backend=backend))
            assert np.array_equal(got, again)
            ref = np.sum(x, axis=axis)
            cols = x.T if axis == 0 else x
            exact = np.array([math.fsum(map(float, c)) for c in cols])
            ulp = np.spacing(np.abs(exact).astype(dt)).astype(np.float64)
            err, np_err = np.abs(got - exact), np.abs(ref.astype(np.float64) - exact)
            assert np.all(err <= np.maximum(np_err, 2 * ulp)), (dt, axis, (err / ulp).max(), (np_err / ulp).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors(backend):
    x = np.ones((3, 4))
    with pytest.raises(AxisError):
        cuatomic.sum(x, axis=2, backend=backend)
    with pytest.raises(ValueError, match="duplicate|repeated"):
        cuatomic.sum(x, axis=(0, 0), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.reduce(x, "bitwise_or", axis=0, backend=backend)
    with pytest.raises(ValueError, match="identity"):
        cuatomic.min(np.zeros((0, 3)), axis=0, backend=backend)
    with pytest.raises(ValueError, match="shape"):
        cuatomic.sum(x, axis=0, out=np.empty(3), backend=backend)
    with pytest.raises(ValueError, match="method"):
        cuatomic.sum(x, axis=0, method="exact", backend=backend)  # the flat sum's rung, not the axis ladder's
    with pytest.raises(TypeError):
        cuatomic.sum(np.ma.masked_array(x), axis=0, backend=backend)
    for bad in (True, [0], 1.0, (0, True), (np.bool_(False),)):  # NumPy's TypeErrors, not an int or an iterable
        with pytest.raises(TypeError, match="integer"):
            cuatomic.sum(x, axis=bad, backend=backend)
    assert cuatomic.sum(x, axis=np.int64(1), backend=backend).shape == (3,)


def test_backends_agree():
    if not CUDA:
        pytest.skip("one backend")
    x = data(np.float32, (300, 500), 9)
    for axis in (0, 1):
        assert np.array_equal(cuatomic.sum(x, axis=axis, backend="cpu"), cuatomic.sum(x, axis=axis, backend="cuda"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_review_semantics(backend):
    """Found by a cold review: out= receives the fold of NumPy's result type,
    cast (not a fold in out's type); initial is the result type's value,
    folded in after the cast, with NumPy's refusals; mean(dtype=int)
    converts every element first and sums in that type; min/max of an empty
    axis raise even with no outputs; a 0-d array takes axis=0."""
    kw = dict(backend=backend)
    o = np.zeros((), np.int8)
    cuatomic.min(np.array([1, 255], np.uint8), axis=0, out=o, **kw)
    assert o == np.min(np.array([1, 255], np.uint8), axis=0, out=np.zeros((), np.int8)) == 1
    o = np.zeros((), np.int64)
    cuatomic.sum(np.array([1.5, 2.5]), axis=0, out=o, **kw)
    assert o == 4
    o = np.zeros((), np.float32)
    cuatomic.sum(np.array([1e8 + 1, -1e8]), axis=0, out=o, **kw)
    assert o == 1.0
    same(cuatomic.reduce(np.array([3, 200], np.uint8), "minimum", 0, dtype=np.int16, initial=-1, **kw),
         np.minimum.reduce(np.array([3, 200], np.uint8), 0, dtype=np.int16, initial=-1))
    same(cuatomic.max(np.array([False]), axis=0, initial=0.5, **kw), np.max(np.array([False]), axis=0, initial=0.5))
    with pytest.raises(OverflowError):
        cuatomic.max(np.array([1, 2], np.uint8), axis=0, initial=-5, **kw)
    with pytest.raises(ValueError):
        cuatomic.min(np.array([1, 2]), axis=0, initial=np.nan, **kw)
    with pytest.raises(ValueError):
        cuatomic.min(np.array([1, 2]), axis=0, initial=[1, 2], **kw)
    same(cuatomic.mean(np.array([0.5, 1.5]), dtype=np.int64, **kw), np.mean(np.array([0.5, 1.5]), dtype=np.int64))
    same(cuatomic.mean(np.array([100, 100], np.int8), axis=0, dtype=np.int8, **kw),
         np.mean(np.array([100, 100], np.int8), axis=0, dtype=np.int8))
    with pytest.raises(TypeError):
        cuatomic.mean(np.ones(3), dtype="U5", **kw)
    with pytest.raises(ValueError, match="identity"):
        cuatomic.min(np.zeros((0, 0)), axis=0, **kw)
    same(cuatomic.sum(np.array(3.0), axis=0, **kw), np.sum(np.array(3.0), axis=0))
    with pytest.raises(TypeError):
        cuatomic.sum(np.ones((2, 2)), axis=0, out=[0, 0], **kw)
    if backend == "cuda":
        got = cuatomic.mean(cuatomic.to_device(np.zeros((3, 0), np.float32)), axis=1)
        assert np.all(np.isnan(got.copy_to_host())) and got.dtype == np.float32
        d = cuatomic.to_device(np.array([[3, 200], [7, 9]], np.uint8))
        same(cuatomic.reduce(d, "minimum", 1, dtype=np.int16, initial=-1),
             np.minimum.reduce(np.array([[3, 200], [7, 9]], np.uint8), 1, dtype=np.int16, initial=-1))
        out = cuatomic.DeviceArray.empty((2,), np.int8)
        cuatomic.min(d, axis=1, initial=5, out=out)
        assert np.array_equal(out.copy_to_host(), np.min(np.array([[3, 200], [7, 9]], np.uint8), axis=1, initial=5))


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_call_plan(backend, monkeypatch):
    """A repeated call (an axis, keepdims and method only) goes straight to
    the core with its first call's plan: every call still reduces its own
    data, of its own shape, along its own axes, with its own op -- on
    NumPy arrays, DeviceArrays and other libraries' device arrays; and a
    call the plan cannot serve (a transposition, a cast, out=) is not
    planned yet agrees with NumPy."""
    from cuatomic import _axis
    monkeypatch.setenv("CUATOMIC_BACKEND", backend)
    _axis._PLANS.clear()
    wrap = [lambda x: x]
    if backend == "cuda":
        wrap += [lambda x: cuatomic.to_device(x), lambda x: FakeCAI(cuatomic.to_device(x))]
    cases = [((40, 30), 0, False), ((40, 30), 0, False), ((40, 30), 1, True), ((30, 40), 0, False),
             ((4, 5, 6), (1, 2), False), ((4, 5, 6), (0, 1), True), ((4, 5, 6), None, False), ((4, 5, 6), -1, False),
             ((7,), 0, False), ((0, 3), 0, False), ((3, 0), 1, False), ((), None, False)]
    for k, (shape, axis, keepdims) in enumerate(cases * 2):
        for dtype in (np.float32, np.int32, np.uint8, np.float64):
            # (small integers: every sum exact, in any order, in float32 too)
            x = np.random.default_rng(300 + k).integers(0 if dtype == np.uint8 else -100, 100, shape).astype(dtype)
            for w in wrap:
                for name, want in (("sum", np.sum), ("max", np.max), ("mean", np.mean), ("min", np.min)):
                    if name in ("max", "min") and x.size == 0:
                        continue
                    fn = getattr(cuatomic, name)
                    got = fn(w(x), axis=axis, keepdims=keepdims)
                    ref = want(x, axis=axis, keepdims=keepdims)
                    if name == "mean" and x.size == 0:
                        assert host(got).shape == np.shape(ref) and np.all(np.isnan(host(got)))
                    else:
                        same(got, ref)
                    # (axis=None without keepdims is the flat ladder's call but for mean: a NumPy scalar)
                    flat = axis is None and not keepdims and name != "mean"
                    assert isinstance(got, cuatomic.DeviceArray) == (w is not wrap[0] and not flat)
                    assert cuatomic.last_launch()["backend"] == backend
    assert len(_axis._PLANS) >= 1
    planned = len(_axis._PLANS)
    # not planned: a non-adjacent pair of axes (transposed first), a cast of the input, out=
    x = data(np.float32, (4, 5, 6), 9)
    same(cuatomic.sum(x, axis=(0, 2)), np.sum(x, axis=(0, 2)))
    same(cuatomic.sum(x.astype(np.int8), axis=1, dtype=np.int16), np.sum(x.astype(np.int8), axis=1, dtype=np.int16))
    o = np.empty((5, 6), np.float64)
    assert cuatomic.sum(x, axis=0, out=o) is o
    same(o, np.sum(x, axis=0, out=np.empty((5, 6), np.float64)))  # (NumPy folds float32 into float64 out= in float64)
    assert len(_axis._PLANS) == planned
    # a named rung is planned too, and runs
    for method in [m for m, _, _ in cuatomic.methods("segmented", backend)]:
        for _ in range(2):
            same(cuatomic.max(x, axis=1, method=method), np.max(x, axis=1))
            assert cuatomic.last_launch()["method"] == method


@pytest.mark.parametrize("backend,where", [(b, w) for b in BACKENDS for w in (["host", "device"] if b == "cuda"
                                                                              else ["host"])])
def test_out_of_another_dtype(backend, where):
    """out= of another dtype receives the fold's value cast once, as NumPy's
    promotion of its result type and out's: a float32 sum into float64 out
    in float64, a negative int32 sum into float32 out as the negative sum
    (not its wrapping 64 bits read unsigned), an int8 maximum into int64."""
    rng = np.random.default_rng(21)
    cases = [(rng.standard_normal((300, 7)).astype(np.float32) * 100, np.float64, "add"),
             (rng.integers(-1000, 10, (300, 7)).astype(np.int32), np.float32, "add"),
             (rng.integers(-1000, 10, (300, 7)).astype(np.int32), np.float64, "add"),
             (rng.integers(-3, 2, (20, 7)).astype(np.int16), np.float64, "multiply"),
             (rng.integers(-128, 127, (300, 7)).astype(np.int8), np.int64, "maximum"),
             (rng.standard_normal((300, 7)) * 1e3, np.int64, "add"),
             (rng.standard_normal((300, 7)), np.bool_, "minimum"),
             # float32 data into an int8 out: NumPy folds in float32, which rounds 2 + 0.99999994 up to 3
             (np.array([[2.0] * 7, [0.99999994] * 7], np.float32), np.int8, "add"),
             (rng.integers(0, 2**32, (300, 7), dtype=np.uint64).astype(np.uint32), np.int8, "add"),
             (rng.integers(-128, 127, (300, 7)).astype(np.int8), np.int16, "minimum")]
    for x, odt, op in cases:
        want = getattr(np, op).reduce(x, axis=0, out=np.zeros(7, odt))
        if where == "device":
            o = cuatomic.DeviceArray.empty((7,), odt)
            assert cuatomic.reduce(cuatomic.to_device(x), op, 0, out=o) is o
            got = o.copy_to_host()
        else:
            o = np.zeros(7, odt)
            assert cuatomic.reduce(x, op, 0, out=o, backend=backend) is o
            got = o
        if np.dtype(odt).kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-12 if odt == np.float64 else 1e-6)
        else:
            assert np.array_equal(got, want), (x.dtype, odt, op, got, want)
    # initial and mean into a wider out fold in out's precision too, as NumPy's
    thirds, apart = np.full((3, 7), 1 / 3, np.float32), np.array([[1.0] * 7, [2.0**-30] * 7], np.float32)
    kw = {} if where == "device" else {"backend": backend}
    for x, call, want in ((thirds, lambda d, o: cuatomic.sum(d, axis=0, out=o, initial=0.0, **kw),
                           np.sum(thirds, axis=0, out=np.zeros(7), initial=0.0)),
                          (apart, lambda d, o: cuatomic.mean(d, axis=0, out=o, **kw),
                           np.mean(apart, axis=0, out=np.zeros(7)))):
        if where == "device":
            o = cuatomic.DeviceArray.empty((7,), np.float64)
            call(cuatomic.to_device(x), o)
            got = o.copy_to_host()
        else:
            got = np.zeros(7)
            call(x, got)
        np.testing.assert_allclose(got, want, rtol=1e-15)
        assert not np.array_equal(got, want.astype(np.float32).astype(np.float64))  # (not rounded to float32 first)


@pytest.mark.parametrize("backend", BACKENDS)
def test_interface_only_arrays_keep_their_shape(backend):
    """An array known only by __cuda_array_interface__ or only by DLPack
    (no .shape) is reduced along its own axes -- not read as a 0-d object
    array, which summed it whole (or to 0.0) -- by sum, mean, argmin and
    nonzero alike."""
    a = np.arange(12.0).reshape(3, 4) - 5
    wraps = [DLOnly(a)]
    if backend == "cuda":
        d = cuatomic.to_device(a)
        wraps += [FakeCAI(d), DLOnly(d)]
    for w in wraps:
        same(cuatomic.sum(w, axis=0, backend=backend), np.sum(a, axis=0))
        same(cuatomic.mean(w, axis=1, backend=backend), np.mean(a, axis=1))
        assert np.array_equal(host(cuatomic.argmin(w, axis=1, backend=backend)), np.argmin(a, axis=1))
        got = cuatomic.nonzero(w, backend=backend)
        assert len(got) == 2 and all(np.array_equal(host(g), e) for g, e in zip(got, np.nonzero(a)))
