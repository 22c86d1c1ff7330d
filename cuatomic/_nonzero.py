"""nonzero, flatnonzero, argwhere and compress: the filter ladder returning
indices. Every rung of ``methods("filter")`` compacts the indices of the
elements that are not zero (``x != 0`` under NumPy's rules: -0.0 is zero,
NaN is not, any nonzero byte of a bool is True) instead of the elements;
the ordered rungs return them ascending, as NumPy does. Coordinates for
more than one dimension, and compress's take, follow on the same device."""
import math
import warnings

import numpy as np

from . import _backend, _C, _interop
from ._common import auto_rung, flag, launch_config, named_rung, prepare, shape_of, stream_of
from ._device import DeviceArray, refuse_masked
from ._filter import predicate, rung_fits
from ._interop import on_inputs_gpu

_INDEX = np.dtype(np.intp)
_NUMPY2 = int(np.__version__.split(".")[0]) >= 2

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.26
    from numpy.core.multiarray import normalize_axis_index

_ZERO_D_OLD = ("Calling nonzero on 0d arrays is deprecated, as it behaves surprisingly. Use `atleast_1d(cond).nonzero()` "
               "if the old behavior was intended. If the context of this warning is of the form `arr[nonzero(cond)]`, "
               "just use `arr[cond]`.")

_PARAMS = """a : array_like, DeviceArray, or a device array of another library
        Any shape, layout or byte order; bool (any nonzero byte is True),
        integers, float32, float64 (-0.0 is zero, NaN is not).
    method : str, optional
        A rung of :func:`methods` ``("filter")``, run to return indices
        instead of elements: ``"atomic"`` and ``"warp_aggregated"``
        (push_back; unordered, so only with ``ordered=False``),
        ``"ordered"``, ``"lookback"``, ``"pipelined"``. ``"auto"``: the
        rung filter's measured rules choose for this dtype and size.
    ordered : bool, optional
        True (default): ascending, exactly NumPy's result. False: the same
        indices in any order (and the unordered rungs allowed).
    backend, blocks, threads, stream
        As for :func:`sum`."""

_RAISES = """TypeError
        An unsupported dtype (float16, complex, object) or a masked array.
    ValueError
        An unknown method or backend, a launch configuration the method
        cannot take, or ``ordered=True`` with a method that cannot keep
        order.
    CudaError
        A CUDA failure, with the CUDA error's name."""


# A device buffer for every element to pass is 8 bytes per element: for data
# of 1 or 2 bytes past this size (a bool mask of 2^31 elements: 16 GiB) the
# elements are counted first instead, one read more.
_COUNT_FIRST_BYTES = 64 << 20


@on_inputs_gpu
def _flat(a, method, ordered, backend, blocks, threads, stream, exact=False, what=None):
    """The indices into a.ravel() (C order) of a's nonzero elements, int64,
    by a filter rung returning indices: a DeviceArray for device input, else
    an ndarray. Also a's shape and the stream. `exact`: device input of two
    or more dimensions (and of 1- and 2-byte elements past _COUNT_FIRST_BYTES
    of indices) is counted first and its indices written to a buffer of that
    size (coordinates follow: the working set stays the result's
    size, so the memory pool's bounded cache is not overrun at every call)."""
    if type(ordered) is not bool:
        ordered = flag("ordered", ordered)
    be = _backend.resolve(backend)
    rung = named_rung("filter", be, method)
    if ordered and rung is not None and not rung.has(_C.F_ORDERED):
        keep = ", ".join(r.name for r in _backend.table("filter", be) if r.has(_C.F_ORDERED))
        if what:  # compress: order is not optional
            raise ValueError(f"{what} needs a method that keeps order ({keep}): {rung.name!r} returns indices in no "
                             "particular order")
        raise ValueError(f"method {rung.name!r} returns indices in no particular order: pass ordered=False, or a "
                         f"method that keeps order ({keep})")
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    shape = shape_of(a)
    inp = prepare(a, be, stream=s)
    negate, lo, hi = predicate(inp.dtype, "!=", 0)
    if rung is None:
        rung = auto_rung("filter", be, inp.n, inp.dtype, require=_C.F_ORDERED if ordered else 0,
                         fits=rung_fits(be, inp, nb, nt))
    capacity = -1
    if inp.device and (exact and len(shape) > 1 or inp.dtype.itemsize < 4 and inp.n * 8 > _COUNT_FIRST_BYTES):
        capacity = _C.count_kept(inp.x, inp.n, inp.id, negate, lo, hi, s)
    out, count = _C.filter(_backend.backend_id(be), rung.index, inp.x, inp.n, inp.id, negate, lo, hi, nb, nt,
                           inp.device, s, True, capacity)
    flat = DeviceArray._vector(out, count, _INDEX) if inp.device else out
    return flat, shape, s


def _zero_d(a):
    """NumPy's rule for nonzero of a 0-d array: an error from NumPy 2 on, a
    DeprecationWarning and the array taken as 1-D before."""
    if _NUMPY2:
        dt = getattr(a, "dtype", None)
        try:  # (a device array of another library: its dtype may not be NumPy's)
            dt = np.dtype(dt) if dt is not None else np.asarray(a).dtype
        except TypeError:
            dt = np.dtype(np.bool_) if "bool" in str(dt) else np.dtype(np.int64)
        np.nonzero(np.zeros((), dt))  # NumPy's own ValueError, in the words of its version and the dtype's
    warnings.warn(_ZERO_D_OLD, DeprecationWarning, stacklevel=3)


def _coords(flat, shape, rows, s):
    """flat's coordinates into `shape` (ndim >= 2), where flat lives: a
    tuple of ndim 1-D arrays (nonzero; the first is flat itself, turned into
    the first coordinates in place), or with `rows` one (k, ndim) array
    (argwhere), by the unravel of the backend that holds flat."""
    k, nd = flat.shape[0], len(shape)
    device = isinstance(flat, DeviceArray)
    empty = DeviceArray.empty if device else (lambda shape, dtype: np.empty(shape, dtype))
    if rows:
        out = empty((k, nd), _INDEX)
        base = out.ptr if device else out.ctypes.data
        ptrs, stride = [base + d * _INDEX.itemsize for d in range(nd)], nd
    else:
        out = (flat,) + tuple(empty((k,), _INDEX) for _ in range(nd - 1))
        ptrs, stride = [o.ptr if device else o.ctypes.data for o in out], 1
    if k:
        _C.unravel(_C.BACKEND_CUDA if device else _C.BACKEND_CPU, flat.ptr if device else flat.ctypes.data, k, shape,
                   ptrs, stride, s)
    return out


def nonzero(a, *, ordered=True, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The indices of the elements that are not zero, one array per
    dimension, as ``np.nonzero(a)``.

    Parameters
    ----------
    {params}

    Returns
    -------
    tuple of numpy.ndarray or of DeviceArray
        ``a.ndim`` arrays of ``numpy.intp``: the coordinates of the nonzero
        elements in C order; DeviceArrays for device input.

    Raises
    ------
    {raises}
        Also ValueError for a 0-d array under NumPy 2 (NumPy 1.26 warns and
        takes it as 1-D, as NumPy does).

    See Also
    --------
    flatnonzero, argwhere, filter

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.nonzero(np.array([[0, 3], [4, 0]]))
    (array([0, 1]), array([1, 0]))
    """
    if len(shape_of(a)) == 0:
        _zero_d(a)  # NumPy 2 raises; 1.26 warns and goes on with a 1-D array
    flat, shape, s = _flat(a, method, ordered, backend, blocks, threads, stream, exact=True)
    if len(shape) <= 1:
        return (flat,)
    return _coords(flat, shape, False, s)


def flatnonzero(a, *, ordered=True, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The indices into ``a.ravel()`` of the elements that are not zero, as
    ``np.flatnonzero(a)``.

    Parameters
    ----------
    {params}

    Returns
    -------
    numpy.ndarray or DeviceArray
        1-D, ``numpy.intp``; a DeviceArray for device input.

    Raises
    ------
    {raises}

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.flatnonzero(np.array([[0, 3], [4, 0]]))
    array([1, 2])
    """
    return _flat(a, method, ordered, backend, blocks, threads, stream)[0]


def argwhere(a, *, ordered=True, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The coordinates of the elements that are not zero, one row each, as
    ``np.argwhere(a)``.

    Parameters
    ----------
    {params}

    Returns
    -------
    numpy.ndarray or DeviceArray
        ``(count, a.ndim)``, ``numpy.intp``; a DeviceArray (C order) for
        device input. A 0-d ``a`` gives ``(count, 0)``, as NumPy.

    Raises
    ------
    {raises}

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.argwhere(np.array([[0, 3], [4, 0]]))
    array([[0, 1],
           [1, 0]])
    """
    flat, shape, s = _flat(a, method, ordered, backend, blocks, threads, stream, exact=True)
    k = flat.shape[0]
    if len(shape) == 1:
        return flat.reshape(k, 1)
    if len(shape) == 0:  # NumPy: argwhere(atleast_1d(a))[:, :0]
        return DeviceArray.empty((k, 0), _INDEX) if isinstance(flat, DeviceArray) else np.empty((k, 0), _INDEX)
    return _coords(flat, shape, True, s)


def compress(condition, a, axis=None, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The slices of ``a`` along ``axis`` where ``condition`` is not zero, as
    ``np.compress(condition, a, axis)``.

    Parameters
    ----------
    condition : array_like, DeviceArray, or a device array of another library
        1-D; its nonzero entries (found by a filter rung returning indices)
        select. It may be shorter than the axis (the rest is dropped) or
        longer, as long as no nonzero entry lies past the axis's end.
    a : array_like, DeviceArray, or a device array of another library
        The array to select from; any dtype cuatomic takes when it is on a
        device, any NumPy dtype on the host.
    axis : int, optional
        The axis to select along; None (default): ``a.ravel()``.
    method : str, optional
        A filter rung that keeps order (``"ordered"``, ``"lookback"``,
        ``"pipelined"``), or ``"auto"``.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        ``a``'s dtype, ``a``'s shape with ``axis`` cut to the number of
        selected entries (1-D for ``axis=None``); a DeviceArray when ``a``
        is on a device (the condition may be on either side).

    Raises
    ------
    ValueError
        A condition that is not 1-D; an unordered method.
    IndexError
        A nonzero entry of the condition past the end of the axis (NumPy's
        message).
    numpy.exceptions.AxisError
        An axis out of range.
    TypeError, CudaError
        As for :func:`nonzero`.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.compress([0, 1, 1], np.array([[1, 2, 3], [4, 5, 6]]), axis=1)
    array([[2, 3],
           [5, 6]])
    """
    if len(shape_of(condition)) != 1:
        raise ValueError("condition must be a 1-d array")
    refuse_masked(a, "a")  # (np.take would drop the mask)
    if isinstance(a, DeviceArray) or _interop.on_cuda(a):
        return _compress_on_device(condition, a, axis, method, backend, blocks, threads, stream)
    idx = _flat(condition, method, True, backend, blocks, threads, stream, what="compress")[0]
    if isinstance(idx, DeviceArray):
        idx = idx.copy_to_host()
    return np.take(a if isinstance(a, np.ndarray) else np.asarray(a), idx, axis=axis)  # (a subclass stays one)


@on_inputs_gpu
def _compress_on_device(condition, a, axis, method, backend, blocks, threads, stream):
    """compress for device `a`, on its GPU: the condition's indices (found
    there, or on the host and copied), checked against the axis through
    the last of them (they ascend), then one take kernel."""
    s = stream_of(stream)
    shape = shape_of(a) or (1,)  # (a 0-d array is compressed as 1-D, as NumPy does)
    inp = prepare(a, "cuda", stream=s)  # first: the call runs on a's GPU
    if axis is None:
        where, outer, m, inner = 0, 1, inp.n, 1
    else:
        where = normalize_axis_index(axis, len(shape))
        outer, m, inner = math.prod(shape[:where]), shape[where], math.prod(shape[where + 1:])
    idx = _flat(condition, method, True, backend, blocks, threads, s, what="compress")[0]
    k = idx.shape[0]
    if k:
        last = _last(idx) if isinstance(idx, DeviceArray) else int(idx[-1])
        if last >= m:
            raise IndexError(f"index {last} is out of bounds for axis {where} with size {m}")
    out = DeviceArray.empty((k,) if axis is None else shape[:where] + (k,) + shape[where + 1:], inp.dtype)
    if out.size:
        if not isinstance(idx, DeviceArray):
            idx = DeviceArray.from_host(idx)
        _C.take(inp.x, out.ptr, inp.dtype.itemsize, outer, m, inner, idx.ptr, k, s)
    return out


def _last(idx):
    """The last of a DeviceArray of indices (8 bytes copied back)."""
    one = np.empty(1, _INDEX)
    idx._buffer.copy_to_host(one, (idx.size - 1) * _INDEX.itemsize, _INDEX.itemsize)
    return int(one[0])


for _fn in (nonzero, flatnonzero, argwhere):
    if _fn.__doc__:  # (None under python -OO)
        _fn.__doc__ = _fn.__doc__.format(params=_PARAMS, raises=_RAISES)
del _fn
