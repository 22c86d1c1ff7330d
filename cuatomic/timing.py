"""Timing: a Timer like the tutorial's CUDATimer, a benchmark helper, and
the block-count sweep."""
import inspect
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from . import _C, _backend, _device, _filter, _histogram, _info, _reduce
from ._common import check_fits_memory, integer_arg, launch_config
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
        self._entered = False
        if self.backend == "cuda":
            self._events = (_C.event_create(), _C.event_create())

    def __enter__(self):
        self.elapsed = None
        if self._events:
            _C.event_record(self._events[0], self.stream)
        else:
            self._t0 = time.perf_counter()
        self._entered = True
        return self

    def __exit__(self, *exc):
        if not self._entered:  # no start to measure from (nor, on cuda, a start event recorded)
            raise RuntimeError("Timer.__exit__ without __enter__: time a block with `with cuatomic.Timer() as t:`")
        self._entered = False
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

    Raises
    ------
    TypeError, ValueError
        A `fn` that is not callable; a `repeat` that is not an integer of
        at least 1, or more times than this machine's memory holds; a
        `warmup` that is not an integer of at least 0.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (got {type(fn).__name__})")
    repeat, warmup = _repeats(repeat, warmup)
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


def _repeats(repeat, warmup):
    """(repeat, warmup) as ints, checked as :func:`benchmark` and
    :func:`sweep` take them: at least one timed call, whose time (8 bytes)
    fits in memory, and no negative warm-up."""
    repeat, warmup = integer_arg("repeat", repeat, 1), integer_arg("warmup", warmup, 0)
    check_fits_memory(8 * repeat, f"repeat={repeat}: the times", lambda memory: f"repeat may be at most {memory // 8}")
    return repeat, warmup


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


# The operations sweep() times, and NumPy's answer to each (on host copies).
ARRAY_OPS = ("sum", "prod", "dot", "histogram", "filter")
# Each op's function, taken from the module that defines it: the package
# (cuatomic.sum is this same function) is above timing, which it re-exports.
_FUNCTIONS = dict(zip(ARRAY_OPS, (_reduce.sum, _reduce.prod, _reduce.dot, _histogram.histogram, _filter.filter)))


def _numpy_reference(fn, args, kwargs):
    """NumPy's result for a call of fn (a cuatomic array op), and the
    scale its float results are checked at: sum(|x|) for sum, sum(|a*b|)
    for dot, |result| for prod."""
    call = inspect.signature(fn).bind(*args, **kwargs)
    given = call.arguments
    a = _device.host_copy(given["a"], "a")
    op = fn.__name__
    if op in ("sum", "prod"):
        reference = (np.sum if op == "sum" else np.prod)(a, dtype=given.get("dtype"))
        with np.errstate(all="ignore"):
            scale = float(np.sum(np.abs(a), dtype=np.float64)) if op == "sum" else abs(float(reference))
        return reference, scale
    if op == "dot":
        b = _device.host_copy(given["b"], "b")
        reference = np.dot(a, b)
        with np.errstate(all="ignore"):
            scale = float(np.sum(np.abs(a.astype(np.float64) * b.astype(np.float64))))
        return reference, scale
    if op == "histogram":
        return np.histogram(a, given.get("bins", 10), given.get("range"), density=given.get("density", False)), 0.0
    flat = a.reshape(-1)
    with np.errstate(invalid="ignore"):
        return flat[_filter._COMPARE[given["op"]](flat, given["value"])], 0.0


def _host(x):
    return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)


def _same(got, ref, scale, ordered=True):
    """Whether a result is NumPy's: integers and counts exactly, of NumPy's
    dtype; floats within sqrt(eps) of the scale (a rung's rounding stays far
    below it, a lost or doubled block does not); filter output in order, or
    as the same multiset when order was not asked for."""
    if isinstance(ref, tuple):
        return all(_same(g, r, scale) for g, r in zip(got, ref))
    got, ref = _host(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return False
    if not ordered:
        got, ref = np.sort(got, axis=None), np.sort(ref, axis=None)
    if got.dtype.kind != "f":
        return bool(np.array_equal(got, ref))
    if got.ndim:  # histogram densities, filter output: values taken or computed as NumPy does
        return bool(np.allclose(got, ref, rtol=np.sqrt(np.finfo(got.dtype).eps), atol=0, equal_nan=True))
    if np.isnan(ref) or np.isinf(ref):
        return bool(np.isnan(got)) if np.isnan(ref) else bool(got == ref)
    return bool(abs(float(got) - float(ref)) <= np.sqrt(np.finfo(got.dtype).eps) * scale)


def _settings(name, given, default):
    """The settings a sweep runs over: `default` for None, a list of one
    for a single one (anything not iterable, a str, a 0-d array), else the
    sequence as a list (TypeError naming `name` when it cannot be read)."""
    if given is None:
        return list(default)
    if not hasattr(given, "__iter__") or isinstance(given, (str, bytes)) or (
            isinstance(given, np.ndarray) and given.ndim == 0):
        return [given]
    try:
        return list(given)
    except TypeError:
        raise TypeError(f"{name} must be one setting or a sequence of them (got {type(given).__name__})") from None


def sweep(op, *args, blocks=None, threads=None, methods=None, repeat=5, warmup=1, backend=None, progress=None,
          **kwargs):
    """Time an operation over block counts (and thread counts and methods).

    Parameters
    ----------
    op : {"histogram", "sum", "dot", "filter", "prod"}
        The cuatomic function to time.
    *args, **kwargs
        Passed to the function (e.g. ``bins=128, range=(0, 128)``).
    blocks : int or sequence of int, optional
        Default: the tutorial's ``32*i for i in range(10, 1000, 5)`` on a GPU.
    threads : int or sequence of int, optional
        Default: each method's default.
    methods : str or sequence of str, optional
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
        past the co-resident limit, a grid a rung cannot count the bins
        with) are left out.

    Raises
    ------
    RuntimeError
        If a method's result differs from NumPy's (``np.sum``, ``np.prod``,
        ``np.dot``, ``np.histogram``, a boolean mask) on a host copy of the
        input: every method is checked before it is timed. Integers must
        match exactly, floats within sqrt(eps) of the data's scale.
    TypeError, ValueError
        Before anything runs: an op that is not one of the array
        operations; a block or thread count no call takes (``blocks=[0]``:
        the error names it, where it used to leave the setting out); an
        unknown method; `repeat`, `warmup` as :func:`benchmark` checks
        them; and any error of the call itself (made once with
        ``method="auto"`` and the default launch).
    """
    be = _backend.resolve(backend)
    if not isinstance(op, str) or op not in ARRAY_OPS:
        raise ValueError(f"unknown op {op!r} for sweep: it times the array operations ({', '.join(ARRAY_OPS)}); "
                         "time add_one and mutex_add_one with benchmark()")
    fn = _FUNCTIONS[op]
    methods = _settings("methods", methods, [m for m, _, _ in _info.methods(op, be)])
    for m in methods:  # an unknown method is an error, not skipped
        if not isinstance(m, str):
            raise TypeError(f"methods must be names of {op}'s methods (got {type(m).__name__} {m!r})")
        if m != "auto":
            try:
                _backend.rung(op, be, m)
            except ValueError as e:
                raise ValueError(f"methods: {e}") from None
    # "auto" honours what a call asks (ordered=True picks a rung that keeps order): every flag
    flags = {m: ~0 if m == "auto" else _backend.rung(op, be, m).flags for m in methods}
    blocks = _settings("blocks", blocks, default_blocks(be))
    threads = _settings("threads", threads, [None])
    for b in blocks:  # checked as every call checks them: a setting no call takes is an error, not left out
        launch_config(b, None)
    for t in threads:
        launch_config(None, t)
    repeat, warmup = _repeats(repeat, warmup)
    nbytes = sum(int(a.nbytes) for a in args if hasattr(a, "nbytes"))
    if op == "filter":
        kwargs.setdefault("ordered", False)
    reference, scale = _numpy_reference(fn, args, kwargs)
    fn(*args, **dict(kwargs, backend=be))  # the call's own errors, raised: below, a refusal is a launch limit
    configs = [(m, b, t) for m in methods for t in threads for b in blocks]
    rows, checked = [], set()
    for m, b, t in _progress(configs, len(configs), progress):
        call = dict(kwargs, method=m, backend=be, blocks=b, threads=t)
        if op == "filter" and not flags[m] & _C.F_ORDERED:
            call["ordered"] = False  # a rung that cannot keep order is checked as a multiset
        try:
            first = fn(*args, **call)
        except ValueError:
            continue  # a limit of this rung's launch: a barrier rung past the co-resident limit
        if m not in checked:
            if not _same(first, reference, scale, ordered=op != "filter" or call.get("ordered", True)):
                raise RuntimeError(f"{op} method {m!r} disagrees with NumPy: not timing it")
            checked.add(m)
        result = benchmark(fn, *args, repeat=repeat, warmup=warmup, **call)
        ms = result.median
        rows.append(SweepRow(m, b, t, ms, nbytes / (ms * 1e-3) / 1e9 if ms > 0 else float("inf")))
    return rows
