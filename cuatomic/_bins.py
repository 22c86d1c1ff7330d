"""The bins of a histogram as NumPy makes them (counts, ranges, explicit
edges, estimators; its checks and messages), and what a rung of the
histogram ladders is told of them: KernelBins, the one object
``_C.histogram`` and ``_C.weighted_histogram`` take, and whether a rung
can count that many bins."""
import collections
import contextlib
import operator
import warnings

import numpy as np

from . import _C, _backend
from ._common import BytesLRU, check_fits_memory
from ._device import refuse_masked

# What a rung is told of the bins (cua_bins in cuda/cuatomic_abi.h): the
# edges in the type the data is compared in, whether they are evenly spaced
# (and bins per unit of the range for the arithmetic guess), and for
# integer data in integer bins lo + k*width, integer=1 with (ilo, iwidth).
KernelBins = collections.namedtuple("KernelBins", "edges uniform inv_width integer ilo iwidth")


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


def kernel_bins(edges, sample_dt, uniform):
    """The KernelBins of NumPy's `edges` for data of `sample_dt`
    (`uniform`: the edges were made evenly spaced)."""
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
    ilo, iwidth = integer or (0, 1)
    return KernelBins(kernel_edges, int(uniform), inv_width, int(integer is not None), ilo, iwidth)


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
        plan = (edges, kernel_bins(edges, sample_dt, True))
        kernel_edges = plan[1].edges  # the same array as edges when no conversion was needed
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


def check_edges(bins):
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


def bins_for(inp, bins, range, stream):
    """(sample dtype, edges for the caller, their KernelBins) of a call;
    None for the KernelBins of fewer than two edges (no bins)."""
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
            edges, kb = _fixed_bins(int(bins), bounds, tuple(type(v) for v in bounds), sample_dt)
            return sample_dt, edges.copy(), kb
    sample_dt, edges, uniform = _edges(inp, bins, range, stream)
    if edges.size < 2:
        return sample_dt, edges, None
    return sample_dt, edges, kernel_bins(edges, sample_dt, uniform)


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
    check_edges(bins)
    return sample_dt, np.histogram_bin_edges(np.empty(0, sample_dt), bins, range), False


# (array type, dtype, bins, range and its types, method, CUATOMIC_BACKEND, and
# for "auto" the size) -> what a call with no other options resolved to last
# time. The tutorial's call repeats, and resolving it (backend, rung, bins,
# checks) cost about 7 us of Python on the H200's host, as much as counting
# 5.7 MB; a repeated call goes straight to the core. Only arrays the core
# reads as they are (a DeviceArray, a C-contiguous native-order ndarray, a
# plain __cuda_array_interface__ array: _interop.plain_cuda_array), never
# bool (NumPy warns on every call).
def facts(inp, nbins):
    return {"n": inp.n, "dtype": str(inp.dtype), "bins": nbins}


def rung_fits(backend, kb, dtype_id, blocks, threads, op="histogram"):
    """fits(rung) for :func:`cuatomic._auto.choose`: None if the rung of
    op's ladder (histogram or weighted_histogram) can count dtype_id data
    in the KernelBins `kb` with this launch configuration on this device,
    else the limit it would refuse with (the same test its launcher
    makes)."""
    be_id = _backend.backend_id(backend)
    op_id = _backend.op_id(op)
    return lambda row: _C.histogram_fits(backend=be_id, rung=row.index, bins=kb, dtype=dtype_id,
                                         blocks=blocks, threads=threads, op=op_id)



def unit_bins(nbins, dt):
    """The KernelBins of bincount: bins of width one from 0, binned by
    integer arithmetic alone. Their edges 0, 1, ..., nbins are of the type
    the kernels compare dt in (float64 for data of at most 32 bits, exact;
    the data's own type for 64-bit integers); the kernels never read them."""
    if dt.itemsize == 8:
        edges = np.arange(nbins + 1, dtype=np.int64 if dt.kind == "i" else np.uint64)
    else:
        edges = np.arange(nbins + 1, dtype=np.float64)
    return KernelBins(edges, 1, 1.0, 1, 0, 1)
