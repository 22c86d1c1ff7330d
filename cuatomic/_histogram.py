"""histogram: NumPy's bins (cuatomic._bins) counted by a rung of the
histogram ladder, or with weights summed by the weighted ladder
(cuatomic._weighted); a repeated call reuses its resolved plan."""
import collections
import os

import numpy as np

from . import _C, _auto, _backend
from ._bins import FIXED_BINS_CACHE_BYTES, bins_for, facts, rung_fits
from ._common import (BytesLRU, auto_rung, direct_input, flag, launch_config, named_rung, prepare, read_as_is,
                      stream_of)
from ._device import DeviceArray
from ._interop import on_inputs_gpu
from ._weighted import (BOOL_WEIGHTS_WITH_EDGES, ESTIMATOR_WITH_WEIGHTS, WEIGHTED, histogram_weights,
                        weighted_histogram)

_PLANS = BytesLRU(FIXED_BINS_CACHE_BYTES)


def _plan_key(a, bins, range, density, method, backend, blocks, threads, stream):
    """(key, what the core reads, size) of a call a plan can serve, else
    (None, None, None)."""
    if (type(bins) is not int or type(range) is not tuple or len(range) != 2 or type(method) is not str or density
            or backend is not None or blocks is not None or threads is not None or stream is not None
            or (direct := direct_input(a)) is None):
        return None, None, None
    x, n, dtype, _ = direct
    lo, hi = range
    tlo, thi = type(lo), type(hi)
    boolean = (dtype[1] if type(dtype) is str else dtype.kind) == "b"  # (a typestr: "|b1")
    if boolean or tlo not in _SCALARS or thi not in _SCALARS:  # (not arrays: unhashable)
        return None, None, None
    return ((type(a), dtype, bins, lo, hi, tlo, thi, method, os.environ.get("CUATOMIC_BACKEND"),
             n if method == "auto" else None), x, n)


_SCALARS = frozenset((int, float, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                      np.uint64, np.float32, np.float64))


# What the core is told to count with: every resolved argument but the data
# and the launch options (bins: the KernelBins). A repeated call reuses it
# from _PLANS.
_Plan = collections.namedtuple("_Plan", "backend rung dtype bins device")


def _count(plan, x, n, blocks, threads, stream):
    """The counts of n elements at x (a DeviceArray for device input)."""
    # Positional: keywords cost about a microsecond of every call.
    counts = _C.histogram(plan.backend, plan.rung, x, n, plan.dtype, plan.bins, blocks, threads, plan.device, stream)
    return DeviceArray._vector(counts, plan.bins.edges.size - 1, _INT64) if plan.device else counts


_INT64 = np.dtype(np.int64)


def histogram(a, bins=10, range=None, *, weights=None, density=False, method="auto", backend=None, blocks=None,
              threads=None, stream=None):
    """Histogram of all elements, as ``np.histogram(a, bins, range, weights=weights, density=density)``.

    Parameters
    ----------
    a : array_like or DeviceArray
        Any shape; all elements are counted.
    bins : int, sequence of scalars or str, optional
        Number of equal-width bins, or monotonically increasing edges, or one
        of NumPy's estimator names (host input without weights only).
    range : (float, float), optional
        Lower and upper edge; values outside are dropped, the last bin is
        closed, NaN is ignored. Default: the data's min and max (a ValueError,
        as NumPy's, when those are not finite).
    weights : array_like or DeviceArray, optional
        One real weight per element of `a`, of `a`'s shape (a ValueError
        otherwise, before anything runs), on the host when `a` is and on the
        device when `a` is. Each bin then holds the sum of its elements'
        weights, of the weights' dtype as in NumPy, summed by a rung of the
        ``weighted_histogram`` ladder. Weights reach the core as float64 or
        int64 only: host weights of another dtype are cast first (bool and
        integers to int64, summed exactly with wrap-around and cast back to
        their dtype; floats to float64, summed in float64 and rounded once
        to theirs); device weights must be float64, int64 or uint64 already.
        Boolean weights with explicit edges raise NumPy's TypeError.
    density : bool, optional
        As NumPy: counts (or sums of weights) / bin width / total.
    method : str, optional
        A rung of the histogram ladder (``methods("histogram")`` lists
        them); with weights, a rung of the weighted ladder
        (``methods("weighted_histogram")``; a histogram rung that has no
        weighted twin raises a ValueError naming those that have). ``"auto"`` runs the rung
        measured fastest for this dtype, number of bins and size that can
        count these bins on this device (:func:`explain` says which and why,
        with the skew of a sample; with weights, unmeasured, the top rung
        that fits). A rung named here that cannot count the bins (shared
        memory too small; ``"bytes"``, which counts only 1-byte data in
        bins of width one) raises a ValueError naming its limit.
        Integer data with integer edges of an integer width
        (``histogram(text, bins=128, range=(0, 128))``) is binned with
        integer arithmetic only.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    hist : numpy.ndarray or DeviceArray
        int64 counts, or sums of the weights' dtype (float64 with
        ``density``; in native byte order for explicit edges, as NumPy
        gives them); a DeviceArray for device input.
    bin_edges : numpy.ndarray
        NumPy's edges, of NumPy's dtype.

    Raises
    ------
    TypeError
        Edges or a range that are not real numbers (strings, objects), a
        masked array, an unsupported dtype; weights that are not real
        numbers, or not where `a` is; an estimator name with weights.
    OverflowError
        As NumPy's: a range of integers it cannot subtract in the type
        they promote to (``range=(2**62, 2**63)``).
    ValueError
        NumPy's errors (edges not increasing, a range that is not finite,
        weights of another shape), a NaN edge (NumPy takes it and counts
        nonsense), a named rung that cannot count these bins.
    MemoryError
        Private histograms (on the cpu, one per thread of bins x 8 bytes)
        that cannot be allocated.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> x = np.array([0.5, 1.5, 1.5, 2.5])
    >>> cuatomic.histogram(x, bins=3, range=(0, 3), weights=[1.0, 2.0, 3.0, 4.0], backend="cpu")[0]
    array([1., 5., 4.])
    """
    if type(density) is not bool:
        density = flag("density", density)
    if weights is not None:
        return weighted_histogram(a, bins, range, weights, density, method, backend, blocks, threads, stream)
    key, x, n = _plan_key(a, bins, range, density, method, backend, blocks, threads, stream)
    cached = _PLANS.get(key) if key is not None else None
    if cached is not None:
        plan, edges = cached
        return _count(plan, x, n, -1, -1, 0), edges.copy()
    return _histogram(a, bins, range, density, method, backend, blocks, threads, stream,
                      (key, x) if key is not None else None)


@on_inputs_gpu
def _histogram(a, bins, range, density, method, backend, blocks, threads, stream, plan_for):
    """histogram without weights or a plan, on the input's GPU; plan_for (a
    plan's key, and what the core reads) when the call can leave a plan for
    the next one."""
    be = _backend.resolve(backend)
    rung = named_rung("histogram", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    inp = prepare(a, be, stream=s)
    _, edges, kb = bins_for(inp, bins, range, s)
    if kb is None:  # no bins: NumPy's empty counts, or empty densities
        hist = np.zeros(0, np.float64 if density else np.int64)
        return (DeviceArray.from_host(hist) if inp.device else hist), edges
    nbins = kb.edges.size - 1
    if rung is None:
        rung = auto_rung("histogram", be, inp.n, inp.dtype, nbins, fits=rung_fits(be, kb, inp.id, nb, nt))
    plan = _Plan(_backend.backend_id(be), rung.index, inp.id, kb, inp.device)
    counts = _count(plan, inp.x, inp.n, nb, nt, s)
    if plan_for and read_as_is(inp, plan_for[1], a):
        _PLANS.put(plan_for[0], (plan, edges.copy()), 2 * edges.nbytes + kb.edges.nbytes)
    if density:
        host = counts.copy_to_host() if inp.device else counts
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = host / np.diff(edges) / host.sum()
        return (DeviceArray.from_host(dens) if inp.device else dens), edges
    return counts, edges


@on_inputs_gpu
def explain(backend, a, bins=10, range=None, *, weights=None, weighted=False, blocks=None, threads=None, stream=0):
    """The Choice of histogram(method="auto") for these arguments (with
    weights when `weighted`: only their presence matters to the rule, and
    `weights`, when given, are checked as the call checks them), with the
    share of a sample of the data in its most common bin."""
    nb, nt = launch_config(blocks, threads)
    inp = prepare(a, backend, stream=stream)
    w = None if weights is None else histogram_weights(weights, a, inp, backend, stream)
    if weighted and isinstance(bins, str):
        raise TypeError(ESTIMATOR_WITH_WEIGHTS)
    _, edges, kb = bins_for(inp, bins, range, stream)
    if w is not None and w.dtype.kind == "b" and np.ndim(bins) == 1 and inp.n:
        raise TypeError(BOOL_WEIGHTS_WITH_EDGES)
    op = WEIGHTED if weighted else "histogram"
    if kb is None:  # no bins: the call returns empty counts and runs nothing
        return _auto.Choice(op, backend, None, f"no bins (edges {edges.tolist()}): the call returns NumPy's empty "
                            "result and launches no rung", facts(inp, 0))
    nbins = kb.edges.size - 1
    known = facts(inp, nbins)
    known["top_bin_share"] = round(_auto.top_bin_share(_auto.sample(inp, stream), edges), 4)
    return _auto.choose(op, backend, known, fits=rung_fits(backend, kb, inp.id, nb, nt, op))
