import math

import numpy as np
import pytest
from conftest import DTYPES, SIZES, assert_float_close, is_wide, make, placed, requires_cuda, where_params

import cuatomic


def check_sum(got, a, dtype=None, wide=True):
    ref = np.sum(a, dtype=dtype)
    assert type(got) is type(ref), (type(got), type(ref))
    assert got.dtype == ref.dtype
    if ref.dtype.kind == "f":
        x = np.asarray(a, dtype=ref.dtype).astype(np.float64).ravel()
        assert_float_close(got, math.fsum(x), ref, ref.dtype, wide=wide, n=x.size, abs_sum=float(np.abs(x).sum()))
    else:
        assert got == ref


@pytest.mark.parametrize("backend,method,where", where_params("sum"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_sum_matches_numpy(backend, method, where, dtype, n):
    a = make(dtype, n)
    check_sum(cuatomic.sum(placed(a, backend, where), method=method, backend=backend), a,
              wide=is_wide("sum", backend, method))


@pytest.mark.parametrize("backend,method,where", where_params("sum"))
@pytest.mark.parametrize("kind", ["skewed", "one"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_sum_entropy(backend, method, where, kind, dtype):
    a = make(dtype, 100_003, kind)
    check_sum(cuatomic.sum(placed(a, backend, where), method=method, backend=backend), a,
              wide=is_wide("sum", backend, method))


@pytest.mark.parametrize("backend,method,where", where_params("sum"))
def test_sum_int32_does_not_overflow(backend, method, where):
    a = np.full(70_000, 2**31 - 1, dtype=np.int32)  # the sum needs 48 bits
    got = cuatomic.sum(placed(a, backend, where), method=method, backend=backend)
    assert got == np.int64(70_000) * (2**31 - 1) and got.dtype == np.int64


@pytest.mark.parametrize("backend,method,where", where_params("sum"))
@pytest.mark.parametrize("blocks,threads", [(1, 1), (3, 37), (7, 64), (64, 1024)])
def test_sum_launch_configs(backend, method, where, blocks, threads):
    a = make(np.int64, 50_001)
    try:
        got = cuatomic.sum(placed(a, backend, where), method=method, backend=backend, blocks=blocks, threads=threads)
    except ValueError as e:  # a barrier rung may refuse a grid that cannot be resident
        assert "resident" in str(e)
        return
    assert got == np.sum(a)


@pytest.mark.parametrize("backend", cuatomic.backends())
@pytest.mark.parametrize("dtype,src", [
    (np.float64, np.float32), (np.float32, np.float64), (np.int32, np.int16), (np.uint8, np.int32),
    (np.float64, np.int32), (np.int64, np.float64), (np.bool_, np.int32), (np.int8, np.uint8),
])
def test_sum_dtype_argument(backend, dtype, src):
    a = make(src, 10_007)
    if np.dtype(src).kind == "f" and np.dtype(dtype).kind in "iu":
        a = (a / 7).round()  # keep the float -> int casts defined
    check_sum(cuatomic.sum(a, dtype=dtype, backend=backend), a, dtype=dtype)


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_sum_layouts(backend):
    base = make(np.int32, 60 * 40).reshape(60, 40)
    fortran = np.asfortranarray(base)
    swapped = base.astype(base.dtype.newbyteorder())
    readonly = base.copy()
    readonly.flags.writeable = False
    for a in (base, fortran, base[::3, 1::2], base.T, swapped, readonly, base[5]):
        assert cuatomic.sum(a, backend=backend) == np.sum(a)
    assert cuatomic.sum([1, 2, 3], backend=backend) == 6
    assert cuatomic.sum(np.float64(2.5), backend=backend) == 2.5


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_sum_nan_and_inf_propagate(backend):
    a = np.array([1.0, np.nan, 2.0])
    for m, _, _ in cuatomic.methods("sum", backend):
        assert np.isnan(cuatomic.sum(a, method=m, backend=backend))
        assert cuatomic.sum(np.array([1.0, np.inf]), method=m, backend=backend) == np.inf


@requires_cuda
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_sum_device_array_repeated_call_plan(dtype):
    """A repeated sum of a DeviceArray goes straight to the core (its plan is
    kept after the first call) and still sums each call's own data."""
    from cuatomic import _reduce
    _reduce._PLANS.clear()
    rng = np.random.default_rng(5)
    for n in (1024, 1024, 1000, 4099):
        a = (rng.standard_normal(n) * 100).astype(dtype)
        got = cuatomic.sum(cuatomic.to_device(a, backend="cuda"))
        want = np.sum(a)
        assert type(got) is type(want)
        if np.dtype(dtype).kind == "f":  # the documented bound: twice NumPy's error or two ulps
            assert_float_close(got, math.fsum(a.astype(np.float64)), want, dtype)
        else:
            assert got == want
    assert any(key[1] is cuatomic.DeviceArray for key in _reduce._PLANS)
