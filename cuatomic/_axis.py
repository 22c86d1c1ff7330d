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
import collections
import math
import operator
import os

import numpy as np

from . import _C, _backend
from ._common import (BytesLRU, auto_rung, direct_input, gpu_of, launch_config, named_rung, prepare, read_as_is,
                      shape_of, stream_of)
from ._dtypes import dtype_id
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu
from ._ufunc import _OP_IDS, _folds_unconverted, result_dtype

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1.26
    from numpy.core.numeric import normalize_axis_tuple

def _kind_dtype(dt):
    """How the outputs' 8 bytes (cua_reduce_kind) are read, as a NumPy
    dtype: float64 for floats; the element's signedness in 64 bits for
    integers -- a signed integer's wrapping sum or product (uint64 in the
    core) read as the int64 it is, which NumPy's int64 result is, and which
    a cast to a float `out` must see."""
    if dt.kind == "f":
        return np.dtype(np.float64)
    return np.dtype(np.int64 if dt.kind == "i" else np.uint64)


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
        empty-axis rules (the fold in NumPy's result type){note}; a
        DeviceArray for device input.
    out : ndarray or device array, optional
        Written in place (the result's shape; a C-contiguous device array
        for device input) in its own dtype, and returned: as NumPy's, the
        fold (with ``initial``) in the promotion of the result type and
        out's dtype -- a float32 sum into a float64 ``out`` in float64 --
        then cast into out.
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


def check_out(out, res_shape, device, mismatch):
    """out's refusals, before anything runs, and its dtype (None without
    out): its kind (a NumPy array for host input, a device array -- C-
    contiguous, as the results are written -- for device input) and its
    shape (the ValueError `mismatch`, NumPy's words for the call, with
    out's shape in place of ``{got}``)."""
    if out is None:
        return None
    if device:
        cai = getattr(out, "__cuda_array_interface__", None)
        if cai is None:
            raise TypeError(f"out must be a device array for device input (a DeviceArray, CuPy, PyTorch or Numba "
                            f"array; got {type(out).__name__})")
        shape, dt = tuple(int(v) for v in cai["shape"]), np.dtype(cai["typestr"])
        if cai.get("strides") not in (None, ()) and tuple(cai["strides"]) != tuple(
                math.prod(shape[d + 1:]) * dt.itemsize for d in range(len(shape))):
            raise ValueError("out must be C-contiguous")
    elif isinstance(out, np.ndarray):
        shape, dt = out.shape, out.dtype
    else:
        raise TypeError(f"out must be a NumPy array for host input (got {type(out).__name__})")
    if shape != res_shape:
        raise ValueError(mismatch.replace("{got}", str(shape)))
    return dt


def deliver(result, out, device, stream):
    """The host array `result` as the call's result: into `out` (cast to
    its dtype, as NumPy's), else a NumPy array or scalar -- or, for device
    input, a DeviceArray, and into a device `out` through a staged copy."""
    if out is None:
        if device:
            return DeviceArray.from_host(result)
        return result[()] if result.ndim == 0 else result
    if not device:
        np.copyto(out, result, casting="unsafe")
        return out
    cai = out.__cuda_array_interface__
    staged = DeviceArray.from_host(np.ascontiguousarray(result, np.dtype(cai["typestr"])))
    if staged.nbytes:
        _C.gather(staged.ptr, cai["data"][0], staged.size, staged.dtype.itemsize, (staged.size,),
                  (staged.dtype.itemsize,), stream)
    return out


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


def reduce_axis(name, a, axis, dtype=None, out=None, keepdims=False, initial=None, mean=False, *, method="auto",
                backend=None, blocks=None, threads=None, stream=None):
    """``np.<name>.reduce(a, axis, dtype, out, keepdims, initial)`` -- or with
    `mean`, ``np.mean(a, axis, dtype, out, keepdims)`` -- on the segmented
    ladder: through a repeated call's plan when one serves, else
    :func:`_reduce_axis`."""
    if (dtype is None and out is None and initial is None and backend is None and blocks is None and threads is None
            and stream is None and type(method) is str and type(keepdims) is bool
            and (axis is None or type(axis) is int or (type(axis) is tuple and all(type(v) is int for v in axis)))
            and (direct := direct_input(a)) is not None):
        x = direct[0]
        key = (name, mean, type(a), direct[2], shape_of(a), axis, keepdims, method,
               os.environ.get("CUATOMIC_BACKEND"), gpu_of(x))
        plan = _PLANS.get(key)
        if plan is not None:
            return _run(plan, x, -1, -1, None)
        return _reduce_axis(name, a, axis, dtype, out, keepdims, initial, mean, method, backend, blocks, threads,
                            stream, (key, x))
    return _reduce_axis(name, a, axis, dtype, out, keepdims, initial, mean, method, backend, blocks, threads, stream,
                        None)


# A repeated call with no options but axis, keepdims and method goes straight
# to the core with the plan its first call left, as sum's does
# (_reduce._PLANS): resolving the axes, the result type, the layout and
# auto's rung cost about 25 us of Python a call on the H100 machine's host,
# most of a small GPU call's time (16 x 16 along an axis: 49.5 us a call,
# PyTorch's 17). Plans are made for arrays the core reads as they are
# (_common.direct_input) whose reduced axes are adjacent (no transposition),
# without out or initial, whose result the core finishes on the device or
# whose host values are finished here (not an integer mean of device data,
# which goes through the host). The shape is part of the key, so the cache
# keeps only the last _PLAN_COUNT.
_PLAN_COUNT = 1024
_PLANS = BytesLRU(_PLAN_COUNT)  # (each plan counted as one "byte")

# What the core is told, and how its outputs become the result: every
# resolved argument but the data and the launch options.
_Plan = collections.namedtuple(
    "_Plan", "backend rung outer m inner dtype_id op device kind kind_id divisor out_dt out_id res_shape size fold mean")


def _segmented(plan, x, blocks, threads, stream, device_out, *finish):
    """_C.segmented of the data at x as `plan` says; `finish` (finish_dtype,
    finish_kind, divisor[, dst]) has the core finish a device result."""
    # (positional, in _C.segmented's order -- backend, rung, x, outer, m,
    # inner, dtype, op, blocks, threads, device_out, stream, then finish's:
    # keywords cost about a microsecond)
    return _C.segmented(plan.backend, plan.rung, x, plan.outer, plan.m, plan.inner, plan.dtype_id, plan.op, blocks,
                        threads, device_out, stream, *finish)


def _run(plan, x, blocks, threads, stream):
    """The reduction of the data at x as `plan` says: a DeviceArray the core
    allocated and finished (device data), else NumPy's array or scalar."""
    if plan.device:
        buffer = _segmented(plan, x, blocks, threads, stream, True, plan.out_id, plan.kind_id, plan.divisor)
        return DeviceArray._shaped(buffer, plan.res_shape, plan.size, plan.out_dt)
    raw = _segmented(plan, x, blocks, threads, stream, False)
    result = _finish(raw.view(plan.kind), plan.fold, None, plan.mean, plan.m, plan.out_dt).reshape(plan.res_shape)
    return result[()] if result.ndim == 0 else result


@on_inputs_gpu
def _reduce_axis(name, a, axis, dtype, out, keepdims, initial, mean, method, backend, blocks, threads, stream,
                 plan_for):
    """reduce_axis without a plan: everything resolved, on the input's GPU;
    plan_for (a plan's key, and what the core reads) when the call can
    leave a plan for the next one. The fold runs in NumPy's result type of
    the input (and `dtype`) -- with `out`, in the promotion of that type and
    out's, cast into out (as NumPy's); `initial` is folded in after the
    cast, in that type."""
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
    # the fold's type is dtype when given -- or, as np.mean gives it, float64 for an integer mean -- else NumPy's
    # result type promoted with out's dtype
    fixed_dt = dtype is not None or (mean and inp.dtype.kind in "biu")
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
    out_dt_given = check_out(out, res_shape, inp.device, f"output parameter for reduction operation {name} has the "
                             f"wrong number of dimensions or shape: expected {res_shape}, got {{got}}")
    x = inp.x
    if perm is not None:
        permuted = _permuted(inp, shape, perm, s)  # (held until the kernels have read it)
        x = permuted.ptr if isinstance(permuted, DeviceArray) else permuted
    if rung is None:
        rung = auto_rung("segmented", be, inp.n, inp.dtype,
                         require=_C.F_DETERMINISTIC if inp.dtype.kind == "f" and fold_name in ("add", "multiply")
                         else 0)
    kind = _kind_dtype(inp.dtype)
    # out= of another dtype where either is a float: NumPy folds in the promotion of its result type and out's (a
    # float32 sum into a float64 out in float64, into an int8 out in float32, an integer sum into a float out in
    # float64), then casts into out; integers into an integer out keep the result type (the low bits are the same)
    fold_dt = out_dt if out is None or fixed_dt or "f" not in (out_dt.kind, out_dt_given.kind) else \
        np.result_type(out_dt, out_dt_given)
    # the core's finish casts the 8-byte value straight into out's dtype: NumPy's unless the fold's type is narrower
    # than the value and out's dtype differs from it (float32 through an integer out): that is finished on the host
    finished_on_device = inp.device and init is None and not (mean and out_dt.kind != "f") and (
        out is None or fold_dt.itemsize == 8 or fold_dt == out_dt_given)
    plan = _Plan(_backend.backend_id(be), rung.index, outer, m, inner, inp.id, _OP_IDS[fold_name], inp.device, kind,
                 dtype_id(kind), float(m) if mean else -1.0, out_dt,
                 dtype_id(out_dt) if finished_on_device else -1, res_shape, math.prod(res_shape),
                 fold_name, mean)
    if out is None and init is None and (finished_on_device or not inp.device):
        result = _run(plan, x, nb, nt, s)
        if plan_for and perm is None and read_as_is(inp, plan_for[1], a):
            _PLANS.put(plan_for[0], plan, 1)
        return result
    if finished_on_device:  # into out
        if plan.size:
            _segmented(plan, x, nb, nt, s, True, dtype_id(out_dt_given), plan.kind_id, plan.divisor,
                       out.__cuda_array_interface__["data"][0])
        return out
    raw = _segmented(plan, x, nb, nt, s, inp.device)
    if inp.device:  # initial, an integer mean, or a float32 fold into an integer out: finished on the host, then back
        host_raw = np.empty(outer * inner, np.uint64)
        if host_raw.size:
            raw.copy_to_host(host_raw, 0, host_raw.nbytes)
        raw = host_raw
    return deliver(_finish(raw.view(kind), fold_name, init, mean, m, fold_dt).reshape(res_shape), out, inp.device, s)


def _finish(vals, name, init, mean, m, out_dt):
    """The outputs' kind values as NumPy's result on the host: cast to
    out_dt -- the result type, or its promotion with out's dtype -- (an
    integer mean's sum wraps in its type first, as NumPy sums in it),
    divided by the count for a mean, `initial` folded in."""
    with np.errstate(all="ignore"):
        if mean:
            total = vals.astype(out_dt).astype(np.float64) if out_dt.kind != "f" else vals.astype(np.float64)
            return (total / m).astype(out_dt)
        result = vals.astype(out_dt)
        if init is not None:
            result = getattr(np, name)(result, init).astype(out_dt)
        return result


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
