"""sum, prod and dot: NumPy's result types, then one call into the core."""
import functools
import os

import numpy as np

from . import _C, _backend, _xacc
from ._common import (_acc_of, _check_result_dtype, auto_rung, cached_call, direct_input, launch_config, named_rung,
                      prepare, read_as_is, stream_of)
from ._axis import axis_documented, reduce_axis, wants_axis
from ._interop import on_inputs_gpu

@axis_documented("sum", ";\n        float sums in compensated float64 on the deterministic rungs, at\n"
                        "        least as accurate as NumPy's")
def sum(a, axis=None, *, dtype=None, out=None, keepdims=False, initial=None, method="auto", backend=None, blocks=None,
        threads=None, stream=None):
    """Sum of the elements, as ``np.sum(a, axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial)``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
        Any shape (all elements are summed), layout or byte order. Objects
        with ``__cuda_array_interface__`` or a CUDA ``__dlpack__`` (CuPy,
        PyTorch, Numba) are read in place on the cuda backend.
    dtype : data-type, optional
        Type of the result and of the accumulation, as NumPy's ``dtype``.
    <axis, out, keepdims, initial>
    method : str, optional
        A rung of the sum ladder (see ``methods("sum")``). ``"auto"`` runs
        the rung measured fastest for calls like this one (dtype and size:
        ``python -m cuatomic bench auto``); for floats only a compensated,
        deterministic rung (``vector``), so the result keeps the accuracy
        promise below. :func:`explain` says which and why.
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
    numpy scalar, numpy.ndarray or DeviceArray
        A scalar without ``axis``/``keepdims``/``out``; else an array of the
        kept axes (``out`` itself when given), a DeviceArray for device
        input. The values:
        Of NumPy's result dtype (int32 -> int64, uint8 -> uint64, bool ->
        int64, ...). Integers are exact (accumulated in 64 bits). Floats:
        ``vector`` (auto) accumulates in float64 with compensation and errs
        by at most twice NumPy's error or two ulps of the exact sum; the
        tutorial's rungs accumulate in the result's precision, in the order
        the atomics allow (``atomic``: 1.2e5 ulps for 0.1 summed 10^6 times
        in float32, where NumPy errs by 0.8; the accuracy table of
        docs/accuracy.md gives every rung, measured).

    Raises
    ------
    numpy.exceptions.AxisError
        An axis out of range (with ``axis``; NumPy's "repeated axis" is a
        ValueError).
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
    if wants_axis(axis, out, keepdims, initial):
        return reduce_axis("add", a, axis, dtype, out, keepdims, initial, method=method, backend=backend,
                           blocks=blocks, threads=threads, stream=stream)
    return _reduce("sum", a, dtype, method, backend, blocks, threads, stream)


@axis_documented("prod")
def prod(a, axis=None, *, dtype=None, out=None, keepdims=False, initial=None, method="auto", backend=None, blocks=None,
         threads=None, stream=None):
    """Product of the elements, as ``np.prod(a, axis, dtype=dtype, ...)``: an atomic
    multiply built from compare-and-swap.

    Parameters
    ----------
    a : array_like or DeviceArray
    dtype : data-type, optional
        As NumPy's ``dtype``.
    <axis, out, keepdims, initial>
    method : {"cas", "auto"}, optional
        ``cas``: each thread multiplies its share in a register, then
        multiplies it into the total with an atomicCAS loop (no GPU has an
        atomic multiply).
    backend, blocks, threads
        As for :func:`sum`.

    Returns
    -------
    numpy scalar, numpy.ndarray or DeviceArray
        A scalar without ``axis``/``keepdims``/``out``; else an array of the
        kept axes (``out`` itself when given), a DeviceArray for device
        input. The values:
        Of NumPy's result dtype; integers wrap exactly as NumPy's do. Floats
        are multiplied in float64 and corrected by the summed relative
        rounding errors of every multiplication (an FMA gives each): at most
        twice NumPy's error or two ulps of the exact product.
    """
    if wants_axis(axis, out, keepdims, initial):
        return reduce_axis("multiply", a, axis, dtype, out, keepdims, initial, method=method, backend=backend,
                           blocks=blocks, threads=threads, stream=stream)
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
        raise TypeError(f"cannot {op} {in_dt} with dtype={dtype!r}: {e}") from None


def result_dtype(op, in_dt, dtype):
    """NumPy's result dtype for `op` ("sum" or "prod") of `in_dt` elements
    with ``dtype=``, refused (TypeError naming dtype) when NumPy has none or
    cuatomic cannot compute in it."""
    out_dt = cached_call(_reduce_dtype, op, in_dt, dtype)
    _check_result_dtype(out_dt, op)
    return out_dt


# (op, array type, dtype, method, CUATOMIC_BACKEND, size class) -> what a
# call with no other options resolved to last time: the common call skips
# the resolution (a few microseconds of Python, most of a small GPU call's
# time). The size class (bit length) is part of the key because "auto"
# reads the size. An exact rung's plan keeps the result type its words are
# rounded or wrapped to.
_PLANS = {}


def _reduce(op, a, dtype, method, backend, blocks, threads, stream, state=False):
    """``op(a)`` ("sum" or "prod") through a repeated call's plan when one
    serves, else :func:`_reduce_call`. With `state`, the exact rung's sum
    as ``(value, special)`` (:mod:`cuatomic._xacc`), which ExactSum.add
    keeps, in place of the rounded result."""
    kind = type(a)
    direct = None  # (what the core reads, size, dtype) of a call a plan can serve
    if not state and dtype is None and backend is None and blocks is None and threads is None and stream is None and (
            type(method) is str):
        direct = direct_input(a)
    if direct is not None:
        x, n, dt, _ = direct
        key = (op, kind, dt, method, os.environ.get("CUATOMIC_BACKEND"), n.bit_length())
        plan = _PLANS.get(key)
        if plan is not None:
            call, be_id, index, ident, acc, num, exact_dt = plan
            # (positional, in _C.sum's order -- backend, rung, x, n, dtype,
            # acc, blocks, threads, stream, out_type: keywords cost about a
            # microsecond)
            result = call(be_id, index, x, n, ident, acc, -1, -1, None, num)
            return result if exact_dt is None else _exact_result(*result, exact_dt)
    return _reduce_call(op, a, dtype, method, backend, blocks, threads, stream, state,
                        (key, x) if direct is not None else None)


@on_inputs_gpu
def _reduce_call(op, a, dtype, method, backend, blocks, threads, stream, state, plan_for):
    """_reduce without a plan: everything resolved, on the input's GPU;
    plan_for (a plan's key, and what the core reads) when the call can
    leave a plan for the next one."""
    be = _backend.resolve(backend)
    rung = named_rung(op, be, method)
    b, t = launch_config(blocks, threads)
    s = stream_of(stream)
    inp, out_dt = prepared(op, a, dtype, be, s)
    if rung is None:
        rung = auto_rung(op, be, inp.n, inp.dtype)
    # Narrowing device data: the kernels round every element to the result
    # type as they read it (the vector rung then sums compensated in double,
    # the tutorial's rungs in the result type).
    narrowing = out_dt.kind == "f" and out_dt.itemsize < inp.dtype.itemsize
    acc = _C.ACC_FLOAT32 if narrowing else _acc_of(out_dt, rung.flags)
    call = _C.sum if op == "sum" else _C.prod
    be_id = _backend.backend_id(be)
    exact = _exact_rung(op, rung, inp, out_dt, state)
    result = call(backend=be_id, rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id, acc=acc, blocks=b, threads=t,
                  stream=s, out_type=out_dt.num)
    if state:
        words, special = result
        return _xacc.value_of(words), special
    if plan_for:
        key, x = plan_for
        if read_as_is(inp, x, a) and (type(a) is np.ndarray or be == "cuda"):
            _PLANS[key] = (call, be_id, rung.index, inp.id, acc, out_dt.num, out_dt if exact else None)
    return _exact_result(*result, out_dt) if exact else result


def prepared(op, a, dtype, backend, stream):
    """(the input as the kernels read it, NumPy's result dtype) of ``op(a,
    dtype=dtype)`` ("sum" or "prod"), with every error the call raises
    about them; :func:`cuatomic.explain` reads the same."""
    inp = prepare(a, backend, stream=stream)
    out_dt = result_dtype(op, inp.dtype, dtype)
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
    return inp, out_dt


def _exact_rung(op, rung, inp, out_dt, state):
    """Whether `rung` is an exact one (CUA_F_EXACT), after checking that it
    can take this call (the kernels read the data as it is: a narrower
    float result is rounded from the exact sum of the data converted
    first, as NumPy converts it)."""
    exact = rung.has(_C.F_EXACT)
    if state and not exact:
        exacts = [r.name for r in _backend.table(op, "cpu") if r.has(_C.F_EXACT)]  # the same names on both
        raise ValueError(f"ExactSum takes an exact rung of {op} ({', '.join(exacts)}), not {rung.name!r}")
    if exact and inp.device and inp.dtype.kind == "f" and out_dt.itemsize < inp.dtype.itemsize:
        raise TypeError(f"method={rung.name!r} of {inp.dtype} device data as {out_dt}: NumPy rounds every element "
                        f"to {out_dt} first; convert the array before the call")
    return exact


def _exact_result(words, special, dt):
    """An exact rung's normalized words and `special` flags as a result of
    NumPy's dtype dt: floats rounded once; integers (the exact sum of
    integer data) wrapped as NumPy's dtype wraps."""
    if dt.kind in "iu":
        # The integer part's two lowest words: the words above them weigh
        # multiples of 2**64, which no result type keeps.
        bits = 8 * dt.itemsize
        low = (int(words[_UNIT_WORD]) + (int(words[_UNIT_WORD + 1]) << 32)) & ((1 << bits) - 1)
        if dt.kind == "i" and low >> (bits - 1):
            low -= 1 << bits
        return dt.type(low)
    value = _xacc.value_of(words)
    if dt.kind == "f":
        return _xacc.rounded(value, special, dt)
    return np.bool_(value >> -_C.XACC_E0 != 0)  # integer terms: a multiple of 2**-XACC_E0


# The word of weight 2**0 (XACC_E0 is a multiple of 32, below -64).
_UNIT_WORD = -_C.XACC_E0 // 32


# --------------------------------------------------------------------- dot

def dot(a, b, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """Dot product of two 1-D vectors, as ``np.dot(a, b)`` of vectors.

    Only vectors: this is the atomics lesson's dot product (partial sums
    combined across blocks). Matrix products are BLAS's job -- use
    ``np.matmul`` (``cupy.matmul``, ``torch.matmul`` on the device).

    Parameters
    ----------
    a, b : array_like or DeviceArray
        1-D, of equal length (2-D or more raises ValueError naming
        ``np.matmul``).
    method : str, optional
        A rung of the dot ladder (see ``methods("dot")``). ``"auto"``: the
        rung measured fastest for calls like this one; for floats only a
        compensated, deterministic rung (``vector``). See :func:`explain`.
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
        accuracy table of docs/accuracy.md).

    Raises
    ------
    numpy.exceptions.AxisError
        An axis out of range (with ``axis``; NumPy's "repeated axis" is a
        ValueError).
    ValueError
        Inputs that are not 1-D, or of different lengths.
    TypeError
        Unsupported dtypes, or a masked array.
    """
    key = None
    if backend is None and blocks is None and threads is None and stream is None and type(method) is str:
        da, db = direct_input(a), direct_input(b)
        if da is not None and db is not None and da[3] == 1 and db[3] == 1 and da[1] == db[1]:
            n = da[1]
            key = (type(a), type(b), da[2], db[2], method, os.environ.get("CUATOMIC_BACKEND"), n.bit_length())
            plan = _DOT_PLANS.get(key)
            if plan is not None:
                be_id, index, ident, acc, num, exact_dt = plan
                # (positional, in _C.dot's order -- backend, rung, a, b, n,
                # dtype, acc, blocks, threads, stream, out_type)
                result = _C.dot(be_id, index, da[0], db[0], n, ident, acc, -1, -1, None, num)
                return result if exact_dt is None else _exact_result(*result, exact_dt)
    plan_for = (key, da[0], db[0]) if key is not None else None
    return _dot(a, b, method, backend, blocks, threads, stream, plan_for=plan_for)


def dot_prepared(a, b, backend, stream):
    """(a and b as the kernels read them, NumPy's result dtype) of ``dot(a,
    b)``, with every error the call raises about them;
    :func:`cuatomic.explain` reads the same."""
    ia, ib = prepare(a, backend, "a", stream), prepare(b, backend, "b", stream)
    if ia.ndim != 1 or ib.ndim != 1:
        raise ValueError(f"dot takes two 1-D vectors (got a of {ia.ndim}-D and b of {ib.ndim}-D): it is the "
                         "atomics lesson's dot product; for matrix products use np.matmul (or cupy.matmul, "
                         "torch.matmul on the device)")
    if ia.n != ib.n:
        raise ValueError(f"shapes ({ia.n},) and ({ib.n},) not aligned: {ia.n} (dim 0) != {ib.n} (dim 0): a and b "
                         "must have one length")
    out_dt = np.asarray(np.dot(np.empty(0, ia.dtype), np.empty(0, ib.dtype))).dtype
    _check_result_dtype(out_dt, "dot")
    if ia.dtype != out_dt:
        ia = ia.cast(out_dt, f"dot of {ia.dtype} and {ib.dtype}")
    if ib.dtype != out_dt:
        ib = ib.cast(out_dt, f"dot of {ia.dtype} and {ib.dtype}")
    return ia, ib, out_dt


# dot's plans, as sum's (_PLANS): (array types, dtypes, method,
# CUATOMIC_BACKEND, size class) -> what the call resolved to.
_DOT_PLANS = {}


@on_inputs_gpu
def _dot(a, b, method, backend, blocks, threads, stream, state=False, plan_for=None):
    """dot without a plan; `state` as for :func:`_reduce` (ExactSum.add_dot)."""
    be = _backend.resolve(backend)
    rung = named_rung("dot", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    ia, ib, out_dt = dot_prepared(a, b, be, s)
    if rung is None:
        rung = auto_rung("dot", be, ia.n, out_dt)
    exact = _exact_rung("dot", rung, ia, out_dt, state)
    be_id, acc = _backend.backend_id(be), _acc_of(out_dt, rung.flags)
    result = _C.dot(backend=be_id, rung=rung.index, a=ia.x, b=ib.x, n=ia.n, dtype=ia.id, acc=acc, blocks=nb,
                    threads=nt, stream=s, out_type=out_dt.num)
    if state:
        words, special = result
        return _xacc.value_of(words), special
    if plan_for:  # both read as they are: the next such call skips all of the above
        key, x, y = plan_for
        if read_as_is(ia, x, a) and read_as_is(ib, y, b):
            _DOT_PLANS[key] = (be_id, rung.index, ia.id, acc, out_dt.num, out_dt if exact else None)
    return _exact_result(*result, out_dt) if exact else result
