"""Scatter: ``np.<op>.at`` in place (:func:`at`, :func:`add_at`) and
``np.<op>.reduceat`` (:func:`reduceat`), by the rungs of the ``at`` ladder.

Here the call is put in the core's terms: the op (subtract is add of the
negated values; bool's add and maximum are its or, multiply and minimum its
and), the indices as one int32/int64 array naming rows of ``a`` (a tuple of
index arrays is flattened to rows of the axes it leaves), the values cast to
``a``'s dtype with NumPy's rule and their broadcast as two strides, and
``a`` as memory the core can write: a C-contiguous host array (a copy,
written back, for any other), a DeviceArray, or a device array's
``__cuda_array_interface__``."""
import math

import numpy as np

from . import _C, _auto, _interop
from ._common import auto_rung, launch_config, named_rung, prepare, stream_of
from ._backend import backend_id, resolve
from ._device import DeviceArray, refuse_masked
from ._dtypes import dtype_id
from ._interop import on_inputs_gpu

OP = "at"
SKEW_FROM = 1 << 16  # updates (row elements) from which auto samples the indices' skew
SKEWED = 12.0  # skew_of from which auto reads the measurements of Zipf-like indices
SKEW_SAMPLE = 1024  # indices read for skew_of
ROBUST = 1.1  # the Zipf case's rung runs unsampled where it costs at most this times the uniform one's
#: The ops :func:`at` takes, by NumPy's ufunc names.
OPS = ("add", "subtract", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor")
_UFUNCS = {getattr(np, name): name for name in OPS}
_CORE = {name: _C.REDUCE_OPS.index(name) for name in _C.REDUCE_OPS}
# bool's ops as NumPy computes them: add is or, multiply is and; minimum and
# maximum are and and or.
_BOOL = {"add": "bitwise_or", "multiply": "bitwise_and", "minimum": "bitwise_and", "maximum": "bitwise_or"}
_BOOL_SUBTRACT = ("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                  "operator, or the logical_xor function instead.")


def check_op(op):
    """The name of a scatter op given as a string or a NumPy ufunc."""
    if isinstance(op, np.ufunc):
        name = _UFUNCS.get(op)
        if name is None:
            raise ValueError(f"op {op.__name__!r} is not a scatter op: expected one of {', '.join(OPS)}")
        return name
    if not isinstance(op, str):
        raise TypeError(f"op must be a string or a NumPy ufunc, one of {', '.join(OPS)} (got {type(op).__name__})")
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}: expected one of {', '.join(OPS)}")
    return op


def core_op(name, dt):
    """(reduce op id, negate) of op `name` on elements of dtype dt, or
    NumPy's TypeError where it has no such loop."""
    if dt.kind == "b":
        if name == "subtract":
            raise TypeError(_BOOL_SUBTRACT)
        name = _BOOL.get(name, name)
    if dt.kind == "f" and name.startswith("bitwise"):
        raise TypeError(f"ufunc '{name}' not supported for the input types, and the inputs could not be safely "
                        "coerced to any supported types according to the casting rule ''safe''")
    if name == "subtract":
        return _CORE["add"], True
    return _CORE[name], False


def float_add(dt, core):
    """Whether core op `core` on elements of dtype dt is a float add (or
    subtract): the op whose rounding depends on the order of the updates."""
    return dt.kind == "f" and core == _CORE["add"]


class _Target:
    """`a` as memory the core writes: ``x`` (an ndarray or a device
    pointer), its shape and dtype; ``finish()`` writes a host copy back."""

    __slots__ = ("x", "shape", "dtype", "device", "_write_back", "keep")

    def __init__(self, a, backend, stream):
        self._write_back = None
        self.keep = a
        if isinstance(a, np.ndarray):
            refuse_masked(a, "a")
            if not a.flags.writeable:
                raise ValueError("output array is read-only (a is not writeable)")
            dtype_id(a.dtype, "a")
            self.shape, self.device = a.shape, False
            self.dtype = a.dtype.newbyteorder("=")
            if a.flags.c_contiguous and a.dtype.isnative:
                self.x = a
            else:
                self.x = np.ascontiguousarray(a, dtype=self.dtype)
                self._write_back = a
            return
        if isinstance(a, DeviceArray):
            if backend != "cuda":
                raise TypeError(f"a is a cuatomic.DeviceArray but the backend is {backend!r}: use backend='cuda'")
            _interop.take_gpu(a.device, None, "a")
            self.x, self.shape, self.dtype, self.device = a.ptr, tuple(a.shape), a.dtype, True
            dtype_id(a.dtype, "a")
            return
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is None:
            if _interop.on_cuda(a):
                raise TypeError("a device array updated in place must be a cuatomic.DeviceArray or expose "
                                "__cuda_array_interface__ (CuPy, PyTorch, Numba)")
            raise TypeError(f"a must be an array to update in place (a NumPy array, a cuatomic.DeviceArray or a "
                            f"CUDA device array), not {type(a).__name__}")
        if backend != "cuda":
            raise TypeError(f"a is a CUDA device array but the backend is {backend!r}: use backend='cuda'")
        if cai["data"][1]:
            raise ValueError("output array is read-only (a is a read-only device array)")
        shape = tuple(int(s) for s in cai["shape"])
        dt = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        if strides is not None and tuple(strides) != _c_strides(shape, dt.itemsize):
            raise ValueError("a device array updated in place must be C-contiguous: pass a contiguous array "
                             "(.copy()) and copy the result back")
        found = _interop.foreign(a, stream)  # checks the GPU, waits for the producer's stream
        if found.ptr != int(cai["data"][0] or 0) and math.prod(shape):
            raise ValueError("a device array updated in place must be C-contiguous on the current GPU")
        dtype_id(dt, "a")
        self.x, self.shape, self.dtype, self.device, self.keep = found.ptr, shape, dt, True, (a, found.keep)

    def finish(self):
        if self._write_back is not None:
            self._write_back[...] = self.x


def _c_strides(shape, itemsize):
    out, step = [], itemsize
    for s in reversed(shape):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


class _Indices:
    """The indices as the core reads them: ``x`` (int64/int32 host array or a
    device pointer), ``id``, ``n``; ``shape`` (the indices' broadcast shape),
    ``m`` (rows of `a` they index) and ``row`` (elements per row)."""

    __slots__ = ("x", "id", "n", "shape", "m", "row", "keep")


def _host_index(part, axis, size):
    try:
        arr = np.asarray(part)
    except (TypeError, ValueError, OverflowError) as e:
        raise type(e)(f"indices: {e}") from None
    if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(part, np.ndarray):
        arr = arr.astype(np.int64)  # [] reads as float64; NumPy takes it as no indices
    if arr.dtype.kind == "b":
        raise TypeError("indices must be integers, not booleans: pass np.flatnonzero(mask) for a mask")
    if arr.dtype.kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise IndexError(f"index {int(arr.max())} is out of bounds for axis {axis} with size {size} (indices)")
    return arr


def indices_for(indices, shape, backend, stream):
    """The core's view of `indices` into an array of `shape`."""
    ix = _Indices()
    parts = indices if isinstance(indices, tuple) else (indices,)
    if not parts:  # (): the whole of `a` is one row, updated once
        ix.x, ix.n, ix.shape, ix.m, ix.row = np.zeros(1, np.int64), 1, (), 1, math.prod(shape)
        ix.id, ix.keep = dtype_id(np.dtype(np.int64)), None
        return ix
    if len(parts) > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {len(parts)} were "
                         "indexed")
    if len(parts) == 1 and not isinstance(parts[0], (np.ndarray, list, tuple, int, np.integer)) and (
            isinstance(parts[0], DeviceArray) or _interop.on_cuda(parts[0])):
        found = prepare(parts[0], backend, name="indices", stream=stream)
        if found.dtype.name not in ("int32", "int64"):
            raise TypeError(f"indices on the GPU must be int32 or int64 (got {found.dtype}): cast them first")
        shp = getattr(parts[0], "shape", (found.n,))
        if not shape:
            raise IndexError("too many indices for array: array is 0-dimensional, but 1 were indexed")
        ix.x, ix.id, ix.n, ix.shape, ix.keep = found.x, dtype_id(found.dtype), found.n, tuple(shp), found
        ix.m, ix.row = shape[0], math.prod(shape[1:])
        return ix
    for p in parts:
        if isinstance(p, (slice, type(Ellipsis))) or p is None:
            raise TypeError("indices must be integer arrays (or a tuple of them); slices, Ellipsis and None are "
                            "not taken: pass np.arange(...) for a slice")
        if isinstance(p, DeviceArray) or _interop.on_cuda(p):
            raise TypeError("a tuple of indices must be host arrays (one device array of indices is taken as "
                            "it is)")
    arrays = [_host_index(p, axis, shape[axis]) for axis, p in enumerate(parts)]
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError as e:
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together ({e})") from None
    k = len(arrays)
    ix.shape = arrays[0].shape
    ix.m, ix.row = math.prod(shape[:k]), math.prod(shape[k:])
    if k == 1:
        flat = np.ascontiguousarray(arrays[0].reshape(-1))
        if flat.dtype != np.int64 and flat.dtype != np.int32:
            flat = flat.astype(np.int64)
    else:
        flat = np.zeros(math.prod(ix.shape), np.int64)
        for axis, arr in enumerate(arrays):  # each axis checked here: the core sees the flattened rows only
            flat = flat * shape[axis] + rows_of(arr.reshape(-1), shape[axis], axis, lambda k: f"indices[{axis}]")
    ix.x, ix.n, ix.keep = flat, flat.size, flat
    ix.id = dtype_id(flat.dtype)
    return ix


def rows_of(indices, size, axis, where):
    """Integer `indices` into an axis of `size` as int64 positions from 0
    (negative ones count from the end), or NumPy's IndexError for the first
    out of range, at position k of the indices, saying ``where(k)``."""
    flat = np.asarray(indices, np.int64)
    bad = np.flatnonzero((flat < -size) | (flat >= size))
    if bad.size:
        k = int(bad[0])
        raise IndexError(f"index {int(flat[k])} is out of bounds for axis {axis} with size {size} ({where(k)})")
    return np.where(flat < 0, flat + size, flat)


def value_type(b, dt, name):
    """(b as NumPy is given it, the type NumPy computes `name` in): at's
    refusals of values of b's type into elements of dt."""
    try:
        given = b if isinstance(b, (np.ndarray, int, float, bool, complex)) else np.asarray(b)
        rt = np.result_type(dt, given)
    except (TypeError, ValueError, OverflowError) as e:
        raise type(e)(f"b: {e}") from None
    if rt.kind not in "biufc" or (np.ndim(given) and np.asarray(given).dtype.kind not in "biufc"):
        raise TypeError(f"b: ufunc '{name}' did not contain a loop with signature matching types "
                        f"({dt!r}, {np.asarray(given).dtype!r})")
    if dt.kind == "b" and rt.kind != "b":
        raise TypeError(f"b: {rt} values into a bool array: NumPy computes {name} in {rt} and casts the result "
                        "to bool, which no atomic on bools can; pass bool values, or update an integer array")
    if dt.kind == "f" and rt.kind == "f" and rt.itemsize > dt.itemsize:
        raise TypeError(f"b: {rt} values into {dt} elements: NumPy's {name}.at adds each in {rt} and rounds to "
                        f"{dt} after every update, an order-dependent answer (and the exact rungs' sum would be of "
                        f"values rounded first); cast b to a's dtype first (b.astype(a.dtype))")
    if dt.kind in "biu" and rt.kind not in "biu":
        raise TypeError(f"b: {rt} values into {dt} elements: NumPy's {name}.at computes each update in {rt} and "
                        f"truncates, which no atomic can; cast b to a's dtype first (b.astype(a.dtype))")
    return given, rt


def check_broadcast(shape, full):
    """NumPy's ValueError unless values of `shape` broadcast to the updates' shape `full`."""
    try:
        fits = np.broadcast_shapes(tuple(shape), full) == full
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"b of shape {tuple(shape)} cannot be broadcast to the updates' shape {full}")


def values_for(b, dt, shape, row_shape, device_ok, backend, stream, name):
    """(values, nvals, vk, vj): `b` cast to dt with NumPy's rule, and how
    update k, column j reads it."""
    full = tuple(shape) + tuple(row_shape)
    n, row = math.prod(shape), math.prod(row_shape)
    if isinstance(b, DeviceArray) or _interop.on_cuda(b):
        if not device_ok:
            raise TypeError("b is on the GPU: updates of a host array take host values (or pass a on the GPU)")
        found = prepare(b, backend, name="b", stream=stream)
        if found.dtype != dt:
            raise TypeError(f"b on the GPU must have a's dtype {dt} (got {found.dtype}): cast it first")
        vk, vj = _strides_of(getattr(b, "shape", (found.n,)), full, shape, row_shape, n, row)
        if vk is None:
            raise TypeError(f"b on the GPU must be one value, every update's values {full}, one row "
                            f"{tuple(row_shape)} or one value per update: broadcast it first")
        return found.x, found.n, vk, vj
    refuse_masked(b, "b")
    given, rt = value_type(b, dt, name)
    try:
        # A Python int keeps its own value (NEP 50 would refuse 300 for int8; ufunc.at wraps it)
        plain_int = isinstance(given, int) and not isinstance(given, bool)
        wide = np.asarray(given, dtype=None if plain_int or rt.kind == "c" else rt)
        vals = wide.astype(dt, copy=False)  # NumPy's unsafe cast: integers wrap, complex drops its imaginary part (warned)
    except (TypeError, ValueError, OverflowError) as e:
        raise type(e)(f"b: {e}") from None
    if name in ("minimum", "maximum") and dt.kind in "biu" and wide.dtype != dt and wide.size:
        lo, hi = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
        if wide.min() < lo or wide.max() > hi:
            raise TypeError(f"b: {name}.at of {dt} elements with values outside [{lo}, {hi}]: NumPy compares in "
                            f"{rt} and wraps the result; cast b to a's dtype first (b.astype(a.dtype))")
    check_broadcast(vals.shape, full)
    if vals.size == 1:
        return np.ascontiguousarray(vals.reshape(1)), 1, 0, 0
    vk, vj = _strides_of(vals.shape, full, shape, row_shape, n, row)
    if vk is None:
        vals = np.broadcast_to(vals, full)
        vk, vj = row, 1
    flat = np.ascontiguousarray(vals).reshape(-1)
    return flat, flat.size, vk, vj


def update_values(b, dt, shape, row_shape, name):
    """The values of host `b` as at reads them for updates of `shape` into
    rows of `row_shape`: cast and checked by :func:`values_for`, a read-only
    view of shape ``shape + row_shape`` (update k's column j at k*vk + j*vj,
    the core's strides: a broadcast b is not copied)."""
    vals, _, vk, vj = values_for(b, dt, shape, row_shape, False, "cpu", 0, name)
    step = vals.itemsize
    view = np.lib.stride_tricks.as_strided(vals, (math.prod(shape), math.prod(row_shape)), (vk * step, vj * step),
                                           writeable=False)
    return view.reshape(tuple(shape) + tuple(row_shape))


def checked_updates(indices, b, shape, dt, name, first=0):
    """The updates ``at(a, indices, b, name)`` would make into an `a` of
    `shape` and dtype `dt`, every check of at's made and nothing written:
    (the rows of `a` they name, int64 from 0; their values, as
    :func:`update_values`). `indices` is one host array of indices into
    a's first axis, at positions `first`, `first` + 1, ... of the caller's
    (an IndexError names that position)."""
    ix = indices_for(indices, shape, "cpu", 0)
    rows = rows_of(ix.x, ix.m, 0, lambda k: f"indices[{first + k}]")
    return rows, update_values(b, dt, ix.shape, tuple(shape[1:]), name)


def _strides_of(bshape, full, shape, row_shape, n, row):
    """(vk, vj) for values of shape bshape broadcast to `full`, where one of
    the simple forms fits (one value, all values, one row for every update,
    one value per update), else (None, None)."""
    bshape, size = tuple(bshape), math.prod(bshape)
    if size == 1:
        return 0, 0
    if bshape == full:
        return row, 1
    lead = len(bshape) - len(row_shape)
    if row_shape and lead >= 0 and bshape[lead:] == tuple(row_shape) and all(s == 1 for s in bshape[:lead]):
        return 0, 1
    if bshape == tuple(shape) + (1,) * len(row_shape):
        return 1, 0
    return None, None


def _drop_ones(shape):
    return tuple(s for s in shape if s != 1)


@on_inputs_gpu
def at(a, indices, b=None, op="add", *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """``getattr(np, op).at(a, indices, b)``: unbuffered in place updates of
    `a`, by a rung of the scatter ladder.

    Every update names an element (or a row) of `a` and combines its value
    into it; updates that name the same element all take effect, as NumPy's
    do (``a[indices] += b`` would keep only one).

    Parameters
    ----------
    a : ndarray, DeviceArray or CUDA device array
        Updated in place. A NumPy array stays on the host (on the cuda
        backend it is copied to the GPU and the result written back); a
        DeviceArray or another library's device array (CuPy, PyTorch,
        Numba: ``__cuda_array_interface__``, C-contiguous) is updated on its
        GPU, on the caller's `stream`.
    indices : array_like of int, or tuple of them
        An integer array indexes `a`'s first axis (a row of an N-D `a` is
        updated whole); a tuple of integer arrays indexes the first axes,
        one element each, broadcast together. Negative indices count from
        the end. One device array of int32 or int64 indices is read on the
        GPU as it is.
    b : array_like or scalar
        The values, broadcast to ``indices.shape + a.shape[k:]`` and cast to
        `a`'s dtype as NumPy's ``ufunc.at`` casts them (unsafely: integers
        wrap, a complex value drops its imaginary part). Float values into
        an integer `a`, and float64 values into float32, are refused: NumPy
        computes each update in the wider type and rounds after every one,
        an order-dependent answer.
    op : str or numpy.ufunc, default "add"
        add, subtract, multiply, minimum, maximum, bitwise_and, bitwise_or,
        bitwise_xor.
    method : str, default "auto"
        A rung of ``methods("at")``. ``"auto"`` runs the rung measured
        fastest (``cuatomic/rules/<backend>.json``) for calls nearest this
        one in dtype, updates, output elements, row length and the skew of
        a sample of the indices, of those that can run it; for float add
        and subtract only a deterministic one (`exact` or `exact_private`:
        the correctly rounded sum, the same bits on every run and backend).
        ``cuatomic.explain("at", a, indices, b, op)`` says which and why.
    backend : {"cpu", "cuda"}, optional
    blocks, threads : int, optional
        The launch configuration (the rung's default when None).
    stream : optional
        A CUDA stream (a cuatomic.Stream, a CuPy or PyTorch stream, or a
        handle) the update runs on.

    Returns
    -------
    None
        As NumPy's ``ufunc.at``.

    Raises
    ------
    IndexError
        An index out of range, before anything is written (NumPy may leave
        `a` half updated); float indices.
    TypeError
        Boolean or slice indices; an op the dtype has no loop for; float
        values into an integer `a`, float64 values into float32.
    ValueError
        A read-only `a`; values that do not broadcast.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> a = np.zeros(4)
    >>> cuatomic.at(a, [0, 1, 1, 3, 1], 1.0, backend="cpu")
    >>> a
    array([1., 3., 0., 1.])
    """
    be = resolve(backend)
    rung = named_rung(OP, be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    c = _Call(a, indices, b, op, be, s)
    c.run(be, rung, nb, nt, s)
    c.target.finish()


def target_and_op(a, b, op, be, s):
    """(a as the core writes it, the op's name, its core id, whether it
    negates): at's checks of `op`, of `b`'s presence and of `a`, in at's
    order. `a` may be a target made before (it is taken as it is)."""
    name = check_op(op)
    if b is None:
        raise TypeError("second operand needed for ufunc (b=None)")
    target = a if isinstance(a, _Target) else _Target(a, be, s)
    return (target, name) + core_op(name, target.dtype)


def update_in_place(target, parts, op, be, rung):
    """Each (indices into a's first axis, values) of `parts` applied to
    `target` in order, each as :func:`at` applies it, by `rung` (None:
    auto's), then written back:
    every part is checked first, a named rung's limits included, so nothing
    is written if one is refused."""
    core, negate = core_op(check_op(op), target.dtype)
    if rung is not None:
        for ix, _ in parts:
            why = rung_fits(be, rung, target.shape[0], math.prod(target.shape[1:]), len(ix),
                            dtype_id(target.dtype), core, negate)
            if why is not None:
                raise ValueError(why)
    for ix, b in parts:
        _Call(target, ix, b, op, be, 0).run(be, rung, -1, -1, 0)
    target.finish()


class _Call:
    """A call of :func:`at` in the core's terms: the target, the indices,
    the values and their strides, the op's id and whether it negates."""

    def __init__(self, a, indices, b, op, be, s):
        self.target, name, self.core, self.negate = target_and_op(a, b, op, be, s)
        self.ix = indices_for(indices, self.target.shape, be, s)
        row_shape = self.target.shape[len(indices) if isinstance(indices, tuple) else 1:]
        self.vals, self.nvals, self.vk, self.vj = values_for(b, self.target.dtype, self.ix.shape, row_shape,
                                                             self.target.device or be == "cuda", be, s, name)
        self.did = dtype_id(self.target.dtype)
        # Indices or values in a's own memory would change under the update (and an index
        # changed after the check could write anywhere): the core reads copies of them.
        self.ix.x = _apart(self.ix.x, self.ix.n * np.dtype(_C.DTYPES[self.ix.id]).itemsize, self.ix.shape, self.target)
        self.vals = _apart(self.vals, self.nvals * self.target.dtype.itemsize, (self.nvals,), self.target)

    def run(self, be, rung, nb, nt, s):
        """The updates, by `rung` (None: the one auto picks for them)."""
        if rung is None:
            rung = self.auto(be, nb, nt, s)
        _C.at(backend_id(be), rung.index, self.target.x, self.ix.m, self.ix.row, self.ix.x, self.ix.id, self.ix.n,
              self.vals, self.nvals, self.vk, self.vj, self.did, self.core, self.negate, nb, nt, s)

    def facts(self):
        """What auto's rule reads of the call: the updated elements, the
        dtype, the number of output elements ("bins") and the row length."""
        return {"n": self.ix.n * self.ix.row, "dtype": self.target.dtype.name, "bins": self.ix.m * self.ix.row,
                "row": self.ix.row}

    def auto(self, be, nb, nt, s):
        """The rung auto runs: :meth:`kind`'s measured case's fastest."""
        n, bins, row = self.ix.n * self.ix.row, self.ix.m * self.ix.row, self.ix.row
        data = "uniform" if n < SKEW_FROM else self.kind(be, nb, nt, s)[0]  # (kind's first test, without its setup)
        # The dtype itself, not its .name (a Python property, microseconds a call): both key auto's cache.
        return auto_rung(OP, be, n, self.target.dtype, bins, data=data, row=row, require=self.require(),
                         fits=self.fits(be, nb, nt))

    def kind(self, be, nb, nt, s, sample=False):
        """(the kind of measured case auto reads, "uniform" or "zipf"; the
        skew of a sample of the indices, or None where none was read). A
        sample is read (:func:`skew_of`; always where `sample`) only where
        it decides something: from SKEW_FROM updates, where the fastest
        rung measured for uniform indices is not the one for Zipf ones, and
        the Zipf one would cost over ROBUST times the uniform one's time on
        uniform indices (else it runs, a sample dearer than its risk)."""
        f, kw = self.facts(), {"require": self.require(), "fits": self.fits(be, nb, nt)}
        skew = skew_of(index_sample(self.ix, s), self.ix.m) if sample else None
        if f["n"] < SKEW_FROM:
            return "uniform", skew
        even = auto_rung(OP, be, f["n"], f["dtype"], f["bins"], data="uniform", row=f["row"], **kw)
        skewed = auto_rung(OP, be, f["n"], f["dtype"], f["bins"], data="zipf", row=f["row"], **kw)
        if skewed is even:
            return "uniform", skew
        ms = _auto.measured_ms(OP, be, f["n"], f["dtype"], f["bins"], data="uniform", row=f["row"])
        if ms.get(skewed.name) is not None and ms.get(even.name) and ms[skewed.name] <= ROBUST * ms[even.name]:
            return "zipf", skew
        if skew is None:
            skew = skew_of(index_sample(self.ix, s), self.ix.m)
        return ("zipf" if skew >= SKEWED else "uniform"), skew

    def require(self):
        """auto's requirement: a deterministic rung for float add and subtract."""
        return _C.F_DETERMINISTIC if float_add(self.target.dtype, self.core) else 0

    def fits(self, be, nb, nt):
        return lambda r: rung_fits(be, r, self.ix.m, self.ix.row, self.ix.n, self.did, self.core, self.negate, nb, nt)


def _apart(x, nbytes, shape, target):
    """x (an ndarray or a device pointer of `nbytes`), or a copy of it where
    it overlaps the memory of `target`."""
    if isinstance(x, np.ndarray):
        return x.copy() if isinstance(target.x, np.ndarray) and np.shares_memory(x, target.x) else x
    if not target.device or not nbytes:
        return x
    start, end = target.x, target.x + math.prod(target.shape) * target.dtype.itemsize
    if x < end and start < x + nbytes:
        copy = DeviceArray._copy_of(x, (nbytes,), np.dtype(np.uint8))
        target.keep = (target.keep, copy)  # alive until the call returns
        return copy.ptr
    return x


def explain(backend, a=None, indices=None, b=None, ufunc="add", *, blocks=None, threads=None, stream=0):
    """The Choice ``method="auto"`` makes for ``at(a, indices, b, ufunc)``
    (cuatomic.explain("at", ...)): read as the call reads its arguments,
    the rungs whose limits refuse it passed by."""
    if a is None or indices is None:
        raise TypeError("explain('at') needs the call's arrays: explain('at', a, indices, b[, op]) (the rule "
                        "reads the op, the dtype and the number of updates)")
    nb, nt = launch_config(blocks, threads)
    c = _Call(a, indices, b, ufunc, backend, stream)
    facts = c.facts()
    facts["data"], skew = c.kind(backend, nb, nt, stream, sample=True)
    facts["skew"] = round(skew, 1)
    return _auto.choose(OP, backend, facts, require=c.require(), fits=c.fits(backend, nb, nt))


def index_sample(ix, stream, k=SKEW_SAMPLE):
    """Up to k of the call's indices, evenly spaced, on the host (from the
    GPU: one strided copy on the call's stream, waited for)."""
    step = max(1, ix.n // k)
    if isinstance(ix.x, np.ndarray):
        return ix.x[::step][:k]
    dt = np.dtype(_C.DTYPES[ix.id])
    out = np.empty(min(k, (ix.n + step - 1) // step), dt)
    _C.sample_to_host(ix.x, out, step * dt.itemsize, stream)
    return out


def skew_of(sample, m):
    """How many times as often as uniform indices would make it the most
    common of `m` rows comes in `sample`: its count times min(m, sample
    size) over the sample size (1 to 8 for uniform indices in a sample of
    1024, about 20 for Zipf(1.2) ones into 100 rows, over 100 into 10^4
    or more). Negative indices count as the rows they name."""
    if sample.size == 0 or m <= 1:
        return 1.0
    rows = np.sort(sample)
    if rows[0] < 0:
        rows = np.sort(np.where(rows < 0, rows.astype(np.int64) + m, rows))
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1], [True])))
    return float(np.diff(starts).max()) * min(m, rows.size) / rows.size


def rung_fits(backend, rung, m, row, n, dtype_id_, op, negate, blocks=-1, threads=-1):
    """None if `rung` can take the call, else why not (its row's ``fits``)."""
    return _C.at_fits(backend_id(backend), rung.index, m, row, n, dtype_id_, op, negate, blocks, threads)


def add_at(a, indices, b=None, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """``np.add.at(a, indices, b)``: :func:`at` with ``op="add"``.

    Parameters
    ----------
    a, indices, b, method, backend, blocks, threads, stream
        As :func:`at`.

    Returns
    -------
    None

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> counts = np.zeros(3, np.int64)
    >>> cuatomic.add_at(counts, [2, 0, 2], 1, backend="cpu")
    >>> counts
    array([1, 0, 2])
    """
    return at(a, indices, b, "add", method=method, backend=backend, blocks=blocks, threads=threads, stream=stream)


def reduceat(a, indices, op="add", *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """``getattr(np, op).reduceat(a, indices)`` for a 1-D host array `a`.

    Result ``i`` folds ``a[indices[i]:indices[i + 1]]`` (the last runs to the
    end); where ``indices[i] >= indices[i + 1]`` it is ``a[indices[i]]``,
    NumPy's rule. Each result starts at its slice's first element and the
    rest are scattered into it with :func:`at`: float add and subtract are
    the correctly rounded sums of ``method="auto"``.

    Parameters
    ----------
    a : ndarray
        1-D, on the host.
    indices : array_like of int
        Slice starts, each in ``[0, len(a))``.
    op : str or numpy.ufunc, default "add"
        As :func:`at`, but subtract (NumPy's ``subtract.reduceat`` folds
        ``a[i] - a[i+1] - ...``, which is also taken).
    method, backend, blocks, threads, stream
        As :func:`at`.

    Returns
    -------
    ndarray
        ``len(indices)`` results, of NumPy's dtype for them (add and
        multiply widen small integers to 64 bits, as ``np.add.reduce``).

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.reduceat(np.arange(8), [0, 4, 1, 5], backend="cpu")
    array([ 6,  4, 10, 18])
    """
    name = check_op(op)
    if isinstance(a, DeviceArray) or _interop.on_cuda(a):
        raise TypeError("reduceat takes a host array: pass .copy_to_host() (device reduceat is not built yet)")
    refuse_masked(a, "a")
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as e:
        raise type(e)(f"a: {e}") from None
    dtype_id(arr.dtype, "a")
    if arr.ndim != 1:
        raise ValueError(f"reduceat takes a 1-D array a (got {arr.ndim}-D)")
    idx = _host_index(indices, 0, arr.size)
    if idx.ndim != 1:
        raise ValueError(f"reduceat takes 1-D indices (got {idx.ndim}-D)")
    idx = idx.astype(np.int64)
    bad = (idx < 0) | (idx >= arr.size)
    if bad.any():
        raise IndexError(f"index {int(idx[bad][0])} out-of-bounds in {name}.reduceat [0, {arr.size}) (indices)")
    # NumPy's result dtype (add and multiply widen small integers, as
    # np.add.reduce does), and its TypeError where the op has no loop.
    out_dt = getattr(np, name).reduce(np.zeros(1, arr.dtype)).dtype.newbyteorder("=")
    out = arr[idx].astype(out_dt, copy=True)
    ends = np.append(idx[1:], arr.size)
    lengths = np.where(ends > idx, ends - idx - 1, 0)  # elements after each slice's first
    total = int(lengths.sum())
    if total:
        seg = np.repeat(np.arange(idx.size), lengths)
        offsets = np.cumsum(lengths) - lengths
        pos = np.arange(total) - np.repeat(offsets, lengths) + np.repeat(idx + 1, lengths)
        at(out, seg, arr[pos], name, method=method, backend=backend, blocks=blocks, threads=threads, stream=stream)
    return out
