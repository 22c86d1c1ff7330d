import os
import pathlib
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
from conftest import BACKENDS, CUDA, make, requires_cuda

import cuatomic
from cuatomic import _C, _backend


def test_backends_and_info():
    assert BACKENDS[-1] == "cpu" and BACKENDS in (["cpu"], ["cuda", "cpu"])
    info = cuatomic.backend_info()
    assert info["backends"] == BACKENDS
    assert info["cpu_threads"] >= 1
    assert isinstance(info["build"]["cuda"], bool)
    if info["build"]["cuda"]:  # machine code for some archs and PTX for the newest, or (built without a GPU) PTX only
        archs, ptx = info["build"]["archs"], info["build"]["ptx"]
        assert all(a.isdigit() for a in archs) and ptx.isdigit(), info["build"]
        assert (archs and ptx == archs[-1]) or (not archs and ptx == "75"), info["build"]
    else:
        assert info["build"]["archs"] == [] and info["build"]["ptx"] == "", info["build"]
    if CUDA:
        assert info["cuda"]["usable"] and info["cuda"]["sm_count"] > 0 and info["cuda"]["name"]
        assert info["cuda"]["compute_capability"][0] >= 7
    else:
        assert not info["cuda"]["usable"] and info["cuda"]["reason"]
    if not info["build"]["cuda"]:  # the documented keys are there, empty or 0 (the notebooks read "name")
        assert info["cuda"]["name"] == "" and info["cuda"]["sm_count"] == 0
        assert info["cuda"]["compute_capability"] == (0, 0)


# backend_info()'s keys as its docstring lists them: the same in a CPU-only
# build, a CUDA build without a GPU and one with a GPU.
INFO_KEYS = {"build", "backends", "default_backend", "default_backend_error", "cpu_threads", "numpy", "cuda"}
BUILD_KEYS = {"cuda", "archs", "ptx"}
CUDA_KEYS = {"usable", "reason", "name", "device", "compute_capability", "sm_count", "cooperative_launch",
             "driver_version", "runtime_version", "total_memory", "shared_per_block_optin", "l2_bytes", "memory_gbps"}


def test_backend_info_keys_are_the_same_in_every_build():
    info = cuatomic.backend_info()
    assert set(info) == INFO_KEYS
    assert set(info["build"]) == BUILD_KEYS
    assert set(info["cuda"]) == CUDA_KEYS
    documented = set(re.findall(r"``(\w+)``", cuatomic.backend_info.__doc__))
    assert INFO_KEYS | BUILD_KEYS | CUDA_KEYS <= documented


# Flags that tell how one backend's version of a rung runs rather than what
# the rung is: the cpu's weighted warp_private merges its copies in order
# (deterministic) where the GPU's adds them with atomics. Every other flag is
# the rung's idea, and the backends must agree on it.
BACKEND_OWN_FLAGS = _C.F_DETERMINISTIC


def shared_facts(rows):
    """(name, step, flags but BACKEND_OWN_FLAGS) of each Rung of a table."""
    return [(r.name, r.step, r.flags & ~BACKEND_OWN_FLAGS) for r in rows]


@pytest.mark.parametrize("op", _backend.OPS)
def test_methods_tables(op):
    for be in BACKENDS:
        rows = cuatomic.methods(op, be)
        assert rows and [r[1] for r in rows] == sorted(r[1] for r in rows)
        assert all(isinstance(n, str) and isinstance(s, str) and s for n, _, s in rows)
    if _backend.cuda_built():  # the two backends are name for name, step for step, flag for flag
        assert shared_facts(_backend.table(op, "cpu")) == shared_facts(_backend.table(op, "cuda"))
    assert cuatomic.methods(op) == cuatomic.methods(op, BACKENDS[0])


ROOT = pathlib.Path(__file__).resolve().parents[1]
# One row of a C table: {{"name", step, "summary" (one or more literals), flags},
TABLE_ROW = re.compile(r'\{\{"(\w+)",\s*(\d+),\s*(?:"(?:[^"\\]|\\.)*"\s*)+,\s*([\w\s|]+?)\s*\},')
LADDER = re.compile(r'cua_cuda_(\w+)_ladder = CUA_LADDER\((\w+)\)')


def flag_value(expr):
    """A row's flags as C writes them ("0", "CUA_F_EXACT | CUA_F_DETERMINISTIC"),
    valued through _C's F_* constants."""
    value = 0
    for name in expr.split("|"):
        name = name.strip()
        value |= 0 if name == "0" else getattr(_C, name[len("CUA_"):])
    return value


def cuda_source_tables():
    """The cuda tables as cuda/*.cu writes them, for a build that has none:
    op -> [(name, step, flags)]."""
    tables = {}
    for path in sorted((ROOT / "cuda").glob("*.cu")):
        text = path.read_text()
        for op, array in LADDER.findall(text):
            start = text.index(f"{array}[] = {{")
            body = text[start:text.index("\n};", start)]
            tables[op] = [(name, int(step), flag_value(flags)) for name, step, flags in TABLE_ROW.findall(body)]
    return tables


def test_cuda_source_tables_match_the_cpu_tables():
    """What test_methods_tables compares in a CUDA build, checked against
    the cuda sources in every build (a CPU-only one has no cuda table to
    load): names, steps and the flags that are the rung's idea."""
    if not (ROOT / "cuda").is_dir():
        pytest.skip("no cuda/ sources beside the tests")
    cuda = cuda_source_tables()
    assert sorted(cuda) == sorted(_backend.OPS)
    for op in _backend.OPS:
        cpu = _backend.table(op, "cpu")
        want = shared_facts(cpu)
        got = [(name, step, flags & ~BACKEND_OWN_FLAGS) for name, step, flags in cuda[op]]
        assert got == want, op
    if _backend.cuda_built():  # the parse reads what the compiler built
        assert cuda == {op: [(r.name, r.step, r.flags) for r in _backend.table(op, "cuda")] for op in _backend.OPS}


# The rungs the tutorial and the lessons name, in their order. A ladder may
# grow past them (a new rung is a kernel, a launcher and a row): it must
# keep these, in this order, at the steps they have.
LESSONS = {
    "sum": ["atomic", "cas", "thread_local", "block_tree", "grid_lock", "grid_flags", "cooperative", "last_block",
            "vector"],
    "dot": ["partial", "mutex", "atomic", "cas", "vector"],
    "histogram": ["global", "shared", "warp_private", "thread_counters"],
    "filter": ["atomic", "ordered", "lookback"],
    "mutex_add_one": ["spin", "warp_lock"],
    "add_one": ["racy", "atomic", "mutex"],
    "prod": ["cas"],
    "reduce": ["atomic", "cas", "block_tree", "vector"],
    "weighted_histogram": ["global", "cas", "shared", "warp_private"],
    "at": ["atomic", "cas", "warp_aggregated", "shared", "exact"],
    "argmin": ["cas", "packed", "block_tree", "vector"],
    "histogramdd": ["global", "shared", "tiled", "cluster"],
    "segmented": ["atomic", "warp", "columns", "tiled"],
    "unique": ["sort", "global", "shared", "warp_aggregated"],
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_tutorial_ladders(backend):
    """The tutorial's rungs in its order, then the top rungs; steps count
    1, 2, ... in table order, and every op has its ladder."""
    assert sorted(LESSONS) == sorted(_backend.OPS)
    for op, lesson in LESSONS.items():
        rows = cuatomic.methods(op, backend)
        assert [n for n, _, _ in rows][:len(lesson)] == lesson, op
        assert [s for _, s, _ in rows] == list(range(1, len(rows) + 1)), op


def test_unknown_method_lists_valid_ones():
    with pytest.raises(ValueError, match="block_tree"):
        cuatomic.sum(np.ones(3), method="fastest")
    with pytest.raises(ValueError, match="unknown op"):
        cuatomic.methods("product")


def test_backend_selection(monkeypatch):
    with pytest.raises(ValueError, match="unknown backend"):
        cuatomic.sum(np.ones(3), backend="tpu")
    monkeypatch.setenv("CUATOMIC_BACKEND", "cpu")
    assert cuatomic.sum(np.ones(3)) == 3.0
    monkeypatch.setenv("CUATOMIC_BACKEND", "fpga")
    with pytest.raises(ValueError, match="unknown backend"):
        cuatomic.sum(np.ones(3))
    monkeypatch.delenv("CUATOMIC_BACKEND")
    if not CUDA:
        with pytest.raises(RuntimeError, match="not usable"):
            cuatomic.sum(np.ones(3), backend="cuda")
        with pytest.raises(RuntimeError, match="not usable"):
            cuatomic.to_device(np.ones(3), backend="cuda")


@pytest.mark.parametrize("value", ["gpu", "CPU", " cpu", "cpu ", "Cuda", "fpga"] + ([] if CUDA else ["cuda"]))
def test_a_backend_variable_naming_no_usable_backend_is_said_at_once(monkeypatch, value):
    # backend_info() used to report such a value as the default while every
    # call raised an error that did not name the variable.
    monkeypatch.setenv("CUATOMIC_BACKEND", value)
    info = cuatomic.backend_info()
    assert info["default_backend"] is None and info["backends"] == BACKENDS
    assert info["default_backend_error"].startswith(f"CUATOMIC_BACKEND={value!r}: ")
    kind = RuntimeError if value == "cuda" else ValueError
    for call in (lambda: cuatomic.sum(np.ones(3)), lambda: cuatomic.histogram(np.ones(3)),
                 lambda: cuatomic.add_one(), lambda: cuatomic.to_device(np.ones(3)), lambda: cuatomic.methods("sum"),
                 lambda: cuatomic.explain("sum"), lambda: cuatomic.Timer()):
        with pytest.raises(kind, match=rf"^CUATOMIC_BACKEND={re.escape(repr(value))}: ") as found:
            call()
        assert str(found.value) == info["default_backend_error"]
    near = value.strip().lower()
    if near in ("cpu", "cuda") and near != value:  # taken exactly, as backend= takes it; the message says which
        assert f"did you mean {near!r}?" in info["default_backend_error"]
    # an argument still chooses; the variable is not read then
    assert cuatomic.sum(np.ones(3), backend="cpu") == 3.0


def test_a_valid_backend_variable_is_the_default(monkeypatch):
    monkeypatch.setenv("CUATOMIC_BACKEND", "cpu")
    info = cuatomic.backend_info()
    assert info["default_backend"] == "cpu" and info["default_backend_error"] == ""
    monkeypatch.setenv("CUATOMIC_BACKEND", "")  # empty: unset
    assert cuatomic.backend_info()["default_backend"] == BACKENDS[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_launch_config_errors(backend):
    a = np.ones(100)
    for kwargs in ({"blocks": 0}, {"threads": 0}, {"threads": 1025}, {"blocks": -3}, {"blocks": 2**31}):
        with pytest.raises(ValueError, match="must be between 1 and"):
            cuatomic.sum(a, backend=backend, **kwargs)
        with pytest.raises(ValueError, match="must be between 1 and"):
            cuatomic.histogram(a, backend=backend, **kwargs)
        with pytest.raises(ValueError, match="must be between 1 and"):
            cuatomic.mutex_add_one(backend=backend, **kwargs)
    with pytest.raises(TypeError):
        cuatomic.dot(a, a, blocks=2.5, backend=backend)
    with pytest.raises(TypeError):
        cuatomic.filter(a, "<", 1, threads=True, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", [np.ones(3, np.complex64), np.array([object()]), np.array(["a"]),
                                 np.ones(3, np.float16), np.zeros(2, "M8[s]")],
                         ids=["complex64", "object", "str", "float16", "datetime64"])
def test_unsupported_dtypes(backend, bad):
    with pytest.raises(TypeError):
        cuatomic.sum(bad, backend=backend)
    with pytest.raises(TypeError):
        cuatomic.dot(bad, bad, backend=backend)
    with pytest.raises(TypeError):
        cuatomic.histogram(bad, backend=backend)
    with pytest.raises(TypeError):
        cuatomic.filter(bad, "<", 1, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_inputs_behave_as_numpy(backend):
    for dt in (np.int32, np.float32, np.uint8, np.bool_):
        e = np.empty(0, dt)
        got, ref = cuatomic.sum(e, backend=backend), np.sum(e)
        assert got == ref and got.dtype == ref.dtype
        got, ref = cuatomic.dot(e, e, backend=backend), np.dot(e, e)
        assert got == ref and got.dtype == ref.dtype
        assert cuatomic.filter(e, "<", 1, backend=backend).shape == (0,)
    hist, edges = cuatomic.histogram(np.empty(0), backend=backend)
    ref_hist, ref_edges = np.histogram(np.empty(0))
    np.testing.assert_array_equal(hist, ref_hist)
    np.testing.assert_array_equal(edges, ref_edges)


def test_cpu_to_device_is_numpy():
    a = np.asfortranarray(np.arange(12, dtype=">i4").reshape(3, 4))
    d = cuatomic.to_device(a, backend="cpu")
    assert isinstance(d, np.ndarray) and d.flags.c_contiguous and d.dtype.isnative
    np.testing.assert_array_equal(d, a)
    for zero_d in (np.array(2.5), np.array(7, ">i8")):  # 0-d stays 0-d (np.ascontiguousarray makes it 1-d)
        d = cuatomic.to_device(zero_d, backend="cpu")
        assert d.shape == () and d.dtype.isnative and d == zero_d
    c = np.arange(5.0)
    assert cuatomic.to_device(c, backend="cpu") is c  # already C order and native: no copy


def test_cuda_error_class():
    e = cuatomic.CudaError("cudaErrorMemoryAllocation: out of memory", 2, "cudaErrorMemoryAllocation")
    assert isinstance(e, RuntimeError) and e.code == 2 and e.name == "cudaErrorMemoryAllocation"


def test_no_cuda_call_at_import():
    code = "import cuatomic, cuatomic._backend as b; assert b._probe is None; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.getcwd())
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_import_loads_no_benchmark_and_no_peer_library():
    # The peers are imported by cuatomic.bench.peers only, when a benchmark asks.
    code = ("import sys, cuatomic; import numpy as np; cuatomic.sum(np.arange(10)); "
            "print(sorted(m for m in ('cuatomic.bench', 'cupy', 'torch', 'numba') if m in sys.modules)); "
            "import cuatomic.bench; "
            "print(sorted(m for m in ('cupy', 'torch', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.getcwd())
    assert out.returncode == 0 and out.stdout.split("\n")[:2] == ["[]", "[]"], (out.stdout, out.stderr)


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_share_the_module(backend):
    a = make(np.int64, 200_001)
    ref, results = np.sum(a), []

    def work():
        for m, _, _ in cuatomic.methods("sum", backend):
            results.append(cuatomic.sum(a, method=m, backend=backend) == ref)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 * len(cuatomic.methods("sum", backend)) and all(results)


# ------------------------------------------------------------------- cuda only

@requires_cuda
def test_device_array():
    a = make(np.float32, 3 * 5).reshape(3, 5)
    d = cuatomic.to_device(a, backend="cuda")
    assert isinstance(d, cuatomic.DeviceArray)
    assert d.shape == (3, 5) and d.dtype == np.float32 and d.size == 15 and d.nbytes == 60 and d.ndim == 2
    np.testing.assert_array_equal(d.copy_to_host(), a)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 5) and cai["typestr"] == "<f4" and cai["data"][0] == d.ptr
    assert cuatomic.to_device(d, backend="cuda") is d
    with pytest.raises(TypeError, match="copy_to_host"):
        np.asarray(d)
    with pytest.raises(TypeError, match="DeviceArray"):
        cuatomic.sum(d, backend="cpu")
    f = np.asfortranarray(a)
    np.testing.assert_array_equal(cuatomic.to_device(f, backend="cuda").copy_to_host(), a)
    zero_d = cuatomic.to_device(np.array(2.5, ">f8"), backend="cuda")
    assert zero_d.shape == () and zero_d.copy_to_host() == 2.5


@requires_cuda
def test_device_results_stay_on_device():
    a = make(np.int32, 10_000)
    d = cuatomic.to_device(a, backend="cuda")
    hist, edges = cuatomic.histogram(d, bins=50, backend="cuda")
    assert isinstance(hist, cuatomic.DeviceArray) and hist.dtype == np.int64
    np.testing.assert_array_equal(hist.copy_to_host(), np.histogram(a, bins=50)[0])
    kept = cuatomic.filter(d, ">", 0, backend="cuda")
    assert isinstance(kept, cuatomic.DeviceArray)
    np.testing.assert_array_equal(kept.copy_to_host(), a[a > 0])


@requires_cuda
def test_barrier_rungs_refuse_grids_that_cannot_be_resident():
    a = np.ones(1000, np.int32)
    sms = cuatomic.backend_info()["cuda"]["sm_count"]
    from cuatomic import _C, _backend
    resident = [r.name for r in _backend.table("sum", "cuda") if r.has(_C.F_RESIDENT)]
    assert resident  # the barrier rungs say so in their rows
    for m in resident:
        with pytest.raises(ValueError, match="resident"):
            cuatomic.sum(a, method=m, backend="cuda", blocks=10_000 * sms, threads=1024)
        assert cuatomic.sum(a, method=m, backend="cuda") == 1000  # and the next call still works


@requires_cuda
def test_cuda_error_is_raised_and_does_not_poison():
    from cuatomic import _C
    with pytest.raises(cuatomic.CudaError) as info:
        _C.DeviceBuffer(1 << 60)
    assert info.value.name == "cudaErrorMemoryAllocation" and info.value.code > 0
    assert "cudaErrorMemoryAllocation" in str(info.value)
    assert cuatomic.sum(np.arange(10), backend="cuda") == 45


def _forced_calls(backend):
    """(op, call(method)) of every op on small data (for the histogram,
    bytes in bins of width one: what every rung takes)."""
    x = np.arange(1, 2001, dtype=np.int32)
    d = cuatomic.to_device(x, backend=backend) if backend == "cuda" else x
    b = (x % 128).astype(np.uint8)
    db = cuatomic.to_device(b, backend=backend) if backend == "cuda" else b
    return [
        ("sum", lambda m, **k: cuatomic.sum(d, method=m, backend=backend, **k)),
        ("prod", lambda m, **k: cuatomic.prod(d, method=m, backend=backend, **k)),
        ("reduce", lambda m, **k: cuatomic.reduce(d, "maximum", method=m, backend=backend, **k)),
        ("dot", lambda m, **k: cuatomic.dot(d, d, method=m, backend=backend, **k)),
        ("histogram", lambda m, **k: cuatomic.histogram(db, 128, (0, 128), method=m, backend=backend, **k)),
        ("filter", lambda m, **k: cuatomic.filter(d, "<", 100, ordered=False, method=m, backend=backend, **k)),
        ("add_one", lambda m, **k: cuatomic.add_one(4, 64, method=m, backend=backend, **k)),
        ("mutex_add_one", lambda m, **k: cuatomic.mutex_add_one(4, 64, method=m, backend=backend, **k)),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forced_method_is_the_one_that_ran(backend):
    """The core reports what it launched: a named rung is the rung that ran,
    on the backend asked for, with the grid asked for when one is given."""
    for op, call in _forced_calls(backend):
        for name, _, _ in cuatomic.methods(op, backend):
            call(name)
            ran = cuatomic.last_launch()
            assert (ran["op"], ran["backend"], ran["method"]) == (op, backend, name)
            assert ran["blocks"] >= 1 and 1 <= ran["threads"] <= 1024 and ran["chunks"] == 1
            if op not in ("add_one", "mutex_add_one"):
                try:
                    call(name, blocks=2, threads=64)
                except ValueError as e:  # a rung whose block size is its own refuses another, naming it
                    assert f"method '{name}'" in str(e) and "threads" in str(e), (op, name, e)
                    continue
                ran = cuatomic.last_launch()
                assert ran["method"] == name and ran["threads"] <= 64 and 1 <= ran["blocks"] <= 2, (op, ran)


def _big_calls(n, grid):
    """(op, call(method, **launch)) of every op on n elements (the counters,
    last: a grid); the histogram's are bytes, which every rung takes."""
    x = np.arange(n, dtype=np.int32) % 128
    b = x.astype(np.uint8)
    f = np.linspace(0.5, 1.5, n)
    p = 1 + 1e-9 * f
    return [
        ("sum", lambda m, **k: cuatomic.sum(f, method=m, backend="cpu", **k)),
        ("prod", lambda m, **k: cuatomic.prod(p, method=m, backend="cpu", **k)),
        ("reduce", lambda m, **k: cuatomic.reduce(x, "maximum", method=m, backend="cpu", **k)),
        ("dot", lambda m, **k: cuatomic.dot(f, f, method=m, backend="cpu", **k)),
        ("histogram", lambda m, **k: cuatomic.histogram(b, 128, (0, 128), method=m, backend="cpu", **k)),
        ("weighted_histogram",
         lambda m, **k: cuatomic.histogram(x, 128, (0, 128), weights=f, method=m, backend="cpu", **k)),
        ("filter", lambda m, **k: cuatomic.filter(x, "<", 100, ordered=False, method=m, backend="cpu", **k)),
        ("add_one", lambda m, **k: cuatomic.add_one(*grid, method=m, backend="cpu", **k)),
        ("mutex_add_one", lambda m, **k: cuatomic.mutex_add_one(*grid, method=m, backend="cpu", **k)),
    ]


def test_cpu_team_is_sized_to_the_work():
    """Issue 25: a small call must not wake (and wait for) OS threads it
    cannot keep busy -- on a busy machine each wait could last a scheduler
    tick. Every rung runs 2,000 elements (256 increments) on one OS thread,
    and P * CPU_GRAIN elements on the whole team of P; last_launch says how
    many ran. The racy lesson needs its team whatever the size."""
    P, grain = cuatomic.backend_info()["cpu_threads"], _C.CPU_GRAIN
    for op, call in _forced_calls("cpu"):
        for name, _, _ in cuatomic.methods(op, "cpu"):
            call(name)
            racy = _backend.rung(op, "cpu", name).has(_C.F_RACY)
            assert cuatomic.last_launch()["cpu_threads"] == (min(P, 4) if racy else 1), (op, name)
    n = P * grain
    for op, call in _big_calls(n, (n // 256, 256)):
        for name, _, _ in cuatomic.methods(op, "cpu"):
            call(name)
            assert cuatomic.last_launch()["cpu_threads"] == P, (op, name, cuatomic.last_launch())
    for backend in BACKENDS:
        cuatomic.sum(np.ones(10), backend=backend)
        assert (cuatomic.last_launch()["cpu_threads"] is None) == (backend == "cuda")


def test_cpu_grid_is_clamped_to_the_data():
    """Issue 25, the README's claim that a grid larger than the data costs
    nothing: sum(x, method="exact", blocks=2**31 - 1) of 2^20 elements took
    2.7 s on the cpu backend (1.1 ms by default) -- every element a block of
    its own. As cua_clamp_grid on CUDA, the cpu backend runs no block beyond
    the data: a logical thread gets CPU_MIN_SHARE elements at least (its unit
    of work there). last_launch reports the grid that ran, the answer is the
    one of the default grid, and a grid the data fills is run as asked."""
    n, unit = 1 << 16, _C.CPU_MIN_SHARE

    def same(a, b):
        a, b = (v[0] if isinstance(v, tuple) else v for v in (a, b))
        return np.allclose(np.sort(np.ravel(a)), np.sort(np.ravel(b)), rtol=1e-12, atol=0)

    for op, call in _big_calls(n, None)[:-2]:  # the counters have no data: their grid is the work
        for name, _, _ in cuatomic.methods(op, "cpu"):
            want = call(name)
            got = call(name, blocks=2**31 - 1)
            ran = cuatomic.last_launch()
            assert (ran["blocks"] - 1) * ran["threads"] * unit < n <= ran["blocks"] * ran["threads"] * max(
                unit, 1 << 14), (op, name, ran)  # (filter's lookback takes tiles of 2^14)
            assert same(got, want), (op, name)
            call(name, blocks=3)
            assert cuatomic.last_launch()["blocks"] == 3, (op, name)


def test_last_launch_is_per_thread_and_none_before_a_call():
    import threading
    seen = []
    worker = threading.Thread(target=lambda: seen.append(cuatomic.last_launch()))
    cuatomic.sum(np.ones(10), backend="cpu")
    worker.start()
    worker.join()
    assert seen == [None] and cuatomic.last_launch()["op"] == "sum"


@requires_cuda
def test_last_launch_counts_the_chunks_of_a_streamed_host_array(monkeypatch):
    monkeypatch.setenv("CUATOMIC_PIPELINE_CHUNK", str(1 << 16))
    x = np.ones(1 << 20, np.int32)  # 4 MiB through 64 KiB buffers
    assert cuatomic.sum(x, method="atomic", backend="cuda") == x.size
    ran = cuatomic.last_launch()
    assert ran["method"] == "atomic" and ran["chunks"] > 1
