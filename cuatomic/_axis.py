"""Reductions along axes: ``axis=``, ``keepdims``, ``out``, ``initial`` for
sum, prod, min, max and reduce, and ``mean``, on the segmented ladder. The
array is seen as (outer, m, inner) in C order -- the reduced axes made one
run of axes in the middle, by a transposed copy when they are not one
already -- and each of the outer * inner outputs folds its m elements; the
result is NumPy's: its dtype, shape, empty-axis rules and errors.

Device results are finished on the device (the mean's division, the cast
to NumPy's result type) by the vector rung's own last store, or by one more
kernel queued behind another rung's, in the same C call and waited for
once."""
import math
import operator

import numpy as np

from . import _C, _backend
from ._common import auto_rung, launch_config, named_rung, prepare, shape_of, stream_of
from ._dtypes import dtype_id
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu
from ._ufunc import _OP_IDS, _folds_unconverted, result_dtype

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1.26
    from numpy.core.numeric import normalize_axis_tuple

def _kind_dtype(name, dt):
    """cua_reduce_kind as a NumPy dtype: float64 for floats, uint64 for
    integer add and multiply (wrapping), the element's signedness in 64 bits
    for the rest."""
    if dt.kind == "f":
        return np.dtype(np.float64)
    if name in ("add", "multiply") or dt.kind in "bu":
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def _layout(shape, axes):
    """(outer, m, inner, permutation or None): the reduced axes as one run
    of axes in the middle of C order -- as they are when they are adjacent,
    else after a transposition that puts the kept axes first."""
    nd = len(shape)
    if not axes:
        return math.prod(shape), 1, 1, None
    lo, hi = min(axes), max(axes)
    if hi - lo + 1 == len(axes):
        return math.prod(shape[:lo]), math.prod(shape[lo:hi + 1]), math.prod(shape[hi + 1:]), None
    kept = [d for d in range(nd) if d not in axes]
    perm = kept + sorted(axes)
    return math.prod(shape[d] for d in kept), math.prod(shape[d] for d in axes), 1, perm


def _permuted(inp, shape, perm, s):
    """The input's elements in the order of the axes `perm` (a C-contiguous
    copy), on its side."""
    dt = inp.dtype
    if not inp.device:
        return np.ascontiguousarray(np.transpose(inp.x.reshape(shape), perm)).reshape(-1)
    strides = [0] * len(shape)
    step = dt.itemsize
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    out = DeviceArray.empty((inp.n,), dt)
    if inp.n:
        _C.gather(inp.x, out.ptr, inp.n, dt.itemsize, tuple(shape[d] for d in perm), tuple(strides[d] for d in perm), s)
    return out


AXIS_PARAMETERS = "    <axis, out, keepdims, initial>\n"


def axis_documented(flat, note=""):
    """A decorator: the function's docstring gets the entries of ``axis``,
    ``out``, ``keepdims`` and ``initial`` where it holds AXIS_PARAMETERS --
    one text for sum, prod, reduce, min and max, whose flat ladder is
    `flat`; `note` adds what the segmented rungs promise of this op."""
    text = f"""    axis : None, int or tuple of ints, optional
        Reduce along these axes (negative counts from the last), as NumPy's
        ``axis``; None: every element (the flat ladder, ``methods("{flat}")``).
        With an axis -- or ``out``, ``keepdims`` or ``initial`` -- the call
        runs a rung of the segmented ladder (``methods("segmented")``:
        ``atomic``, ``warp``, ``columns``, ``tiled``, ``vector``; ``method``
        names one of those) and returns an array: NumPy's dtype, shape and
        empty-axis rules (the fold in NumPy's result type, then cast into
        ``out``){note}; a DeviceArray for device input.
    out : ndarray or device array, optional
        Written in place (the result's shape; a C-contiguous device array
        for device input) in its own dtype, and returned.
    keepdims : bool, optional
        Keep the reduced axes, of length one.
    initial : scalar, optional
        Folded in with the elements, as NumPy's ``initial`` (what lets
        ``min``/``max`` take an empty axis).
"""

    def document(fn):
        if fn.__doc__:  # (None under python -OO)
            fn.__doc__ = fn.__doc__.replace(AXIS_PARAMETERS, text)
        return fn
    return document


def _axis_ints(axis):
    """`axis` as NumPy takes it -- None, an integer or a tuple of integers
    -- with NumPy's TypeErrors for the rest (a bool, a list, a float),
    which NumPy's normalize_axis_tuple alone would take as ints or
    iterate."""
    if axis is None:
        return None
    for v in axis if isinstance(axis, tuple) else (axis,):
        if isinstance(v, (bool, np.bool_)):
            raise TypeError("an integer is required")
        operator.index(v)  # "'list' object cannot be interpreted as an integer", ...
    return axis


def wants_axis(axis, out, keepdims, initial):
    """Whether a call of sum, prod, min, max or reduce is a reduction along
    axes (the segmented ladder) rather than the flat one."""
    return axis is not None or out is not None or bool(keepdims) or initial is not None


def _check_out(out, res_shape, device, name):
    """out's refusals, before anything runs: its kind (a NumPy array for
    host input, a device array for device input) and its shape."""
    if out is None:
        return
    if device:
        if getattr(out, "__cuda_array_interface__", None) is None:
            raise TypeError(f"out must be a device array for device input (a DeviceArray, CuPy, PyTorch or Numba "
                            f"array; got {type(out).__name__})")
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy array for host input (got {type(out).__name__})")
    if tuple(int(v) for v in out.shape) != res_shape:
        raise ValueError(f"output parameter for reduction operation {name} has the wrong number of dimensions or "
                         f"shape: expected {res_shape}, got {tuple(out.shape)}")


def _initial(initial, out_dt):
    """`initial` as a 0-d array of the result type, with NumPy's errors (an
    integer out of the type's range, NaN for an integer, a complex or a
    sequence)."""
    if initial is None:
        return None
    if np.ndim(initial) != 0:
        raise ValueError(f"initial must be a scalar (got shape {np.shape(initial)})")
    if isinstance(initial, (complex, np.complexfloating)) and out_dt.kind != "c":
        raise TypeError(f"initial {initial!r} cannot be cast to {out_dt}")
    with np.errstate(invalid="raise"):
        try:
            return np.array(initial, dtype=out_dt)
        except FloatingPointError as e:
            raise ValueError(f"initial {initial!r} cannot be cast to {out_dt}: {e}") from None


@on_inputs_gpu
def reduce_axis(name, a, axis, dtype=None, out=None, keepdims=False, initial=None, mean=False, *, method="auto",
                backend=None, blocks=None, threads=None, stream=None):
    """``np.<name>.reduce(a, axis, dtype, out, keepdims, initial)`` -- or with
    `mean`, ``np.mean(a, axis, dtype, out, keepdims)`` -- on the segmented
    ladder. The fold runs in NumPy's result type of the input (and
    `dtype`); `out` receives it cast (as NumPy's); `initial` is folded in
    after the cast, in the result type."""
    refuse_masked(a)
    be = _backend.resolve(backend)
    rung = named_rung("segmented", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    axis = _axis_ints(axis)
    shape = shape_of(a)
    zero_d = len(shape) == 0
    if zero_d and not mean and axis in (0, -1, (0,), (-1,)):
        axis = None  # NumPy's legacy: a 0-d array reduces along "axis 0" to itself
    axes = normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape))
    inp = prepare(a, be, stream=s)
    fold_name = "add" if mean else name
    if mean:
        if dtype is None:
            dtype = np.float64 if inp.dtype.kind in "biu" else inp.dtype
        out_dt = np.dtype(dtype)
        if out_dt.kind not in "biuf":
            raise TypeError(f"mean(dtype={dtype!r}): cuatomic averages into bool, integers and floats")
        if out_dt.kind != "f" and inp.dtype != out_dt:  # NumPy converts every element to an integer dtype first
            inp = inp.cast(out_dt, f"mean(dtype={out_dt})")
    else:
        out_dt = result_dtype(name, inp.dtype, dtype)
        if not _folds_unconverted(fold_name, inp.dtype, out_dt):
            inp = inp.cast(out_dt, f"{name}.reduce(dtype={out_dt})")
    if mean and inp.dtype.kind in "iu" and inp.dtype.itemsize == 8 and out_dt.kind == "f" and not inp.device:
        inp = inp.cast(np.float64, "mean")  # NumPy sums 64-bit integers as float64: never wraps
    # (a device array of 64-bit integers is summed exactly modulo 2^64: a mean whose sum passes 2^63 differs from
    # NumPy's float64 one)
    init = _initial(initial, out_dt) if not mean else None
    outer, m, inner, perm = _layout(shape, axes)
    res_shape = () if zero_d else tuple(1 if d in axes else n for d, n in enumerate(shape)) if keepdims else \
        tuple(n for d, n in enumerate(shape) if d not in axes)
    if m == 0 and not mean and name in ("minimum", "maximum") and init is None:
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    _check_out(out, res_shape, inp.device, name)
    x = inp.x
    if perm is not None:
        permuted = _permuted(inp, shape, perm, s)  # (held until the kernels have read it)
        x = permuted.ptr if isinstance(permuted, DeviceArray) else permuted
    if rung is None:
        rung = auto_rung("segmented", be, inp.n, inp.dtype,
                         require=_C.F_DETERMINISTIC if inp.dtype.kind == "f" and fold_name in ("add", "multiply")
                         else 0)
    call = dict(backend=_backend.backend_id(be), rung=rung.index, x=x, outer=outer, m=m, inner=inner, dtype=inp.id,
                op=_OP_IDS[fold_name], blocks=nb, threads=nt, device_out=inp.device, stream=s)
    kind = _kind_dtype(fold_name, inp.dtype)
    if mean and inp.dtype.kind == "i":  # the wrapping sum's bits, read as the signed sum they are
        kind = np.dtype(np.int64)
    if inp.device and init is None and not (mean and out_dt.kind != "f"):
        return _finish_on_device(call, outer * inner, kind, m if mean else -1, out_dt, res_shape, out)
    raw = _C.segmented(**call)
    if inp.device:  # initial, or an integer mean: finished on the host (the outputs only), then back
        host_raw = np.empty(outer * inner, np.uint64)
        if host_raw.size:
            raw.copy_to_host(host_raw, 0, host_raw.nbytes)
        result = _finish(host_raw.view(kind), fold_name, init, mean, m, out_dt).reshape(res_shape)
        if out is None:
            return DeviceArray.from_host(result)
        host_out = DeviceArray.from_host(np.ascontiguousarray(result, np.dtype(out.__cuda_array_interface__["typestr"])))
        ptr = out.__cuda_array_interface__["data"][0]
        if host_out.nbytes:
            _C.gather(host_out.ptr, ptr, host_out.size, host_out.dtype.itemsize, (host_out.size,),
                      (host_out.dtype.itemsize,), s)
        return out
    result = _finish(raw.view(kind), fold_name, init, mean, m, out_dt).reshape(res_shape)
    if out is not None:
        np.copyto(out, result, casting="unsafe")
        return out
    return result[()] if result.ndim == 0 else result


def _finish(vals, name, init, mean, m, out_dt):
    """The outputs' kind values as NumPy's result on the host: cast to the
    result type (an integer mean's sum wraps in its type first, as NumPy
    sums in it), divided by the count for a mean, `initial` folded in."""
    with np.errstate(all="ignore"):
        if mean:
            total = vals.astype(out_dt).astype(np.float64) if out_dt.kind != "f" else vals.astype(np.float64)
            return (total / m).astype(out_dt)
        result = vals.astype(out_dt)
        if init is not None:
            result = getattr(np, name)(result, init).astype(out_dt)
        return result


def _finish_on_device(call, n, kind, divisor, out_dt, res_shape, out):
    """Run the segmented `call` with its outputs' kind values finished on
    the device as NumPy's result: into a new DeviceArray of out_dt, or
    into `out` (a C-contiguous device array of the result's shape) in out's
    dtype. A mean divides by `divisor` (-1: no division; 0: an empty axis,
    NaN). One C call: the rung and the finish kernel, one wait."""
    if out is None:
        target = DeviceArray.empty(res_shape, out_dt)
        ptr, dt = target.ptr, out_dt
    else:
        cai = out.__cuda_array_interface__
        dt = np.dtype(cai["typestr"])
        if cai.get("strides") not in (None, ()) and tuple(cai["strides"]) != tuple(
                int(np.prod(res_shape[d + 1:], dtype=np.int64)) * dt.itemsize for d in range(len(res_shape))):
            raise ValueError("out must be C-contiguous")
        target, ptr = out, cai["data"][0]
    if n:
        _C.segmented(**call, finish_dtype=dtype_id(dt), finish_kind=dtype_id(kind), divisor=float(divisor), dst=ptr)
    return target


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, method="auto", backend=None, blocks=None, threads=None,
         stream=None):
    """The arithmetic mean, as ``np.mean(a, axis, dtype, out, keepdims)``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
    axis : None, int or tuple of ints, optional
        The axes to average over (negative counts from the last); None: all.
    dtype : data-type, optional
        The result's type: float64 for integers and bool, else the input's
        float type (NumPy's defaults).
    out : ndarray or device array, optional
        Written in place (the result's shape; a device array for device
        input, C-contiguous), and returned.
    keepdims : bool, optional
        Keep the averaged axes, of length one.
    method : str, optional
        A rung of ``methods("segmented")`` (the sum's), or ``"auto"``.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy scalar, numpy.ndarray or DeviceArray
        The sums along the axes -- integers exactly in 64 bits (a 64-bit
        integer host array as float64, as NumPy sums it), floats in
        compensated float64 -- divided by the count, then cast once to the
        result type: at least as accurate as NumPy's. An empty axis gives
        NaN, as NumPy's (without its warning).

    Raises
    ------
    TypeError, ValueError, numpy.exceptions.AxisError
        As :func:`sum` with ``axis``.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.mean(np.array([[1, 2], [3, 5]]), axis=0, backend="cpu")
    array([2. , 3.5])
    """
    return reduce_axis("add", a, axis, dtype, out, keepdims, None, mean=True, method=method, backend=backend,
                       blocks=blocks, threads=threads, stream=stream)
