"""cuatomic over dask arrays: each chunk computed by the in-memory call, where it lives.

``pip install "cuatomic[dask]"``. Every function takes a ``dask.array``
whose chunks are NumPy arrays (or CuPy arrays: they are read in place on the
cuda backend) and returns a lazy result, as ``dask.array``'s own reductions
do: a 0-d dask array for a scalar, a dask array for an array. ``.compute()``
(with any scheduler: threads, processes, ``dask.distributed``) gives what the
in-memory call gives on the concatenated data, NumPy's dtypes included:

* integers exactly, wrapping as NumPy's do (64-bit adds are associative);
* ``method="exact"`` (or ``exact_global``/``exact_shared``) float sums and
  dots bit for bit: each chunk returns its exact accumulator state
  (:class:`cuatomic.ExactSum`), the states merge exactly, and the total is
  rounded once -- the same bits for any chunking, scheduler or number of
  workers;
* other float sums: each chunk's total in float64 (its elements first cast
  to the result dtype, as NumPy casts them), the totals added exactly and
  rounded once to the result dtype, so the chunking adds no error of its
  own beyond each chunk's rung (within the in-memory bound, not its bits);
  float dots the same, from each chunk's total in the result dtype;
* minimum, maximum and the bitwise ops exactly, NaN and signed zeros as the
  in-memory ``reduce``;
* histograms and bincounts: the chunks' counts added (float weights: the
  chunks' sums added in float64, then cast to the weights' dtype).

:func:`at` and :func:`add_at` go the other way: they scatter dask arrays of
indices and values into an in-memory array, in place, so they compute
their graph themselves and return None, with the in-memory ``cuatomic.at``'s
bits (float add and subtract: each chunk's exact sums as a few float terms,
added to the array by one exact call).

Arguments are checked when the graph is built, by the in-memory calls' own
checks where there is one: a dask array whose chunks do not match its
partner's (``weights``, ``b``), an unsupported dtype or result dtype, an
unknown method, backend name or op, a filter value the elements do not
compare with, bins and a range NumPy refuses, and ``histogram`` bins given
as a count without a ``range`` (as ``dask.array.histogram``) raise there,
before anything runs. ``at`` checks every chunk before it writes anything.

The chunk tasks are this module's functions, so a worker process needs only
``import cuatomic``.
"""
import functools

import numpy as np

import cuatomic
from cuatomic import _C, _backend, _bincount, _bins, _filter, _interop, _reduce, _reduce_op, _scatter
from cuatomic._common import flag, named_rung
from cuatomic._dtypes import DTYPES, SUPPORTED
from cuatomic._device import host_array, host_copy, refuse_masked

__all__ = ["sum", "dot", "histogram", "bincount", "filter", "reduce", "min", "max", "at", "add_at", "unique_counts"]


def _dask():
    try:
        import dask
        import dask.array as da
    except ImportError as e:  # pragma: no cover - the extra is missing
        raise ImportError('cuatomic.dask needs dask: pip install "cuatomic[dask]"') from e
    return dask, da




def _supported(dt, what):
    if np.dtype(dt).newbyteorder("=") not in DTYPES:  # either byte order, as the in-memory calls take them
        raise TypeError(f"cuatomic.dask: {what} has dtype {np.dtype(dt)}; cuatomic takes {SUPPORTED}")


def _as_dask(x, name="x"):
    """x as a dask array of a dtype the in-memory calls take; a masked
    array (or dask array of masked chunks) is refused, as they refuse it."""
    dask, da = _dask()
    if not isinstance(x, da.Array):
        if not _interop.on_cuda(x):  # (a CuPy array goes to dask as it is)
            x = host_array(x, name)  # (refuses a masked array)
            _supported(x.dtype, name)  # before dask sees it: it cannot chunk object arrays
        x = da.asarray(x)
    _supported(x.dtype, name)
    if isinstance(getattr(x, "_meta", None), np.ma.MaskedArray):
        refuse_masked(x._meta, name)
    return x


def _check_backend(backend):
    """A backend named as the in-memory calls name them (whether it is
    usable is the workers' question, asked when the chunks run)."""
    if backend is not None and not (isinstance(backend, str) and backend in ("cpu", "cuda")):
        raise ValueError(f"unknown backend {backend!r}: expected 'cpu' or 'cuda'")


def _check_method(op, method, backend=None):
    _check_backend(backend)
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, not {type(method).__name__}")
    names = [n for n, _, _ in cuatomic.methods(op, "cpu")]  # the ladders have the same names on both backends
    if method != "auto" and method not in names:
        raise ValueError(f"unknown method {method!r} for {op}; valid: 'auto', " + ", ".join(map(repr, names)))


def _is_exact(op, method):
    """Whether `method` is an exact rung of `op` (F_EXACT), whose chunks
    return exact states to merge. The flag is the same on both backends
    (tests/test_api.py::test_methods_tables), so the cpu table answers for
    a backend the workers choose."""
    return method != "auto" and _backend.rung(op, "cpu", method).has(_C.F_EXACT)


def _same_chunks(a, b, what):
    if a.shape != b.shape:
        raise ValueError(f"cuatomic.dask: {what} has shape {b.shape}, the data {a.shape}")
    if a.chunks != b.chunks:
        raise ValueError(f"cuatomic.dask: {what} is chunked {b.chunks}, the data {a.chunks}: rechunk one to the "
                         f"other's chunks (b.rechunk(a.chunks)) first")


def _per_chunk(name, chunk, arrays, args, combine, combine_args, positions=False):
    """A delayed ``combine([chunk(*blocks, *args) for each chunk], *combine_args)``,
    the blocks of `arrays` (chunked alike) taken together, in C order: one
    task per chunk and one to combine them, in a single graph layer. (A
    delayed call per chunk made one layer per chunk, which dask merged and
    ordered in time growing faster than the chunks: 10,007 one-element chunks
    took minutes.) `args` and `combine_args` are passed as they are; with
    `positions` (1-D arrays), each chunk's first element's position comes
    after its blocks."""
    from dask.base import tokenize
    from dask.core import flatten, quote
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph
    token = tokenize(name, chunk, combine, [a.name for a in arrays], args, combine_args, positions)
    part, final = f"cuatomic-{name}-chunk-{token}", f"cuatomic-{name}-{token}"
    keys = zip(*(flatten(a.__dask_keys__()) for a in arrays))
    quoted, cquoted = tuple(quote(v) for v in args), tuple(quote(v) for v in combine_args)
    first = [(int(k),) for k in np.cumsum((0,) + arrays[0].chunks[0][:-1])] if positions else \
        [()] * arrays[0].npartitions
    dsk = {(part, i): (chunk, *ks, *f, *quoted) for i, (ks, f) in enumerate(zip(keys, first))}
    dsk[final] = (combine, list(dsk), *cquoted)
    return Delayed(final, HighLevelGraph.from_collections(final, dsk, dependencies=arrays))


def _host(v):
    return v.copy_to_host() if isinstance(v, cuatomic.DeviceArray) else v


def _scalar(delayed_value, dtype):
    _, da = _dask()
    return da.from_delayed(delayed_value, shape=(), dtype=dtype)


# ---------------------------------------------------------------- chunk tasks

def _astype(c, dtype):
    """c as dtype, converted where it lives (a CuPy chunk on its own GPU)."""
    if c.dtype == dtype:
        return c
    device = getattr(c, "device", None)
    if hasattr(device, "__enter__"):  # a CuPy Device: CuPy converts on the current one
        with device:
            return c.astype(dtype)
    return c.astype(dtype)


def _chunk_sum(c, dtype, method, backend):
    return cuatomic.sum(c, dtype=dtype, method=method, backend=backend)


def _chunk_exact_sum(c, dtype, method, backend):
    c = _astype(c, dtype)  # NumPy casts every element to the result dtype before it adds
    return cuatomic.ExactSum().add(c, method=method, backend=backend)


def _chunk_float_sum(c, dtype, method, backend):
    """A float sum's chunk total in float64, its elements cast to `dtype` first."""
    c = _astype(c, dtype)
    return cuatomic.sum(c, dtype=np.float64, method=method, backend=backend)


def _chunk_dot(a, b, method, backend):
    return cuatomic.dot(a.ravel(), b.ravel(), method=method, backend=backend)


def _chunk_exact_dot(a, b, method, backend):
    return cuatomic.ExactSum().add_dot(a.ravel(), b.ravel(), method=method, backend=backend)


def _combine_totals(parts, dtype):
    """Chunk totals added as the in-memory call would: integers wrapping in
    64 bits; floats (float64 or float32 totals) exactly, by the cpu's exact
    sum -- no overflow midway, NaN and infinities as IEEE addition gives
    them -- and rounded once to `dtype`."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dtype.kind != "f":
            return np.sum(np.array(parts, dtype=dtype), dtype=dtype)
        totals = np.array([float(p) for p in parts], np.float64)
        return cuatomic.ExactSum().add(totals, backend="cpu").result(dtype)


def _combine_exact(parts, dtype):
    total = functools.reduce(lambda s, p: s.merge(p), parts, cuatomic.ExactSum())
    return total.result(dtype)


def _chunk_reduce(c, op, dtype, method, backend):
    if c.size == 0 and op in ("minimum", "maximum"):
        return None  # no identity: the chunk adds nothing
    return cuatomic.reduce(c, op, dtype=dtype, method=method, backend=backend)


def _combine_reduce(parts, op, dtype):
    parts = [p for p in parts if p is not None]
    if not parts:
        raise ValueError(f"zero-size array to reduction operation {op} which has no identity")
    if op == "add":
        return _combine_totals(parts, dtype)
    return cuatomic.reduce(np.array(parts, dtype=dtype), op, dtype=dtype, backend="cpu")


def _chunk_histogram(c, w, bins, range_, method, backend):
    return _host(cuatomic.histogram(c, bins, range_, weights=w, method=method, backend=backend)[0])


def _combine_counts(parts, dtype, density, edges):
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dtype.kind == "f":  # float64 sums of the chunks' sums, rounded once to the weights' dtype
            total = np.sum(np.array(parts, np.float64), axis=0).astype(dtype)
        else:
            total = np.sum(np.array(parts, dtype), axis=0, dtype=dtype)
        if density:
            return total / np.diff(edges) / total.sum()
    return total


def _chunk_bincount(c, w, minlength, method, backend):
    return _host(cuatomic.bincount(c, w, minlength, method=method, backend=backend))


def _combine_bincount(parts, minlength, dtype):
    n = int(np.max([len(p) for p in parts] + [minlength]))
    out = np.zeros(n, dtype)
    for p in parts:
        out[:len(p)] += p
    return out


def _chunk_filter(c, op, value, method, backend):
    return _host(cuatomic.filter(c, op, value, ordered=True, method=method, backend=backend))


def _on_host(x, name):
    """A chunk on the GPU (CuPy) as a NumPy array; anything else as it is."""
    return host_copy(x, name) if isinstance(x, cuatomic.DeviceArray) or _interop.on_cuda(x) else x


def _chunk_updates(idx, b, first, shape, dtype, name):
    """A chunk's updates checked as :func:`cuatomic.at` checks them, nothing
    written: (rows of `a` from 0, values of a's dtype broadcast to them)."""
    return _scatter.checked_updates(_on_host(idx, "indices"), _on_host(b, "b"), shape, dtype, name, first)


def _chunk_terms(idx, b, first, shape, dtype, name, method, backend):
    """A chunk's float add or subtract as (rows, terms): for each row of `a`
    it updates, terms of a's dtype whose exact sum is the exact sum of the
    chunk's updates there -- its updates themselves where that sum is not
    finite (NaN, an infinity, or past the dtype's range) -- so that one
    exact call adding every chunk's terms to `a` rounds once what the
    in-memory call rounds once."""
    rows, vals = _chunk_updates(idx, b, first, shape, dtype, name)
    if name == "subtract":
        vals = -vals  # the add of the negated values, as the core subtracts (negation is exact)
    ids, at_id = np.unique(rows, return_inverse=True)
    cols = tuple(range(1, vals.ndim))

    def rounded(where, values):
        # The exact sum of `values` into rows `where` of ids, rounded once. Each starts at -0.0, the
        # identity: a zero sum is -0.0 only where every value was, as in the in-memory call.
        total = np.full((ids.size,) + vals.shape[1:], -0.0, dtype)
        cuatomic.at(total, where, values, method=method, backend=backend)
        return total

    term = rounded(at_id, vals)
    live = np.isfinite(term).all(axis=cols)
    raw = ~live[at_id]
    out_rows, out_terms = [rows[raw]], [vals[raw]]
    where, values = at_id, vals
    while live.any():
        # The first term of every finite row (a zero too: its sign counts), then each next one the
        # rounding of what the terms so far leave of the exact sum, while it is not 0: every term is
        # below half an ulp of the last, so a float64 row ends within 40 terms, a float32 one 13.
        out_rows.append(ids[live])
        out_terms.append(term[live])
        keep = live[where]
        where = np.concatenate([where[keep], np.flatnonzero(live)])
        # a zero term is fed back as -0.0, leaving the sign of a zero sum to the updates
        values = np.concatenate([values[keep], np.where(term[live] == 0, -0.0, -term[live]).astype(dtype)])
        term = rounded(where, values)
        live = (term != 0).any(axis=cols)
    return np.concatenate(out_rows), np.concatenate(out_terms)


# ---------------------------------------------------------------- the API

def sum(a, *, dtype=None, method="auto", backend=None):
    """Sum of all elements of a dask array, as ``np.sum(a.compute(), dtype=dtype)``.

    Parameters
    ----------
    a : dask.array.Array or array_like
        Chunks of NumPy or CuPy arrays, any shape.
    dtype : data-type, optional
        As NumPy's.
    method : str, optional
        A rung of the sum ladder, run on every chunk. ``"exact"`` (and the
        other exact rungs): the exact sum rounded once, identical bit for bit
        for any chunking and scheduler.
    backend : {"cuda", "cpu"}, optional
        Where the chunks are summed (default: as the in-memory call).

    Returns
    -------
    dask.array.Array
        0-d, of NumPy's result dtype; ``.compute()`` gives a NumPy scalar.

    Examples
    --------
    >>> import dask.array as da, cuatomic.dask
    >>> x = da.from_array([0.1] * 10, chunks=3)
    >>> float(cuatomic.dask.sum(x, method="exact", backend="cpu").compute())
    1.0
    """
    _dask()
    a = _as_dask(a, "a")
    _check_method("sum", method, backend)
    rdt = _reduce.result_dtype("sum", a.dtype, dtype)  # the in-memory sum's result dtype, and its errors
    if rdt.kind == "f" and _is_exact("sum", method):
        return _scalar(_per_chunk("sum", _chunk_exact_sum, [a], (rdt, method, backend), _combine_exact, (rdt,)), rdt)
    chunk_sum = _chunk_float_sum if rdt.kind == "f" else _chunk_sum
    return _scalar(_per_chunk("sum", chunk_sum, [a], (rdt, method, backend), _combine_totals, (rdt,)), rdt)


def dot(a, b, *, method="auto", backend=None):
    """Dot product of two 1-D dask arrays chunked alike, as ``np.dot``.

    Parameters
    ----------
    a, b : dask.array.Array or array_like
        1-D, of one length and the same chunks (a ValueError otherwise, when
        the graph is built).
    method, backend
        As for :func:`sum`; ``"exact"`` rounds the exact dot once.

    Returns
    -------
    dask.array.Array
        0-d, of ``np.dot``'s result dtype.
    """
    _dask()
    a, b = _as_dask(a, "a"), _as_dask(b, "b")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"cuatomic.dask.dot takes two 1-D arrays: a of shape {a.shape} and b of shape {b.shape} "
                         "(matrix products: dask.array.matmul)")
    _same_chunks(a, b, "b")
    _check_method("dot", method, backend)
    rdt = np.dot(np.zeros(1, a.dtype), np.zeros(1, b.dtype)).dtype
    if rdt.kind == "f" and _is_exact("dot", method):
        return _scalar(_per_chunk("dot", _chunk_exact_dot, [a, b], (method, backend), _combine_exact, (rdt,)), rdt)
    return _scalar(_per_chunk("dot", _chunk_dot, [a, b], (method, backend), _combine_totals, (rdt,)), rdt)


def reduce(a, op, *, dtype=None, method="auto", backend=None):
    """All elements folded with a ufunc, as ``getattr(np, op).reduce(a.ravel(), dtype=dtype)``.

    Parameters
    ----------
    a : dask.array.Array or array_like
    op : {"add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"} or ufunc
    dtype, method, backend
        As for :func:`cuatomic.reduce`.

    Returns
    -------
    dask.array.Array
        0-d, of NumPy's result dtype.

    Raises
    ------
    TypeError, ValueError
        When the graph is built: an unknown op, a bitwise op on floats, the
        minimum or maximum of an empty array (NumPy's errors).
    """
    _dask()
    a = _as_dask(a, "a")
    _check_method("reduce", method, backend)
    name = _reduce_op._op_name(op)  # the in-memory reduce's check
    rdt = _reduce_op.result_dtype(name, a.dtype, dtype)  # the in-memory reduce's result dtype, and its errors
    if a.size == 0 and name in ("minimum", "maximum"):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    return _scalar(_per_chunk("reduce", _chunk_reduce, [a], (name, dtype, method, backend), _combine_reduce,
                              (name, rdt)), rdt)


def min(a, *, method="auto", backend=None):
    """The smallest element, as ``np.min``: :func:`reduce` with ``"minimum"``."""
    return reduce(a, "minimum", method=method, backend=backend)


def max(a, *, method="auto", backend=None):
    """The largest element, as ``np.max``: :func:`reduce` with ``"maximum"``."""
    return reduce(a, "maximum", method=method, backend=backend)


def histogram(a, bins, range=None, *, weights=None, density=False, method="auto", backend=None):
    """Histogram of a dask array, as ``np.histogram`` on its data.

    As ``dask.array.histogram``, the bins must be known without reading the
    data: a number of bins and a `range`, or explicit edges.

    Parameters
    ----------
    a : dask.array.Array or array_like
    bins : int or sequence of scalars
    range : (float, float), required when `bins` is a number
    weights : dask.array.Array or array_like, optional
        Of a's shape and chunks.
    density : bool, optional
    method, backend
        A rung of ``methods("histogram")`` (with weights, of
        ``methods("weighted_histogram")``), run on every chunk.

    Returns
    -------
    hist : dask.array.Array
        int64 counts, or sums of the weights' dtype (float64 with density).
    bin_edges : numpy.ndarray

    Raises
    ------
    TypeError, ValueError, OverflowError
        When the graph is built, as the in-memory :func:`cuatomic.histogram`
        raises them: a bin count that is not a positive integer (``2.5``),
        a range NumPy refuses, edges that are not increasing numbers (or
        hold a NaN); and a ValueError for an estimator name (``"auto"``
        reads the data) or a bin count without a `range`.
    """
    _, da = _dask()
    a = _as_dask(a, "a")
    density = flag("density", density)
    if isinstance(bins, str):
        raise ValueError(f"cuatomic.dask.histogram needs the bins without reading the data: bins={bins!r} "
                         "estimates them from the data; pass a number of bins and a range=(lo, hi), or explicit "
                         "edges (as dask.array.histogram)")
    if np.ndim(bins) == 0:
        count = _bins.bin_count(bins)  # the in-memory call's checks: an integer, positive, that fits
        if range is None:
            raise ValueError("cuatomic.dask.histogram needs the bins without reading the data: a number of bins "
                             "and a range=(lo, hi), or explicit edges (as dask.array.histogram)")
        edges = _bins.fixed_edges(count, range, a.dtype)  # NumPy's edges, of its dtype, and its errors
    else:
        _bins.check_edges(bins)  # real numbers, no NaN: as the in-memory call refuses them
        edges = np.asarray(bins)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) < 0):
            raise ValueError("bins must increase monotonically, when an array")
    _check_method("histogram" if weights is None else "weighted_histogram", method, backend)
    # Every chunk is binned as the caller asked -- a count and the range, or the edges -- so each
    # takes the whole array's bins and NumPy's path for them.
    form = (count, range) if np.ndim(bins) == 0 else (edges, None)
    if weights is None:
        hdt = np.dtype(np.int64)
        total = _per_chunk("histogram", _chunk_histogram, [a], (None, *form, method, backend), _combine_counts,
                           (hdt, density, edges))
    else:
        weights = _as_dask(weights, "weights")
        _same_chunks(a, weights, "weights")
        # the result dtype as NumPy gives it for the bins in the form given (its edge path refuses bool weights)
        hdt = np.histogram(np.zeros(1, a.dtype), *form, weights=np.zeros(1, weights.dtype))[0].dtype
        total = _per_chunk("histogram", _chunk_histogram, [a, weights], (*form, method, backend), _combine_counts,
                           (hdt, density, edges))
    out_dt = np.dtype(np.float64) if density else hdt
    return da.from_delayed(total, shape=(edges.size - 1,), dtype=out_dt), edges


def bincount(x, weights=None, minlength=0, *, method="auto", backend=None):
    """Occurrences of each value of a 1-D dask array, as ``np.bincount``.

    Parameters
    ----------
    x : dask.array.Array or array_like
        1-D, of non-negative integers or bools.
    weights : dask.array.Array or array_like, optional
        Of x's shape and chunks.
    minlength : int, optional
    method, backend
        As for :func:`cuatomic.bincount`, on every chunk.

    Returns
    -------
    dask.array.Array
        1-D, of a length known after computing (``max(x) + 1`` or
        `minlength`); int64 counts, or float64 sums of the weights (int64
        zeros for empty `x`, as NumPy's).
    """
    _, da = _dask()
    x = _as_dask(x, "x")
    _bincount.one_dimensional(x.ndim, "x")  # the in-memory call's checks and messages
    _bincount.bincount_dtype(x.dtype)
    if x.dtype == np.uint64:  # refused here as before (the in-memory call takes uint64 values that fit int64)
        raise TypeError("x must hold integers or bools: Cannot cast array data from dtype('uint64') to "
                        "dtype('int64') according to the rule 'safe'")
    minlength = _bincount.minlength_of(minlength)  # the in-memory call's checks and messages
    _check_method("histogram" if weights is None else "weighted_histogram", method, backend)
    if weights is None:
        dt = np.dtype(np.int64)
        total = _per_chunk("bincount", _chunk_bincount, [x], (None, minlength, method, backend), _combine_bincount,
                           (minlength, dt))
    else:
        weights = _as_dask(weights, "weights")
        _same_chunks(x, weights, "weights")
        # NumPy answers empty input with int64 zeros, whatever the weights (it never reads them)
        dt = np.dtype(np.int64 if x.size == 0 else np.float64)
        total = _per_chunk("bincount", _chunk_bincount, [x, weights], (minlength, method, backend),
                           _combine_bincount, (minlength, dt))
    return da.from_delayed(total, shape=(np.nan,), dtype=dt)


def filter(a, op, value, *, method="auto", backend=None):
    """The elements x of a dask array (flattened, C order) with ``x <op> value``, in order.

    Parameters
    ----------
    a : dask.array.Array or array_like
    op : {"<", "<=", ">", ">=", "==", "!="} or ufunc
        As for :func:`cuatomic.filter` (NumPy's comparison ufuncs too).
    value : scalar
    method, backend
        A rung of ``methods("filter")`` that keeps order, or ``"auto"``.

    Returns
    -------
    dask.array.Array
        1-D, of a's dtype, with chunks of unknown size (one per chunk of
        ``a.ravel()``), in order.
    """
    _dask()
    a = _as_dask(a, "a")
    op = _filter.check_op(op)  # the in-memory call's checks: the op, and a value its elements compare with
    _filter.predicate(a.dtype.newbyteorder("="), op, value)
    _check_method("filter", method, backend)
    if method != "auto" and not _backend.rung("filter", "cpu", method).has(_C.F_ORDERED):
        raise ValueError(f"method {method!r} does not keep order; a dask filter keeps it: 'auto' or a rung that "
                         f"keeps order")
    flat = a.reshape(-1)
    # One task per chunk in one graph layer (map_blocks), each chunk's length known once it has run.
    return flat.map_blocks(_chunk_filter, op, value, method, backend, chunks=((np.nan,) * flat.numblocks[0],),
                           dtype=a.dtype, meta=flat._meta)


def _chunk_unique_counts(c, method, backend):
    """A chunk's table: its distinct values (any order) and their counts, on the host."""
    values, counts = cuatomic.unique_counts(c, method=method, backend=backend)
    return _host(values), _host(counts)


def _combine_unique_counts(parts, dtype, method, backend):
    """The chunks' tables merged: their values' own unique (each NaN its own
    value, as each chunk's), and each chunk's counts added into their
    value's slot by cuatomic's scatter."""
    if not parts:
        return np.empty(0, dtype), np.empty(0, np.int64)
    values = np.concatenate([p[0] for p in parts]).astype(dtype, copy=False)
    counts = np.concatenate([p[1] for p in parts])
    distinct, inverse = cuatomic.unique(values, return_inverse=True, equal_nan=False, method=method,
                                        backend=backend)
    total = np.zeros(len(distinct), np.int64)
    cuatomic.add_at(total, inverse.reshape(-1), counts, backend="cpu")
    return distinct, total


def unique_counts(x, *, method="auto", backend=None):
    """The distinct values of a dask array and their counts, as ``np.unique_counts``.

    Each chunk builds its own table (:func:`cuatomic.unique_counts`, on the
    host or its GPU); the tables -- a few values each where the chunks repeat
    values -- are merged in one task: their values' unique, and the counts
    added by :func:`cuatomic.add_at`.

    Parameters
    ----------
    x : dask.array.Array or array_like
        Any shape (flattened); bool, integers, float32, float64.
    method, backend
        As for :func:`cuatomic.unique`, on every chunk and the merge.

    Returns
    -------
    cuatomic.UniqueCountsResult
        Of two 1-D dask arrays of a length known after computing: the
        values, sorted (each NaN a value of its own, as NumPy's), and their
        int64 counts.
    """
    _, da = _dask()
    x = _as_dask(x, "x")
    _supported(x.dtype, "x")
    _check_method("unique", method, backend)
    dt = x.dtype.newbyteorder("=")
    # The blocks as they are (each is flattened by its own call; counts do not need C order): no rechunk
    total = _per_chunk("unique_counts", _chunk_unique_counts, [x], (method, backend),
                       _combine_unique_counts, (dt, method, backend))
    return cuatomic.UniqueCountsResult(da.from_delayed(total[0], shape=(np.nan,), dtype=dt),
                                       da.from_delayed(total[1], shape=(np.nan,), dtype=np.int64))


def _at_indices(indices, shape, b):
    """indices as a 1-D dask array, checked as :func:`cuatomic.at` checks
    them: a host array whole (chunked as a dask `b` of one value per
    update is, else by dask), a dask array's type here (its values when
    the chunks run)."""
    _, da = _dask()
    if isinstance(indices, tuple):
        raise TypeError("cuatomic.dask.at takes one 1-D array of indices into a's first axis, not a tuple of them: "
                        "pass np.ravel_multi_index(indices, a.shape[:k]) into a reshaped a")
    if isinstance(indices, da.Array):
        if isinstance(indices._meta, np.ma.MaskedArray):
            refuse_masked(indices._meta, "indices")
        _scatter.indices_for(np.zeros(0, indices.dtype), shape, "cpu", 0)  # its type and a's dimensions
    else:
        ix = _scatter.indices_for(_on_host(indices, "indices"), shape, "cpu", 0)
        like = isinstance(b, da.Array) and b.ndim == len(shape) and len(ix.shape) == 1 and b.shape[0] == ix.n
        indices = da.from_array(ix.x.reshape(ix.shape), chunks=b.chunks[:1] if like else "auto", name=False)
    if indices.ndim != 1:
        raise ValueError(f"cuatomic.dask.at takes 1-D indices (got {indices.ndim}-D): pass indices.ravel() and b "
                         "reshaped to match")
    if np.isnan(indices.shape[0]):
        raise ValueError("cuatomic.dask.at needs the indices' chunk sizes (the updates' positions and b's chunks): "
                         "call indices.compute_chunk_sizes() first")
    return indices


def _at_values(b, dt, full, chunks, name):
    """b as a dask array of the updates' shape `full`, chunked as the
    indices (`chunks`) along them and whole rows across, checked as
    :func:`cuatomic.at` checks it: a host b whole, here; a dask b's type
    and shape here, its values when the chunks run."""
    _, da = _dask()
    blocks = (chunks,) + tuple(full[1:])
    if not isinstance(b, da.Array):
        return da.from_array(_scatter.update_values(b, dt, full[:1], full[1:], name), chunks=blocks, name=False)
    if isinstance(b._meta, np.ma.MaskedArray):
        refuse_masked(b._meta, "b")
    _scatter.value_type(np.zeros(0, b.dtype), dt, name)
    _scatter.check_broadcast(b.shape, full)
    b = b[(None,) * (len(full) - b.ndim)]
    if b.shape[0] != 1 and b.chunks[0] != chunks:
        raise ValueError(f"cuatomic.dask: b is chunked {b.chunks[0]} along the updates, the indices {chunks}: "
                         "rechunk one to the other's chunks (b.rechunk({0: indices.chunks[0]})) first")
    return da.broadcast_to(b.rechunk((b.chunks[0],) + b.shape[1:]), full, chunks=blocks)


@_interop.on_inputs_gpu
def at(a, indices, b=None, op="add", *, method="auto", backend=None):
    """``cuatomic.at(a, indices.compute(), b.compute(), op)``, chunk by chunk:
    the updates of dask arrays into an in-memory array, in place.

    Every chunk's updates are checked (and for float add and subtract,
    summed) by a task of its own; `a` is written by this call, once every
    chunk has passed the checks, so an index out of range in any chunk
    leaves `a` as it was.

    * Integers, bool, the bitwise ops and minimum and maximum (of floats
      too: IEEE 754-2019's order, NaN first and -0.0 below +0.0): the
      chunks are applied one after the other, each as the in-memory call
      applies it. These ops are associative: the same bits as the in-memory
      call, for any chunking.
    * Float add and subtract with ``method="auto"`` (or an exact rung,
      ``exact``, ``exact_private``): each chunk returns, for every row it
      updates, a few terms of a's dtype whose exact sum is its updates'
      exact sum (its updates themselves where that sum is NaN, infinite or
      past the dtype's range), and one exact call adds every chunk's terms
      to `a`, rounding each element once: the in-memory call's correctly
      rounded sums, bit for bit, for any chunking.
    * Float multiply, and float add and subtract by a rung that is not
      exact (``atomic``, ``cas``, ...): the chunks are applied in chunk
      order, each by the rung. No such in-memory call is deterministic
      (none of these rungs carries ``F_DETERMINISTIC``, and ``auto`` runs
      one for multiply), and neither is this one.

    Parameters
    ----------
    a : ndarray, DeviceArray or CUDA device array
        Updated in place, as by :func:`cuatomic.at` (a device array on the
        cuda backend).
    indices : dask.array.Array or array_like of int
        1-D, indexes a's first axis (a row of an N-D `a` is updated whole);
        negative indices count from the end. A host array is chunked as a
        dask `b` with the updates' axis is (else as dask chunks it).
    b : dask.array.Array, array_like or scalar
        The values, broadcast to ``indices.shape + a.shape[1:]`` and cast
        to a's dtype as :func:`cuatomic.at` casts them. A dask `b` that has
        the updates' axis must be chunked along it as `indices` is.
    op : str or numpy.ufunc, default "add"
        As :func:`cuatomic.at`.
    method : str, default "auto"
        A rung of ``methods("at")``, for every chunk.
    backend : {"cpu", "cuda"}, optional
        Where `a` is updated (and the chunks' float sums are made).

    Returns
    -------
    None

    Raises
    ------
    IndexError, TypeError, ValueError
        As :func:`cuatomic.at` raises them, before `a` is written: what
        the data's types and shapes show when the graph is built, what its
        values show (an index out of range) when the chunks have run; and
        a ValueError for indices that are not 1-D or a dask `b` chunked
        otherwise than the indices.

    Examples
    --------
    >>> import numpy as np, dask.array as da, cuatomic.dask
    >>> a = np.zeros(3)
    >>> cuatomic.dask.at(a, da.from_array([0, 2, 2, 0, 2], chunks=2), 0.1, backend="cpu")
    >>> a
    array([0.2, 0. , 0.3])
    """
    dask, _ = _dask()
    be = _backend.resolve(backend)
    rung = named_rung("at", be, method)
    target, name, core, _ = _scatter.target_and_op(a, b, op, be, 0)  # the in-memory call's checks, in its order
    indices = _at_indices(indices, target.shape, b)
    b = _at_values(b, target.dtype, indices.shape + target.shape[1:], indices.chunks[0], name)
    if _scatter.float_add(target.dtype, core) and (rung is None or rung.has(_C.F_EXACT)):
        chunks = _per_chunk("at", _chunk_terms, [indices, b], (target.shape, target.dtype, name, method, backend),
                            list, (), positions=True)
        parts = dask.compute(chunks)[0]
        terms = [np.concatenate([p[k] for p in parts]) for k in (0, 1)]
        _scatter.update_in_place(target, [terms], "add", be, rung)
    else:
        chunks = _per_chunk("at", _chunk_updates, [indices, b], (target.shape, target.dtype, name), list, (),
                            positions=True)
        _scatter.update_in_place(target, dask.compute(chunks)[0], name, be, rung)


def add_at(a, indices, b=None, *, method="auto", backend=None):
    """``cuatomic.add_at(a, indices.compute(), b.compute())``: :func:`at` with ``op="add"``.

    Parameters
    ----------
    a, indices, b, method, backend
        As :func:`at`.

    Returns
    -------
    None
    """
    return at(a, indices, b, "add", method=method, backend=backend)
