"""histogram and bincount: NumPy's bins (edges, ranges, estimators) worked
out on the host, counted by a rung of the histogram ladder -- or, with
weights, summed by a rung of the weighted_histogram ladder."""
import collections
import contextlib
import operator
import os
import warnings

import numpy as np

from . import _C, _auto, _backend, _interop
from ._common import (BytesLRU, auto_rung, check_fits_memory, direct_input, flag, launch_config, named_rung,
                      prepare, read_as_is, stream_of)
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu

def _sample_for_edges(inp, sample_dt, range_given, stream=0):
    """Data that gives NumPy's edge computation the same min and max."""
    if range_given or inp.n == 0:
        return np.empty(0, sample_dt)
    if not inp.device:
        return inp.x.view(sample_dt)
    lo, hi, has_nan = _C.minmax(inp.x, inp.n, inp.id, stream)
    if has_nan:
        return np.array([np.nan, np.nan], sample_dt)
    itemsize = inp.dtype.itemsize
    return np.concatenate([np.frombuffer(lo[:itemsize], sample_dt), np.frombuffer(hi[:itemsize], sample_dt)])


def _integer_bins(edges, sample_dt):
    """(lo, width) when integer data can be binned with integer arithmetic
    that agrees exactly with NumPy's float comparisons, else None."""
    if sample_dt.kind not in "biu" or sample_dt.itemsize > 4:
        return None
    if edges.dtype != np.float64 and sample_dt.itemsize > 2:
        return None  # float32 cannot hold every int32 exactly
    e = edges.astype(np.float64)
    if not (np.all(np.isfinite(e)) and np.all(np.abs(e) <= 2.0**53) and np.all(e == np.round(e))):
        return None
    widths = np.diff(e)
    if widths.size == 0 or widths[0] < 1 or np.any(widths != widths[0]):
        return None
    return int(e[0]), int(widths[0])


def _bin_plan(edges, sample_dt, uniform):
    """What the kernels need of NumPy's edges: (edges in the comparison
    type, evenly spaced, bins per unit, (lo, width) of integer bins or None)."""
    edge_dt = np.result_type(edges.dtype, sample_dt)
    if edge_dt.kind != "f" and not (edge_dt == sample_dt and sample_dt.itemsize == 8):
        # Data of at most 32 bits compares exactly with float64 edges; 64-bit
        # integers keep integer edges of their own type (NumPy compares in
        # that type too) and are binned by exact search.
        edge_dt = np.dtype(np.float64)
    elif edge_dt.kind in "iu":  # int64/uint64, whichever C type spells it (long, long long)
        edge_dt = np.dtype(np.int64 if edge_dt.kind == "i" else np.uint64)
    if edge_dt.itemsize not in (4, 8):
        raise TypeError(f"bin edges of dtype {edge_dt} are not supported: use float32 or float64 edges")
    kernel_edges = np.ascontiguousarray(edges, dtype=edge_dt)
    span = float(kernel_edges[-1]) - float(kernel_edges[0])
    uniform = uniform and span > 0 and np.isfinite(span) and edge_dt.kind == "f"
    inv_width = (kernel_edges.size - 1) / span if uniform else 0.0
    integer = _integer_bins(kernel_edges, sample_dt) if uniform else None
    return kernel_edges, uniform, inv_width, integer


FIXED_BINS_CACHE_BYTES = 64 << 20
_FIXED_BINS = BytesLRU(FIXED_BINS_CACHE_BYTES)


def _fixed_bins(count, bounds, bound_types, sample_dt):
    """Edges and plan of `count` bins over a given range (cached, up to
    FIXED_BINS_CACHE_BYTES of arrays: the tutorial's call repeats them, and
    they cost more than a small kernel). The bounds' types are part of the
    key: NumPy's edges take their dtype."""
    key = (count, bounds, bound_types, sample_dt)
    plan = _FIXED_BINS.get(key)
    if plan is None:
        edges = fixed_edges(count, bounds, sample_dt)
        plan = (edges, *_bin_plan(edges, sample_dt, True))
        kernel_edges = plan[1]  # the same array as edges when no conversion was needed
        _FIXED_BINS.put(key, plan, edges.nbytes + (0 if kernel_edges is edges else kernel_edges.nbytes))
    return plan


def _real_kind(v):
    """Whether v is a real number (or an array of them) as NumPy sees it."""
    return type(v) in (int, float) or np.asarray(v).dtype.kind in "biuf"


def _check_range(range):
    """Refuse a range that is not two real numbers (NumPy raises TypeError
    for strings and other non-numbers too, from deep inside)."""
    if range is None:
        return
    if type(range) is tuple and len(range) == 2 and type(range[0]) in (int, float) and type(range[1]) in (int, float):
        return  # the common call, (0, 128): two Python numbers, nothing masked (a microsecond saved per call)
    refuse_masked(range, "range")
    try:
        bounds = tuple(range)
    except TypeError:
        raise TypeError(f"range must be a (min, max) pair of numbers (got {type(range).__name__})") from None
    if len(bounds) != 2:
        raise ValueError(f"range must be a (min, max) pair of numbers (got {len(bounds)} values)")
    for v in bounds:
        refuse_masked(v, "range")
        if not _real_kind(v):
            raise TypeError(f"range must be a (min, max) pair of numbers (got {range!r}): "
                            f"{type(v).__name__} is not a real number")


_UNSIGNED = {np.byte: np.ubyte, np.short: np.ushort, np.intc: np.uintc, np.int_: np.uint,
             np.longlong: np.ulonglong}


def _check_range_span(bounds):
    """NumPy's errors for a range whose bins it counts as equal widths
    (a bin count or an estimator): np.histogram subtracts the bounds in the
    type they promote to (``_unsigned_subtract``), so a Python int past
    int64 beside another int is an OverflowError there. Asked once NumPy's
    edges of the range exist (its own checks came first)."""
    if bounds is None:
        return
    lo, hi = bounds
    if lo == hi:
        return  # NumPy widens the range by 0.5 either side: floats
    dt = np.result_type(lo, hi)
    unsigned = _UNSIGNED.get(dt.type)
    try:
        with np.errstate(all="ignore"):
            if unsigned is None:
                np.subtract(hi, lo, dtype=dt)
            else:
                np.subtract(np.asarray(hi, dtype=dt), np.asarray(lo, dtype=dt), casting="unsafe", dtype=unsigned)
    except (OverflowError, TypeError) as e:
        raise type(e)(f"{e} (NumPy subtracts the bounds as {dt}; pass them as floats)") from None


@contextlib.contextmanager
def _naming_range(range):
    """NumPy's errors about a range, with the range named where NumPy's own
    message does not name it ("ufunc 'isfinite' not supported ...")."""
    try:
        yield
    except (TypeError, ValueError, OverflowError) as e:
        if range is None or "range" in str(e) or "bins" in str(e):
            raise
        raise type(e)(f"range={range!r}: {e}") from None


def _check_edges(bins):
    """Refuse explicit edges that are not real numbers: NumPy compares
    string edges with the data as strings, and object edges as Python
    objects; cuatomic compares numbers in float32/float64 and would get
    either wrong. A NaN edge is refused too."""
    refuse_masked(bins, "bins")
    edges = np.asarray(bins)
    kind = edges.dtype
    if kind.kind not in "biuf":
        raise TypeError(f"bin edges must be real numbers (got an array of dtype {kind}): pass the edges as "
                        "ints or floats, e.g. np.asarray(bins, dtype=float)")
    if kind.kind == "f" and np.isnan(edges).any():
        # NumPy takes them (a NaN is neither above nor below its neighbours)
        # and counts nonsense: [0, nan, 2] gives [5, -2] for np.arange(5.)
        raise ValueError(f"`bins` has a NaN edge ({bins!r}): edges must be numbers that increase "
                         "monotonically")


def _check_bin_count(count, what=None):
    """Refuse a bin count whose edges and counts (16 bytes a bin) could not
    fit in this machine's memory (:func:`_common.check_fits_memory`).
    `what` says where the count comes from (default: ``bins=count``)."""
    check_fits_memory(16 * (count + 1), f"{what or f'bins={count}'}: the edges and counts",
                      lambda memory: f"at most {memory // 16 - 1} bins")


def bin_count(bins):
    """`bins` given as a number of bins, as np.histogram takes it: an
    integer (NumPy's TypeError otherwise: 2.5 is not 2 bins), positive, and
    few enough for this machine's memory."""
    try:
        count = operator.index(bins)
    except TypeError:
        raise TypeError("`bins` must be an integer, a string, or an array") from None
    if count < 1:
        raise ValueError("`bins` must be positive, when an integer")
    _check_bin_count(count)
    return count


def fixed_edges(count, range, sample_dt):
    """NumPy's edges of `count` bins over `range` (a pair of numbers) for
    data of sample_dt, with NumPy's errors, the range named."""
    _check_range(range)
    with _naming_range(range):
        edges = np.histogram_bin_edges(np.empty(0, sample_dt), count, range)
        _check_range_span(range)
    return edges


def _bins_for(inp, bins, range, stream):
    """(sample dtype, edges for the caller, *_bin_plan) of a call."""
    if inp.dtype.kind == "b":
        warnings.warn("Converting input from bool to <class 'numpy.uint8'> for compatibility.",
                      RuntimeWarning, stacklevel=3)
    fixed = range is not None and isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_))
    if fixed and bins >= 1:
        _check_bin_count(int(bins))
        _check_range(range)
        sample_dt = np.dtype(np.uint8) if inp.dtype.kind == "b" else inp.dtype
        bounds = tuple(range)
        try:
            hash(bounds)
        except TypeError:  # bounds given as 0-d arrays: the uncached path takes them
            pass
        else:
            edges, *plan = _fixed_bins(int(bins), bounds, tuple(type(v) for v in bounds), sample_dt)
            return (sample_dt, edges.copy(), *plan)
    sample_dt, edges, uniform = _edges(inp, bins, range, stream)
    if edges.size < 2:
        return sample_dt, edges, None, False, 0.0, None
    return (sample_dt, edges, *_bin_plan(edges, sample_dt, uniform))


def _edges(inp, bins, range, stream):
    """(sample dtype, NumPy's edges, whether they are evenly spaced)."""
    sample_dt = np.dtype(np.uint8) if inp.dtype.kind == "b" else inp.dtype
    if np.ndim(bins) == 0:
        _check_range(range)  # NumPy ignores the range of explicit edges
    if isinstance(bins, str):
        if inp.device:
            raise ValueError(f"bins={bins!r} estimates edges from the data: pass host data, or bins as a "
                             "count or an array of edges")
        with _naming_range(range):
            edges = np.histogram_bin_edges(inp.x.view(sample_dt), bins, range)
            _check_range_span(range)
        return sample_dt, edges, True
    if np.ndim(bins) == 0:
        count = bin_count(bins)
        sample = _sample_for_edges(inp, sample_dt, range is not None, stream)
        with _naming_range(range):
            edges = np.histogram_bin_edges(sample, count, range)
            _check_range_span(range)
        return sample_dt, edges, True
    _check_edges(bins)
    return sample_dt, np.histogram_bin_edges(np.empty(0, sample_dt), bins, range), False


# (array type, dtype, bins, range and its types, method, CUATOMIC_BACKEND, and
# for "auto" the size) -> what a call with no other options resolved to last
# time. The tutorial's call repeats, and resolving it (backend, rung, bins,
# checks) cost about 7 us of Python on the H200's host, as much as counting
# 5.7 MB; a repeated call goes straight to the core. Only arrays the core
# reads as they are (a DeviceArray, a C-contiguous native-order ndarray, a
# plain __cuda_array_interface__ array: _interop.plain_cuda_array), never
# bool (NumPy warns on every call).
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
# and the launch options. A repeated call reuses it from _PLANS.
_Plan = collections.namedtuple("_Plan", "backend rung dtype edges uniform inv_width integer ilo iwidth device")


def _count(plan, x, n, blocks, threads, stream):
    """The counts of n elements at x (a DeviceArray for device input)."""
    # Positional: _Plan's fields from dtype to iwidth are in _C.histogram's
    # order (backend, rung, x, n, dtype, edges, uniform, inv_width, integer,
    # ilo, iwidth, blocks, threads, device_out, stream); keywords cost about
    # a microsecond of every call.
    counts = _C.histogram(plan.backend, plan.rung, x, n, *plan[2:9], blocks, threads, plan.device, stream)
    return DeviceArray._vector(counts, plan.edges.size - 1, _INT64) if plan.device else counts


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
        A rung of the histogram ladder (see ``methods("histogram")``):
        ``global``, ``shared`` (the tutorial's), ``warp_private``,
        ``thread_counters``; with weights, a rung of the weighted ladder
        (``methods("weighted_histogram")``): ``global``, ``cas``,
        ``shared``, ``warp_private`` (a histogram rung that has no weighted
        twin raises a ValueError naming those). ``"auto"`` runs the rung
        measured fastest for this dtype, number of bins and size that can
        count these bins on this device (:func:`explain` says which and why,
        with the skew of a sample; with weights, unmeasured, the top rung
        that fits). A rung named here that cannot count the bins (shared
        memory too small) raises a ValueError naming its limit.
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
        nonsense), and on the cpu a
        ``warp_private``/``thread_counters`` grid whose private histograms
        (blocks x bins x 8 bytes) would not fit in half of the machine's
        memory.

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
        return _weighted_histogram(a, bins, range, weights, density, method, backend, blocks, threads, stream)
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
    sample_dt, edges, kernel_edges, uniform, inv_width, integer = _bins_for(inp, bins, range, s)
    if edges.size < 2:  # no bins: NumPy's empty counts, or empty densities
        hist = np.zeros(0, np.float64 if density else np.int64)
        return (DeviceArray.from_host(hist) if inp.device else hist), edges
    ilo, iwidth = integer or (0, 1)
    nbins = kernel_edges.size - 1
    if rung is None:
        rung = auto_rung("histogram", be, inp.n, inp.dtype, nbins, fits=rung_fits(be, nbins, inp.id, nb, nt))
    plan = _Plan(_backend.backend_id(be), rung.index, inp.id, kernel_edges, int(uniform), inv_width,
                 int(integer is not None), ilo, iwidth, inp.device)
    counts = _count(plan, inp.x, inp.n, nb, nt, s)
    if plan_for and read_as_is(inp, plan_for[1], a):
        _PLANS.put(plan_for[0], (plan, edges.copy()), 2 * edges.nbytes + kernel_edges.nbytes)
    if density:
        host = counts.copy_to_host() if inp.device else counts
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = host / np.diff(edges) / host.sum()
        return (DeviceArray.from_host(dens) if inp.device else dens), edges
    return counts, edges


# ------------------------------------------------------------------ weights

WEIGHTED = "weighted_histogram"
_ESTIMATOR_WITH_WEIGHTS = "Automated estimation of the number of bins is not supported for weighted data"
_BOOL_WEIGHTS_WITH_EDGES = ("Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') with casting rule "
                            "'same_kind'")


def weighted_rung(backend, method):
    """The rung of the weighted ladder that `method` names (None for
    "auto"), checked before any input is read. A histogram rung without a
    weighted twin is a ValueError naming the rungs that take weights."""
    _backend.check_method(WEIGHTED, backend, method)
    if method == "auto":
        return None
    names = [r.name for r in _backend.table(WEIGHTED, backend)]
    if method not in names and method in (r.name for r in _backend.table("histogram", backend)):
        raise ValueError(f"method {method!r} cannot take weights: the methods that can are "
                         f"{', '.join(['auto'] + names)} (methods('weighted_histogram'))")
    return _backend.rung(WEIGHTED, backend, method)


class _Weights:
    """Weights as the core takes them: ``x`` (a flat float64/int64 host
    array, or a device pointer), its ABI dtype ``id``, and ``dtype``, the
    dtype NumPy gives the result (the weights' own)."""

    __slots__ = ("x", "id", "dtype")

    def __init__(self, x, id_, dtype):
        self.x, self.id, self.dtype = x, id_, dtype


def _shape_of(obj):
    shape = getattr(obj, "shape", None)
    return tuple(shape) if shape is not None else np.shape(obj)


def _on_device(obj):
    return isinstance(obj, DeviceArray) or _interop.on_cuda(obj)


def _real_weights(dt, to):
    """TypeError, as NumPy's, for weights that are not real numbers."""
    if dt.kind not in "biuf":
        raise TypeError(f"weights must be real numbers: Cannot cast array data from dtype('{dt}') to dtype('{to}') "
                        "according to the rule 'safe'" +
                        (": pass the real and imaginary parts as two calls" if dt.kind == "c" else ""))


def _host_weights(wa, float_only):
    """A flat, C-ordered float64 array of host weights (all of them when
    float_only, else float ones), or int64 for bool and integer weights
    (uint64 as their bits: the wrapping sums are the same bits)."""
    if float_only or wa.dtype.kind == "f":
        return _Weights(np.ascontiguousarray(wa.reshape(-1), dtype=np.float64), _C.DTYPES.index("float64"),
                        wa.dtype)
    flat = np.ascontiguousarray(wa.reshape(-1))
    core = flat.view(np.int64) if flat.dtype.itemsize == 8 and flat.dtype.isnative else flat.astype(np.int64)
    return _Weights(core, _C.DTYPES.index("int64"), wa.dtype)


def _device_weights(w, dtypes):
    """Device weights: read in place, of one of `dtypes`."""
    if w.dtype.name not in dtypes:
        raise TypeError(f"weights on the GPU must be {' or '.join(dtypes)} (got {w.dtype}): cast them before "
                        "to_device()")
    core = "float64" if w.dtype.kind == "f" else "int64"
    return _Weights(w.x, _C.DTYPES.index(core), w.dtype)


def _histogram_weights(weights, a, inp, backend, stream):
    """The weights of histogram(a, weights=...): of a's shape, where a is."""
    refuse_masked(weights, "weights")
    if _on_device(weights) != inp.device:
        where = ("a is on the GPU and weights are not: pass cuatomic.to_device(weights)" if inp.device else
                 "weights are on the GPU and a is not: pass both on the host or both on the device")
        raise TypeError(where)
    if _shape_of(weights) != _shape_of(a):
        raise ValueError("weights should have the same shape as a.")
    if inp.device:
        return _device_weights(prepare(weights, backend, name="weights", stream=stream),
                               ("float64", "int64", "uint64"))
    wa = np.asarray(weights)
    _real_weights(wa.dtype, wa.dtype)
    return _host_weights(wa, float_only=False)


@on_inputs_gpu
def _weighted_histogram(a, bins, range, weights, density, method, backend, blocks, threads, stream):
    """histogram(weights=...): the weighted ladder, NumPy's result dtype."""
    be = _backend.resolve(backend)
    rung = weighted_rung(be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    inp = prepare(a, be, stream=s)
    w = _histogram_weights(weights, a, inp, be, s)
    if isinstance(bins, str):
        raise TypeError(_ESTIMATOR_WITH_WEIGHTS)
    sample_dt, edges, kernel_edges, uniform, inv_width, integer = _bins_for(inp, bins, range, s)
    if w.dtype.kind == "b" and np.ndim(bins) == 1 and inp.n:
        raise TypeError(_BOOL_WEIGHTS_WITH_EDGES)  # NumPy's cumulative sum of booleans, cast back to bool
    # NumPy fills the sums of a bin count in an array of the weights' own
    # dtype (a big-endian one stays so), and takes those of explicit edges
    # as differences of a cumulative sum: native byte order.
    hdt = w.dtype if np.ndim(bins) == 0 else w.dtype.newbyteorder("=")
    if edges.size < 2:
        hist = np.zeros(0, np.float64 if density else hdt)
        return (DeviceArray.from_host(hist) if inp.device else hist), edges
    ilo, iwidth = integer or (0, 1)
    sums = _sum_weights(be, rung, inp, w, kernel_edges, uniform, inv_width, integer is not None, ilo, iwidth, nb,
                        nt, s)
    if inp.device:  # device weights are float64, int64 or uint64: the sums' own bits
        hist = DeviceArray(sums, (kernel_edges.size - 1,), w.dtype)
    else:
        hist = sums.astype(hdt, copy=False)
    if density:
        host = hist.copy_to_host() if inp.device else hist
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = host / np.array(np.diff(edges), float) / host.sum()
        return (DeviceArray.from_host(dens) if inp.device else dens), edges
    return hist, edges


def _sum_weights(be, rung, inp, w, kernel_edges, uniform, inv_width, integer, ilo, iwidth, nb, nt, s):
    """The core's sums per bin (float64 or int64; a DeviceBuffer for device
    input), by `rung`, or by the rung auto picks."""
    nbins = kernel_edges.size - 1
    if rung is None:
        rung = auto_rung(WEIGHTED, be, inp.n, inp.dtype, nbins, fits=rung_fits(be, nbins, inp.id, nb, nt, WEIGHTED))
    return _C.weighted_histogram(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                                 w=w.x, wdtype=w.id, edges=kernel_edges, uniform=int(uniform),
                                 inv_width=inv_width, integer=int(integer), ilo=ilo, iwidth=iwidth, blocks=nb,
                                 threads=nt, device_out=inp.device, stream=s)


# ------------------------------------------------------------------ bincount

_INT64_MAX = np.iinfo(np.int64).max


def minlength_of(minlength):
    """bincount's `minlength` as NumPy takes it (its errors, naming it)."""
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    if isinstance(minlength, (bool, np.bool_)):
        raise TypeError("minlength must be an integer, not bool")
    try:
        minlength = operator.index(minlength)
    except TypeError:
        raise TypeError(f"minlength must be an integer (got {type(minlength).__name__})") from None
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    return minlength


def one_dimensional(ndim, name):
    """bincount's arguments are 1-D: NumPy's ValueError, naming the argument."""
    if ndim > 1:
        raise ValueError(f"{name} must be 1-D, not {ndim}-D: object too deep for desired array")
    if ndim < 1:
        raise ValueError(f"{name} must be 1-D, not 0-D: object of too small depth for desired array")


def bincount_dtype(dt, name="x"):
    """bincount counts integers and bools: NumPy's TypeError, naming x."""
    if dt.kind not in "biu":
        raise TypeError(f"{name} must hold integers or bools: Cannot cast array data from dtype('{dt}') to "
                        "dtype('int64') according to the rule 'safe'")


def _bincount_input(x, backend, stream):
    """x as bincount takes it: 1-D, of integers or bools (an empty list too,
    as NumPy takes it)."""
    if isinstance(x, (list, tuple)) and len(x) == 0:
        x = np.empty(0, np.intp)
    inp = prepare(x, backend, name="x", stream=stream)
    one_dimensional(inp.ndim, "x")
    bincount_dtype(inp.dtype)
    return inp


def _bincount_weights(weights, inp, backend, stream):
    """float64 weights, one per element of x, where x is."""
    refuse_masked(weights, "weights")
    if _on_device(weights) != inp.device:
        where = ("x is on the GPU and weights are not: pass cuatomic.to_device(weights)" if inp.device else
                 "weights are on the GPU and x is not: pass both on the host or both on the device")
        raise TypeError(where)
    if inp.device:
        w = prepare(weights, backend, name="weights", stream=stream)
        one_dimensional(w.ndim, "weights")
        found = _device_weights(w, ("float64",))
        size = w.n
    else:
        wa = np.asarray(weights)
        one_dimensional(wa.ndim, "weights")
        _real_weights(wa.dtype, "float64")
        found = _host_weights(wa, float_only=True)
        size = wa.size
    if size != inp.n:
        raise ValueError(f"The weights and list don't have the same length: {size} weights, {inp.n} elements of x.")
    return found


def _extremes(inp, stream):
    """(min, max) of a non-empty integer input, as Python ints."""
    if inp.device:
        lo, hi, _ = _C.minmax(inp.x, inp.n, inp.id, stream)
        size = inp.dtype.itemsize
        return int(np.frombuffer(lo[:size], inp.dtype)[0]), int(np.frombuffer(hi[:size], inp.dtype)[0])
    return int(inp.x.min()), int(inp.x.max())


def _unit_bins(nbins, dt):
    """Edges 0, 1, ..., nbins of bincount's bins, of the type the kernels
    compare dt in: float64 for data of at most 32 bits (exact), the data's
    own type for 64-bit integers. The kernels never read them: integer data
    in integer bins is binned by arithmetic."""
    if dt.itemsize == 8:
        return np.arange(nbins + 1, dtype=np.int64 if dt.kind == "i" else np.uint64)
    return np.arange(nbins + 1, dtype=np.float64)


def _bincount_plan(x, weights, minlength, backend, stream):
    """(input, weights or None, number of bins) of a bincount call. Empty
    input needs no weights (NumPy answers it before reading them)."""
    minlength = minlength_of(minlength)
    inp = _bincount_input(x, backend, stream)
    if inp.n == 0:
        return inp, None, minlength
    w = None if weights is None else _bincount_weights(weights, inp, backend, stream)
    lo, hi = _extremes(inp, stream)  # negative input is refused before anything is counted
    if lo < 0 or hi > _INT64_MAX:  # uint64 past INT64_MAX is negative as NumPy's intp
        raise ValueError("x must have no negative elements ('list' argument must have no negative elements)")
    nbins = max(minlength, hi + 1)
    if minlength > hi:
        check_fits_memory(16 * (nbins + 1), f"minlength={minlength} asks for {nbins} bins: they",
                          lambda memory: f"minlength may be at most {memory // 16 - 1}")
    else:
        check_fits_memory(16 * (nbins + 1), f"the largest value of x, {hi}, asks for {nbins} bins, one for each "
                          "value from 0: they", lambda memory: f"x may hold values up to {memory // 16 - 2}")
    return inp, w, nbins


@on_inputs_gpu
def bincount(x, weights=None, minlength=0, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """Count the occurrences of each value, as ``np.bincount(x, weights, minlength)``.

    Built on the histogram ladders: bins of width one from 0, binned with
    integer arithmetic alone; without weights a rung of ``histogram``
    counts, with weights a rung of ``weighted_histogram`` sums. The largest
    and smallest value come first (on the GPU from ``minmax``, without a
    copy), so negative input is refused before anything is counted.

    Parameters
    ----------
    x : array_like or DeviceArray
        1-D, of non-negative integers or bools.
    weights : array_like or DeviceArray, optional
        One real weight per element of `x`, where `x` is; host weights are
        cast to float64 (as NumPy does), device weights must be float64.
    minlength : int, optional
        The least number of bins of the result.
    method : str, optional
        A rung of ``methods("histogram")``, or with weights of
        ``methods("weighted_histogram")``; ``"auto"`` as for
        :func:`histogram`.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        ``max(max(x) + 1, minlength)`` int64 counts, or float64 sums of the
        weights; a DeviceArray for device input.

    Raises
    ------
    ValueError
        A negative value, a negative `minlength`, weights of another length,
        input that is not 1-D (NumPy's messages).
    TypeError
        Input that is not integers or bools, weights that are not real
        numbers, a `minlength` that is not an integer.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.bincount(np.array([0, 1, 1, 3]), backend="cpu")
    array([1, 2, 0, 1])
    >>> cuatomic.bincount(np.array([0, 1, 1, 3]), weights=[0.5, 1.0, 1.0, 2.0], backend="cpu")
    array([0.5, 2. , 0. , 2. ])
    """
    be = _backend.resolve(backend)
    rung = named_rung("histogram", be, method) if weights is None else weighted_rung(be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    inp, w, nbins = _bincount_plan(x, weights, minlength, be, s)
    if inp.n == 0:  # NumPy's int64 zeros, weights or not
        zeros = np.zeros(nbins, np.int64)
        return DeviceArray.from_host(zeros) if inp.device else zeros
    edges = _unit_bins(nbins, inp.dtype)
    if w is not None:
        sums = _sum_weights(be, rung, inp, w, edges, True, 1.0, True, 0, 1, nb, nt, s)
        return DeviceArray(sums, (nbins,), np.float64) if inp.device else sums
    if rung is None:
        rung = auto_rung("histogram", be, inp.n, inp.dtype, nbins, fits=rung_fits(be, nbins, inp.id, nb, nt))
    counts = _C.histogram(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                          edges=edges, uniform=1, inv_width=1.0, integer=1, ilo=0, iwidth=1, blocks=nb,
                          threads=nt, device_out=inp.device, stream=s)
    return DeviceArray(counts, (nbins,), np.int64) if inp.device else counts


def _facts(inp, nbins):
    return {"n": inp.n, "dtype": str(inp.dtype), "bins": nbins}


def rung_fits(backend, nbins, dtype_id, blocks, threads, op="histogram"):
    """fits(rung) for :func:`cuatomic._auto.choose`: None if the rung of
    op's ladder (histogram or weighted_histogram) can count `nbins` bins
    with this launch configuration on this device, else the limit it would
    refuse with (the same test its launcher makes)."""
    be_id = _backend.backend_id(backend)
    op_id = _backend.op_id(op)
    return lambda row: _C.histogram_fits(backend=be_id, rung=row.index, nbins=nbins, dtype=dtype_id,
                                         blocks=blocks, threads=threads, op=op_id)


@on_inputs_gpu
def explain(backend, a, bins=10, range=None, *, weights=None, weighted=False, blocks=None, threads=None, stream=0):
    """The Choice of histogram(method="auto") for these arguments (with
    weights when `weighted`: only their presence matters to the rule, and
    `weights`, when given, are checked as the call checks them), with the
    share of a sample of the data in its most common bin."""
    nb, nt = launch_config(blocks, threads)
    inp = prepare(a, backend, stream=stream)
    w = None if weights is None else _histogram_weights(weights, a, inp, backend, stream)
    if weighted and isinstance(bins, str):
        raise TypeError(_ESTIMATOR_WITH_WEIGHTS)
    _, edges, kernel_edges, _, _, _ = _bins_for(inp, bins, range, stream)
    if w is not None and w.dtype.kind == "b" and np.ndim(bins) == 1 and inp.n:
        raise TypeError(_BOOL_WEIGHTS_WITH_EDGES)
    op = WEIGHTED if weighted else "histogram"
    if kernel_edges is None:  # no bins: the call returns empty counts and runs nothing
        return _auto.Choice(op, backend, None, f"no bins (edges {edges.tolist()}): the call returns NumPy's empty "
                            "result and launches no rung", _facts(inp, 0))
    nbins = kernel_edges.size - 1
    facts = _facts(inp, nbins)
    facts["top_bin_share"] = round(_auto.top_bin_share(_auto.sample(inp, stream), edges), 4)
    return _auto.choose(op, backend, facts, fits=rung_fits(backend, nbins, inp.id, nb, nt, op))


@on_inputs_gpu
def explain_bincount(backend, x, weights=None, minlength=0, *, blocks=None, threads=None, stream=0):
    """The Choice of bincount(method="auto"): a rung of the histogram
    ladder, or with weights of the weighted one, for max(x) + 1 bins."""
    nb, nt = launch_config(blocks, threads)
    inp, _, nbins = _bincount_plan(x, weights, minlength, backend, stream)
    op = "histogram" if weights is None else WEIGHTED
    if inp.n == 0:  # NumPy's int64 zeros, and nothing launched
        return _auto.Choice(op, backend, None, "empty input: the call returns NumPy's int64 zeros and launches no "
                            "rung", _facts(inp, nbins))
    facts = _facts(inp, max(nbins, 1))
    return _auto.choose(op, backend, facts, fits=rung_fits(backend, max(nbins, 1), inp.id, nb, nt, op))
