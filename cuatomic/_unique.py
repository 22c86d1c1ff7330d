"""unique and the array API's unique_values, unique_counts, unique_inverse
and unique_all: NumPy's results for the flattened input, from the unique
ladder -- the sort the peers use, then hash tables built with atomicCAS
(``methods("unique")``; cuda/unique.cu tells the lesson)."""
import collections

import numpy as np

from . import _C, _backend
from ._common import auto_rung, flag, launch_config, named_rung, prepare, shape_of, stream_of
from ._device import DeviceArray, host_copy, refuse_masked
from ._interop import on_inputs_gpu

UniqueAllResult = collections.namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", ["values", "inverse_indices"])
for _t, _what in ((UniqueAllResult, "values, first indices, inverse and counts"),
                  (UniqueCountsResult, "values and counts"), (UniqueInverseResult, "values and inverse")):
    _t.__doc__ = f"What :func:`cuatomic.{_t.__name__[:-6].replace('All', '_all').replace('Counts', '_counts').replace('Inverse', '_inverse').lower()}` returns: the {_what} (NumPy's field names)."

_INDEX = np.dtype(np.intp)


def _inverse_keeps_shape():
    """Whether this NumPy's ``np.unique(a, return_inverse=True)`` gives the
    inverse in a's shape (NumPy 2.0.0 and 2.1 on, for axis=None) or
    flattened (1.26, 2.0.1) -- asked of NumPy itself, once."""
    return np.unique(np.zeros((1, 2)), return_inverse=True)[1].shape == (1, 2)


_KEEP_SHAPE = _inverse_keeps_shape()

_PARAMS = """a : array_like, DeviceArray, or a device array of another library
        Any shape (flattened in C order), layout or byte order; bool,
        integers, float32, float64.
    method : str, optional
        A rung of ``methods("unique")``: ``"sort"`` (the peers' radix sort
        and runs), ``"global"`` (one hash table in global memory: atomicCAS
        claims a slot, atomicAdd counts, atomicMin keeps the first index),
        ``"shared"`` (block-private tables in front of it),
        ``"warp_aggregated"`` (equal keys of a warp inserted once),
        ``"vector"`` (the fast rung). ``"auto"``: the rule measured for
        this backend, else the top rung; :func:`explain` says which.
        Every rung gives the same values, counts, indices and inverse.
    backend : {None, "cpu", "cuda"}, optional
        As for :func:`sum`.
    blocks, threads : int, optional
        The launch configuration (None: the rung's own).
    stream : optional
        As for :func:`sum`."""

_RETURNS = """Device input gives DeviceArrays (host input ndarrays, also on the cuda
    backend). Values are of a's dtype; indices, inverse and counts int64
    (intp). -0.0 and 0.0 are one value (returned as 0.0); every NaN is one
    value (the last, returned as the canonical quiet NaN), or with
    ``equal_nan=False`` each NaN a value of its own, as NumPy."""


@on_inputs_gpu
def unique(a, return_index=False, return_inverse=False, return_counts=False, *, equal_nan=True, sorted=True,
           method="auto", backend=None, blocks=None, threads=None, stream=None):
    return _unique(a, return_index, return_inverse, return_counts, equal_nan, sorted, method, backend, blocks,
                   threads, stream)


unique.__doc__ = f"""The distinct values of an array, as ``np.unique(a, ...)`` with ``axis=None``.

    Parameters
    ----------
    {_PARAMS.replace("a : array_like", "a : array_like", 1)}
    return_index : bool, optional
        Also the index of each value's first occurrence in the flattened
        array.
    return_inverse : bool, optional
        Also each element's value as an index into the values (its shape:
        the installed NumPy's rule -- a's shape on NumPy 2.0.0 and 2.1 on,
        flattened on 1.26 and 2.0.1).
    return_counts : bool, optional
        Also how often each value occurs.
    equal_nan : bool, optional
        True (NumPy's default): every NaN is one value. False: each NaN is a
        value of its own (done on the host: the results pass through host
        memory when the input has more than one NaN).
    sorted : bool, optional
        True: the values ascending (only the distinct values are sorted,
        never the input). False: in any order (the hash tables' own), faster.

    Returns
    -------
    values : ndarray or DeviceArray
        The distinct values; alone when no ``return_*`` is asked, else the
        first of a tuple that holds, in this order, those asked of
        ``indices``, ``inverse`` and ``counts``. {_RETURNS}

    Raises
    ------
    TypeError
        An unsupported dtype (float16, complex, object), a masked array, a
        non-bool flag.
    ValueError
        An unknown method or backend, or a launch configuration the rung
        cannot take.
    CudaError
        A CUDA failure, with the CUDA error's name.

    Notes
    -----
    A hash table that passes half full is thrown away and built again four
    times larger: a count is never read from a table that filled, and the
    largest table needed (2n slots) holds every key. On a GPU the one-table
    rungs start at 2^20 slots, and ``vector`` builds one table of 2^14
    slots, past which (more than about 2^13 distinct values) it partitions
    the keys by hash into buckets that one block each counts in shared
    memory (the inverse wanted, or more distinct values than 1024 such
    tables hold: the ``sort`` rung's radix sort); on a CPU the one-table
    rungs start at 2^14 slots and ``vector`` partitions the keys by hash
    into buckets that one thread each counts in its cache. The key equal to the
    tables' empty mark (the largest uint32/int32/uint64/int64 value, as a
    key word) is counted in a cell beside the table.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.unique(np.array([3, 1, 3, 2, 1, 3]), backend="cpu")
    array([1, 2, 3])
    >>> values, counts = cuatomic.unique(np.array([3, 1, 3, 2, 1, 3]), return_counts=True, backend="cpu")
    >>> counts
    array([2, 1, 3])
    >>> cuatomic.unique(np.array([0.0, -0.0, np.nan, np.nan]), backend="cpu")
    array([ 0., nan])
    """


def _namedtuple_doc(name, fields, what):
    return f"""{what}, as ``np.{name}(x)`` (the array API's function).

    Parameters
    ----------
    {_PARAMS.replace("a : array_like", "x : array_like", 1)}

    Returns
    -------
    {fields}
        {_RETURNS} As NumPy's array-API functions: each NaN is a value of
        its own (``equal_nan=False``), the inverse has x's shape, and the
        values are {{order}}.
    """


@on_inputs_gpu
def unique_values(x, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    return _unique(x, False, False, False, False, False, method, backend, blocks, threads, stream)


@on_inputs_gpu
def unique_counts(x, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    return UniqueCountsResult(*_unique(x, False, False, True, False, True, method, backend, blocks, threads, stream))


@on_inputs_gpu
def unique_inverse(x, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    values, inverse = _unique(x, False, True, False, False, True, method, backend, blocks, threads, stream,
                              keep_shape=True)
    return UniqueInverseResult(values, inverse)


@on_inputs_gpu
def unique_all(x, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    return UniqueAllResult(*_unique(x, True, True, True, False, True, method, backend, blocks, threads, stream,
                                    keep_shape=True))


_SORTED = "sorted"
unique_values.__doc__ = _namedtuple_doc("unique_values", "values : ndarray or DeviceArray", "The distinct values") \
    .replace("{order}", "in the hash table's order (``sorted=False``: NumPy 2.3's too leaves it unspecified)")
unique_counts.__doc__ = _namedtuple_doc("unique_counts", "UniqueCountsResult(values, counts)",
                                        "The distinct values and their counts").replace("{order}", _SORTED)
unique_inverse.__doc__ = _namedtuple_doc("unique_inverse", "UniqueInverseResult(values, inverse_indices)",
                                         "The distinct values and each element's index into them") \
    .replace("{order}", _SORTED)
unique_all.__doc__ = _namedtuple_doc("unique_all", "UniqueAllResult(values, indices, inverse_indices, counts)",
                                     "The distinct values, first indices, inverse and counts").replace("{order}", _SORTED)


def _unique(a, return_index, return_inverse, return_counts, equal_nan, want_sorted, method, backend, blocks,
            threads, stream, keep_shape=None):
    refuse_masked(a)
    return_index, return_inverse, return_counts = (flag("return_index", return_index),
                                                   flag("return_inverse", return_inverse),
                                                   flag("return_counts", return_counts))
    equal_nan, want_sorted = flag("equal_nan", equal_nan), flag("sorted", want_sorted)
    be = _backend.resolve(backend)
    rung = named_rung("unique", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    shape = shape_of(a)
    inp = prepare(a, be, stream=s)
    keep_shape = _KEEP_SHAPE if keep_shape is None else keep_shape
    inv_shape = tuple(shape) if keep_shape else (inp.n,)
    float_nans = not equal_nan and inp.dtype.kind == "f"
    if float_nans:
        want_sorted = True  # the NaNs are split off the end of the sorted values
    if inp.n == 0:
        parts = [np.empty(0, inp.dtype), np.empty(0, _INDEX), np.empty(inv_shape, _INDEX), np.empty(0, _INDEX)]
        if inp.device:
            parts = [DeviceArray.from_host(p) for p in parts]
    else:
        if rung is None:
            rung = auto_rung("unique", be, inp.n, inp.dtype)
        want = ((_C.UNIQUE_FIRST if return_index else 0) | (_C.UNIQUE_INVERSE if return_inverse else 0)
                | (_C.UNIQUE_SORTED if want_sorted else 0))
        values, index, counts, inverse, _ = _C.unique(
            backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id, want=want, blocks=nb,
            threads=nt, device_out=inp.device, stream=s)
        if inp.device:
            k = values.nbytes // inp.dtype.itemsize
            values = DeviceArray._vector(values, k, inp.dtype)
            counts = DeviceArray._vector(counts, k, _INDEX)
            index = None if index is None else DeviceArray._vector(index, k, _INDEX)
            inverse = None if inverse is None else DeviceArray._shaped(inverse, inv_shape, inp.n, _INDEX)
        else:
            if inverse is not None:
                inverse = inverse.reshape(inv_shape)
            given = getattr(a, "dtype", None)
            if isinstance(given, np.dtype) and given != values.dtype and given.newbyteorder("=") == values.dtype:
                values = values.astype(given)  # a's byte order, as NumPy's (k elements)
        parts = [values, index, inverse, counts]
        if float_nans:
            parts = _split_nans(a, inp, parts)
    out = [parts[0]] + [p for p, w in zip(parts[1:], (return_index, return_inverse, return_counts)) if w]
    return out[0] if len(out) == 1 else tuple(out)


def _split_nans(a, inp, parts):
    """equal_nan=False: the one NaN value (last, sorted) split into one value
    per NaN -- its own first index, count 1, and its own inverse entry, in
    index order, as NumPy gives them. On the host (device results go there
    and back only when there are two NaNs or more)."""
    values, index, inverse, counts = parts
    device = isinstance(values, DeviceArray)
    if device:  # the last value and its count first: the input is fetched only for two NaNs or more
        last, last_count = values.copy_to_host()[-1:], counts.copy_to_host()[-1:]  # (k elements, not n)
    else:
        last, last_count = values[-1:], counts[-1:]
    if last.size == 0 or not np.isnan(last[0]) or last_count[0] < 2:
        return parts
    host_values = values.copy_to_host() if device else values
    x = (host_copy(a) if inp.device else inp.x).reshape(-1)
    nans = np.flatnonzero(np.isnan(x))
    if nans.size < 2:
        return parts
    k = host_values.size - 1
    fetch = (lambda p: p.copy_to_host()) if device else (lambda p: p)
    host = [host_values, None if index is None else fetch(index), None if inverse is None else fetch(inverse),
            fetch(counts)]
    host[0] = np.concatenate([host[0][:k], np.full(nans.size, np.nan, inp.dtype)])
    if host[1] is not None:
        host[1] = np.concatenate([host[1][:k], nans])
    if host[2] is not None:
        flat = host[2].reshape(-1).copy()
        flat[nans] = k + np.arange(nans.size)
        host[2] = flat.reshape(host[2].shape)
    host[3] = np.concatenate([host[3][:k], np.ones(nans.size, _INDEX)])
    if not device:
        return host
    return [None if h is None else DeviceArray.from_host(np.ascontiguousarray(h)) for h in host]

