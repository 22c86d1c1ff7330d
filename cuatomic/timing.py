"""Timing: a Timer like the tutorial's CUDATimer, a benchmark helper, and
the block-count sweep."""
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import _C, _backend
from ._interop import stream_handle as _stream_handle


class Timer:
    """Time a block of code, like the tutorial's ``CUDATimer``.

    On the cuda backend two CUDA events are recorded on `stream` around the
    block and ``elapsed`` waits for the second; on the cpu backend a
    monotonic host clock is read.

    Parameters
    ----------
    stream : int or stream object, optional
        CUDA stream to record on (default: the legacy default stream).
    backend : {"cuda", "cpu"}, optional

    Attributes
    ----------
    elapsed : float or None
        Milliseconds the block took, set when it exits.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> with cuatomic.Timer() as t:
    ...     _ = cuatomic.sum(np.ones(1000))
    >>> t.elapsed >= 0
    True
    """

    def __init__(self, stream=None, backend=None):
        self.backend = _backend.resolve(backend)
        self.stream = _stream_handle(stream)
        self.elapsed = None
        self._events = None
        if self.backend == "cuda":
            self._events = (_C.event_create(), _C.event_create())

    def __enter__(self):
        self.elapsed = None
        if self._events:
            _C.event_record(self._events[0], self.stream)
        else:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self._events:
            _C.event_record(self._events[1], self.stream)
            self.elapsed = _C.event_elapsed(*self._events)  # waits for the stop event
        else:
            self.elapsed = 1e3 * (time.perf_counter() - self._t0)
        return False

    def __del__(self):
        events, self._events = getattr(self, "_events", None), None
        if events:
            try:
                for e in events:
                    _C.event_destroy(e)
            except Exception:  # noqa: BLE001 - interpreter shutdown; nothing to report to
                pass


@dataclass
class BenchmarkResult:
    """Times of repeated calls, in milliseconds.

    Attributes
    ----------
    times : numpy.ndarray
        Every timed call (warm-up calls excluded).
    median, min, max, iqr : float
        Median, extremes and interquartile range of `times`.
    value : object
        What the last call returned.
    """

    times: np.ndarray
    value: object = field(repr=False, default=None)

    @property
    def median(self):
        return float(np.median(self.times))

    @property
    def min(self):
        return float(np.min(self.times))

    @property
    def max(self):
        return float(np.max(self.times))

    @property
    def iqr(self):
        q1, q3 = np.percentile(self.times, [25, 75])
        return float(q3 - q1)

    def __repr__(self):
        return (f"BenchmarkResult(median={self.median:.4f} ms, min={self.min:.4f}, max={self.max:.4f}, "
                f"iqr={self.iqr:.4f}, n={len(self.times)})")


def benchmark(fn, *args, repeat=20, warmup=2, stream=None, **kwargs):
    """Call ``fn(*args, **kwargs)`` repeatedly and time each call.

    Parameters
    ----------
    fn : callable
    *args, **kwargs
        Passed to `fn`. A ``backend=`` keyword also chooses the clock.
    repeat : int, optional
        Timed calls.
    warmup : int, optional
        Calls made first and not counted (first-use costs stay out).
    stream : optional
        CUDA stream the timing events are recorded on.

    Returns
    -------
    BenchmarkResult
    """
    if repeat < 1 or warmup < 0:
        raise ValueError("repeat must be >= 1 and warmup >= 0")
    timer = Timer(stream=stream, backend=kwargs.get("backend"))
    value = None
    for _ in range(warmup):
        value = fn(*args, **kwargs)
    if timer.backend == "cuda":
        _C.synchronize()
    times = np.empty(repeat)
    for i in range(repeat):
        with timer:
            value = fn(*args, **kwargs)
            if timer.backend == "cuda":
                _C.synchronize()  # device work finished before the time is read
        times[i] = timer.elapsed
    return BenchmarkResult(times, value)


@dataclass(frozen=True)
class SweepRow:
    """One launch configuration of a sweep (threads None: the method's default)."""

    method: str
    blocks: int
    threads: object
    median_ms: float
    gbps: float


def default_blocks(backend):
    """The tutorial's sweep on a GPU: 32*i blocks for i in range(10, 1000, 5);
    on the CPU, multiples of the OpenMP team."""
    if backend == "cuda":
        return [32 * i for i in range(10, 1000, 5)]
    team = _C.cpu_threads()
    return [team * k for k in (1, 2, 4, 8, 16, 32, 64, 128)]


def _progress(iterable, total, enabled):
    if enabled is False:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    interactive = sys.stderr.isatty() or "ipykernel" in sys.modules
    if enabled is None and not interactive:
        return iterable
    return tqdm(iterable, total=total, desc="sweep")


def _reference(op, args, kwargs):
    from . import _ops
    fn = getattr(_ops, op)
    host = [a.copy_to_host() if hasattr(a, "copy_to_host") else a for a in args]
    return fn(*host, **{k: v for k, v in kwargs.items() if k not in ("method",)}, backend="cpu")


def _same(got, ref):
    if isinstance(got, tuple):
        return all(_same(g, r) for g, r in zip(got, ref))
    got = got.copy_to_host() if hasattr(got, "copy_to_host") else np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return False
    if got.dtype.kind == "f":
        return bool(np.allclose(got, ref, rtol=1e-4, atol=0, equal_nan=True))
    return bool(np.array_equal(np.sort(got, axis=None), np.sort(ref, axis=None)))


def sweep(op, *args, blocks=None, threads=None, methods=None, repeat=5, warmup=1, backend=None, progress=None,
          **kwargs):
    """Time an operation over block counts (and thread counts and methods).

    Parameters
    ----------
    op : str
        A cuatomic function name: "histogram", "sum", "dot", "filter", "prod".
    *args, **kwargs
        Passed to the function (e.g. ``bins=128, range=(0, 128)``).
    blocks : sequence of int, optional
        Default: the tutorial's ``32*i for i in range(10, 1000, 5)`` on a GPU.
    threads : int or sequence of int, optional
        Default: each method's default.
    methods : sequence of str, optional
        Default: every method of the op.
    repeat, warmup : int, optional
        Timed and untimed calls per configuration.
    backend : {"cuda", "cpu"}, optional
    progress : bool, optional
        A tqdm bar: None (default) shows one when tqdm is installed and
        stderr is a terminal or a notebook runs the code.

    Returns
    -------
    list of SweepRow
        (method, blocks, threads, median_ms, gbps), where GB/s counts the
        input bytes read once. Configurations a method refuses (barrier rungs
        past the co-resident limit) are left out.

    Raises
    ------
    RuntimeError
        If a method's result differs from the CPU backend's: results are
        checked before anything is timed.
    """
    from . import _ops
    be = _backend.resolve(backend)
    fn = getattr(_ops, op, None)
    if fn is None or op not in _backend.OPS:
        raise ValueError(f"unknown op {op!r}")
    methods = list(methods) if methods is not None else [m for m, _, _ in _ops.methods(op, be)]
    blocks = list(blocks) if blocks is not None else default_blocks(be)
    threads = [None] if threads is None else ([threads] if np.ndim(threads) == 0 else list(threads))
    nbytes = sum(int(a.nbytes) for a in args if hasattr(a, "nbytes"))
    if op == "filter":
        kwargs.setdefault("ordered", False)
    reference = _reference(op, args, kwargs)
    configs = [(m, b, t) for m in methods for t in threads for b in blocks]
    rows, checked = [], set()
    for m, b, t in _progress(configs, len(configs), progress):
        call = dict(kwargs, method=m, backend=be, blocks=b, threads=t)
        if op == "filter" and m != "ordered":
            call["ordered"] = False
        try:
            first = fn(*args, **call)
        except ValueError:
            continue  # e.g. a barrier rung past the co-resident limit
        if m not in checked:
            if not _same(first, reference):
                raise RuntimeError(f"{op} method {m!r} disagrees with the cpu backend: not timing it")
            checked.add(m)
        result = benchmark(fn, *args, repeat=repeat, warmup=warmup, **call)
        ms = result.median
        rows.append(SweepRow(m, b, t, ms, nbytes / (ms * 1e-3) / 1e9 if ms > 0 else float("inf")))
    return rows
