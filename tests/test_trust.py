"""What users hit and must not: float results less accurate than NumPy's,
launch sizes that kill or hang the process, Ctrl-C ignored, integer edges
compared as floats, a filter holding memory it does not show. (The race
lesson's lost updates: tests/test_mutex.py.)"""
import math
import signal
import subprocess
import sys
import textwrap
import time
from fractions import Fraction

import numpy as np
import pytest
from conftest import BACKENDS, REFUSED, hist_call, requires_cuda

import cuatomic
from cuatomic._exact import error_bound, exact_dot, exact_sum


# ------------------------------------------------------------------ accuracy

def _accuracy_cases():
    """(name, a, b or None): the issue's adversarial suite."""
    rng = np.random.default_rng(7)
    f32 = np.float32
    n = 1_000_003
    x = rng.standard_normal(10**6)
    mixed = rng.standard_normal(10**6) * 10.0 ** rng.integers(-10, 11, 10**6)
    cases = [
        ("1e8 then 10^7-1 ones", np.concatenate([[f32(1e8)], np.ones(10**7 - 1, f32)]), None),
        ("0.1 x 10^7", np.full(10**7, f32(0.1)), None),
        ("tutorial dot ones . ones/N", np.ones(n, f32), (np.ones(n, f32) / f32(n)).astype(f32)),
        ("cancellation", np.concatenate([x, -x[::-1], [1e-3]]), None),
        ("mixed magnitudes", mixed, None),
        ("10^7 normal", rng.standard_normal(10**7), None),
        ("dot mixed magnitudes", mixed[:200_000], rng.standard_normal(200_000)),
        ("dot cancellation", np.concatenate([x[:1000], x[:1000], [1e-3]]),
         np.concatenate([x[1000:2000], -x[1000:2000], [1.0]])),
    ]
    out = []
    for name, a, b in cases:
        for dt in (np.float32, np.float64):
            out.append(pytest.param(a.astype(dt), None if b is None else b.astype(dt), id=f"{name}-{np.dtype(dt)}"))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a,b", _accuracy_cases())
def test_auto_is_as_accurate_as_numpy(backend, a, b):
    """method='auto' errs at most twice NumPy's error (np.sum, or np.sum(a*b)
    for dot) or two ulps, against the exact answer."""
    if b is None:
        got, exact, numpy_value = cuatomic.sum(a, backend=backend), exact_sum(a), np.sum(a)
    else:
        got, exact, numpy_value = cuatomic.dot(a, b, backend=backend), exact_dot(a, b), np.sum(a * b)
    assert got.dtype == a.dtype
    bound = error_bound(exact, numpy_value, a.dtype)
    assert abs(float(got) - exact) <= bound, (float(got), exact, float(numpy_value), bound)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["near one", "spread"])
def test_auto_prod_is_as_accurate_as_numpy(backend, dtype, kind):
    rng = np.random.default_rng(3)
    n = 3000
    if kind == "near one":
        a = (1 + rng.uniform(-1e-3, 1e-3, n)).astype(dtype)
    else:  # factors from 1/8 to 8, kept within range by alternating
        a = np.exp(rng.uniform(-2, 2, n)).astype(dtype)
    exact_fraction = math.prod(Fraction(float(v)) for v in a)
    exact = float(exact_fraction)
    got, numpy_value = cuatomic.prod(a, backend=backend), np.prod(a)
    assert got.dtype == np.dtype(dtype)
    bound = error_bound(exact, numpy_value, dtype)
    assert abs(float(got) - exact) <= bound, (float(got), exact, float(numpy_value), bound)
    # What the compensation buys beyond the rule: one rounding, within an
    # ulp (NumPy errs by tens to thousands of ulps on these inputs).
    assert abs(float(got) - exact) <= float(np.spacing(np.asarray(abs(exact), dtype))), (float(got), exact)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prod_special_values_as_numpy(backend, dtype):
    """Zeros keep their sign, infinities and NaN propagate: the correction
    applies to normal totals only."""
    for tail in ([-0.0], [0.0], [np.inf], [-np.inf], [np.nan], [0.0, np.inf], [-0.0, -1.0]):
        a = np.array([0.1] * 10 + tail, dtype)
        with np.errstate(invalid="ignore"):  # 0 * inf
            got, ref = cuatomic.prod(a, backend=backend), np.prod(a)
        assert (np.isnan(got) and np.isnan(ref)) or (got == ref and np.signbit(got) == np.signbit(ref)), (tail, got)


@requires_cuda
def test_large_host_arrays_keep_the_compensation_across_chunks(monkeypatch):
    """A host array streamed to the GPU in chunks: the chunks come back as
    (value, error) pairs, so cancellation across chunks loses nothing."""
    monkeypatch.setenv("CUATOMIC_PIPELINE_CHUNK", str(1 << 16))  # 8192 doubles a chunk: many chunks
    x = np.zeros(24 * 8192)
    x[0], x[7168], x[8197] = 2.0**53, 1.0, -(2.0**53)  # 2^53 + 1 rounds to 2^53 within the first chunk
    assert cuatomic.sum(x, backend="cuda") == 1.0
    assert cuatomic.dot(x, np.ones_like(x), backend="cuda") == 1.0


@requires_cuda
def test_narrowing_device_sums_are_as_accurate_as_numpy():
    """sum(dtype=float32) of float64 device data: every element rounded to
    float32 first (as NumPy does), then summed compensated."""
    a = np.concatenate([[1e8], np.ones(10**7 - 1)])
    got = cuatomic.sum(cuatomic.to_device(a, backend="cuda"), dtype=np.float32, backend="cuda")
    rounded = a.astype(np.float32)
    exact = exact_sum(rounded)
    assert got.dtype == np.float32
    assert abs(float(got) - exact) <= error_bound(exact, np.sum(a, dtype=np.float32), np.float32)


def _available_bytes():
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return 0


@pytest.mark.skipif(_available_bytes() < 14 << 30, reason="needs 14 GiB of free memory (2^31+17 float32)")
def test_sum_of_2_pow_31_plus_17_float32_ones():
    """Each float32 lane used to stop at 2^24: the sum came out 75% low."""
    a = np.ones(2**31 + 17, np.float32)
    exact = float(2**31 + 17)
    numpy_err = abs(float(np.sum(a)) - exact)
    for backend in BACKENDS:
        got = cuatomic.sum(a, backend=backend)
        assert abs(float(got) - exact) <= max(2 * numpy_err, 2 * float(np.spacing(np.float32(exact)))), backend
    del a


# ------------------------------------------------------ launch sizes, C checks

RUN_TIMEOUT = 60


def _run(code, timeout=RUN_TIMEOUT, env=None):
    """Run code in a fresh interpreter: a crash or a hang fails the test,
    not pytest."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_huge_grids_on_tiny_inputs_finish_at_once():
    """Logical threads with no element do no work; OS threads never exceed
    the team; nothing is allocated per logical block."""
    r = _run("""
        import time, numpy as np, cuatomic
        big = dict(blocks=2**31 - 1, threads=1024)
        for be in cuatomic.backends():
            for op, args, check in [
                ("sum", (np.ones(10, np.int32),), lambda v: v == 10),
                ("dot", (np.ones(10), np.ones(10)), lambda v: v == 10.0),
                ("prod", (np.full(10, 2.0),), lambda v: v == 1024.0),
                ("histogram", (np.arange(10),), lambda v: list(v[0]) == [1] * 10),
            ]:
                for m, _, _ in cuatomic.methods(op, be):
                    t = time.monotonic()
                    try:
                        v = getattr(cuatomic, op)(*args, method=m, backend=be, **big)
                    except ValueError as e:  # a rung that refuses must say the limit
                        assert "at most" in str(e) or "between" in str(e) or "-byte data" in str(e), (
                            op, m, e)
                        continue
                    assert check(v), (be, op, m, v)
                    assert time.monotonic() - t < 5, (be, op, m)
            for m, _, _ in cuatomic.methods("filter", be):
                for blocks in (33000, 100000, 2**31 - 1):
                    got = cuatomic.filter(np.arange(100, dtype=np.int32), ">", 5, method=m, ordered=False,
                                          blocks=blocks, backend=be)
                    assert sorted(np.asarray(got if be == "cpu" else got)) == list(range(6, 100)), (m, blocks)
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_c_layer_checks_the_launch_it_trusts():
    """_C is private, but a call into it must not crash the process:
    threads > 1024 (the CPU block tree keeps 1024 lanes on the stack) and
    blocks out of range are refused in C."""
    r = _run("""
        import numpy as np
        from cuatomic import _C, _backend
        x = np.ones(10)
        tree = _backend.rung("sum", "cpu", "block_tree").index
        for blocks, threads in [(1, 2000), (1, 0), (0, 32), (2**31, 32), (-5, 32)]:
            try:
                _C.sum(backend=_C.BACKEND_CPU, rung=tree, x=x, n=10, dtype=10, acc=_C.ACC_FLOAT64, blocks=blocks,
                       threads=threads, stream=None, out_type=x.dtype.num)
            except ValueError as e:
                assert "between" in str(e), e
            else:
                raise AssertionError((blocks, threads))
        print("ok")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


# -------------------------------------------------------------------- Ctrl-C

_SIGINT_CHILD = """
import sys, time, numpy as np, cuatomic
be, what = sys.argv[1], sys.argv[2]
calls = {
    "mutex_spin": lambda: cuatomic.mutex_add_one(2**31 - 1, 1024, method="spin", backend=be),
    "mutex_warp_lock": lambda: cuatomic.mutex_add_one(2**31 - 1, 1024, method="warp_lock", backend=be),
    "add_one_mutex": lambda: cuatomic.add_one(2**31 - 1, 1024, method="mutex", backend=be),
    "histogram_global": lambda: cuatomic.histogram(np.zeros(2**30, np.uint8), bins=4, range=(0, 4),
                                                   method="global", blocks=1, threads=1, backend=be),
}
x = np.arange(10**6)
# Warm up first: creating the CUDA context (seconds when several processes
# load the module at once) is not the long call under test.
assert cuatomic.sum(x, backend=be) == np.sum(x)
print("ready", flush=True)
try:
    calls[what]()
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
ok = cuatomic.sum(x, backend=be) == np.sum(x) and cuatomic.mutex_add_one(64, 256, backend=be) == 16384
print("next call right" if ok else "next call WRONG", flush=True)
"""


def _interrupt(backend, what):
    p = subprocess.Popen([sys.executable, "-c", _SIGINT_CHILD, backend, what], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # well inside the call
        start = time.monotonic()
        p.send_signal(signal.SIGINT)
        first = p.stdout.readline().strip()
        waited = time.monotonic() - start
        p.wait(timeout=60)
        # Read on through the same buffered file: communicate() would read the
        # raw pipe and miss what readline() already buffered.
        rest, err = p.stdout.read(), p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
    return first, waited, rest.strip(), p.returncode, err


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("what", ["mutex_spin", "mutex_warp_lock", "add_one_mutex", "histogram_global"])
def test_ctrl_c_interrupts_a_long_call(backend, what):
    if backend == "cuda" and what == "histogram_global":
        pytest.skip("a 1 GiB histogram takes milliseconds on a GPU: nothing to interrupt")
    first, waited, rest, code, err = _interrupt(backend, what)
    assert first == "interrupted", (first, err[-2000:])
    assert waited < 1.0, f"KeyboardInterrupt {waited:.2f} s after SIGINT"
    assert rest == "next call right" and code == 0, (rest, err[-2000:])


# ----------------------------------------------------------- exact integers

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_integer_edges_compare_exactly(backend, where):
    if where == "device" and backend != "cuda":
        pytest.skip("device input needs the cuda backend")
    cases = [
        (np.array([2**62, 2**62 + 1], np.int64), [2**62, 2**62 + 1, 2**62 + 2]),
        (np.array([-(2**62) - 1, -(2**62), 5], np.int64), [-(2**62) - 1, -(2**62), 0, 6]),
        (np.array([2**63 + 5, 2**63 + 6, 3], np.uint64), np.array([0, 2**63 + 6, 2**63 + 7], np.uint64)),
        # long long spells int64 too (a different NumPy type number on Linux)
        (np.array([5, 2**62], np.longlong), np.array([0, 2**62, 2**62 + 1], np.longlong)),
        (np.array([5, 2**62], np.int64), np.array([0, 2**62, 2**62 + 1], np.longlong)),
        (np.array([5, 2**63], np.ulonglong), np.array([0, 2**63, 2**63 + 1], np.uint64)),
    ]
    for a, bins in cases:
        ref, ref_edges = np.histogram(a, bins=bins)
        for m, _, _ in cuatomic.methods("histogram", backend):
            x = cuatomic.to_device(a, backend=backend) if where == "device" else a
            out = hist_call(x, bins=bins, method=m, backend=backend)
            if out is REFUSED:
                continue
            got, edges = out
            got = got.copy_to_host() if hasattr(got, "copy_to_host") else got
            assert np.array_equal(got, ref), (m, got, ref)
            assert np.array_equal(edges, ref_edges) and edges.dtype == ref_edges.dtype


# --------------------------------------------------------------- filter memory

def test_cpu_filter_output_is_its_count():
    """The host output is given back down to the kept elements: the result
    owns no more memory than it shows, and peak RSS stays near input +
    output."""
    r = _run("""
        import resource, numpy as np, cuatomic
        x = np.arange(1 << 26, dtype=np.int64)          # 512 MiB
        x[:] = x                                         # resident
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = cuatomic.filter(x, "<", 1 << 16, backend="cpu")   # 512 KiB kept
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
        assert out.size == 1 << 16 and (out.base is None or out.base.nbytes == out.nbytes), out.base
        assert np.array_equal(out, np.arange(1 << 16))
        print(grew)
    """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout.split()[-1]) < 64 << 20, f"peak RSS grew by {int(r.stdout.split()[-1]) >> 20} MiB"


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_interrupts_leak_nothing(backend):
    """Five calls interrupted in a row (the signal raised from a timer
    thread, as a second Ctrl-C would be): each raises KeyboardInterrupt, the
    process keeps no memory for them, and the calls after are right."""
    r = _run(f"""
        import os, resource, signal, threading, numpy as np, cuatomic
        be = {backend!r}
        x = np.arange(10**6)
        assert cuatomic.sum(x, backend=be) == np.sum(x)
        def interrupted_call():
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            try:
                cuatomic.mutex_add_one(2**31 - 1, 1024, method="spin", backend=be)
            except KeyboardInterrupt:
                return True
            return False
        assert interrupted_call()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert all(interrupted_call() for _ in range(5))
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
        assert grew < 16 * 1024, f"max RSS grew by {{grew}} KiB over five interrupted calls"
        assert cuatomic.sum(x, backend=be) == np.sum(x)
        assert cuatomic.mutex_add_one(64, 256, backend=be) == 16384
        assert cuatomic.add_one(64, 256, method="mutex", backend=be) == 16384
        print("ok")
    """, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
