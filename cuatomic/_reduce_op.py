"""reduce, min and max: an array folded with one of NumPy's ufuncs, as
``np.<op>.reduce(a.ravel())``: NumPy's result type, the input converted
where NumPy converts it first, then one call into the core."""
from . import _C, _auto, _backend
from ._axis import axis_documented, reduce_axis, wants_axis
from ._common import auto_rung, launch_config, named_rung, prepare, stream_of
from ._interop import on_inputs_gpu

# OPS and result_dtype stay importable from here (cuatomic.dask, the tests)
from ._ufunc import _NO_IDENTITY, _OP_IDS, _ROUNDING, OPS, _folds_unconverted, _op_name, result_dtype  # noqa: F401


@axis_documented("reduce")
@on_inputs_gpu
def reduce(a, op, axis=None, *, dtype=None, out=None, keepdims=False, initial=None, method="auto", backend=None,
           blocks=None, threads=None, stream=None):
    """Elements folded with a ufunc, as ``getattr(np, op).reduce(a, axis, dtype, out, keepdims, initial)``
    (``axis=None``: every element, ``.reduce(np.asarray(a).ravel())``).

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
        Any shape (every element takes part), layout or byte order; as for
        :func:`sum`.
    op : {"add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"} or numpy.ufunc
        The ufunc, by name or as NumPy's object (``np.maximum``).
    dtype : data-type, optional
        As the ``dtype`` of NumPy's ``reduce``: the type of the result and
        of the fold. Where NumPy converts every element first and the fold
        of the original values could differ (``add`` of float64 as
        float32, ``minimum`` of int8 as uint8, any op to bool), a host
        array is converted the same way and a device array raises
        TypeError (convert it before ``to_device``).
    <axis, out, keepdims, initial>
    method : str, optional
        A rung of the reduce ladder (see ``methods("reduce")``). ``"auto"``
        runs the rung measured fastest for calls like this one; for a float
        ``add`` or ``multiply`` only a compensated, deterministic rung, so
        the accuracy promise below holds. :func:`explain` says which and
        why.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy scalar, numpy.ndarray or DeviceArray
        A scalar without ``axis``/``keepdims``/``out``; else an array of the
        kept axes (``out`` itself when given), a DeviceArray for device
        input. The values:
        Of NumPy's result type (``add`` and ``multiply`` of bool and
        integers narrower than 64 bits give int64 or uint64, the other ops
        keep the input's type). Integer ``add`` and ``multiply`` wrap
        exactly as NumPy's do; ``minimum``, ``maximum`` and the bitwise ops
        are exact. Float ``minimum``/``maximum`` propagate NaN and order
        -0.0 below +0.0 (IEEE 754-2019; NumPy's sign of a zero depends on
        where the zeros are). Float ``add`` and ``multiply`` accumulate in
        float64: ``vector`` (auto) with compensation, as accurate as NumPy
        or better; the tutorial's rungs in the order their atomics allow.

    Raises
    ------
    numpy.exceptions.AxisError
        An axis out of range (with ``axis``; NumPy's "repeated axis" is a
        ValueError).
    ValueError
        An unknown op (the message lists the valid ones); ``minimum`` or
        ``maximum`` of an empty array (no identity, as in NumPy); an
        unknown method or backend, or a launch configuration the method
        cannot take.
    TypeError
        A bitwise op on floats (as NumPy), an unsupported dtype or result
        dtype, a conversion a device array would need, a masked array.
    CudaError
        A CUDA failure, with the CUDA error's name.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> x = np.array([3, -1, 7], dtype=np.int8)
    >>> cuatomic.reduce(x, "maximum", backend="cpu")
    np.int8(7)
    >>> cuatomic.reduce(x, np.add, backend="cpu")
    np.int64(9)
    """
    name = _op_name(op)
    if wants_axis(axis, out, keepdims, initial):
        return reduce_axis(name, a, axis, dtype, out, keepdims, initial, method=method, backend=backend,
                           blocks=blocks, threads=threads, stream=stream)
    be = _backend.resolve(backend)
    rung = named_rung("reduce", be, method)
    b, t = launch_config(blocks, threads)
    s = stream_of(stream)
    inp, out_dt = _prepared(a, name, dtype, be, s)
    if rung is None:
        rung = auto_rung("reduce", be, inp.n, inp.dtype, require=_required(name, out_dt))
    return _C.reduce(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                     op=_OP_IDS[name], blocks=b, threads=t, stream=s, out_type=out_dt.num)


@axis_documented("reduce")
def min(a, axis=None, *, out=None, keepdims=False, initial=None, method="auto", backend=None, blocks=None,
        threads=None, stream=None):
    """The smallest element (along axes), as ``np.min(a, axis, ...)``: :func:`reduce` with ``"minimum"``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
    <axis, out, keepdims, initial>
    method, backend, blocks, threads, stream
        As for :func:`reduce`.

    Returns
    -------
    numpy scalar, numpy.ndarray or DeviceArray
        A scalar without ``axis``/``keepdims``/``out``; else an array of the
        kept axes (``out`` itself when given), a DeviceArray for device
        input. The values:
        Of the input's type, exact. A NaN anywhere gives NaN; -0.0 counts
        below +0.0.

    Raises
    ------
    numpy.exceptions.AxisError
        An axis out of range (with ``axis``; NumPy's "repeated axis" is a
        ValueError).
    ValueError
        An empty array (NumPy's "zero-size array to reduction operation
        minimum which has no identity").
    """
    return reduce(a, "minimum", axis, out=out, keepdims=keepdims, initial=initial, method=method, backend=backend,
                  blocks=blocks, threads=threads, stream=stream)


@axis_documented("reduce")
def max(a, axis=None, *, out=None, keepdims=False, initial=None, method="auto", backend=None, blocks=None,
        threads=None, stream=None):
    """The largest element (along axes), as ``np.max(a, axis, ...)``: :func:`reduce` with ``"maximum"``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
    <axis, out, keepdims, initial>
    method, backend, blocks, threads, stream
        As for :func:`reduce`.

    Returns
    -------
    numpy scalar, numpy.ndarray or DeviceArray
        A scalar without ``axis``/``keepdims``/``out``; else an array of the
        kept axes (``out`` itself when given), a DeviceArray for device
        input. The values:
        Of the input's type, exact. A NaN anywhere gives NaN; +0.0 counts
        above -0.0.

    Raises
    ------
    numpy.exceptions.AxisError
        An axis out of range (with ``axis``; NumPy's "repeated axis" is a
        ValueError).
    ValueError
        An empty array (NumPy's "zero-size array to reduction operation
        maximum which has no identity").
    """
    return reduce(a, "maximum", axis, out=out, keepdims=keepdims, initial=initial, method=method, backend=backend,
                  blocks=blocks, threads=threads, stream=stream)


@on_inputs_gpu
def explain(backend, a, op="add", dtype=None, stream=0):
    """The :class:`Choice` ``method="auto"`` makes for ``reduce(a, op,
    dtype=dtype)`` on `backend` (:func:`cuatomic.explain` of "reduce")."""
    name = _op_name(op)
    facts, require = {"op": name}, 0
    if a is not None:
        inp, out_dt = _prepared(a, name, dtype, backend, stream)
        facts = {"n": inp.n, "dtype": str(inp.dtype), "op": name}
        require = _required(name, out_dt)
    return _auto.choose("reduce", backend, facts, require=require)


def _prepared(a, name, dtype, backend, stream):
    """(the input as the kernels read it, NumPy's result dtype); every
    TypeError and ValueError NumPy would raise, raised before anything
    runs."""
    inp = prepare(a, backend, stream=stream)
    out_dt = result_dtype(name, inp.dtype, dtype)
    if not _folds_unconverted(name, inp.dtype, out_dt):
        inp = inp.cast(out_dt, f"{name}.reduce(dtype={out_dt})")
    if inp.n == 0 and name in _NO_IDENTITY:
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    return inp, out_dt


def _required(name, out_dt):
    """Flags auto requires whatever the speed: a float sum or product keeps
    the accuracy promise (F_WIDE) and gives the same bits every call."""
    return _C.F_WIDE | _C.F_DETERMINISTIC if name in _ROUNDING and out_dt.kind == "f" else 0
