import numpy as np
import pytest
from conftest import CUDA, DTYPES, REFUSED, SIZES, hist_call, host, make, placed, requires_cuda, where_params

import cuatomic
from cuatomic.datasets import english_like_text, text_to_array


def check_hist(got, a, *args, **kwargs):
    """got is NumPy's histogram of a, or REFUSED (hist_call checked the refusal)."""
    if got is REFUSED:
        return
    hist, edges = got
    ref_hist, ref_edges = np.histogram(a, *args, **kwargs)
    hist = host(hist)
    assert hist.dtype == ref_hist.dtype and edges.dtype == ref_edges.dtype
    np.testing.assert_array_equal(edges, ref_edges)
    np.testing.assert_array_equal(hist, ref_hist)


def check_hist_or_error(call, a, *args, **kwargs):
    """Where NumPy raises (e.g. too many bins for a huge int64 range), so must cuatomic."""
    try:
        np.histogram(a, *args, **kwargs)
    except ValueError as e:
        with pytest.raises(ValueError, match=str(e)[:20]):
            call()
        return
    except IndexError:  # NumPy 1.x crashes on a lone extreme int64 (NumPy 2 raises ValueError)
        pytest.skip("NumPy itself fails on this input")
    check_hist(call(), a, *args, **kwargs)


def numeric(dtype, n, kind="uniform"):
    a = make(dtype, n, kind)
    return a.view(np.uint8) if a.dtype == np.bool_ else a  # NumPy converts bool with a warning


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
@pytest.mark.parametrize("dtype", DTYPES[1:], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_histogram_autorange(backend, method, where, dtype, n):
    a = numeric(dtype, n)
    x = placed(a, backend, where)
    check_hist_or_error(lambda: hist_call(x, bins=17, method=method, backend=backend), a, bins=17)


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
@pytest.mark.parametrize("dtype", DTYPES[1:], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["uniform", "skewed", "one"])
def test_histogram_range_drops_outside(backend, method, where, dtype, kind):
    a = numeric(dtype, 20_011, kind)
    lo, hi = (-50, 90) if np.dtype(dtype).kind in "if" else (3, 200)
    got = hist_call(placed(a, backend, where), bins=23, range=(lo, hi), method=method, backend=backend)
    check_hist(got, a, bins=23, range=(lo, hi))


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
def test_histogram_tutorial_call(backend, method, where):
    text = text_to_array(english_like_text(300_000, seed=4))
    got = cuatomic.histogram(placed(text, backend, where), bins=128, range=(0, 128), method=method, backend=backend)
    check_hist(got, text, bins=128, range=(0, 128))
    assert host(got[0])[ord(" ")] > host(got[0])[ord("e")] > host(got[0])[ord("z")]


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("lo, hi", [(0, 128), (0, 256), (-128, 128), (10, 20), (250, 300), (-5, 5), (200, 201)])
def test_histogram_bytes_in_unit_bins(backend, method, where, dtype, lo, hi):
    """Bytes in bins of width one: the `bytes` rung counts them with a
    counter per byte value and maps values to bins only at the flush, so every
    byte value, the closed top edge and ranges past the type's ends are checked;
    odd offsets and lengths give it a head and a tail."""
    rng = np.random.default_rng(abs(lo) * 7 + hi)
    a = rng.integers(0, 256, 300_007, dtype=np.uint8).view(dtype)
    a[:256] = np.arange(256, dtype=np.uint8).view(dtype)
    for part in (a, a[3:], a[5:-7], a[:1], a[:0]):
        got = cuatomic.histogram(placed(part, backend, where), bins=hi - lo, range=(lo, hi), method=method,
                                 backend=backend)
        check_hist(got, part, bins=hi - lo, range=(lo, hi))


@requires_cuda
@pytest.mark.parametrize("blocks, threads", [(1, 32), (1, 33), (7, 96), (3, 1024), (None, 64)])
def test_histogram_bytes_on_forced_grids(blocks, threads):
    """The `bytes` rung's copies (one per warp) and its grid follow what the caller asks."""
    text = text_to_array(english_like_text(200_003, seed=9))
    got = cuatomic.histogram(text[1:], bins=128, range=(0, 128), method="bytes", backend="cuda",
                             blocks=blocks, threads=threads)
    check_hist(got, text[1:], bins=128, range=(0, 128))


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
def test_histogram_edges_are_exact(backend, method, where):
    # values on every edge: each lands in the bin the edge opens, the last edge in the last bin
    edges = np.linspace(0.0, 1.0, 11)
    a = np.concatenate([edges, edges[:-1] + 0.05, [-0.0, 1.0 + 1e-12, -1e-12]])
    for bins in (10, edges, [0.0, 0.1, 0.5, 0.5, 1.0], [-np.inf, 0.0, 0.25, np.inf]):
        got = hist_call(placed(a, backend, where), bins=bins, range=(0.0, 1.0), method=method,
                                 backend=backend)
        check_hist(got, a, bins=bins, range=(0.0, 1.0))
    f = make(np.float32, 5000)
    for rng in [(-0.1, 0.1), (-33.3, 17.7)]:
        got = hist_call(placed(f, backend, where), bins=7, range=rng, method=method, backend=backend)
        check_hist(got, f, bins=7, range=rng)
    i = make(np.int16, 5000)
    for rng in [(-1000, 1000), (np.float32(-1000), np.float32(1000)), (-7, 9)]:
        got = hist_call(placed(i, backend, where), bins=16, range=rng, method=method, backend=backend)
        check_hist(got, i, bins=16, range=rng)


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
def test_histogram_nan(backend, method, where):
    a = make(np.float64, 3001)
    a[::7] = np.nan
    got = hist_call(placed(a, backend, where), bins=9, range=(-100, 100), method=method, backend=backend)
    check_hist(got, a, bins=9, range=(-100, 100))
    with pytest.raises(ValueError, match="autodetected range of \\[nan, nan\\] is not finite"):
        hist_call(placed(a, backend, where), bins=9, method=method, backend=backend)
    b = make(np.float32, 100)
    b[3] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        hist_call(placed(b, backend, where), method=method, backend=backend)


@pytest.mark.parametrize("backend,method,where", where_params("histogram"))
def test_histogram_density_and_bins(backend, method, where):
    a = make(np.float64, 4097)
    for bins in (1, 10, 1000, [-300, -1, 0, 2, 400]):
        got = hist_call(placed(a, backend, where), bins=bins, density=True, method=method, backend=backend)
        if got is REFUSED:
            continue
        hist, edges = got
        ref, ref_edges = np.histogram(a, bins=bins, density=True)
        np.testing.assert_array_equal(edges, ref_edges)
        np.testing.assert_allclose(host(hist), ref, rtol=1e-15)
    check_hist(hist_call(placed(a, backend, where), bins=[1.0], method=method, backend=backend), a,
               bins=[1.0])


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_histogram_layouts_bool_and_estimators(backend):
    m = make(np.int32, 50 * 40).reshape(50, 40) % 1000
    for a in (m, np.asfortranarray(m), m[::2, ::3], m.astype(m.dtype.newbyteorder())):
        check_hist(cuatomic.histogram(a, bins=31, backend=backend), a, bins=31)
    b = make(np.bool_, 1001)
    with pytest.warns(RuntimeWarning, match="bool"):
        got = cuatomic.histogram(b, bins=2, backend=backend)
    with pytest.warns(RuntimeWarning):
        check_hist(got, b, bins=2)
    f = make(np.float64, 2000)
    check_hist(cuatomic.histogram(f, bins="auto", backend=backend), f, bins="auto")


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_histogram_many_bins(backend):
    a = make(np.uint16, 300_000)
    check_hist(cuatomic.histogram(a, bins=65_536, range=(0, 65_536), backend=backend), a, bins=65_536,
               range=(0, 65_536))
    check_hist(cuatomic.histogram(a, bins=100_000, backend=backend, method="global"), a, bins=100_000)


@requires_cuda
def test_histogram_shared_refuses_bins_that_do_not_fit():
    a = make(np.uint16, 1000)
    with pytest.raises(ValueError, match="global"):
        cuatomic.histogram(a, bins=1_000_000, method="shared", backend="cuda")
    # auto falls back to global memory
    check_hist(cuatomic.histogram(a, bins=1_000_000, backend="cuda"), a, bins=1_000_000)


@pytest.mark.parametrize("backend", cuatomic.backends())
def test_histogram_errors(backend):
    a = make(np.float64, 100)
    with pytest.raises(ValueError, match="positive"):
        cuatomic.histogram(a, bins=0, backend=backend)
    with pytest.raises(ValueError, match="max must be larger than min"):
        cuatomic.histogram(a, range=(1, 0), backend=backend)
    with pytest.raises(ValueError, match="not finite"):
        cuatomic.histogram(a, range=(0, np.inf), backend=backend)
    with pytest.raises(ValueError, match="monotonically"):
        cuatomic.histogram(a, bins=[0, 2, 1], backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogram(a, bins=2.5, backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogram(a.astype(np.complex128), backend=backend)
    if CUDA:
        with pytest.raises(ValueError, match="estimates edges"):
            cuatomic.histogram(cuatomic.to_device(a, backend="cuda"), bins="auto", backend="cuda")


# ------------------------------------------------- the cache of fixed bins

def test_bytes_lru_bounds_bytes_and_drops_the_least_recently_used():
    from cuatomic._common import BytesLRU
    cache = BytesLRU(100)
    cache.put("a", "A", 40)
    cache.put("b", "B", 40)
    assert cache.get("a") == "A"  # a is now the most recently used
    cache.put("c", "C", 40)       # 120 > 100: b, the least recently used, goes
    assert "b" not in cache and cache.get("a") == "A" and cache.get("c") == "C"
    assert cache.nbytes == 80 and len(cache) == 2
    cache.put("a", "A2", 10)      # replacing a value counts its new size only
    assert cache.get("a") == "A2" and cache.nbytes == 50
    cache.put("huge", "H", 101)   # larger than the whole bound: not cached, nothing evicted
    assert "huge" not in cache and cache.nbytes == 50 and len(cache) == 2
    cache.put("fills", "F", 100)  # exactly the bound: everything else goes
    assert len(cache) == 1 and cache.nbytes == 100 and cache.get("fills") == "F"
    assert cache.get("missing") is None
    with pytest.raises(TypeError):
        cache.get(["unhashable"])
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0


def test_fixed_bins_cache_is_bounded_by_bytes(monkeypatch):
    from cuatomic import _bins as _ops
    monkeypatch.setattr(_ops, "_FIXED_BINS", _ops.BytesLRU(_ops.FIXED_BINS_CACHE_BYTES))
    x = np.arange(1000, dtype=np.float64)
    per_call = (2**21 + 1) * 8  # float64 edges of 2**21 bins: 16 MiB, shared with the kernel's edges
    for hi in range(2000, 2008):  # eight ranges: an entry count bound of 64 would keep 128 MiB
        got, edges = cuatomic.histogram(x, bins=2**21, range=(0, hi), backend="cpu")
        assert got.sum() == x.size and edges[-1] == hi
    assert _ops._FIXED_BINS.nbytes <= _ops.FIXED_BINS_CACHE_BYTES
    assert len(_ops._FIXED_BINS) == _ops.FIXED_BINS_CACHE_BYTES // per_call
    # The most recent range is cached: a repeat reuses it, and the caller's copy is its own.
    _, first = cuatomic.histogram(x, bins=2**21, range=(0, 2007), backend="cpu")
    first[0] = -1.0
    _, again = cuatomic.histogram(x, bins=2**21, range=(0, 2007), backend="cpu")
    assert again[0] == 0.0
    # An entry larger than the bound is not cached at all (and nothing is evicted for it).
    before = len(_ops._FIXED_BINS)
    cuatomic.histogram(x, bins=2**23 + 7, range=(0, 1), backend="cpu")
    assert len(_ops._FIXED_BINS) == before and _ops._FIXED_BINS.nbytes <= _ops.FIXED_BINS_CACHE_BYTES


@pytest.mark.parametrize("backend", cuatomic.backends())
@pytest.mark.parametrize("method", ["auto", "warp_private", "global"])
def test_histogram_repeated_call_plan(backend, method, monkeypatch):
    """A repeated call (same bins, range, method, dtype) skips the resolution:
    every call still counts its own data, forced methods still run, edges
    come back as fresh arrays, and the backend named by CUATOMIC_BACKEND is
    the one used."""
    from cuatomic import _histogram
    monkeypatch.setenv("CUATOMIC_BACKEND", backend)
    rng = np.random.default_rng(3)
    _histogram._PLANS.clear()
    for i, n in enumerate([10_007, 10_007, 3, 10_007, 0]):
        a = rng.integers(0, 140, n, dtype=np.uint8)
        x = cuatomic.to_device(a, backend="cuda") if backend == "cuda" else a
        got = cuatomic.histogram(x, 128, (0, 128), method=method)
        check_hist(got, a, 128, (0, 128))
        ran = cuatomic.last_launch()
        assert ran["backend"] == backend and ran["op"] == "histogram"
        if method != "auto":
            assert ran["method"] == method
        got[1][:] = -1  # the caller's copy: the next call's edges are not these
    assert len(_histogram._PLANS) >= 1


def test_histogram_plan_follows_the_backend_variable(monkeypatch):
    from cuatomic import _histogram
    _histogram._PLANS.clear()
    a = np.arange(1000, dtype=np.int32) % 200
    monkeypatch.setenv("CUATOMIC_BACKEND", "cpu")
    check_hist(cuatomic.histogram(a, 50, (0, 200), method="shared"), a, 50, (0, 200))
    assert cuatomic.last_launch()["backend"] == "cpu"
    if CUDA:
        monkeypatch.setenv("CUATOMIC_BACKEND", "cuda")
        check_hist(cuatomic.histogram(a, 50, (0, 200), method="shared"), a, 50, (0, 200))
        assert cuatomic.last_launch()["backend"] == "cuda"


def test_histogram_plan_is_not_used_for_other_arguments():
    """Calls that differ in anything that changes the answer do not share a plan."""
    a = np.arange(300, dtype=np.float64)
    for bins, rng in [(10, (0, 300)), (10, (0, 299)), (11, (0, 300)), (10, (0.0, 300.0)),
                      (10, (np.float32(0), np.float32(300)))]:
        for _ in range(2):
            check_hist(cuatomic.histogram(a, bins, rng, backend="cpu"), a, bins, rng)
            check_hist(cuatomic.histogram(a, bins, rng), a, bins, rng)
    check_hist(cuatomic.histogram(a[::2], 10, (0, 300)), a[::2], 10, (0, 300))
    got = cuatomic.histogram(a, 10, (0, 300), density=True)
    np.testing.assert_allclose(got[0], np.histogram(a, 10, (0, 300), density=True)[0])


# ------------------------------------------------- the bins the core is told

def test_the_core_refuses_bins_whose_arithmetic_would_overflow():
    from cuatomic import _C, _backend
    from cuatomic._bins import KernelBins
    x = np.arange(100, dtype=np.int32)
    edges = np.linspace(0, 100, 11)
    call = dict(backend=_backend.backend_id("cpu"), rung=_backend.rung("histogram", "cpu", "global").index, x=x,
                n=x.size, dtype=_C.DTYPES.index("int32"), blocks=-1, threads=-1, device_out=False, stream=0)
    assert np.array_equal(_C.histogram(bins=KernelBins(edges, 1, 0.1, 1, 0, 10), **call), np.full(10, 10))
    for bad in (KernelBins(edges, 1, 0.1, 1, 0, 2**62),          # lo + width * nbins past int64
                KernelBins(edges, 1, 0.1, 1, -2**63, 10),        # lo at int64's minimum
                KernelBins(edges, 1, 0.1, 1, 0, 0),              # no width
                KernelBins(edges, 1, float("nan"), 0, 0, 1),     # a NaN scale for the uniform guess
                KernelBins(edges, 1, float("inf"), 0, 0, 1),
                (edges, 1, 0.1),                                 # not the six fields
                KernelBins(list(edges), 1, 0.1, 0, 0, 1)):       # edges not an ndarray
        with pytest.raises((SystemError, TypeError)):
            _C.histogram(bins=bad, **call)
