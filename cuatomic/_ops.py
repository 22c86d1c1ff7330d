"""The operations: argument checks, NumPy's typing rules, and the call into
the compiled core. Each function resolves the backend and the method,
normalizes its input (C order, native byte order, a supported dtype) or takes
a DeviceArray as it is, and hands integer ids to ``_C``."""
import collections
import functools
import operator
import os
import threading
import warnings

import numpy as np

from . import _C, _auto, _backend, _interop
from ._device import DeviceArray, host_array, refuse_masked

ACC_INT64, ACC_FLOAT32, ACC_FLOAT64 = 0, 1, 2
MAX_BLOCKS = 2**31 - 1
MAX_THREADS = 1024

_DTYPE_IDS = {
    ("b", 1): 0, ("i", 1): 1, ("u", 1): 2, ("i", 2): 3, ("u", 2): 4, ("i", 4): 5,
    ("u", 4): 6, ("i", 8): 7, ("u", 8): 8, ("f", 4): 9, ("f", 8): 10,
}
SUPPORTED = "bool, int8-int64, uint8-uint64, float32 and float64"


_ID_OF_DTYPE = {}


def dtype_id(dt):
    """The ABI id of a NumPy dtype; TypeError for what cuatomic cannot take."""
    found = _ID_OF_DTYPE.get(dt)
    if found is not None:
        return found
    dt = np.dtype(dt)
    key = (dt.kind, dt.itemsize)
    if key not in _DTYPE_IDS or dt.fields is not None:
        hint = " (cast to float32)" if key == ("f", 2) else ""
        raise TypeError(f"unsupported dtype {dt}{hint}: cuatomic works on {SUPPORTED} arrays")
    if dt.isnative:
        _ID_OF_DTYPE[dt] = _DTYPE_IDS[key]
    return _DTYPE_IDS[key]


def launch_config(blocks, threads):
    """(blocks, threads) for the core: -1 means the method's default."""
    return _count("blocks", blocks, MAX_BLOCKS), _count("threads", threads, MAX_THREADS)


def _count(name, value, limit):
    if value is None:
        return -1
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer (got {type(value).__name__})") from None
    if not 1 <= value <= limit:
        raise ValueError(f"{name} must be between 1 and {limit} (got {value})")
    return value


class Input:
    """An input as the core reads it: a flat host array or a device pointer."""

    __slots__ = ("x", "n", "dtype", "id", "device", "ndim", "owner")

    def __init__(self, x, n, dtype, device, ndim, owner):
        self.x, self.n, self.dtype, self.device, self.ndim, self.owner = x, n, dtype, device, ndim, owner
        self.id = dtype_id(dtype)

    def cast(self, dt, why):
        """The same data converted to dt, as NumPy would convert it."""
        if self.device:
            raise TypeError(f"{why} needs the {self.dtype} device array converted to {dt}: "
                            f"cast it before to_device()")
        return Input(self.x.astype(dt), self.n, np.dtype(dt), False, self.ndim, self.owner)


def prepare(a, backend, name="a", stream=0):
    """Normalize an argument for the backend: a DeviceArray or another
    library's device array (read in place) or a flat host array. Every
    array argument of every operation passes through here; a masked array
    is refused (its mask would be dropped)."""
    if type(a) is np.ndarray:  # the common case, without protocol lookups
        return _host_input(a, a)
    if isinstance(a, DeviceArray):
        if backend != "cuda":
            raise TypeError(f"{name} is a cuatomic.DeviceArray but the backend is {backend!r}: "
                            "use backend='cuda', or .copy_to_host()")
        return Input(a.ptr, a.size, a.dtype, True, a.ndim, a)
    if backend != "cuda" and _interop.on_cuda(a):
        raise TypeError(f"{name} is a CUDA device array but the backend is {backend!r}: use backend='cuda'")
    found = _interop.foreign(a, stream)
    if isinstance(found, _interop.ForeignDevice):
        dtype_id(found.dtype)
        return Input(found.ptr, found.size, found.dtype, True, len(found.shape), found.keep)
    return _host_input(host_array(a if found is None else found, name), a)


def _host_input(arr, owner):
    """A host array in C order and native byte order, flattened."""
    dtype_id(arr.dtype)  # refuse before copying anything
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    flat = arr if arr.ndim == 1 and arr.flags.c_contiguous else np.ascontiguousarray(arr.reshape(-1))
    return Input(flat, flat.size, flat.dtype, False, arr.ndim, owner)


def _acc_of(dt, flags):
    """The accumulator for a result of dtype dt: 64-bit integers, floats in
    their own precision -- or always float64 for a rung flagged F_WIDE,
    which sums float32 and float64 in float64 with compensation."""
    if dt.kind == "f":
        return ACC_FLOAT64 if dt.itemsize == 8 or flags & _C.F_WIDE else ACC_FLOAT32
    return ACC_INT64


def _check_result_dtype(dt, what):
    if dt.kind not in "biuf" or (dt.kind == "f" and dt.itemsize not in (4, 8)):
        raise TypeError(f"{what} result dtype {dt} is not supported: cuatomic computes in {SUPPORTED}")


# --------------------------------------------------------------------- sum

def sum(a, *, dtype=None, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """Sum of all elements, as ``np.sum(a, dtype=dtype)``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
        Any shape (all elements are summed), layout or byte order. Objects
        with ``__cuda_array_interface__`` or a CUDA ``__dlpack__`` (CuPy,
        PyTorch, Numba) are read in place on the cuda backend.
    dtype : data-type, optional
        Type of the result and of the accumulation, as NumPy's ``dtype``.
    method : str, optional
        A rung of the sum ladder (see ``methods("sum")``); ``"auto"`` picks
        ``vector``: 16-byte loads, warp shuffles, the resident grid and an
        in-order last-block finish -- the fastest rung, and bit-identical
        run to run for floats (see :func:`explain`).
    backend : {"cuda", "cpu"}, optional
        Default: ``CUATOMIC_BACKEND``, else cuda when usable, else cpu.
    blocks, threads : int, optional
        Launch configuration; None is the method's default. On the cpu
        backend blocks*threads are logical workers run by the OpenMP team.
    stream : Stream, int or stream object, optional
        CUDA stream to queue the work on (CuPy's ``.ptr``, PyTorch's
        ``.cuda_stream`` work too); only this stream is synchronized to
        return the result. Ignored by the cpu backend.

    Returns
    -------
    numpy scalar
        Of NumPy's result dtype (int32 -> int64, uint8 -> uint64, bool ->
        int64, ...). Integers are exact (accumulated in 64 bits). Floats:
        ``vector`` (auto) accumulates in float64 with compensation and errs
        by at most twice NumPy's error or two ulps of the exact sum; the
        tutorial's rungs accumulate in the result's precision, in the order
        the atomics allow (``atomic``: 1.2e5 ulps for 0.1 summed 10^6 times
        in float32, where NumPy errs by 0.8; the README's accuracy table
        gives every rung, measured).

    Raises
    ------
    TypeError
        Unsupported dtype (complex, object, strings, float16), a masked
        array (``numpy.ma``: its mask would be ignored; pass
        ``a.filled(v)`` or ``a.compressed()``), a `method` or launch
        setting of the wrong type.
    ValueError
        Unknown method or backend, a launch configuration the method
        cannot take, or a stream handle that is not pointer-sized.
    CudaError
        A CUDA failure, with the CUDA error's name.
    """
    return _reduce("sum", a, dtype, method, backend, blocks, threads, stream)


def prod(a, *, dtype=None, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """Product of all elements, as ``np.prod(a, dtype=dtype)``: an atomic
    multiply built from compare-and-swap.

    Parameters
    ----------
    a : array_like or DeviceArray
    dtype : data-type, optional
        As NumPy's ``dtype``.
    method : {"cas", "auto"}, optional
        ``cas``: each thread multiplies its share in a register, then
        multiplies it into the total with an atomicCAS loop (no GPU has an
        atomic multiply).
    backend, blocks, threads
        As for :func:`sum`.

    Returns
    -------
    numpy scalar
        Of NumPy's result dtype; integers wrap exactly as NumPy's do. Floats
        are multiplied in float64 and corrected by the summed relative
        rounding errors of every multiplication (an FMA gives each): at most
        twice NumPy's error or two ulps of the exact product.
    """
    return _reduce("prod", a, dtype, method, backend, blocks, threads, stream)


@functools.lru_cache(maxsize=256)
def _reduce_dtype(op, in_dt, dtype):
    """NumPy's result dtype for op over in_dt with dtype= (cached: it is
    asked on every call)."""
    reference = np.sum if op == "sum" else np.prod
    try:
        # keepdims: an array even for dtype=object (whose scalar result is a Python int)
        return reference(np.empty(0, in_dt), dtype=dtype, keepdims=True).dtype
    except TypeError as e:
        raise TypeError(f"cannot {op} {in_dt} as {dtype}: {e}") from None


# (op, array type, dtype, method, CUATOMIC_BACKEND) -> what a call with no
# other options resolved to last time: the common call skips the resolution
# (a few microseconds of Python, most of a small GPU call's time).
_PLANS = {}


def _reduce(op, a, dtype, method, backend, blocks, threads, stream):
    kind = type(a)
    fast = dtype is None and backend is None and blocks is None and threads is None and stream is None and (
        type(method) is str) and (kind is DeviceArray or (kind is np.ndarray and a.flags.c_contiguous))
    if fast:
        key = (op, kind, a.dtype, method, os.environ.get("CUATOMIC_BACKEND"))
        plan = _PLANS.get(key)
        if plan is not None:
            call, be_id, name, ident, acc, num = plan
            return call(be_id, name, a.ptr if kind is DeviceArray else a, a.size, ident, acc, -1, -1, None, num)
    be = _backend.resolve(backend)
    name, flags = _backend.choose(op, be, method)
    b, t = launch_config(blocks, threads)
    s = _interop.stream_handle(stream)
    inp = prepare(a, be, stream=s)
    try:
        out_dt = _reduce_dtype(op, inp.dtype, dtype)
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        out_dt = _reduce_dtype.__wrapped__(op, inp.dtype, dtype)
    _check_result_dtype(out_dt, op)
    # The kernels convert int -> int64 and float -> float/double themselves;
    # other conversions happen first, as NumPy does them.
    if out_dt.kind == "b" and inp.dtype.kind != "b":
        inp = inp.cast(np.bool_, f"{op}(dtype=bool)")
    elif out_dt.kind in "iu" and inp.dtype.kind == "f":
        inp = inp.cast(out_dt, f"{op}(dtype={out_dt})")
    elif out_dt.kind == "f" and inp.dtype.kind != "f":
        inp = inp.cast(out_dt, f"{op}(dtype={out_dt})")
    elif out_dt.kind == "f" and out_dt.itemsize < inp.dtype.itemsize and not inp.device:
        inp = inp.cast(out_dt, f"{op}(dtype={out_dt})")  # NumPy rounds every element first
    # Narrowing device data: the kernels round every element to the result
    # type as they read it (the vector rung then sums compensated in double,
    # the tutorial's rungs in the result type).
    narrowing = out_dt.kind == "f" and out_dt.itemsize < inp.dtype.itemsize
    acc = ACC_FLOAT32 if narrowing else _acc_of(out_dt, flags)
    call = _C.sum if op == "sum" else _C.prod
    result = call(_backend.backend_id(be), name, inp.x, inp.n, inp.id, acc, b, t, s, out_dt.num)
    if fast and inp.x is (a.ptr if kind is DeviceArray else a) and (kind is np.ndarray or be == "cuda"):
        _PLANS[key] = (call, _backend.backend_id(be), name, inp.id, acc, out_dt.num)
    return result


# --------------------------------------------------------------------- dot

def dot(a, b, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """Dot product of two 1-D vectors, as ``np.dot(a, b)``.

    Parameters
    ----------
    a, b : array_like or DeviceArray
        1-D, of equal length.
    method : str, optional
        A rung of the dot ladder (see ``methods("dot")``); ``"auto"`` picks
        ``vector``: one pass with wide loads of both inputs, finished in
        order on the device -- the fastest rung, deterministic.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy scalar
        Of NumPy's result dtype. Integer results wrap exactly as np.dot's do
        (int32 . int32 wraps in 32 bits). Floats: ``vector`` (auto) sums the
        exact products in float64 with compensation, at most twice the error
        of NumPy's ``np.sum(a * b)`` or two ulps of the exact dot; the
        tutorial's rungs accumulate in the result's precision (8 to 130
        ulps on 10^6 normal float32 pairs, where NumPy errs by 3: see the
        README's accuracy table).

    Raises
    ------
    ValueError
        Inputs that are not 1-D, or of different lengths.
    TypeError
        Unsupported dtypes, or a masked array.
    """
    be = _backend.resolve(backend)
    name, flags = _backend.choose("dot", be, method)
    nb, nt = launch_config(blocks, threads)
    s = _interop.stream_handle(stream)
    ia, ib = prepare(a, be, "a", s), prepare(b, be, "b", s)
    if ia.ndim != 1 or ib.ndim != 1:
        raise ValueError(f"dot takes two 1-D vectors (got {ia.ndim}-D and {ib.ndim}-D)")
    if ia.n != ib.n:
        raise ValueError(f"shapes ({ia.n},) and ({ib.n},) not aligned: {ia.n} (dim 0) != {ib.n} (dim 0)")
    out_dt = np.asarray(np.dot(np.empty(0, ia.dtype), np.empty(0, ib.dtype))).dtype
    _check_result_dtype(out_dt, "dot")
    if ia.dtype != out_dt:
        ia = ia.cast(out_dt, f"dot of {ia.dtype} and {ib.dtype}")
    if ib.dtype != out_dt:
        ib = ib.cast(out_dt, f"dot of {ia.dtype} and {ib.dtype}")
    acc = _acc_of(out_dt, flags)
    return _C.dot(_backend.backend_id(be), name, ia.x, ib.x, ia.n, ia.id, acc, nb, nt, s, out_dt.num)


# --------------------------------------------------------------- histogram

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
        ``thread_counters``. ``"auto"`` picks by the number of bins
        (:func:`explain` says which and why, with the skew of a sample).
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
    name, _ = _backend.choose("histogram", be, method)
    nb, nt = launch_config(blocks, threads)
    s = _interop.stream_handle(stream)
    inp = prepare(a, be, stream=s)
    sample_dt, edges, kernel_edges, uniform, inv_width, integer = _bins_for(inp, bins, range, s)
    if edges.size < 2:  # no bins: NumPy's empty counts, or empty densities
        hist = np.zeros(0, np.float64 if density else np.int64)
        return (DeviceArray.from_host(hist) if inp.device else hist), edges
    ilo, iwidth = integer or (0, 1)

    if method == "auto":
        name = _auto.histogram_rung(be, kernel_edges.size - 1)
    counts = _C.histogram(_backend.backend_id(be), name, inp.x, inp.n, inp.id, kernel_edges, int(uniform),
                          inv_width, int(integer is not None), ilo, iwidth, nb, nt, inp.device, s)
    if inp.device:
        counts = DeviceArray(counts, (kernel_edges.size - 1,), np.int64)
    if density:
        host = counts.copy_to_host() if inp.device else counts
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = host / np.diff(edges) / host.sum()
        return (DeviceArray.from_host(dens) if inp.device else dens), edges
    return counts, edges


# ------------------------------------------------------------------ filter

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


class _Domain:
    """The values of a dtype as ordered integer keys, so a monotone
    predicate's edge can be found by bisection."""

    def __init__(self, dt):
        self.dt = dt
        if dt.kind == "b":
            self.lo, self.hi = 0, 1
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            self.lo, self.hi = int(info.min), int(info.max)
        else:
            self.bits = dt.itemsize * 8
            self.uint = np.dtype(f"u{dt.itemsize}")
            self.lo, self.hi = self.key(-np.inf), self.key(np.inf)

    def key(self, v):
        if self.dt.kind != "f":
            return int(v)
        u = int(np.array(v, self.dt).view(self.uint))
        sign = 1 << (self.bits - 1)
        return u | sign if u < sign else ~u & ((1 << self.bits) - 1)

    def value(self, k):
        if self.dt.kind != "f":
            return np.array(k, self.dt)[()]
        sign = 1 << (self.bits - 1)
        u = k & ~sign if k & sign else ~k & ((1 << self.bits) - 1)
        return np.array(u, self.uint).view(self.dt)[()]

    def pack(self, k):
        v = self.value(k)
        if self.dt.kind == "f":
            return np.array(v, self.dt).tobytes().ljust(8, b"\0")
        return np.array(int(v), np.int64 if self.dt.kind == "i" else np.uint64).tobytes()


def _first_true(lo, hi, test):
    """Smallest k in [lo, hi] with test(k), for test false...true; hi+1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if test(mid):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _last_true(lo, hi, test):
    """Largest k in [lo, hi] with test(k), for test true...false; lo-1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if test(mid):
            lo = mid + 1
        else:
            hi = mid - 1
    return hi


def predicate(dt, op, value):
    """``x <op> value`` over elements of dtype dt, under NumPy's comparison
    rules, as (negate, lo, hi): keep x iff (lo <= x <= hi) != negate."""
    refuse_masked(value, "value")
    if isinstance(value, DeviceArray) or np.ndim(value) != 0:
        raise ValueError("value must be a scalar")
    dom = _Domain(dt)
    compare = _COMPARE[op]

    def holds(k, cmp=compare):
        with np.errstate(all="ignore"):
            try:
                r = cmp(np.array(dom.value(k), dt), value)
            except TypeError as e:
                raise TypeError(f"cannot compare {dt} elements with {value!r}: {e}") from None
        if not isinstance(r, (bool, np.bool_, np.ndarray)):
            raise TypeError(f"cannot compare {dt} elements with {value!r}")
        return bool(r)

    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if dt.kind in "iu" and is_int and dom.lo <= int(value) <= dom.hi:
        v = int(value)  # exact comparisons: no search needed
        lo, hi = {"<": (dom.lo, v - 1), "<=": (dom.lo, v), ">": (v + 1, dom.hi), ">=": (v, dom.hi)}.get(op, (v, v))
    elif op in ("<", "<="):
        lo, hi = dom.lo, _last_true(dom.lo, dom.hi, holds)
    elif op in (">", ">="):
        lo, hi = _first_true(dom.lo, dom.hi, holds), dom.hi
    else:
        lo = _first_true(dom.lo, dom.hi, lambda k: holds(k, operator.ge))
        hi = _last_true(dom.lo, dom.hi, lambda k: holds(k, operator.le))
        if lo > hi or not holds(lo, operator.eq):
            lo, hi = dom.hi, dom.lo
    if lo > hi:  # empty: an interval no element is inside
        lo, hi = dom.hi, dom.lo
    return op == "!=", dom.pack(lo), dom.pack(hi)


def filter(a, op, value, *, ordered=True, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The elements x of ``a`` (flattened, C order) with ``x <op> value``.

    Parameters
    ----------
    a : array_like or DeviceArray
    op : {"<", "<=", ">", ">=", "==", "!="}
    value : scalar
        Compared as NumPy compares ``a.ravel() <op> value`` (out-of-range,
        fractional and NaN values included).
    ordered : bool, optional
        True (default): exactly ``a.ravel()[a.ravel() <op> value]``. False:
        the same multiset in any order.
    method : str, optional
        ``"atomic"`` (push_back with atomicAdd's old value; unordered),
        ``"ordered"`` (count, scan, scatter) or ``"lookback"`` (single pass
        with decoupled look-back; ordered). ``"auto"`` picks ``lookback``.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        1-D, of a's dtype; a DeviceArray for device input.

    Raises
    ------
    TypeError
        An op that is not a string, a value that cannot be compared with
        the elements, or a masked array or ``numpy.ma.masked`` value.
    ValueError
        An unknown op, a non-scalar value, or ``ordered=True`` with a method
        that cannot keep order.
    """
    if not isinstance(op, str):
        raise TypeError(f"op must be a string, one of {', '.join(_COMPARE)} (got {type(op).__name__} {op!r})")
    if op not in _COMPARE:
        raise ValueError(f"unknown op {op!r}: expected one of {', '.join(_COMPARE)}")
    be = _backend.resolve(backend)
    if method == "auto":
        method = _auto.fixed("filter", be).method
    name, flags = _backend.choose("filter", be, method)
    if ordered and not flags & _C.F_ORDERED:
        raise ValueError(f"method {name!r} cannot keep input order: pass ordered=False, or method='ordered'")
    nb, nt = launch_config(blocks, threads)
    s = _interop.stream_handle(stream)
    inp = prepare(a, be, stream=s)
    negate, lo, hi = predicate(inp.dtype, op, value)
    out, count = _C.filter(_backend.backend_id(be), name, inp.x, inp.n, inp.id, negate, lo, hi, nb, nt,
                           inp.device, s)
    if not inp.device:
        return out  # already cut to the count in C
    if 2 * count < inp.n:  # do not keep a capacity-n buffer alive for a few elements
        exact = DeviceArray.empty(count, inp.dtype)
        if count:
            exact._buffer.copy_from_device(out.ptr, count * inp.dtype.itemsize)
        return exact
    return DeviceArray(out, (count,), inp.dtype)


# ---------------------------------------------------------------- counters

def _counter(op, blocks, threads, method, backend, stream):
    be = _backend.resolve(backend)
    name, _ = _backend.choose(op, be, method)
    b, t = launch_config(blocks, threads)
    return _C.counter(_backend.backend_id(be), _backend.op_id(op), name, b, t, _interop.stream_handle(stream))


def add_one(blocks=10, threads=16, *, method="auto", backend=None, stream=None):
    """The tutorial's race: blocks*threads threads each add one to a counter.

    Parameters
    ----------
    blocks, threads : int, optional
        Grid size (``add_one_kernel[10, 16]`` in the tutorial).
    method : {"racy", "atomic", "mutex", "auto"}, optional
        ``racy``: an unprotected load and store, so concurrent increments
        are lost; ``atomic``: atomicAdd; ``mutex``: the plain increment under
        the CAS spin lock. ``"auto"`` is ``atomic``.
    backend : {"cuda", "cpu"}, optional
    stream : optional
        As for :func:`sum`.

    Returns
    -------
    int
        What the counter holds at the end: exactly blocks*threads for
        ``atomic`` and ``mutex``, at most that (usually less on a GPU) for
        ``racy``.
    """
    return _counter("add_one", blocks, threads, method, backend, stream)


def mutex_add_one(blocks=10, threads=16, *, method="spin", backend=None, stream=None):
    """blocks*threads threads each add one inside a CAS spin-lock critical section.

    Lock: CAS 0 -> 1 until it succeeds, then a fence; unlock: a fence, then an
    atomic exchange back to 0, as in the tutorial.

    Parameters
    ----------
    blocks, threads : int, optional
    method : {"spin", "warp_lock", "auto"}, optional
        ``spin`` (the tutorial's lesson: every thread takes the lock) or
        ``warp_lock`` (one lane takes it for its warp, test-and-test-and-set
        with backoff, and the warp's lanes increment in turn inside it);
        ``"auto"`` picks ``warp_lock``.
    backend : {"cuda", "cpu"}, optional
    stream : optional
        As for :func:`sum`.

    Returns
    -------
    int
        Exactly blocks*threads.
    """
    return _counter("mutex_add_one", blocks, threads, method, backend, stream)


def explain(op, *args, backend=None, stream=None, **kwargs):
    """What ``method="auto"`` runs for a call, and why.

    Parameters
    ----------
    op : {"sum", "dot", "histogram", "filter", "mutex_add_one", "add_one", "prod"}
    *args, **kwargs
        The call's arguments, as for the op itself (only what the rule looks
        at is used: the input, and ``bins``/``range`` for a histogram).
    backend, stream
        As for :func:`sum`.

    Returns
    -------
    Choice
        ``method``, ``reason`` and the ``facts`` the rule looked at (size,
        dtype, bins, the measured skew of a sample); ``str()`` reads as a
        sentence.

    Raises
    ------
    TypeError
        ``explain("histogram")`` without the array (the rule needs the
        bins, the report the data), or the op's own argument errors.
    ValueError
        An unknown op.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> text = np.frombuffer(b"the quick brown fox " * 100, np.uint8)
    >>> cuatomic.explain("histogram", text, bins=128, range=(0, 128), backend="cpu").method
    'thread_counters'
    """
    _backend.op_id(op)
    be = _backend.resolve(backend)
    s = _interop.stream_handle(stream)
    if op == "histogram":
        if not args and "a" not in kwargs:
            raise TypeError("explain('histogram') needs the array, as the call takes it: "
                            "explain('histogram', a, bins=..., range=...) (the rule reads the bins, and the "
                            "report the data's skew)")
        a = args[0] if args else kwargs["a"]
        bins = args[1] if len(args) > 1 else kwargs.get("bins", 10)
        bounds = args[2] if len(args) > 2 else kwargs.get("range")
        inp = prepare(a, be, stream=s)
        _, edges, _ = _edges(inp, bins, bounds, s)
        return _auto.histogram(be, inp, edges, s, measure=True)
    facts = {}
    a = args[0] if args else kwargs.get("a")
    if a is not None and op in ("sum", "dot", "filter", "prod"):
        inp = prepare(a, be, stream=s)
        facts = {"n": inp.n, "dtype": str(inp.dtype)}
    return _auto.fixed(op, be, facts)


def methods(op, backend=None):
    """The method ladder of an operation, in tutorial order.

    Parameters
    ----------
    op : {"sum", "dot", "histogram", "filter", "mutex_add_one", "add_one", "prod"}
    backend : {"cuda", "cpu"}, optional
        Default: the default backend.

    Returns
    -------
    list of (name, step, summary)
    """
    be = _backend.resolve(backend) if backend is None else backend
    return [(name, step, summary) for name, step, summary, _ in _backend.table(op, be)]


def backends():
    """Usable backends in preference order: ``["cuda", "cpu"]`` or ``["cpu"]``.

    The first call probes the GPU (no CUDA call happens at import)."""
    return list(_backend.usable())


def backend_info():
    """What this build has and what this machine offers.

    Returns
    -------
    dict
        The same keys in every build (with or without CUDA) and on every
        machine: ``build`` (``cuda``: bool, ``archs``: list of SM versions),
        ``backends``, ``default_backend``, ``cpu_threads``, ``numpy``, and
        ``cuda``: the probe of the current device (``usable``, ``reason``:
        why it is not, ``name``, ``device``, ``compute_capability``,
        ``sm_count``, ``cooperative_launch``, ``driver_version``,
        ``runtime_version``, ``total_memory``, ``shared_per_block_optin``;
        numbers are 0 and strings empty where there is no device or no CUDA).
    """
    build = dict(_C.build_info())
    build["archs"] = [a for a in build["archs"].split(",") if a]
    probe = dict(_backend.cuda_probe())
    usable = _backend.usable()
    return {
        "build": build,
        "backends": usable,
        "default_backend": os.environ.get("CUATOMIC_BACKEND") or usable[0],
        "cpu_threads": _C.cpu_threads(),
        "numpy": np.__version__,
        "cuda": probe,
    }

