"""What every operation shares: the dtype and launch checks, the input as
the core reads it, the accumulator for a result type, and the rung a call
runs (a named one, or the one ``method="auto"`` picks). The operations
themselves live one family per module: ``_reduce`` (sum, prod, dot),
``_histogram``, ``_filter``, ``_counter`` (add_one, mutex_add_one); the
cache their repeated-call plans live in is here too (BytesLRU)."""
import collections
import functools
import operator
import os
import threading

import numpy as np

from . import _C, _auto, _backend, _interop
from ._device import DeviceArray, host_array
from ._dtypes import SUPPORTED, dtype_id

MAX_BLOCKS = _C.MAX_BLOCKS
MAX_THREADS = _C.MAX_THREADS


def launch_config(blocks, threads):
    """(blocks, threads) for the core: -1 means the method's default."""
    return _count("blocks", blocks, MAX_BLOCKS), _count("threads", threads, MAX_THREADS)


def _count(name, value, limit):
    if value is None:
        return -1
    return integer_arg(name, value, 1, limit)


def integer_arg(name, value, low=None, high=None):
    """`value` as a Python int from `low` to `high` (None: no bound there):
    TypeError for a bool or a non-integer (2.5, "4", NaN), ValueError out
    of range, each naming the argument `name`."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer (got {type(value).__name__})") from None
    if high is not None and not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high} (got {value})")
    if low is not None and value < low:
        raise ValueError(f"{name} must be at least {low} (got {value})")
    return value


def cached_call(fn, *args):
    """``fn(*args)`` through fn's lru_cache, or straight through it when an
    argument cannot be a key (a ``dtype=`` given as a list is refused by
    fn itself, with its own message, not by the cache)."""
    try:
        hash(args)
    except TypeError:
        return fn.__wrapped__(*args)
    return fn(*args)


def shape_of(a):
    """The shape of an array argument of any kind -- NumPy's, a device
    array's (CuPy, PyTorch, Numba, DeviceArray; an object with only
    ``__cuda_array_interface__`` or only DLPack), or NumPy's reading of a
    list -- as a tuple of ints, without converting or copying it."""
    shape = getattr(a, "shape", None)
    if shape is None:  # an array known by its interface alone: the interface's shape, not a 0-d object array's
        cai = getattr(a, "__cuda_array_interface__", None)
        if isinstance(cai, dict):
            shape = cai.get("shape")
        else:
            shape = _interop.dlpack_shape(a)
    return tuple(int(s) for s in (np.shape(a) if shape is None else shape))


def flag(name, value):
    """A true/false argument as NumPy reads one (``if density:``): any
    value's truth, with the error of one that has none (an array of several
    elements) naming the argument."""
    if type(value) is bool:
        return value
    try:
        return bool(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{name}={value!r}: {e}") from None


@functools.lru_cache(maxsize=1)
def physical_memory():
    """This machine's memory in bytes, or None where the OS cannot say
    (asked once: two sysconf calls cost a microsecond per histogram call)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_fits_memory(nbytes, what, most=None):
    """Refuse work whose memory (`nbytes`) could not fit in this machine's:
    NumPy would try to allocate it, and where the OS overcommits, fill
    memory until the process is killed. `what` names what needs the bytes
    ("bins=2**40: the edges and counts"); ``most(memory)``, when given,
    says the largest request that fits."""
    memory = physical_memory()
    if memory is not None and nbytes > memory:
        raise ValueError(f"{what} need {nbytes} bytes, more than this machine's memory ({memory} bytes)"
                         + (f"; {most(memory)}" if most else ""))


class Input:
    """An input as the core reads it: a flat host array or a device pointer.
    ``dtype`` is what the core reads (native byte order), ``given`` the
    dtype as the caller gave it (a big-endian host array keeps its byte
    order here: a result of its elements takes it back, as NumPy's does)."""

    __slots__ = ("x", "n", "dtype", "id", "device", "ndim", "owner", "given")

    def __init__(self, x, n, dtype, device, ndim, owner, given=None):
        self.x, self.n, self.dtype, self.device, self.ndim, self.owner = x, n, dtype, device, ndim, owner
        self.given = dtype if given is None else given
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
        return _host_input(a, a, name)
    if isinstance(a, DeviceArray):
        if backend != "cuda":
            raise TypeError(f"{name} is a cuatomic.DeviceArray but the backend is {backend!r}: "
                            "use backend='cuda', or .copy_to_host()")
        _interop.take_gpu(a.device, None, name)
        return Input(a.ptr, a.size, a.dtype, True, a.ndim, a)
    if backend != "cuda" and _interop.on_cuda(a):
        raise TypeError(f"{name} is a CUDA device array but the backend is {backend!r}: use backend='cuda'")
    found = _interop.foreign(a, stream)
    if isinstance(found, _interop.ForeignDevice):
        dtype_id(found.dtype, name)
        return Input(found.ptr, found.size, found.dtype, True, len(found.shape), found.keep)
    return _host_input(host_array(a if found is None else found, name), a, name)


def direct_input(a):
    """(what the core reads, size, dtype, ndim) of an array the core reads as it
    is -- a DeviceArray (its pointer), a C-contiguous native-order ndarray
    (itself), a plain ``__cuda_array_interface__`` array (its pointer; the
    dtype as its typestr: :func:`_interop.plain_cuda_array`), device arrays
    on the current GPU only -- else None. The repeated-call plans take only
    these: nothing to convert, gather, wait for or move to another GPU."""
    kind = type(a)
    if kind is DeviceArray:
        return (a.ptr, a.size, a.dtype, len(a.shape)) if _interop.on_current_gpu(a.device) else None
    if kind is np.ndarray:
        return (a, a.size, a.dtype, a.ndim) if a.flags.c_contiguous and a.dtype.isnative else None
    return _interop.plain_cuda_array(a)


def gpu_of(x):
    """The current GPU when x is a device pointer (direct_input takes device
    arrays on the current GPU only), else None: auto's plan for one GPU may
    name a rung another GPU cannot run. No question asked in a process that
    sees one GPU."""
    if type(x) is not int:
        return None
    return _interop.current_gpu_ordinal()


def read_as_is(inp, x, a):
    """Whether the core read `a` as :func:`direct_input` gave it (x): no
    copy, cast or gather came between, so a plan can serve the next call. (A
    device pointer is a new int every time it is read: compared by value; a
    host array of several dimensions is read through a flat view of it.)"""
    if inp.device:
        return inp.x == x
    return inp.x is a or (inp.x.dtype == a.dtype and inp.x.size == a.size
                          and inp.x.__array_interface__["data"][0] == a.__array_interface__["data"][0])


def _host_input(arr, owner, name="a"):
    """A host array in C order and native byte order, flattened."""
    given = arr.dtype
    dtype_id(given, name)  # refuse before copying anything
    if not given.isnative:
        arr = arr.astype(given.newbyteorder("="))
    flat = arr if arr.ndim == 1 and arr.flags.c_contiguous else np.ascontiguousarray(arr.reshape(-1))
    return Input(flat, flat.size, flat.dtype, False, arr.ndim, owner, given)


def _acc_of(dt, flags):
    """The accumulator for a result of dtype dt: 64-bit integers, floats in
    their own precision -- or always float64 for a rung flagged F_WIDE,
    which sums float32 and float64 in float64 with compensation."""
    if dt.kind == "f":
        return _C.ACC_FLOAT64 if dt.itemsize == 8 or flags & _C.F_WIDE else _C.ACC_FLOAT32
    return _C.ACC_INT64


def _check_result_dtype(dt, what):
    if dt.kind not in "biuf" or (dt.kind == "f" and dt.itemsize not in (4, 8)):
        raise TypeError(f"{what} result dtype {dt} is not supported: cuatomic computes in {SUPPORTED}")


def named_rung(op, backend, method):
    """The rung a call names, checked before any input is read: None for
    "auto" (chosen once the input is known, by :func:`auto_rung`)."""
    _backend.check_method(op, backend, method)
    return None if method == "auto" else _backend.rung(op, backend, method)


def auto_rung(op, backend, n, dtype=None, bins=None, *, require=0, fits=None, data=None, row=None):
    """The rung ``method="auto"`` runs for a call of `n` elements of
    `dtype` (and `bins` for a histogram or at, `data` and `row` for at's
    indices and row length)."""
    return _auto.rung_for(op, backend, n, dtype, bins, require=require, fits=fits, data=data, row=row)


def stream_of(stream):
    return _interop.stream_handle(stream)


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
