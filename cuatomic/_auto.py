"""``method="auto"``: the rule that picks a rung for an input, and
:func:`explain`, which says what it picked and why.

The rules come from the benchmark (``python -m cuatomic bench``): the top
rung of every ladder is the fastest correct one; for histograms the number
of bins decides, and the skew of a sample was measured not to change the
winner (explain() still reports it). Float sums and dots are always deterministic
(``vector`` adds in a fixed order for a given device and size).
"""
import dataclasses

import numpy as np

from . import _C, _backend

SAMPLE = 4096           # elements read to estimate skew
CPU_COPY_BINS = 4096    # the CPU's 8 interleaved copies stop fitting in L2 beyond this

_FIXED = {
    "sum": ("vector", "wide loads (16 bytes on a GPU, SIMD lanes on a CPU) and an in-order finish: the "
                      "fastest rung at every size, and deterministic for floats"),
    "dot": ("vector", "one pass over both inputs with wide loads and an in-order finish: the fastest rung, "
                      "deterministic for floats"),
    "filter": ("lookback", "single pass that keeps input order: reads the input once"),
    "mutex_add_one": ("warp_lock", "one lock acquisition per warp, every increment still inside the lock"),
    "add_one": ("atomic", "one atomicAdd per thread: correct and fastest"),
    "prod": ("cas", "the only rung: a multiply built from compare-and-swap"),
}


@dataclasses.dataclass(frozen=True)
class Choice:
    """What ``method="auto"`` runs for one call.

    Attributes
    ----------
    op, backend, method : str
        The operation, the backend and the rung chosen.
    reason : str
        Why, in one sentence.
    facts : dict
        What the rule looked at (size, dtype, bins, measured skew, ...).
    """

    op: str
    backend: str
    method: str
    reason: str
    facts: dict

    def __str__(self):
        facts = ", ".join(f"{k}={v}" for k, v in self.facts.items())
        return f"{self.op} on {self.backend}: method={self.method!r} -- {self.reason}" + (f" [{facts}]" if facts else "")


def fixed(op, backend, facts=None):
    """The choice for an op whose rule does not depend on the data."""
    name, reason = _FIXED[op]
    _backend.choose(op, backend, name)  # the rung exists on this backend
    return Choice(op, backend, name, reason, dict(facts or {}))


def sample(inp, stream=0, k=SAMPLE):
    """Up to k elements of a prepared input, on the host: evenly spaced
    from host memory; from device memory a contiguous window from the
    middle of a DeviceArray (one small copy), else a strided gather."""
    if inp.n == 0:
        return np.empty(0, inp.dtype)
    if not inp.device:
        step = max(1, inp.n // k)
        return inp.x.reshape(-1)[::step][:k]
    from ._device import DeviceArray
    owner = inp.owner
    count = min(k, inp.n)
    if isinstance(owner, DeviceArray) and owner.ptr == inp.x:
        window = np.empty(count, inp.dtype)
        start = (inp.n - count) // 2 * inp.dtype.itemsize
        owner._buffer.copy_to_host(window.view(np.uint8), start, window.nbytes)
        return window
    step = max(1, inp.n // k)
    count = min(k, (inp.n + step - 1) // step)
    out = DeviceArray.empty((count,), inp.dtype)
    _C.gather(inp.x, out.ptr, count, inp.dtype.itemsize, (count,), (step * inp.dtype.itemsize,), stream)
    return out.copy_to_host()


def top_bin_share(values, edges):
    """Share of the sample in its most common bin (0 when nothing is binned).
    Bytes are counted by value (exact for bins of width one, a lower bound
    otherwise) -- a bincount, far cheaper than binning the sample."""
    if values.size == 0:
        return 0.0
    if values.dtype.itemsize == 1 and values.dtype.kind in "biu":
        counts = np.bincount(values.view(np.uint8), minlength=256)
        return float(counts.max() / values.size)
    counts, _ = np.histogram(values, edges)
    total = counts.sum()
    return float(counts.max() / total) if total else 0.0


# Why each (backend, rung) of the histogram rule is the choice.
_HISTOGRAM_REASONS = {
    ("cpu", "thread_counters"): "eight interleaved private copies per thread, branch-free: fastest on a CPU for "
                                "any skew while the copies fit in cache",
    ("cpu", "warp_private"): "one private histogram per thread: too many bins for eight copies each",
    ("cuda", "warp_private"): "per-warp histograms in shared memory (as many copies as fit, global atomics "
                              "beyond): fastest on the H200 for uniform data, English text and one repeated "
                              "value alike",
}


def histogram_rung(backend, nbins):
    """The rung histogram(method="auto") runs (the rule of :func:`histogram`,
    without building its report: a call's hot path).

    On the H200 benchmark (docs/benchmarks.md) ``warp_private`` beat
    ``thread_counters`` on English text (top bin 24%), on uniform bytes and
    on a single repeated value (top bin 100%): the GPU absorbs same-address
    shared atomics within a warp better than the counters' flushes cost. On
    the CPU ``thread_counters`` (eight interleaved copies, branch-free) wins
    at every skew while its copies fit in cache. So the number of bins
    decides, and skew does not.
    """
    return "thread_counters" if backend == "cpu" and nbins <= CPU_COPY_BINS else "warp_private"


def histogram(backend, inp, edges, stream=0, measure=False):
    """The histogram rule with its report: :func:`histogram_rung`'s choice,
    why, and what it looked at; the skew of a sample only when ``measure``
    asks for it (:func:`explain` reports it)."""
    nbins = len(edges) - 1
    facts = {"n": inp.n, "dtype": str(inp.dtype), "bins": nbins}
    if measure:
        facts["top_bin_share"] = round(top_bin_share(sample(inp, stream), edges), 4)
    method = histogram_rung(backend, nbins)
    return Choice("histogram", backend, method, _HISTOGRAM_REASONS[backend, method], facts)
