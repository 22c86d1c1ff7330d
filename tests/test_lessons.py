"""Issue 3's tools: prod (multiply from CAS), Timer, benchmark, sweep, the
datasets and the plots."""
import math
import pathlib
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import BACKENDS, DTYPES, DLOnly, hist_refusal, placed, requires_cuda, where_params

import cuatomic
from cuatomic import datasets

SHARED_TEXT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"


# --------------------------------------------------------------------- prod

@pytest.mark.parametrize("backend,method,where", where_params("prod"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [0, 1, 33, 257, 100_003])
def test_prod_matches_numpy(backend, method, where, dtype, n):
    dt = np.dtype(dtype)
    rng = np.random.default_rng(n)
    if dt.kind == "f":
        a = (1 + rng.uniform(-1e-3, 1e-3, n)).astype(dt)  # stays finite for any n
    elif dt.kind == "b":
        a = rng.random(n) < 0.999
    else:
        a = rng.choice(np.array([1, 3, 5, 7, 255 if dt.kind == "u" else -3], dtype=dt), n)  # wraps, not to 0
    got, ref = cuatomic.prod(placed(a, backend, where), method=method, backend=backend), np.prod(a)
    assert got.dtype == ref.dtype
    if dt.kind == "f":
        assert abs(float(got) - float(ref)) <= 2 * (n + 1) * np.finfo(dt).eps * abs(float(ref))
    else:
        assert got == ref


@pytest.mark.parametrize("backend", BACKENDS)
def test_prod_dtype_argument(backend):
    a = np.array([3, 5, -7], np.int8)
    for dt in (None, np.int8, np.float64, bool):
        got, ref = cuatomic.prod(a, dtype=dt, backend=backend), np.prod(a, dtype=dt)
        assert got == ref and got.dtype == ref.dtype


# ---------------------------------------------------------- timer/benchmark

@pytest.mark.parametrize("backend", BACKENDS)
def test_timer_measures_the_block(backend):
    with cuatomic.Timer(backend=backend) as t:
        time.sleep(0.02)
        cuatomic.sum(np.ones(1000), backend=backend)
    assert 15 <= t.elapsed < 5000
    with pytest.raises(TypeError, match="stream"):
        cuatomic.Timer(stream="default", backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_benchmark_counts_only_timed_calls(backend):
    calls = []

    def fn(x, backend=None):
        calls.append(1)
        return cuatomic.sum(x, backend=backend)

    r = cuatomic.benchmark(fn, np.arange(100), repeat=7, warmup=3, backend=backend)
    assert len(calls) == 10 and len(r.times) == 7 and r.value == 4950
    assert r.min <= r.median <= r.max and r.iqr >= 0 and np.all(r.times > 0)
    with pytest.raises(ValueError):
        cuatomic.benchmark(fn, np.arange(3), repeat=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sweep_rows_and_validation(backend):
    text = datasets.text_to_array(datasets.english_like_text(50_000))
    rows = cuatomic.sweep("histogram", text, bins=128, range=(0, 128), blocks=[2, 8], repeat=2, backend=backend,
                          progress=False)
    every = [name for name, _, _ in cuatomic.methods("histogram", backend)]
    assert [(r.method, r.blocks) for r in rows] == [(m, b) for m in every for b in (2, 8)]
    assert all(r.median_ms > 0 and r.gbps > 0 and r.threads is None for r in rows)
    rows = cuatomic.sweep("sum", np.arange(5000.0), blocks=[1, 3], threads=[32, 64], methods=["block_tree"],
                          repeat=1, backend=backend)
    assert {(r.blocks, r.threads) for r in rows} == {(1, 32), (3, 32), (1, 64), (3, 64)}
    with pytest.raises(ValueError, match="unknown op"):
        cuatomic.sweep("median", np.arange(3))
    with pytest.raises(ValueError, match="time add_one and mutex_add_one with benchmark"):
        cuatomic.sweep("add_one", blocks=[1])
    with pytest.raises(ValueError, match="unknown method 'fastest'"):  # not silently left out
        cuatomic.sweep("sum", np.arange(10), methods=["atomic", "fastest"], blocks=[1], backend=backend)


X = np.arange(100.0)
SWEEP = dict(repeat=1, warmup=0, backend="cpu", progress=False)


@pytest.mark.parametrize("call,kind,says", [
    # settings no call takes: refused, naming the setting (blocks=[0] returned [] and dropped it)
    (lambda: cuatomic.sweep("sum", X, blocks=[0], **SWEEP), ValueError, r"^blocks must be between 1 and \d+ \(got 0\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[4, -3], **SWEEP), ValueError, r"^blocks must be between .*\(got -3\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[2**31], **SWEEP), ValueError, r"^blocks must be between"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], threads=0, **SWEEP), ValueError,
     r"^threads must be between 1 and 1024 \(got 0\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], threads=[32, 2000], **SWEEP), ValueError, r"^threads must be between"),
    (lambda: cuatomic.sweep("sum", X, blocks=2.5, **SWEEP), TypeError, r"^blocks must be an integer \(got float\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[True], **SWEEP), TypeError, r"^blocks must be an integer, not bool$"),
    (lambda: cuatomic.sweep("sum", X, blocks="8", **SWEEP), TypeError, r"^blocks must be an integer \(got str\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], methods=5, **SWEEP), TypeError,
     r"^methods must be names of sum's methods \(got int 5\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], methods="fastest", **SWEEP), ValueError,
     r"^methods: unknown method 'fastest' for sum on cpu"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], methods=[None], **SWEEP), TypeError, r"^methods must be names"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], **dict(SWEEP, repeat=None)), TypeError,
     r"^repeat must be an integer \(got NoneType\)$"),
    (lambda: cuatomic.sweep("sum", X, blocks=[1], **dict(SWEEP, warmup=-1)), ValueError,
     r"^warmup must be at least 0 \(got -1\)$"),
    (lambda: cuatomic.sweep(["sum"], X, blocks=[1], **SWEEP), ValueError, r"^unknown op \['sum'\] for sweep"),
    # the call's own errors, which every configuration would refuse: raised, not an empty list
    (lambda: cuatomic.sweep("histogram", X, bins=[0, np.nan, 2], blocks=[1], **SWEEP), ValueError,
     r"`bins` has a NaN edge"),
    (lambda: cuatomic.benchmark(cuatomic.sum, X, repeat=None), TypeError, r"^repeat must be an integer \(got NoneType\)$"),
    (lambda: cuatomic.benchmark(cuatomic.sum, X, repeat=0), ValueError, r"^repeat must be at least 1 \(got 0\)$"),
    (lambda: cuatomic.benchmark(cuatomic.sum, X, repeat=2.0), TypeError, r"^repeat must be an integer \(got float\)$"),
    (lambda: cuatomic.benchmark(cuatomic.sum, X, repeat=2**70), ValueError,
     r"^repeat=1180591620717411303424: the times need \d+ bytes, more than this machine's memory"),
    (lambda: cuatomic.benchmark(cuatomic.sum, X, warmup="2"), TypeError, r"^warmup must be an integer \(got str\)$"),
    (lambda: cuatomic.benchmark(cuatomic.sum, X, warmup=-1), ValueError, r"^warmup must be at least 0 \(got -1\)$"),
    (lambda: cuatomic.benchmark("sum", X), TypeError, r"^fn must be callable \(got str\)$"),
    (lambda: cuatomic.Timer(backend="cpu").__exit__(None, None, None), RuntimeError, r"^Timer.__exit__ without __enter__"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_timing_arguments_are_checked_and_named(call, kind, says):
    with pytest.raises(kind, match=says) as found:
        call()
    assert type(found.value) is kind


@pytest.mark.parametrize("backend", BACKENDS)
def test_sweep_takes_one_setting_as_a_list_of_one(backend):
    # blocks=5 ended in "'int' object is not iterable"; threads already took one int
    rows = cuatomic.sweep("sum", X, blocks=5, threads=np.int64(32), methods="block_tree", repeat=1, warmup=0,
                          backend=backend)
    assert [(r.method, r.blocks, r.threads) for r in rows] == [("block_tree", 5, 32)]


def test_a_timer_is_reused_and_a_second_exit_is_refused():
    t = cuatomic.Timer(backend="cpu")
    for _ in range(2):
        with t:
            pass
        assert t.elapsed >= 0
    with pytest.raises(RuntimeError, match="without __enter__"):
        t.__exit__(None, None, None)


def _sweep_cases(rng):
    f32 = rng.standard_normal(20_000).astype(np.float32)
    return [
        ("sum", (f32,), {}),
        ("sum", (np.arange(1000, dtype=np.int8).reshape(10, 100)[:, ::3],), {"dtype": np.int16}),
        ("prod", ((1 + rng.random(200) / 100).astype(np.float64),), {}),
        ("prod", (np.arange(1, 30, dtype=np.int32),), {}),
        ("dot", (f32, f32[::-1].copy()), {}),
        ("dot", (np.arange(500, dtype=np.int32), np.arange(500, dtype=np.int32)), {}),
        ("histogram", (f32,), {"bins": 50}),
        ("histogram", (f32, 7, (-1, 1)), {"density": True}),
        ("filter", (f32, ">", 0.5), {}),
        ("filter", (f32, "<=", -0.25), {"ordered": True}),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["host", "device"])
def test_sweep_checks_every_method_against_numpy(backend, where):
    if where == "device" and backend != "cuda":
        pytest.skip("device input is for the cuda backend")
    for op, args, kwargs in _sweep_cases(np.random.default_rng(7)):
        args = tuple(placed(a, backend, where) if isinstance(a, np.ndarray) else a for a in args)
        rows = cuatomic.sweep(op, *args, blocks=[1, 7], repeat=1, warmup=0, backend=backend, progress=False,
                              **kwargs)
        # every rung, but those whose limits refuse these data (left out)
        want = {m for m, _, _ in cuatomic.methods(op, backend)
                if op != "histogram" or hist_refusal(*args, method=m, backend=backend) is None}
        assert {r.method for r in rows} == want, op


def _wrong(monkeypatch, op, spoil):
    """Make cuatomic.<op> wrong on every backend alike, as a bug in shared
    code would: a reference computed by cuatomic itself could not see it.
    (sweep takes the op from cuatomic.timing's table, the function
    cuatomic.<op> is.)"""
    import functools

    from cuatomic import timing

    real = getattr(cuatomic, op)
    assert timing._FUNCTIONS[op] is real

    @functools.wraps(real)
    def spoiled(*args, **kwargs):
        return spoil(real(*args, **kwargs), kwargs)

    monkeypatch.setattr(cuatomic, op, spoiled)
    monkeypatch.setitem(timing._FUNCTIONS, op, spoiled)


@pytest.mark.parametrize("case", ["sum off by one", "sum of the wrong dtype", "float sum off by a block",
                                  "histogram count moved", "filter out of order", "filter lost an element"])
def test_sweep_refuses_what_numpy_disagrees_with(monkeypatch, case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(4096)
    if case == "sum off by one":
        _wrong(monkeypatch, "sum", lambda r, kw: r + 1)
        call = ("sum", np.arange(100))
    elif case == "sum of the wrong dtype":
        _wrong(monkeypatch, "sum", lambda r, kw: np.float64(r))
        call = ("sum", np.arange(100))
    elif case == "float sum off by a block":  # 32 of 4096 normal values dropped: far past rounding
        _wrong(monkeypatch, "sum", lambda r, kw: r - x[:32].sum())
        call = ("sum", x)
    elif case == "histogram count moved":
        def moved(r, kw):
            counts = r[0].copy()
            counts[0], counts[1] = counts[0] + 1, counts[1] - 1
            return counts, r[1]
        _wrong(monkeypatch, "histogram", moved)
        call = ("histogram", x)
    elif case == "filter out of order":
        _wrong(monkeypatch, "filter", lambda r, kw: r[::-1] if kw.get("ordered") else r)
        call = ("filter", x, ">", 0.0)
    else:
        _wrong(monkeypatch, "filter", lambda r, kw: r[1:])
        call = ("filter", x, ">", 0.0)
    from cuatomic import _C, _backend
    keeps_order = [r.name for r in _backend.table("filter", "cpu") if r.has(_C.F_ORDERED)]
    extra = {"methods": keeps_order, "ordered": True} if call[0] == "filter" else {}
    with pytest.raises(RuntimeError, match="disagrees with NumPy"):
        cuatomic.sweep(*call, blocks=[2], repeat=1, warmup=0, backend="cpu", progress=False, **extra)


def test_host_copy_reads_every_kind_of_input():
    from cuatomic._device import host_copy
    x = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]
    assert np.array_equal(host_copy(x), x) and np.array_equal(host_copy([[1, 2]]), [[1, 2]])

    got = host_copy(DLOnly(np.arange(5.0)))  # DLPack host memory from another library
    assert isinstance(got, np.ndarray) and np.array_equal(got, np.arange(5.0))
    with pytest.raises(TypeError, match="masked"):
        host_copy(np.ma.array([1, 2], mask=[1, 0]))


@requires_cuda
def test_host_copy_of_device_arrays():
    from cuatomic._device import host_copy
    from test_interop import FakeCAI
    x = np.arange(1000, dtype=np.float32).reshape(10, 100)
    d = cuatomic.to_device(x, backend="cuda")
    assert np.array_equal(host_copy(d), x)
    assert np.array_equal(host_copy(FakeCAI(d)), x)
    strided = FakeCAI(d, shape=(10, 50), strides=(400, 8))  # every other column, read by a gather
    assert np.array_equal(host_copy(strided), x[:, ::2])
    rows = cuatomic.sweep("sum", FakeCAI(d), blocks=[4], methods=["atomic"], repeat=1, warmup=0, backend="cuda")
    assert len(rows) == 1


def test_sweep_default_blocks_follow_the_tutorial():
    from cuatomic.timing import default_blocks
    blocks = default_blocks("cuda")
    assert blocks[0] == 320 and blocks[-1] == 32 * 995 and len(blocks) == len(range(10, 1000, 5))


# ------------------------------------------------------------------ datasets

def test_text_to_array_and_generated_text():
    assert datasets.text_to_array("Hi!").tolist() == [72, 105, 33]
    assert datasets.text_to_array("é").tolist() == [ord("?")]
    a, b = datasets.english_like_text(10_000, seed=3), datasets.english_like_text(10_000, seed=3)
    assert a == b and len(a) == 10_000 and a != datasets.english_like_text(10_000, seed=4)
    counts = np.bincount(datasets.text_to_array(a), minlength=128)
    assert counts[ord(" ")] > counts[ord("e")] > counts[ord("q")]  # English-like letter frequencies


def test_generated_text_past_memory_is_refused_at_once():
    # english_like_text(2**40) ran until it was killed; now it is refused as
    # histogram refuses bins past memory. In a child process under a 2 GiB
    # address-space limit, with a deadline: a regression fails, not the machine.
    code = textwrap.dedent("""
        import resource, time
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        from cuatomic import datasets
        t = time.monotonic()
        try:
            datasets.english_like_text(2**40)
        except ValueError as e:
            print(type(e).__name__, round(time.monotonic() - t, 3), e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    name, seconds, message = r.stdout.split(" ", 2)
    assert name == "ValueError" and float(seconds) < 1.0, r.stdout
    assert message.startswith("english_like_text(nbytes=1099511627776): the text and the sentences it is made of "
                              "need 4398046511104 bytes, more than this machine's memory"), message
    assert "nbytes may be at most" in message


@pytest.mark.parametrize("call,kind,says", [
    (lambda: datasets.english_like_text(None), TypeError, r"^nbytes must be an integer \(got NoneType\)$"),
    (lambda: datasets.english_like_text("12"), TypeError, r"^nbytes must be an integer \(got str\)$"),
    (lambda: datasets.english_like_text(2.5), TypeError, r"^nbytes must be an integer \(got float\)$"),
    (lambda: datasets.english_like_text(True), TypeError, r"^nbytes must be an integer, not bool$"),
    (lambda: datasets.english_like_text(-1), ValueError, r"^nbytes must be at least 0 \(got -1\)$"),
    (lambda: datasets.english_like_text(10, seed="x"), TypeError, r"^seed='x': "),
    (lambda: datasets.english_like_text(10, seed=-1), ValueError, r"^seed=-1: "),
    (lambda: datasets.text_to_array(None), TypeError, r"^s must be a str \(got NoneType\)"),
    (lambda: datasets.text_to_array(b"abc"), TypeError, r"^s must be a str \(got bytes\).*np.frombuffer"),
    (lambda: datasets.text_to_array(65), TypeError, r"^s must be a str \(got int\)"),
    (lambda: datasets.shakespeare(timeout="x"), TypeError, r"^timeout must be a number of seconds or None"),
    (lambda: datasets.shakespeare(timeout=True), TypeError, r"^timeout must be a number of seconds or None"),
    (lambda: datasets.shakespeare(timeout=0), ValueError, r"^timeout must be a positive number of seconds \(got 0\)"),
    (lambda: datasets.shakespeare(timeout=-1.0), ValueError, r"^timeout must be a positive number"),
    (lambda: datasets.shakespeare(timeout=math.nan), ValueError, r"^timeout must be a positive number"),
    (lambda: datasets.shakespeare(url=None), TypeError, r"^url must be a str \(got NoneType\)$"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_dataset_arguments_are_checked_and_named(monkeypatch, tmp_path, call, kind, says):
    # text_to_array(None) ended in "'NoneType' object has no attribute
    # 'encode'", english_like_text("12") in a comparison of str and int, and
    # shakespeare() read its local text whatever timeout and url it was given.
    path = tmp_path / "t.txt"
    path.write_text("First Citizen:")
    monkeypatch.setenv("CUATOMIC_TEXT", str(path))
    with pytest.raises(kind, match=says) as found:
        call()
    assert type(found.value) is kind


def test_shakespeare_from_a_local_file(monkeypatch, tmp_path):
    path = SHARED_TEXT if SHARED_TEXT.exists() else tmp_path / "t.txt"
    if not SHARED_TEXT.exists():
        path.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n")
    monkeypatch.setenv("CUATOMIC_TEXT", str(path))
    text = datasets.shakespeare()
    assert text.dtype == np.uint8 and text.size == len(path.read_bytes())
    assert bytes(text[:14]) == path.read_bytes()[:14]


def test_shakespeare_cache_and_offline_fallback(monkeypatch, tmp_path):
    monkeypatch.delenv("CUATOMIC_TEXT", raising=False)
    monkeypatch.setenv("CUATOMIC_DATA", str(tmp_path))
    assert datasets.cache_dir() == tmp_path
    # nothing cached and the server unreachable: the generated stand-in, with a warning
    with pytest.warns(RuntimeWarning, match="generated English-like text"):
        text = datasets.shakespeare(url="http://127.0.0.1:9/pg100.txt", timeout=2)
    assert text.size == datasets.SHAKESPEARE_NBYTES
    with pytest.warns(RuntimeWarning):  # and it says so wherever it is titled
        again, source = datasets.shakespeare(url="http://127.0.0.1:9/pg100.txt", timeout=2, with_source=True)
    assert np.array_equal(again, text) and "stand-in" in source and source == datasets.STAND_IN
    # a cached copy is used without any download
    (tmp_path / "shakespeare.txt").write_text("To be, or not to be")
    assert bytes(datasets.shakespeare(url="http://127.0.0.1:9/never")) == b"To be, or not to be"
    assert datasets.shakespeare(url="http://127.0.0.1:9/never", with_source=True)[1] == datasets.GUTENBERG
    monkeypatch.setenv("CUATOMIC_TEXT", str(tmp_path / "shakespeare.txt"))
    assert datasets.shakespeare(with_source=True)[1] == "shakespeare.txt (CUATOMIC_TEXT)"


# --------------------------------------------------------------------- plots

def test_plots(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from cuatomic import plots
    text = datasets.text_to_array(datasets.english_like_text(20_000))
    hist, _ = cuatomic.histogram(text, bins=128, range=(0, 128))
    for kind in ("count", "probability", "percent"):
        fig = plots.letter_histogram(hist, kind=kind)
        assert [ax.get_ylabel() for ax in fig.axes][0].split()[0] in ("Count", "Probability", "Percent")
        assert [t.get_text() for t in fig.axes[1].get_xticklabels()][:3] == ["A", "B", "C"]
    with pytest.raises(ValueError):
        plots.letter_histogram(hist[:10])
    fig = plots.speedup_chart({"NumPy": 40.0, "GPU global": 1.0}, "GPU global")
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["40x", "1.0x"] and fig.axes[0].get_ylabel() == "Times slower than GPU global"
    assert fig.axes[0].get_title() == "Performance relative to GPU global"  # names what ran, on any backend
    fig = plots.speedup_chart({"np.histogram": 30.0, "CPU loop": 900.0, "cuatomic cpu global": 3.0,
                               "cuatomic cpu shared": 1.0, "cuatomic cpu warp_private": 0.9}, "cuatomic cpu shared")
    assert fig.axes[0].get_title() == "Performance relative to cuatomic cpu shared"
    assert all(t.get_rotation() == 25 for t in fig.axes[0].get_xticklabels())  # five names: slanted, no overlap
    for chart in (fig, plots.speedup_chart({"NumPy": 40.0, "GPU global": 1.0}, "GPU global")):  # log, linear
        chart.canvas.draw()
        box = chart.axes[0].get_window_extent()
        assert all(t.get_window_extent().y1 <= box.y1 for t in chart.axes[0].texts), "a bar's label leaves the axes"
    rows = [cuatomic.SweepRow(m, b, None, t, 1.0) for m, b, t in
            [("global", 320, 3.0), ("global", 480, 2.0), ("shared", 320, 1.0), ("shared", 480, 1.5)]]
    fig = plots.sweep_plot(rows)
    # one time axis for both methods, from 0: the gap between the curves is drawn as it is
    assert len(fig.axes) == 1 and fig.axes[0].get_yscale() == "linear" and fig.axes[0].get_ylim()[0] == 0
    dashed = [line.get_xdata()[0] for ax in fig.axes for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert sorted(dashed) == [320, 480]
    far = [cuatomic.SweepRow(m, b, None, t, 1.0) for m, b, t in [("global", 320, 3.5), ("shared", 320, 0.2)]]
    assert plots.sweep_plot(far).axes[0].get_yscale() == "log"  # 17x apart: both curves' shapes stay visible
    fig.savefig(tmp_path / "sweep.png")
