import math

import numpy as np
import pytest
from conftest import BACKENDS, DTYPES, SIZES, assert_float_close, is_wide, make, placed, where_params

from cuatomic._exact import exact_dot

import cuatomic


def check_dot(got, a, b, wide=True):
    ref = np.dot(a, b)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    if ref.dtype.kind == "f":
        x, y = a.astype(ref.dtype), b.astype(ref.dtype)
        p = x.astype(np.float64) * y.astype(np.float64)
        # NumPy's error: np.sum(a * b), its pairwise sum of the products
        # (np.dot of float32 is often less accurate).
        assert_float_close(got, exact_dot(x, y), np.sum(x * y), ref.dtype, wide=wide, n=p.size,
                           abs_sum=float(np.abs(p).sum()))
    else:
        assert got == ref, (got, ref)


@pytest.mark.parametrize("backend,method,where", where_params("dot"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_dot_matches_numpy(backend, method, where, dtype, n):
    a, b = make(dtype, n, seed=1), make(dtype, n, seed=2)
    got = cuatomic.dot(placed(a, backend, where), placed(b, backend, where), method=method, backend=backend)
    check_dot(got, a, b, wide=is_wide("dot", backend, method))


@pytest.mark.parametrize("backend,method,where", where_params("dot"))
@pytest.mark.parametrize("kind", ["skewed", "one"])
def test_dot_entropy(backend, method, where, kind):
    a, b = make(np.float32, 65_537, kind, seed=3), make(np.float32, 65_537, kind, seed=4)
    check_dot(cuatomic.dot(placed(a, backend, where), placed(b, backend, where), method=method, backend=backend), a, b,
              wide=is_wide("dot", backend, method))


@pytest.mark.parametrize("backend,method,where", where_params("dot"))
def test_dot_int32_wraps_like_numpy(backend, method, where):
    a = np.full(1000, 2**20, dtype=np.int32)
    got = cuatomic.dot(placed(a, backend, where), placed(a, backend, where), method=method, backend=backend)
    assert got.dtype == np.int32 and got == np.dot(a, a)


@pytest.mark.parametrize("backend,method,where", where_params("dot"))
def test_dot_nan_cannot_hang(backend, method, where):
    a = np.ones(10_000, np.float64)
    a[1234] = np.nan
    assert np.isnan(cuatomic.dot(placed(a, backend, where), placed(a, backend, where), method=method, backend=backend))


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_dot_mixed_dtypes_and_layouts(backend):
    a, b = make(np.int8, 999, seed=5), make(np.uint8, 999, seed=6)
    check_dot(cuatomic.dot(a, b, backend=backend), a, b)
    x, y = make(np.float32, 500, seed=7), make(np.float64, 500, seed=8)
    check_dot(cuatomic.dot(x, y, backend=backend), x, y)
    m = make(np.int64, 40 * 30, seed=9).reshape(40, 30)
    col, row = m[:30, 3], m[7]  # a strided column and a row
    check_dot(cuatomic.dot(col, row, backend=backend), col, row)
    swapped = row.astype(row.dtype.newbyteorder())
    check_dot(cuatomic.dot(swapped, row, backend=backend), swapped, row)


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_dot_shape_errors(backend):
    with pytest.raises(ValueError, match="not aligned"):
        cuatomic.dot(np.ones(3), np.ones(4), backend=backend)
    with pytest.raises(ValueError, match="1-D"):
        cuatomic.dot(np.ones((2, 2)), np.ones((2, 2)), backend=backend)


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_dot_repeated_call_plan(backend, monkeypatch):
    """A repeated dot of two 1-D arrays read as they are goes straight to the
    core (a plan is kept after the first call), and still multiplies each
    call's own data; calls the plan does not fit (other lengths, 2-D,
    other dtypes, a strided view) take the full path and its checks."""
    from cuatomic import _reduce
    monkeypatch.setenv("CUATOMIC_BACKEND", backend)
    _reduce._DOT_PLANS.clear()
    place = (lambda v: cuatomic.to_device(v)) if backend == "cuda" else (lambda v: v)
    for dtype in (np.int32, np.float32, np.float64):
        for n, seed in ((1024, 1), (1024, 2), (1000, 3), (4099, 4), (0, 5)):
            a, b = make(dtype, n, seed=seed), make(dtype, n, seed=seed + 100)
            check_dot(cuatomic.dot(place(a), place(b)), a, b)
    kinds = {key[0] for key in _reduce._DOT_PLANS}
    assert kinds == {cuatomic.DeviceArray if backend == "cuda" else np.ndarray}
    a, b = make(np.float32, 1024, seed=7), make(np.float32, 1024, seed=8)
    with pytest.raises(ValueError, match="not aligned"):
        cuatomic.dot(place(a), place(b[:1000]))
    with pytest.raises(ValueError, match="1-D"):
        cuatomic.dot(place(a.reshape(32, 32)), place(b.reshape(32, 32)))
    if backend == "cpu":
        check_dot(cuatomic.dot(a, b.astype(np.float64)), a, b.astype(np.float64))  # promoted as NumPy
        check_dot(cuatomic.dot(a[::2], b[::2]), a[::2], b[::2])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dot_of_matrices_names_matmul(backend):
    """dot is the vector lesson: a matrix is a ValueError that says where
    matrix products live, not NumPy's 2-D dot done some other way."""
    m = np.ones((3, 3), np.float32)
    with pytest.raises(ValueError, match=r"1-D vectors \(got a of 2-D and b of 2-D\).*np\.matmul"):
        cuatomic.dot(m, m, backend=backend)
    with pytest.raises(ValueError, match=r"np\.matmul"):
        cuatomic.dot(np.ones(3, np.float32), m, backend=backend)
