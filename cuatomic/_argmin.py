"""argmin and argmax: the index of the first smallest (largest) element of
the flattened array, as ``np.argmin(a)``/``np.argmax(a)``, on the argmin
ladder (one ladder for both: argmax inverts the keys the rungs compare)."""
import math
import operator

import numpy as np

from . import _C, _auto, _backend
from ._axis import check_out, deliver
from ._common import auto_rung, launch_config, named_rung, prepare, shape_of, stream_of
from ._device import DeviceArray, refuse_masked
from ._dtypes import dtype_id
from ._interop import on_inputs_gpu
from ._ufunc import _OP_IDS

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_index
except ImportError:  # NumPy 1.26
    from numpy.core.multiarray import normalize_axis_index

_DOC = """The index of the first {what} element, as ``np.{name}(a, axis, out, keepdims=...)``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
        Any shape, layout or byte order; bool (any nonzero byte is True),
        integers, float32, float64.
    axis : int, optional
        None (NumPy's default): the index into the flattened array, in C
        order. An integer (negative counts from the last): the index along
        that axis for each of the other axes' positions, an array of them.
    out : ndarray or device array, optional
        Written in place (the result's shape, an integer dtype; a
        C-contiguous device array for device input), and returned.
    keepdims : bool, optional
        Keep the reduced axis (every axis, without ``axis``) with length one.
    method : str, optional
        Without ``axis``: a rung of the argmin ladder (see
        ``methods("argmin")``; argmax runs the same rungs on inverted keys).
        ``"auto"`` runs the top rung that can take the input (``vector``;
        argmin has no measured rule yet: ``bench argmin`` finds it fastest
        on every case it times); :func:`explain` says which and why. With
        ``axis``: a rung of ``methods("segmented")``, whose minimum folds the
        keys (see Notes). Every rung gives the same index.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.intp, numpy.ndarray or DeviceArray
        The first index of the {what} value (an intp array along an axis; a
        DeviceArray for device input with ``axis``, ``out`` or
        ``keepdims``); a NaN counts as {than} than every number, so the first
        NaN's index where there is one (NumPy's rule). -0.0 and +0.0 are
        equal (the first of them wins).

    Raises
    ------
    ValueError
        An empty array or axis ("attempt to get {name} of an empty sequence",
        as NumPy); an ``out`` of another shape; an unknown method or backend,
        a launch configuration the
        method cannot take, or a method that cannot take this input
        (``packed`` needs elements of at most 4 bytes and at most 2^32 of
        them for 4-byte elements).
    TypeError
        An unsupported dtype (float16, complex, object), a masked array; an
        axis that is not one integer (a tuple, a bool, a float), an ``out``
        of a non-integer dtype.
    numpy.exceptions.AxisError
        An axis out of range.
    CudaError
        A CUDA failure, with the CUDA error's name.

    Notes
    -----
    Every rung orders the pair (key, index): the key is an unsigned integer
    in the values' order (integers with the sign bit flipped, float bits
    made monotonic, every NaN first, argmax's keys inverted), so ties and
    NaN are settled by integer comparison. ``packed`` puts both in one
    64-bit word and takes one ``atomicMin`` per element. Along an axis the
    same packing, key above the index along the axis, makes each element an
    8-byte word whose minimum over its segment (the segmented ladder's, so
    ``method="atomic"`` is one 64-bit atomicMin per element into its
    output's cell) holds the answer in its low bits; 8-byte elements leave
    no room for the index and take two passes: each output's least key,
    then the first index holding it. The words take 8 bytes per element of
    scratch memory.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> x = np.array([3.0, -1.0, 7.0, -1.0])
    >>> int(cuatomic.{name}(x, backend="cpu"))
    {example}
    >>> int(cuatomic.{name}(np.array([1.0, np.nan, 2.0, np.nan]), backend="cpu"))
    1
    >>> cuatomic.{name}(np.array([[3, 1, 1], [0, 5, 5]]), axis=1, backend="cpu")
    array([{axis_example}])
    """


@on_inputs_gpu
def argmin(a, axis=None, out=None, *, keepdims=False, method="auto", backend=None, blocks=None, threads=None,
           stream=None):
    return _run(a, axis, False, method, backend, blocks, threads, stream, out, keepdims)


@on_inputs_gpu
def argmax(a, axis=None, out=None, *, keepdims=False, method="auto", backend=None, blocks=None, threads=None,
           stream=None):
    return _run(a, axis, True, method, backend, blocks, threads, stream, out, keepdims)


argmin.__doc__ = _DOC.format(what="smallest", than="smaller", name="argmin", example=1, axis_example="1, 0")
argmax.__doc__ = _DOC.format(what="largest", than="larger", name="argmax", example=2, axis_example="0, 1")


def _run(a, axis, largest, method, backend, blocks, threads, stream, out=None, keepdims=False):
    if axis is not None:
        return _along_axis(a, axis, largest, out, keepdims, method, backend, blocks, threads, stream)
    if out is not None or keepdims:  # the flat index, in NumPy's shape and into out
        index = _run(a, None, largest, method, backend, blocks, threads, stream)
        result = np.full((1,) * len(shape_of(a)) if keepdims else (), index, np.intp)
        device = isinstance(a, DeviceArray) or hasattr(a, "__cuda_array_interface__")
        _check_index_out(out, result.shape, device, "argmax" if largest else "argmin")
        return deliver(result, out, device, stream_of(stream))
    be = _backend.resolve(backend)
    rung = named_rung("argmin", be, method)
    b, t = launch_config(blocks, threads)
    s = stream_of(stream)
    inp = _prepared(a, largest, be, s)
    if rung is None:
        rung = auto_rung("argmin", be, inp.n, inp.dtype, fits=_fits(be, inp))
    index = _C.argmin(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                      max=largest, blocks=b, threads=t, stream=s)
    return np.intp(index)


def _along_axis(a, axis, largest, out, keepdims, method, backend, blocks, threads, stream):
    """The index of the first least (largest) element along `axis`, as
    ``np.argmin(a, axis, out, keepdims=...)``: the segmented ladder's
    minimum over argmin's keys made 8-byte words (``_C.argkeys``) -- key <<
    32 | index for elements of at most 4 bytes, the packed-atomic lesson
    per segment; for 8-byte elements two passes (each output's least key,
    then the first index holding it)."""
    name = "argmax" if largest else "argmin"
    refuse_masked(a)
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError("an integer is required")
    axis = operator.index(axis)  # (a tuple: "'tuple' object cannot be interpreted as an integer", as NumPy)
    be = _backend.resolve(backend)
    rung = named_rung("segmented", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    shape = shape_of(a)
    axis = normalize_axis_index(axis, max(len(shape), 1))
    inp = prepare(a, be, stream=s)
    zero_d = not shape
    shape = shape or (1,)
    res_shape = tuple(1 if d == axis else n for d, n in enumerate(shape)) if keepdims and not zero_d else \
        shape[:axis] + shape[axis + 1:]
    outer, m, inner = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    if m == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    _check_index_out(out, res_shape, inp.device, name)
    if outer * inner == 0:
        return deliver(np.empty(res_shape, np.intp), out, inp.device, s)
    if rung is None:
        rung = auto_rung("segmented", be, inp.n, np.uint64)
    bid = _backend.backend_id(be)
    gpu = be == "cuda"  # the keys are made where the backend runs: a host array goes to the GPU first
    staged = DeviceArray.from_host(inp.x) if gpu and not inp.device else None
    words = DeviceArray.empty((inp.n,), np.uint64) if gpu else np.empty(inp.n, np.uint64)
    ptr = words.ptr if gpu else words  # (argkeys takes addresses; segmented takes a host array itself)
    xp = staged.ptr if staged is not None else inp.x if gpu else inp.x.ctypes.data
    wp = ptr if gpu else words.ctypes.data
    call = dict(backend=bid, rung=rung.index, x=ptr, outer=outer, m=m, inner=inner, dtype=_U64,
                op=_OP_IDS["minimum"], blocks=nb, threads=nt, device_out=gpu, stream=s)
    if inp.dtype.itemsize <= 4 and m <= 1 << 31:
        _C.argkeys(bid, xp, outer, m, inner, inp.id, largest, _C.ARGKEYS_PACKED, None, wp, s)
        raw = _C.segmented(**call)  # each output's least word: its key above its first index
        if gpu:
            best = np.empty(outer * inner, np.uint64)
            raw.copy_to_host(best, 0, best.nbytes)  # (the outputs only: their low words are the indices)
        else:
            best = raw
        return deliver((best & 0xFFFFFFFF).astype(np.intp).reshape(res_shape), out, inp.device, s)
    _C.argkeys(bid, xp, outer, m, inner, inp.id, largest, _C.ARGKEYS_KEY, None, wp, s)
    least = _C.segmented(**call)  # each output's least key
    _C.argkeys(bid, xp, outer, m, inner, inp.id, largest, _C.ARGKEYS_MATCH,
               least.ptr if gpu else least.ctypes.data, wp, s)
    if not gpu:
        return deliver(_C.segmented(**call).astype(np.intp).reshape(res_shape), out, False, s)
    result = DeviceArray.empty(res_shape, np.intp)
    _C.segmented(**call, finish_dtype=dtype_id(np.intp), finish_kind=_U64, divisor=-1.0, dst=result.ptr)
    if not inp.device:
        return deliver(result.copy_to_host(), out, False, s)
    return result if out is None else deliver(result.copy_to_host(), out, True, s)


_U64 = dtype_id(np.uint64)


def _check_index_out(out, res_shape, device, name):
    """out's refusals for an index result (:func:`_axis.check_out`, NumPy's
    words for argmin's), and an integer dtype."""
    dt = check_out(out, res_shape, device, f"output array does not match result of np.{name}.")
    if dt is not None and dt.kind not in "iu":
        raise TypeError(f"Cannot cast array data from dtype('int64') to {dt!r} according to the rule 'safe'")


def _prepared(a, largest, backend, stream):
    inp = prepare(a, backend, stream=stream)
    if inp.n == 0:
        raise ValueError(f"attempt to get {'argmax' if largest else 'argmin'} of an empty sequence")
    return inp


def _fits(backend, inp):
    """Why each rung cannot take this input (None: it can), for auto to pass it by."""
    be = _backend.backend_id(backend)
    return lambda rung: _C.argmin_fits(backend=be, rung=rung.index, n=inp.n, dtype=inp.id)


@on_inputs_gpu
def explain(backend, a, largest=False, stream=0):
    """The :class:`Choice` ``method="auto"`` makes for ``argmin(a)`` (or
    argmax) on `backend` (:func:`cuatomic.explain` of "argmin"/"argmax")."""
    facts, fits = {}, None
    if a is not None:
        inp = _prepared(a, largest, backend, stream)
        facts, fits = {"n": inp.n, "dtype": str(inp.dtype)}, _fits(backend, inp)
    return _auto.choose("argmin", backend, facts, fits=fits)
