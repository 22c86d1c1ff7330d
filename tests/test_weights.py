"""Weighted histograms and bincount against NumPy: every rung of the
weighted ladder on every backend, host and device input.

Float weights are summed with atomics in arrival order, so a bin's float64
sum is held to the order-free bound gamma(k - 1) * sum|w| of its k weights
against the exact sum (math.fsum), not to NumPy's bits; integer weights
must match exactly (with NumPy's wrap-around)."""
import math

import numpy as np
import pytest

import cuatomic
from cuatomic import _C

from conftest import BACKENDS, bincount_refusal, host, placed, where_params

WEIGHTED = where_params("weighted_histogram")


def exact_bins(x, w, edges):
    """Per bin: the exact sum of its weights (fsum) and the sum of |w|, with
    NumPy's binning (np.histogram with one weight at a time)."""
    idx = np.searchsorted(edges, x, side="right") - 1
    idx[x == edges[-1]] = edges.size - 2  # the last bin is closed
    keep = (x >= edges[0]) & (x <= edges[-1])
    sums, mags = [], []
    for b in range(edges.size - 1):
        ws = [float(v) for v in w[keep & (idx == b)]]
        sums.append(math.fsum(ws))
        mags.append((len(ws), math.fsum(abs(v) for v in ws)))
    return np.array(sums), mags


def check_float_bins(got, x, w, edges, what):
    exact, mags = exact_bins(x, w, edges)
    u = np.finfo(np.float64).eps / 2  # the unit roundoff
    for b, (g, e, (k, mag)) in enumerate(zip(got, exact, mags)):
        bound = ((k - 1) * u / (1 - (k - 1) * u)) * mag if k > 1 else 0.0  # gamma(k - 1) sum|w|
        assert abs(float(g) - e) <= bound, f"{what}: bin {b}: {g!r} vs exact {e!r} (k={k}, bound {bound:.3g})"


@pytest.mark.parametrize("backend,method,where", WEIGHTED)
@pytest.mark.parametrize("dt", [np.uint8, np.int32, np.float32, np.float64])
def test_weighted_histogram_matches_numpy(backend, method, where, dt):
    rng = np.random.default_rng(np.dtype(dt).num)
    n = 20_011
    x = (rng.integers(0, 200, n) if np.dtype(dt).kind in "iu" else rng.standard_normal(n) * 40).astype(dt)
    w = rng.standard_normal(n)
    for bins, rng_ in ((37, None), (128, (0, 128)), (np.array([-50.0, -3.0, 0.0, 2.5, 120.0]), None)):
        want, edges = np.histogram(x, bins, rng_, weights=w)
        got, got_edges = cuatomic.histogram(placed(x, backend, where), bins, rng_, weights=placed(w, backend, where),
                                            method=method, backend=backend)
        assert cuatomic.last_launch()["method"] == method
        got = host(got)
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got_edges, edges)
        # a weight in a wrong bin moves a whole weight: far past the bound
        check_float_bins(got, x.astype(np.float64), w, edges.astype(np.float64), f"{method} {dt.__name__} {bins!r}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("wdt", [">f8", ">f4", ">i2", ">i8", ">u4", "<f8", "u1"])
@pytest.mark.parametrize("bins", [3, np.int64(3), [0, 1, 3], [0.5], np.array([0.0, 2.0, 4.0], ">f8")],
                         ids=["count", "numpy-count", "edges", "one-edge", "big-endian-edges"])
def test_weighted_result_dtype_is_numpy_s_byte_order_included(backend, wdt, bins):
    # NumPy keeps big-endian weights' dtype for a bin count and gives native
    # sums for explicit edges (a cumulative sum): '>f8' edges used to stay '>f8'.
    x, w = np.arange(5.0), np.arange(5, dtype=wdt)
    for density in (False, True):
        want, want_edges = np.histogram(x, bins, weights=w, density=density)
        for method, _, _ in cuatomic.methods("weighted_histogram", backend):
            got, edges = cuatomic.histogram(x, bins, weights=w, density=density, method=method, backend=backend)
            assert got.dtype == want.dtype and edges.dtype == want_edges.dtype, (method, density, got.dtype)
            assert np.array_equal(got, want) and np.array_equal(edges, want_edges), (method, density)


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_weights_are_exact_and_keep_numpy_dtype(backend):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 64, 50_000).astype(np.int32)
    for wdt in (np.int8, np.int64, np.uint32, np.bool_):
        w = rng.integers(-100 if np.dtype(wdt).kind == "i" else 0, 100, x.size).astype(wdt)
        want, _ = np.histogram(x, 16, (0, 64), weights=w)
        for method, _, _ in cuatomic.methods("weighted_histogram", backend):
            got, _ = cuatomic.histogram(x, 16, (0, 64), weights=w, method=method, backend=backend)
            assert got.dtype == want.dtype and np.array_equal(got, want), (wdt, method)
    # int64 weights wrap as NumPy's do with explicit edges (its sorted
    # cumulative sums in int64; NumPy's equal-width path goes through float64)
    big = np.full(x.size, np.iinfo(np.int64).max // 7, np.int64)
    edges = np.array([0, 16, 32, 48, 64])
    want, _ = np.histogram(x, edges, weights=big)
    exact = [(int(np.count_nonzero((x >= lo) & (x < hi) if hi < 64 else (x >= lo))) * int(big[0]) + 2**63) % 2**64
             - 2**63 for lo, hi in zip(edges[:-1], edges[1:])]
    assert want.tolist() == exact
    assert np.array_equal(cuatomic.histogram(x, edges, weights=big, backend=backend)[0], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_spread_then_skewed_data_exact_with_integer_weights(backend):
    # warp_private groups a warp's lanes by bin only where bins repeat: spread
    # data (1,000 bins hit at random) takes the lane-by-lane path, runs of one
    # value and a two-value period (every lane of a warp on one of two bins)
    # the grouped one; each warp meets all three. Integer weights: exact.
    rng = np.random.default_rng(5)
    n = 1 << 16
    x = np.concatenate([rng.integers(0, 1000, n), np.full(n, 7), np.tile([3, 900], n // 2)]).astype(np.int32)
    w = rng.integers(-1000, 1000, x.size)
    want = np.bincount(x, w.astype(np.float64)).astype(np.int64)  # |sums| < 2^53: exact in float64
    for method, _, _ in cuatomic.methods("weighted_histogram", backend):
        got, _ = cuatomic.histogram(x, 1000, (0, 1000), weights=w, method=method, backend=backend)
        assert got.dtype == np.int64 and np.array_equal(got, want), method


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_weights_and_density(backend):
    rng = np.random.default_rng(4)
    x = rng.random(10_000)
    w = rng.random(10_000).astype(np.float32)
    want, _ = np.histogram(x, 20, weights=w)
    got, _ = cuatomic.histogram(x, 20, weights=w, backend=backend)
    assert got.dtype == np.float32 and np.allclose(got, want, rtol=1e-6)
    want, _ = np.histogram(x, 20, weights=w, density=True)
    got, _ = cuatomic.histogram(x, 20, weights=w, density=True, backend=backend)
    assert got.dtype == want.dtype and np.allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_weighted_nan_and_outside_values_are_dropped(backend):
    x = np.array([0.5, np.nan, 1.5, -4.0, 9.0, 2.0])
    w = np.array([1.0, 100.0, 2.0, 100.0, 100.0, 4.0])
    got, _ = cuatomic.histogram(x, 2, (0, 2), weights=w, backend=backend)
    assert np.array_equal(got, [1.0, 6.0])  # 2.0 is in the closed last bin


@pytest.mark.parametrize("backend", BACKENDS)
def test_weighted_histogram_refusals(backend):
    x = np.arange(10.0)
    with pytest.raises(ValueError):
        cuatomic.histogram(x, 3, weights=np.ones(9), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogram(x, 3, weights=np.array(["a"] * 10), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogram(x, "auto", weights=np.ones(10), backend=backend)
    with pytest.raises(ValueError, match="warp_private"):  # no weighted twin: the error names the ladder
        cuatomic.histogram(x, 3, weights=np.ones(10), method="thread_counters", backend=backend)
    if backend == "cuda":
        with pytest.raises(TypeError):  # weights not where the data is
            cuatomic.histogram(cuatomic.to_device(x), 3, weights=np.ones(10), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_bincount_matches_numpy(backend, where):
    if where == "device" and backend != "cuda":
        pytest.skip("device input needs the cuda backend")
    rng = np.random.default_rng(5)
    for dt in (np.uint8, np.int32, np.int64, np.bool_):
        x = rng.integers(0, 2 if dt is np.bool_ else 300, 30_001).astype(dt)
        for method, _, _ in cuatomic.methods("histogram", backend):
            if bincount_refusal(x, method=method, backend=backend):  # the rung's limits: it must say so
                with pytest.raises(ValueError, match=f"method '{method}'"):
                    cuatomic.bincount(placed(x, backend, where), method=method, backend=backend)
                continue
            got = host(cuatomic.bincount(placed(x, backend, where), method=method, backend=backend))
            want = np.bincount(x)
            assert got.dtype == want.dtype and np.array_equal(got, want), (dt, method)
        w = rng.standard_normal(x.size)
        for method, _, _ in cuatomic.methods("weighted_histogram", backend):
            got = host(cuatomic.bincount(placed(x, backend, where), placed(w, backend, where), method=method,
                                         backend=backend))
            want = np.bincount(x, w)
            assert got.dtype == want.dtype and got.shape == want.shape, (dt, method)
            check_float_bins(got, x.astype(np.float64), w, np.arange(want.size + 1, dtype=np.float64),
                             f"bincount {method} {dt.__name__}")
        got = host(cuatomic.bincount(placed(x, backend, where), minlength=1000, backend=backend))
        assert np.array_equal(got, np.bincount(x, minlength=1000))
    empty = np.zeros(0, np.int64)
    assert np.array_equal(host(cuatomic.bincount(placed(empty, backend, where), minlength=3, backend=backend)),
                          np.bincount(empty, minlength=3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_bincount_refusals(backend):
    for bad, kind in ((np.array([1, -1, 2]), ValueError), (np.ones((2, 2), np.int64), ValueError),
                      (np.array([0.5, 1.0]), TypeError)):
        with pytest.raises(kind):
            np.bincount(bad)
        with pytest.raises(kind):
            cuatomic.bincount(bad, backend=backend)
    with pytest.raises(ValueError):
        cuatomic.bincount(np.arange(3), minlength=-1, backend=backend)
    with pytest.raises(ValueError):
        cuatomic.bincount(np.arange(3), weights=np.ones(4), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bincount_past_memory_says_what_bincount_needs(backend):
    # It spoke of "bins=...: the edges and counts" (a histogram's words);
    # bincount's are the largest value, or minlength, and one bin per value.
    for kwargs in ({}, {"weights": [1.0]}):
        with pytest.raises(ValueError, match=r"^the largest value of x, 1099511627776, asks for 1099511627777 bins, "
                                             r"one for each value from 0: they need \d+ bytes, more than this "
                                             r"machine's memory .*; x may hold values up to \d+$"):
            cuatomic.bincount(np.array([2**40]), backend=backend, **kwargs)
    with pytest.raises(ValueError, match=r"^minlength=1099511627776 asks for 1099511627776 bins: they need \d+ "
                                         r"bytes.*; minlength may be at most \d+$"):
        cuatomic.bincount(np.array([2]), minlength=2**40, backend=backend)
    with pytest.raises(ValueError, match=r"largest value of x, 1099511627776"):
        cuatomic.explain("bincount", np.array([2**40]), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_explain_weighted_and_bincount(backend):
    x = np.arange(1000) % 50
    c = cuatomic.explain("histogram", x, 50, weights=np.ones(1000), backend=backend)
    assert c.op == "weighted_histogram" and c.method in [n for n, _, _ in cuatomic.methods("weighted_histogram", backend)]
    assert not c.rung.has(_C.F_RACY)
    got = cuatomic.histogram(x, 50, weights=np.ones(1000), backend=backend)[0]
    assert cuatomic.last_launch()["method"] == c.method and np.array_equal(got, np.full(50, 20.0))
    b = cuatomic.explain("bincount", x, backend=backend)
    cuatomic.bincount(x, backend=backend)
    assert cuatomic.last_launch()["method"] == b.method
