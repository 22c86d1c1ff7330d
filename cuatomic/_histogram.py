"""histogram: NumPy's bins (edges, ranges, estimators) worked out on the
host, counted by a rung of the histogram ladder."""
import collections
import operator
import os
import threading
import warnings

import numpy as np

from . import _C, _auto, _backend
from ._common import auto_rung, launch_config, named_rung, prepare, stream_of
from ._device import DeviceArray, refuse_masked

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


class BytesLRU:
    """A least-recently-used cache bounded by the bytes its values hold,
    not by their number: 64 cached edge arrays of 2**25 bins would hold
    16 GiB. A value larger than the whole bound is not cached.

    Parameters
    ----------
    max_bytes : int
        The most bytes the cached values may hold together.
    """

    def __init__(self, max_bytes):
        self.max_bytes = int(max_bytes)
        self._items = collections.OrderedDict()  # key -> (value, nbytes), oldest first
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self):
        """Bytes the cached values hold now."""
        return self._bytes

    def __len__(self):
        return len(self._items)

    def __contains__(self, key):
        return key in self._items

    def get(self, key):
        """The value cached under key (now the most recently used), or None."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key, value, nbytes):
        """Cache value (holding nbytes) under key, dropping the least
        recently used values until the total fits the bound."""
        if nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def clear(self):
        with self._lock:
            self._items.clear()
            self._bytes = 0


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
        edges = np.histogram_bin_edges(np.empty(0, sample_dt), count, bounds)
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


def _check_edges(bins):
    """Refuse explicit edges that are not real numbers: NumPy compares
    string edges with the data as strings, and object edges as Python
    objects; cuatomic compares numbers in float32/float64 and would get
    either wrong."""
    refuse_masked(bins, "bins")
    kind = np.asarray(bins).dtype
    if kind.kind not in "biuf":
        raise TypeError(f"bin edges must be real numbers (got an array of dtype {kind}): pass the edges as "
                        "ints or floats, e.g. np.asarray(bins, dtype=float)")


def _check_bin_count(count):
    """Refuse a bin count whose edges and counts (16 bytes a bin) could not
    fit in this machine's memory: NumPy would try to build the edges, and
    where the OS overcommits, fill memory until the process is killed."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return
    if 16 * (count + 1) > memory:
        raise ValueError(f"bins={count}: the edges and counts need {16 * (count + 1)} bytes, more than this "
                         f"machine's memory ({memory} bytes); at most {memory // 16 - 1} bins")


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
        return sample_dt, np.histogram_bin_edges(inp.x.view(sample_dt), bins, range), True
    if np.ndim(bins) == 0:
        try:
            count = operator.index(bins)
        except TypeError:
            raise TypeError("`bins` must be an integer, a string, or an array") from None
        if count < 1:
            raise ValueError("`bins` must be positive, when an integer")
        _check_bin_count(count)
        sample = _sample_for_edges(inp, sample_dt, range is not None, stream)
        return sample_dt, np.histogram_bin_edges(sample, count, range), True
    _check_edges(bins)
    return sample_dt, np.histogram_bin_edges(np.empty(0, sample_dt), bins, range), False


def histogram(a, bins=10, range=None, *, density=False, method="auto", backend=None, blocks=None, threads=None,
              stream=None):
    """Histogram of all elements, as ``np.histogram(a, bins, range, density=density)``.

    Parameters
    ----------
    a : array_like or DeviceArray
        Any shape; all elements are counted.
    bins : int, sequence of scalars or str, optional
        Number of equal-width bins, or monotonically increasing edges, or one
        of NumPy's estimator names (host input only).
    range : (float, float), optional
        Lower and upper edge; values outside are dropped, the last bin is
        closed, NaN is ignored. Default: the data's min and max (a ValueError,
        as NumPy's, when those are not finite).
    density : bool, optional
        As NumPy: counts / bin width / total.
    method : str, optional
        A rung of the histogram ladder (see ``methods("histogram")``):
        ``global``, ``shared`` (the tutorial's), ``warp_private``,
        ``thread_counters``. ``"auto"`` runs the rung measured fastest for
        this dtype, number of bins and size that can count these bins on
        this device (:func:`explain` says which and why, with the skew of a
        sample). A rung named here that cannot count the bins (shared
        memory too small) raises a ValueError naming its limit.
        Integer data with integer edges of an integer width
        (``histogram(text, bins=128, range=(0, 128))``) is binned with
        integer arithmetic only.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    hist : numpy.ndarray or DeviceArray
        int64 counts (float64 with ``density``); a DeviceArray for device input.
    bin_edges : numpy.ndarray
        NumPy's edges, of NumPy's dtype.

    Raises
    ------
    TypeError
        Edges or a range that are not real numbers (strings, objects), a
        masked array, an unsupported dtype.
    ValueError
        NumPy's errors (edges not increasing, a range that is not finite),
        and on the cpu a ``warp_private``/``thread_counters`` grid whose
        private histograms (blocks x bins x 8 bytes) would not fit in half
        of the machine's memory.
    """
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
    counts = _C.histogram(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                          edges=kernel_edges, uniform=int(uniform), inv_width=inv_width,
                          integer=int(integer is not None), ilo=ilo, iwidth=iwidth, blocks=nb, threads=nt,
                          device_out=inp.device, stream=s)
    if inp.device:
        counts = DeviceArray(counts, (kernel_edges.size - 1,), np.int64)
    if density:
        host = counts.copy_to_host() if inp.device else counts
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = host / np.diff(edges) / host.sum()
        return (DeviceArray.from_host(dens) if inp.device else dens), edges
    return counts, edges


def _facts(inp, nbins):
    return {"n": inp.n, "dtype": str(inp.dtype), "bins": nbins}


def rung_fits(backend, nbins, dtype_id, blocks, threads):
    """fits(rung) for :func:`cuatomic._auto.choose`: None if the rung can
    count `nbins` bins with this launch configuration on this device, else
    the limit it would refuse with (the same test its launcher makes)."""
    be_id = _backend.backend_id(backend)
    return lambda row: _C.histogram_fits(backend=be_id, rung=row.index, nbins=nbins, dtype=dtype_id,
                                         blocks=blocks, threads=threads)


def explain(backend, a, bins=10, range=None, *, blocks=None, threads=None, stream=0):
    """The Choice of histogram(method="auto") for these arguments, with the
    share of a sample of the data in its most common bin."""
    nb, nt = launch_config(blocks, threads)
    inp = prepare(a, backend, stream=stream)
    _, edges, kernel_edges, _, _, _ = _bins_for(inp, bins, range, stream)
    nbins = max(kernel_edges.size - 1, 1)
    facts = _facts(inp, nbins)
    facts["top_bin_share"] = round(_auto.top_bin_share(_auto.sample(inp, stream), edges), 4)
    return _auto.choose("histogram", backend, facts, fits=rung_fits(backend, nbins, inp.id, nb, nt))
