"""The top rungs (vector, warp_private, thread_counters, lookback,
warp_lock), method="auto" and explain(), determinism, unaligned device
input, the CUB peers, and sticky CUDA errors. Every rung is also in the
generic per-op tests through the variant tables; these cover what is
particular to the top of each ladder."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cuatomic
from cuatomic import _C, _auto, _backend, _ops, datasets

from conftest import BACKENDS, CUDA, host, requires_cuda

TEXT = datasets.text_to_array(datasets.english_like_text(200_000, seed=5))


# ------------------------------------------------------------ determinism

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_float_results_are_bit_identical_run_to_run(backend, dtype):
    x = np.random.default_rng(1).standard_normal(3_000_017).astype(dtype)
    y = np.random.default_rng(2).standard_normal(x.size).astype(dtype)
    a = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    b = cuatomic.to_device(y, backend=backend) if backend == "cuda" else y
    sums = {np.asarray(cuatomic.sum(a, method="vector", backend=backend)).tobytes() for _ in range(8)}
    dots = {np.asarray(cuatomic.dot(a, b, method="vector", backend=backend)).tobytes() for _ in range(8)}
    assert len(sums) == 1 and len(dots) == 1
    exact = float(np.sum(x.astype(np.float64)))
    bound = (x.size + 1) * np.finfo(dtype).eps * float(np.abs(x.astype(np.float64)).sum())
    assert abs(float(cuatomic.sum(a, method="vector", backend=backend)) - exact) <= bound


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
    ptr, n, ident = d.ptr + offset * dt.itemsize, x.size, _ops.dtype_id(dt)
    acc = _ops.ACC_INT64 if dt.kind != "f" else (_ops.ACC_FLOAT32 if dt.itemsize == 4 else _ops.ACC_FLOAT64)
    out_num = np.dtype(np.int64).num if dt.kind != "f" else dt.num
    got = _C.sum(1, "vector", ptr, n, ident, acc, -1, -1, None, out_num)
    assert float(got) == float(x.sum(dtype=np.float64))
    got = _C.dot(1, "vector", ptr, d.ptr, n, ident, acc, -1, -1, None, out_num)  # different offsets: scalar
    exact = float(np.dot(x.astype(np.float64), full[:n].astype(np.float64)))
    assert float(got) == exact if dt.kind != "f" else np.isclose(float(got), exact, rtol=1e-5)
    edges = np.linspace(0, 100, 101)
    for method in ("warp_private", "thread_counters"):
        counts = _C.histogram(1, method, ptr, n, ident, edges, 1, 1.0, 1 if dt.kind in "iu" and dt.itemsize <= 4
                              else 0, 0, 1, -1, -1, False, None)
        assert np.array_equal(counts, np.histogram(x, edges)[0]), method
    out, count = _C.filter(1, "lookback", ptr, n, ident, 1, *_bounds(dt, 50), -1, -1, True, None)
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
    if backend == "cuda" and method == "thread_counters" and bins > 8192:  # a byte per bin per thread
        with pytest.raises(ValueError, match="thread_counters"):
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

# Where each op hands its rung's name to the compiled core: (function, position).
_CORE_CALLS = {"sum": ("sum", 1), "prod": ("prod", 1), "dot": ("dot", 1), "histogram": ("histogram", 1),
               "filter": ("filter", 1), "add_one": ("counter", 2), "mutex_add_one": ("counter", 2)}


def _record_rungs(monkeypatch):
    """A list that fills with the rung name of every call into _C the ops make."""
    seen = []
    for fn, pos in set(_CORE_CALLS.values()):
        real = getattr(_C, fn)
        monkeypatch.setattr(_C, fn, lambda *args, real=real, pos=pos: (seen.append(args[pos]), real(*args))[1])
    monkeypatch.setattr(_ops, "_PLANS", {})  # cached call plans hold the real function
    return seen


def _auto_call(op, backend):
    """(args of the op and of explain(), what the call with method='auto' does)."""
    x = np.arange(1, 1001, dtype=np.int32)
    data = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    calls = {
        "sum": ((data,), lambda: cuatomic.sum(data, method="auto", backend=backend)),
        "prod": ((data,), lambda: cuatomic.prod(data, method="auto", backend=backend)),
        "dot": ((data, data), lambda: cuatomic.dot(data, data, method="auto", backend=backend)),
        "filter": ((data, "<", 10), lambda: cuatomic.filter(data, "<", 10, method="auto", backend=backend)),
        "add_one": ((), lambda: cuatomic.add_one(method="auto", backend=backend)),
        "mutex_add_one": ((), lambda: cuatomic.mutex_add_one(method="auto", backend=backend)),
    }
    return calls[op]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", sorted(_auto._FIXED))
def test_auto_runs_what_explain_names_and_the_table_flags(monkeypatch, backend, op):
    """For the ops whose rule ignores the data: the rung a method='auto' call
    hands to the compiled core is the one explain() names, and the one the
    variant table flags as default (three sources that must agree)."""
    args, call = _auto_call(op, backend)
    seen = _record_rungs(monkeypatch)
    call()
    assert len(seen) == 1, seen
    assert cuatomic.explain(op, *args, backend=backend).method == seen[0]
    flagged = [n for n, _, _, flags in _backend.table(op, backend) if flags & _C.F_DEFAULT]
    assert flagged == seen


@pytest.mark.parametrize("backend", BACKENDS)
def test_explain_histogram_reads_bins_and_skew(monkeypatch, backend):
    c = cuatomic.explain("histogram", TEXT, bins=128, range=(0, 128), backend=backend)
    assert isinstance(c, cuatomic.Choice) and c.op == "histogram" and c.facts["bins"] == 128
    assert c.reason and c.method in str(c) and 0.05 < c.facts["top_bin_share"] < 0.5  # text: space leads
    assert c.method == ("warp_private" if backend == "cuda" else "thread_counters")
    one = np.full(100_000, ord("e"), np.uint8)
    d = cuatomic.to_device(one, backend=backend) if backend == "cuda" else one
    e = cuatomic.explain("histogram", d, bins=128, range=(0, 128), backend=backend)
    assert e.facts["top_bin_share"] == 1.0 and e.method == c.method  # skew does not change the choice
    many = cuatomic.explain("histogram", TEXT.astype(np.int32), bins=65_536, range=(0, 65_536), backend=backend)
    assert many.method == "warp_private"
    # The call runs what the report says, on both sides of the cpu's copy limit.
    seen = _record_rungs(monkeypatch)
    for bins, data in ((128, TEXT), (65_536, TEXT.astype(np.int32)), (_auto.CPU_COPY_BINS, TEXT),
                       (_auto.CPU_COPY_BINS + 1, TEXT)):
        said = cuatomic.explain("histogram", data, bins=bins, range=(0, bins), backend=backend).method
        cuatomic.histogram(data, bins=bins, range=(0, bins), backend=backend)
        assert seen.pop() == said, bins
    if backend == "cpu":  # the limit is where the rule changes its mind
        assert cuatomic.explain("histogram", TEXT, bins=_auto.CPU_COPY_BINS, range=(0, 1), backend="cpu").method \
            == "thread_counters"
        assert cuatomic.explain("histogram", TEXT, bins=_auto.CPU_COPY_BINS + 1, range=(0, 1),
                                backend="cpu").method == "warp_private"
    # auto gives NumPy's answer whatever it picks
    got, _ = cuatomic.histogram(TEXT, bins=128, range=(0, 128), backend=backend)
    assert np.array_equal(host(got), np.histogram(TEXT, 128, (0, 128))[0])


def test_explain_refuses_unknown_ops():
    with pytest.raises(ValueError, match="unknown op"):
        cuatomic.explain("median")


# ------------------------------------------------------------ CUB peers

@requires_cuda
def test_cub_peers_agree_with_numpy():
    x = np.random.default_rng(0).integers(-1000, 1000, 100_003, dtype=np.int32)
    d = cuatomic.to_device(x)
    assert _C.cub_sum(d.ptr, x.size, 5, None) == int(x.sum())
    t = cuatomic.to_device(TEXT)
    assert TEXT.max() < 128  # CUB's top level is exclusive, NumPy's last bin closed: equal on text
    assert np.array_equal(_C.cub_histogram(t.ptr, TEXT.size, 2, 128, 0, 128, None),
                          np.histogram(TEXT, 128, (0, 128))[0])
    out = cuatomic.DeviceArray.empty((x.size,), np.int32)
    count = _C.cub_select(d.ptr, x.size, 5, 2.0, out.ptr, None)
    assert np.array_equal(out.copy_to_host()[:count], x[x >= 2])
    with pytest.raises(TypeError, match="cub"):
        _C.cub_sum(d.ptr, x.size, 7, None)


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
