"""The top rungs (vector, warp_private, thread_counters, lookback,
warp_lock), method="auto" and explain(), determinism, unaligned device
input, the CUB peers, and sticky CUDA errors. Every rung is also in the
generic per-op tests through the variant tables; these cover what is
particular to the top of each ladder."""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuatomic
from cuatomic import _C, _backend, _common, datasets
from cuatomic._bins import KernelBins

from conftest import BACKENDS, CUDA, assert_float_close, hist_refusal, host, is_wide, requires_cuda


TEXT = datasets.text_to_array(datasets.english_like_text(200_000, seed=5))


# ------------------------------------------------------------ determinism

def _deterministic():
    return [pytest.param(op, be, r.name, id=f"{op}-{be}-{r.name}") for op in ("sum", "dot") for be in BACKENDS
            for r in _backend.table(op, be) if r.has(_C.F_DETERMINISTIC)]


@pytest.mark.parametrize("op,backend,method", _deterministic())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_deterministic_rungs_give_the_same_bits_run_to_run(op, backend, method, dtype):
    """Every float sum and dot rung whose row says F_DETERMINISTIC gives
    bit-identical results call after call (a wrong flag fails here)."""
    x = np.random.default_rng(1).standard_normal(3_000_017).astype(dtype)
    y = np.random.default_rng(2).standard_normal(x.size).astype(dtype)
    a = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    b = cuatomic.to_device(y, backend=backend) if backend == "cuda" else y
    call = (lambda: cuatomic.sum(a, method=method, backend=backend)) if op == "sum" else \
        (lambda: cuatomic.dot(a, b, method=method, backend=backend))
    assert len({np.asarray(call()).tobytes() for _ in range(8)}) == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_sum_is_as_accurate_as_numpy(backend, dtype):
    """The vector rung on 3M normal values: within twice NumPy's error of
    the exact sum (math.fsum), or two ulps. The naive (n+1) eps sum|x| was
    ~300 times the answer itself, so a rung returning 0 passed it."""
    x = np.random.default_rng(1).standard_normal(3_000_017).astype(dtype)
    a = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    got = cuatomic.sum(a, method="vector", backend=backend)
    x64 = x.astype(np.float64)
    assert_float_close(got, math.fsum(x64), np.sum(x), dtype, wide=is_wide("sum", backend, "vector"), n=x.size,
                       abs_sum=float(np.abs(x64).sum()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_explicit_grids_stay_exact(backend):
    x = np.random.default_rng(3).integers(-(2**31), 2**31 - 1, 1_000_003, dtype=np.int64).astype(np.int32)
    for blocks, threads in [(1, 32), (3, 96), (7, 100), (64, 256)]:
        assert int(cuatomic.sum(x, method="vector", blocks=blocks, threads=threads, backend=backend)) == \
            int(x.sum(dtype=np.int64))
        assert int(cuatomic.dot(x, x, method="vector", blocks=blocks, threads=threads, backend=backend)) == \
            int(np.dot(x, x))


# ------------------------------------------------------------ unaligned device input

@requires_cuda
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32, np.int64, np.float64])
@pytest.mark.parametrize("offset", [1, 3, 5])
def test_top_rungs_read_unaligned_device_memory(dtype, offset):
    """Pointers off the 16-byte grid (a view into a buffer) take the scalar
    head and tail around the wide body."""
    dt = np.dtype(dtype)
    full = (np.random.default_rng(offset).integers(0, 100, 50_000) % 100).astype(dt)
    d = cuatomic.to_device(full)
    x = full[offset:]
    ptr, n, ident = d.ptr + offset * dt.itemsize, x.size, _common.dtype_id(dt)
    acc = _C.ACC_INT64 if dt.kind != "f" else (_C.ACC_FLOAT32 if dt.itemsize == 4 else _C.ACC_FLOAT64)
    out_num = np.dtype(np.int64).num if dt.kind != "f" else dt.num
    cuda = _C.BACKEND_CUDA
    launch = dict(blocks=-1, threads=-1, stream=None)
    got = _C.sum(backend=cuda, rung=_backend.rung("sum", "cuda", "vector").index, x=ptr, n=n, dtype=ident, acc=acc,
                 out_type=out_num, **launch)
    assert float(got) == float(x.sum(dtype=np.float64))
    got = _C.dot(backend=cuda, rung=_backend.rung("dot", "cuda", "vector").index, a=ptr, b=d.ptr, n=n, dtype=ident,
                 acc=acc, out_type=out_num, **launch)  # different offsets: scalar
    exact = float(np.dot(x.astype(np.float64), full[:n].astype(np.float64)))  # integers below 2^53: exact
    if dt.kind != "f":
        assert float(got) == exact
    else:  # NumPy's error is its pairwise sum's of the products, as test_dot takes it
        assert_float_close(got, exact, np.sum(x * full[:n]), dt, wide=is_wide("dot", "cuda", "vector"), n=n,
                           abs_sum=exact)
    edges = np.linspace(0, 100, 101)
    for method in ("warp_private", "thread_counters"):
        bins = KernelBins(edges, 1, 1.0, int(dt.kind in "iu" and dt.itemsize <= 4), 0, 1)
        counts = _C.histogram(backend=cuda, rung=_backend.rung("histogram", "cuda", method).index, x=ptr, n=n,
                              dtype=ident, bins=bins, device_out=False, **launch)
        assert np.array_equal(counts, np.histogram(x, edges)[0]), method
    lo, hi = _bounds(dt, 50)
    out, count = _C.filter(backend=cuda, rung=_backend.rung("filter", "cuda", "lookback").index, x=ptr, n=n,
                           dtype=ident, negate=1, lo=lo, hi=hi, device_out=True, **launch)
    got = cuatomic.DeviceArray(out, (n,), dt).copy_to_host()[:count]
    assert np.array_equal(got, x[~((x >= 0) & (x <= 50))])


def _bounds(dt, hi):
    lo_b = np.array(0, dt).astype(np.float64 if dt.kind == "f" else np.int64).tobytes()
    hi_b = np.array(hi, dt).astype(np.float64 if dt.kind == "f" else np.int64).tobytes()
    if dt.kind == "f" and dt.itemsize == 4:
        lo_b = np.float32(0).tobytes() + bytes(4)
        hi_b = np.float32(hi).tobytes() + bytes(4)
    return lo_b, hi_b


# ------------------------------------------------------------ histograms

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["warp_private", "thread_counters"])
@pytest.mark.parametrize("case", ["text", "one", "uniform_bytes", "floats_1000", "int_65536"])
def test_top_histograms_against_numpy(backend, method, case):
    rng = np.random.default_rng(7)
    if case == "text":
        x, bins, rng_ = TEXT, 128, (0, 128)
    elif case == "one":
        x, bins, rng_ = np.full(300_001, ord("e"), np.uint8), 128, (0, 128)
    elif case == "uniform_bytes":
        x, bins, rng_ = rng.integers(0, 256, 400_003, dtype=np.uint8), 128, (0, 128)
    elif case == "floats_1000":
        x, bins, rng_ = rng.standard_normal(300_001).astype(np.float32), 1000, (-4, 4)
    else:
        x, bins, rng_ = rng.integers(-5, 65_600, 300_001).astype(np.int32), 65_536, (0, 65_536)
    a = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    limit = hist_refusal(x, bins, rng_, method=method, backend=backend)
    if limit is not None:  # shared memory too small for these bins: the named rung says so
        assert backend == "cuda" and method in limit
        with pytest.raises(ValueError, match=method):
            cuatomic.histogram(a, bins, rng_, method=method, backend=backend)
        return
    got, edges = cuatomic.histogram(a, bins, rng_, method=method, backend=backend)
    ref, ref_edges = np.histogram(x, bins, rng_)
    assert np.array_equal(host(got), ref) and np.array_equal(edges, ref_edges)


@requires_cuda
def test_thread_counters_refuses_partial_warps():
    with pytest.raises(ValueError, match="multiple of 32"):
        cuatomic.histogram(cuatomic.to_device(TEXT), 128, (0, 128), method="thread_counters", threads=100)


# ------------------------------------------------------------ filter, mutex

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 1_000_003])
def test_lookback_keeps_order_at_tile_edges(backend, n):
    x = np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32)
    a = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    for blocks in (None, 1, 3):
        got = cuatomic.filter(a, ">=", 2, method="lookback", blocks=blocks, backend=backend)
        assert np.array_equal(host(got), x[x >= 2])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("blocks, threads", [(1, 1), (3, 17), (8, 33), (264, 256)])
def test_warp_lock_counts_every_thread(backend, blocks, threads):
    assert cuatomic.mutex_add_one(blocks, threads, method="warp_lock", backend=backend) == blocks * threads


# ------------------------------------------------------------ auto and explain

def _auto_call(op, backend):
    """(args of the op and of explain(), what the call with method='auto' does)."""
    x = np.arange(1, 1001, dtype=np.int32)
    data = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    weights = cuatomic.to_device(x * 0.5, backend=backend) if backend == "cuda" else x * 0.5
    calls = {
        "sum": ((data,), lambda: cuatomic.sum(data, method="auto", backend=backend)),
        "prod": ((data,), lambda: cuatomic.prod(data, method="auto", backend=backend)),
        "reduce": ((data, "minimum"), lambda: cuatomic.reduce(data, "minimum", method="auto", backend=backend)),
        "dot": ((data, data), lambda: cuatomic.dot(data, data, method="auto", backend=backend)),
        "filter": ((data, "<", 10), lambda: cuatomic.filter(data, "<", 10, method="auto", backend=backend)),
        "histogram": ((data, 64), lambda: cuatomic.histogram(data, 64, method="auto", backend=backend)),
        "weighted_histogram": ((data, 64), lambda: cuatomic.histogram(data, 64, weights=weights, method="auto",
                                                                      backend=backend)),
        "add_one": ((), lambda: cuatomic.add_one(method="auto", backend=backend)),
        "mutex_add_one": ((), lambda: cuatomic.mutex_add_one(method="auto", backend=backend)),
        "at": ((data, x % 7, x), lambda: cuatomic.at(data, x % 7, x, method="auto", backend=backend)),
        "argmin": ((data,), lambda: cuatomic.argmin(data, method="auto", backend=backend)),
        "histogramdd": ((data, 16), lambda: cuatomic.histogramdd(data, 16, method="auto", backend=backend)),
        "segmented": ((data,), lambda: cuatomic.sum(data, axis=0, method="auto", backend=backend)),
        "unique": ((data,), lambda: cuatomic.unique(data, method="auto", backend=backend)),
    }
    return calls[op]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", _backend.OPS)
def test_auto_runs_what_explain_names(backend, op):
    """The rung a method='auto' call launches (as the core reports it) is
    the one explain() names, a rung of the ladder, never the racy lesson."""
    args, call = _auto_call(op, backend)
    call()
    ran = cuatomic.last_launch()
    choice = cuatomic.explain(op, *args, backend=backend)
    assert ran["op"] == op and ran["backend"] == backend and ran["method"] == choice.method
    assert not _backend.rung(op, backend, choice.method).flags & _C.F_RACY
    assert choice.reason and choice.method in str(choice)


@pytest.mark.parametrize("backend", BACKENDS)
def test_explain_histogram_reads_bins_and_skew(backend):
    c = cuatomic.explain("histogram", TEXT, bins=128, range=(0, 128), backend=backend)
    assert isinstance(c, cuatomic.Choice) and c.op == "histogram" and c.facts["bins"] == 128
    assert c.reason and c.method in str(c) and 0.05 < c.facts["top_bin_share"] < 0.5  # text: space leads
    one = np.full(100_000, ord("e"), np.uint8)
    d = cuatomic.to_device(one, backend=backend) if backend == "cuda" else one
    e = cuatomic.explain("histogram", d, bins=128, range=(0, 128), backend=backend)
    assert e.facts["top_bin_share"] == 1.0
    # The call runs what the report says, whatever the bins.
    for bins, data in ((128, TEXT), (4096, TEXT), (65_536, TEXT.astype(np.int32)),
                       (1 << 20, TEXT.astype(np.int32))):
        said = cuatomic.explain("histogram", data, bins=bins, range=(0, bins), backend=backend)
        got, _ = cuatomic.histogram(data, bins=bins, range=(0, bins), backend=backend)
        assert cuatomic.last_launch()["method"] == said.method, bins
        assert np.array_equal(host(got), np.histogram(data, bins, (0, bins))[0])
        # the rung auto picked can count these bins: it said so and it did
        assert hist_refusal(data, bins, (0, bins), method=said.method, backend=backend) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_named_rung_that_cannot_count_the_bins_raises_and_auto_passes_it_by(backend):
    """One policy: a rung asked for by name that cannot run raises a
    ValueError naming its limit; auto skips it and says so."""
    data = TEXT.astype(np.int32)
    ladder = _backend.table("histogram", backend)
    bins = 1 << 20
    refusals = {r.name: hist_refusal(data, bins, (0, bins), method=r.name, backend=backend) for r in ladder}
    assert any(v is None for v in refusals.values())  # some rung can always run
    for name, why in refusals.items():
        if why is None:
            continue
        assert "bins" in why or "fit" in why, why
        with pytest.raises(ValueError, match=f"method '{name}'"):
            cuatomic.histogram(data, bins=bins, range=(0, bins), method=name, backend=backend)
    choice = cuatomic.explain("histogram", data, bins=bins, range=(0, bins), backend=backend)
    assert refusals[choice.method] is None
    skipped = [name for name, why in refusals.items() if why is not None]
    if backend == "cuda":
        assert skipped  # a million 4-byte counters fit in no GPU's shared memory
    for name in skipped:  # a faster rung passed by is named with its limit
        if f"{name}:" in choice.reason:
            assert refusals[name] in choice.reason


def test_explain_refuses_unknown_ops():
    with pytest.raises(ValueError, match="unknown op"):
        cuatomic.explain("median")


# ------------------------------------------------------------ CUB peers

@requires_cuda
def test_cub_peers_agree_with_numpy():
    from cuatomic.bench import peers
    x = np.random.default_rng(0).integers(-1000, 1000, 100_003, dtype=np.int32)
    d = cuatomic.to_device(x)
    assert _C.cub_sum(d.ptr, x.size, _common.dtype_id(x.dtype), None) == int(x.sum())
    t = cuatomic.to_device(TEXT)
    assert TEXT.max() < 128  # CUB's top level is exclusive, NumPy's last bin closed: equal on text
    assert np.array_equal(_C.cub_histogram(t.ptr, TEXT.size, _common.dtype_id(TEXT.dtype), 128, 0, 128, None),
                          np.histogram(TEXT, 128, (0, 128))[0])
    out = cuatomic.DeviceArray.empty((x.size,), np.int32)
    count = _C.cub_select(d.ptr, x.size, _common.dtype_id(x.dtype), 2.0, out.ptr, None)
    assert np.array_equal(out.copy_to_host()[:count], x[x >= 2])
    with pytest.raises(TypeError, match="cub"):
        _C.cub_sum(d.ptr, x.size, _common.dtype_id(np.int64), None)  # int32, float32, float64 only
    f = np.random.default_rng(1).standard_normal(100_003).astype(np.float32)
    for data, ops in ((x, ("minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor")), (f, ("minimum", "maximum"))):
        dd = cuatomic.to_device(data)
        for op in ops:
            assert peers.cub_reduce(dd, op) == getattr(np, op).reduce(data), op


# ------------------------------------------------------------ sticky errors

@requires_cuda
def test_sticky_error_is_reported_and_the_next_call_says_the_context_is_lost():
    code = textwrap.dedent("""
        import numpy as np, cuatomic
        from cuatomic import _C
        cuatomic.backends()  # the probe runs while the context is healthy
        try:
            _C._debug_trap()
        except cuatomic.CudaError as e:
            print("TRAP", e.name, "context is lost" in str(e))
        try:
            cuatomic.sum(np.ones(4096, np.float32), backend="cuda")
        except cuatomic.CudaError as e:
            print("NEXT", e.name, "context is lost" in str(e))
        """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = run.stdout.split("\n")
    assert run.returncode == 0, run.stderr
    assert any(line.startswith("TRAP cudaError") and line.endswith("True") for line in lines), run.stdout
    assert any(line.startswith("NEXT cudaError") and line.endswith("True") for line in lines), run.stdout


@pytest.mark.skipif(CUDA, reason="checks the build without a usable GPU")
def test_debug_trap_without_a_gpu_raises_cleanly():
    with pytest.raises((RuntimeError, cuatomic.CudaError)):
        _C._debug_trap()
