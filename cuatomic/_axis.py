"""Reductions along axes: ``axis=``, ``keepdims``, ``out``, ``initial`` for
sum, prod, min, max and reduce, and ``mean``, on the segmented ladder. The
array is seen as (outer, m, inner) in C order -- the reduced axes made one
run of axes in the middle, by a transposed copy when they are not one
already -- and each of the outer * inner outputs folds its m elements; the
result is NumPy's: its dtype, shape, empty-axis rules and errors.

Device results are finished on the device (initial folded in, the mean's
division, the cast to NumPy's result type) by one more kernel."""
import math

import numpy as np

from . import _C, _backend
from ._common import auto_rung, launch_config, named_rung, prepare, stream_of
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu
from ._ufunc import _OP_IDS, _folds_unconverted, result_dtype

try:  # NumPy 2
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy 1.26
    from numpy.core.numeric import normalize_axis_tuple

_KIND = {"f": np.float64}


def _shape_of(a):
    shape = getattr(a, "shape", None)
    return tuple(int(s) for s in (np.shape(a) if shape is None else shape))


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


@on_inputs_gpu
def reduce_axis(name, a, axis, dtype=None, out=None, keepdims=False, initial=None, mean=False, *, method="auto",
                backend=None, blocks=None, threads=None, stream=None):
    """``np.<name>.reduce(a, axis, dtype, out, keepdims, initial)`` -- or with
    `mean`, ``np.mean(a, axis, dtype, out, keepdims)`` -- on the segmented
    ladder."""
    refuse_masked(a)
    be = _backend.resolve(backend)
    rung = named_rung("segmented", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    shape = _shape_of(a)
    axes = normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape))
    inp = prepare(a, be, stream=s)
    if out is not None and dtype is None:
        dtype = out.dtype  # the reduction runs in out's type, as NumPy's with out=
    if mean:
        fold_name = "add"
        if dtype is None:
            dtype = np.float64 if inp.dtype.kind in "biu" else inp.dtype
        out_dt = np.dtype(dtype)
    else:
        fold_name = name
        out_dt = result_dtype(name, inp.dtype, dtype)
    if not mean and not _folds_unconverted(fold_name, inp.dtype, out_dt):
        inp = inp.cast(out_dt, f"{name}.reduce(dtype={out_dt})")
    if mean and inp.dtype.kind in "iu" and inp.dtype.itemsize == 8 and not inp.device:
        inp = inp.cast(np.float64, "mean")  # NumPy sums 64-bit integers as float64: never wraps
    # (TODO: a device array of 64-bit integers is summed exactly modulo 2^64 -- a mean whose sum passes 2^63
    # differs from NumPy's float64 one)
    outer, m, inner, perm = _layout(shape, axes)
    res_shape = tuple(1 if d in axes else n for d, n in enumerate(shape)) if keepdims else \
        tuple(n for d, n in enumerate(shape) if d not in axes)
    if m == 0 and outer * inner > 0 and not mean and name in ("minimum", "maximum") and initial is None:
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    x = inp.x
    if perm is not None:
        permuted = _permuted(inp, shape, perm, s)  # (held until the kernels have read it)
        x = permuted.ptr if isinstance(permuted, DeviceArray) else permuted
    if rung is None:
        rung = auto_rung("segmented", be, inp.n, inp.dtype,
                         require=_C.F_DETERMINISTIC if inp.dtype.kind == "f" and fold_name in ("add", "multiply")
                         else 0)
    raw = _C.segmented(backend=_backend.backend_id(be), rung=rung.index, x=x, outer=outer, m=m, inner=inner,
                       dtype=inp.id, op=_OP_IDS[fold_name], blocks=nb, threads=nt, device_out=inp.device, stream=s)
    kind = _kind_dtype(fold_name, inp.dtype)
    if mean and inp.dtype.kind == "i":  # the wrapping sum's bits, read as the signed sum they are
        kind = np.dtype(np.int64)
    if out is not None and tuple(out.shape) != res_shape:
        raise ValueError(f"output parameter for reduction operation {name} has the wrong number of dimensions or "
                         f"shape: expected {res_shape}, got {tuple(out.shape)}")
    if inp.device:
        return _finish_on_device(raw, outer * inner, kind, fold_name, initial, m if mean else 0, out_dt, res_shape,
                                 out, s)
    vals = raw.view(kind)
    if initial is not None and not mean:
        vals = getattr(np, fold_name)(vals, np.array(initial).astype(vals.dtype))
    with np.errstate(all="ignore"):
        if mean:
            result = (vals.astype(np.float64) / m).astype(out_dt)
        else:
            result = vals.astype(out_dt)
    result = result.reshape(res_shape)
    if out is not None:
        if isinstance(out, np.ndarray):
            np.copyto(out, result, casting="unsafe")
            return out
        raise TypeError("out must be a NumPy array for host input (a device array for device input)")
    return result[()] if result.ndim == 0 else result


def _finish_on_device(raw, n, kind, name, initial, divisor, out_dt, res_shape, out, s):
    """The kind values in the DeviceBuffer `raw` as NumPy's result: a new
    DeviceArray of out_dt, or written into `out` (a C-contiguous device
    array of the result's shape, in its own dtype)."""
    from ._common import dtype_id
    init = None if initial is None else np.array(initial).astype(kind).tobytes()
    if out is None:
        target = DeviceArray.empty(res_shape, out_dt)
        ptr, dt = target.ptr, out_dt
    else:
        cai = getattr(out, "__cuda_array_interface__", None)
        if cai is None:
            raise TypeError("out must be a device array for device input (a DeviceArray, CuPy, PyTorch or Numba)")
        dt = np.dtype(cai["typestr"])
        if cai.get("strides") not in (None, ()) and cai["strides"] != tuple(
                int(np.prod(res_shape[d + 1:], dtype=np.int64)) * dt.itemsize for d in range(len(res_shape))):
            raise ValueError("out must be C-contiguous")
        target, ptr = out, cai["data"][0]
    if n:
        _C.segmented_finish(raw.ptr, n, dtype_id(kind), _OP_IDS[name], init, float(divisor), dtype_id(dt), ptr, s)
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
