"""histogramdd and histogram2d: ``np.histogramdd`` / ``np.histogram2d`` on
the histogramdd ladder. NumPy makes the edges -- from each dimension's
minimum and maximum (one pass on the device) standing in for the sample --
so every bins and range form, every check and message is NumPy's own; the
rung counts every point's cell, a point outside any dimension's edges
dropped as NumPy drops it. Weights are summed by the weighted histogram's
ladder over every point's cell (deterministic float sums)."""
import math

import numpy as np

from . import _auto, _backend, _C, _interop
from ._bins import kernel_bins
from ._common import auto_rung, dtype_id, launch_config, named_rung, shape_of, stream_of
from ._device import DeviceArray, host_array, refuse_masked
from ._interop import on_inputs_gpu

_F64 = np.dtype(np.float64)
_EXACT = 2.0 ** 53


class _Sample:
    """A sample as the kernels read it: n points, each dimension a column
    address and an element stride, the dtype, where it lives, and the
    arrays that keep the memory alive."""

    def __init__(self, n, dtype, cols, strides, device, keep, given_on_device=None):
        self.n, self.dtype, self.cols, self.strides, self.device, self.keep = n, dtype, cols, strides, device, keep
        self.ndim = len(cols)
        # a host sample on the cuda backend is copied to the device, and its histogram comes back
        self.given_on_device = device if given_on_device is None else given_on_device


def _is_device(a):
    return isinstance(a, DeviceArray) or _interop.on_cuda(a)


def _float64_weights(weights):
    """Whether device weights are float64, which auto's deterministic sum
    takes -- read from the array's own description, nothing prepared
    twice (any other dtype, or an array known by DLPack alone, goes to
    bincount, whose checks name what it refuses)."""
    if isinstance(weights, DeviceArray):
        return weights.dtype == np.float64
    cai = getattr(weights, "__cuda_array_interface__", None)
    return isinstance(cai, dict) and np.dtype(cai.get("typestr", "|V1")) == np.float64


def _device_columns(arrays, s):
    """Device arrays (one (N, D) array, or D arrays of N) as a _Sample."""
    from ._common import prepare
    if len(arrays) == 1:
        a = arrays[0]
        shape = tuple(int(v) for v in a.shape)
        if len(shape) == 1:  # N points of one dimension, as NumPy reads a 1-D sample
            shape = (shape[0], 1)
        if len(shape) != 2:
            raise ValueError(f"a device sample must be an (N, D) array or a sequence of D 1-D arrays (got shape "
                             f"{shape})")
        inp = prepare(a, "cuda", "sample", stream=s)
        n, d = shape
        size = inp.dtype.itemsize
        return _Sample(n, inp.dtype, [inp.x + k * size for k in range(d)], [d] * d, True, [inp])
    inps = [prepare(a, "cuda", "sample", stream=s) for a in arrays]
    dts = {i.dtype for i in inps}
    if len(dts) != 1:
        raise TypeError(f"the sample's device arrays must share one dtype (got {', '.join(sorted(map(str, dts)))})")
    ns = {i.n for i in inps}
    for a in arrays:
        if len(getattr(a, "shape", ())) != 1:
            raise ValueError("a device sample given as a sequence must hold 1-D arrays")
    if len(ns) != 1:
        raise ValueError(f"the sample's arrays must have one length (got {sorted(ns)})")
    return _Sample(ns.pop(), dts.pop(), [i.x for i in inps], [1] * len(inps), True, inps)


def _host_sample(sample):
    """NumPy's reading of a host sample: an (N, D) array, else a sequence of
    D 1-D arrays (np.atleast_2d(sample).T), as np.histogramdd reads it."""
    refuse_masked(sample, "sample")
    if isinstance(sample, (list, tuple)):
        for v in sample:
            refuse_masked(v, "sample")
    try:
        n, d = sample.shape
    except (AttributeError, ValueError):
        sample = np.atleast_2d(sample).T
        n, d = sample.shape
    return host_array(sample, "sample")


def _prepare(sample, backend, s):
    """The sample where the backend reads it: a _Sample (None for a host
    sample on the cpu backend, which stays an ndarray until counted)."""
    parts = list(sample) if isinstance(sample, (list, tuple)) else [sample]
    if parts and all(_is_device(p) for p in parts):
        if backend != "cuda":
            raise TypeError(f"sample is on a CUDA device but the backend is {backend!r}: use backend='cuda'")
        return _device_columns(parts if isinstance(sample, (list, tuple)) else [sample], s)
    if any(_is_device(p) for p in parts):
        raise TypeError("the sample mixes device and host arrays: put them all on one side")
    arr = _host_sample(sample)
    dt = arr.dtype
    dtype_id(dt, "sample")
    if not dt.isnative:
        arr = arr.astype(dt.newbyteorder("="))
    arr = np.ascontiguousarray(arr)
    n, d = arr.shape
    size = arr.dtype.itemsize
    if backend == "cuda":
        dev = DeviceArray.from_host(arr)
        return _Sample(n, arr.dtype, [dev.ptr + k * size for k in range(d)], [d] * d, True, [dev, arr], False)
    return _Sample(n, arr.dtype, [arr.ctypes.data + k * size for k in range(d)], [d] * d, False, [arr])


def _column_extremes(smp, k, s):
    """(min, max) of dimension k as a 2-element array of the sample's dtype
    (NaN, NaN when it holds a NaN: NumPy's error then follows)."""
    n, dt = smp.n, smp.dtype
    if not smp.given_on_device:  # (a host sample copied to the device has its host copy last in keep)
        col = smp.keep[-1][:, k]
        with np.errstate(invalid="ignore"):
            return np.array([col.min(), col.max()], dt)
    ptr = smp.cols[k]
    keep = None
    if smp.strides[k] != 1:  # a column of an (N, D) array: gathered first
        keep = DeviceArray.empty((n,), dt)
        _C.gather(ptr, keep.ptr, n, dt.itemsize, (n,), (smp.strides[k] * dt.itemsize,), s)
        ptr = keep.ptr
    lo, hi, has_nan = _C.minmax(ptr, n, dtype_id(dt), s)
    if has_nan:
        return np.array([np.nan, np.nan], dt)
    return np.concatenate([np.frombuffer(lo[:dt.itemsize], dt), np.frombuffer(hi[:dt.itemsize], dt)])


def _numpy_edges(smp, bins, range, s):
    """NumPy's edges for this sample (and its checks and errors): np.histogramdd
    of each dimension's minimum and maximum, which give it the same edges."""
    d = smp.ndim
    try:
        m = len(bins)
    except TypeError:
        m = None
    per_dim = [bins] * d if m is None else list(bins) if m == d else None
    ranges = [None] * d if range is None or (hasattr(range, "__len__") and len(range) != d) else list(range)
    stand_in = np.zeros((2 if smp.n else 0, d), smp.dtype)
    if smp.n and per_dim is not None:
        for k in np.arange(d):
            if np.ndim(per_dim[k]) == 0 and ranges[k] is None:
                stand_in[:, k] = _column_extremes(smp, int(k), s)
    return np.histogramdd(stand_in, bins, range)[1]


def _kernel_bins(edges, smp, bins):
    """Every dimension's KernelBins with one edge type: float64, exact
    against data of at most 32 bits and any float; 64-bit integers keep
    their integer edges only when every dimension has them (else those
    edges become float64, which compare the same when within 2^53)."""
    d = smp.ndim
    try:  # (np.histogramdd has accepted the bins: a count for all, or one entry per dimension)
        scalar = [np.ndim(bins[k]) == 0 for k in np.arange(d)]
    except TypeError:
        scalar = [True] * d
    kbs = [kernel_bins(e, smp.dtype, bool(scalar[k])) for k, e in enumerate(edges)]
    kinds = {kb.edges.dtype.kind for kb in kbs}
    if kinds == {"f"} or kinds == {"i"} or kinds == {"u"}:
        return [kb if kb.edges.dtype.kind != "f" or kb.edges.dtype == _F64 else kb._replace(edges=kb.edges.astype(
            _F64)) for kb in kbs]
    out = []
    for kb in kbs:
        if kb.edges.dtype.kind in "iu":
            if np.abs(kb.edges.astype(np.float64)).max() >= _EXACT:
                raise ValueError("histogramdd: 64-bit integer edges of 2^53 or more beside float edges: cuatomic "
                                 "compares every dimension in one type; pass all edges as integers or within 2^53")
            kb = kb._replace(edges=kb.edges.astype(_F64))
        elif kb.edges.dtype != _F64:
            kb = kb._replace(edges=kb.edges.astype(_F64))
        out.append(kb)
    return out


def _density(hist, edges):
    """np.histogramdd's density: counts over their sum and every bin's volume."""
    s = hist.sum()
    for k, e in enumerate(edges):
        shape = np.ones(hist.ndim, int)
        shape[k] = e.size - 1
        hist = hist / np.diff(e).reshape(shape)
    return hist / s


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, method="auto", backend=None,
                blocks=None, threads=None, stream=None):
    """The multidimensional histogram of a sample, as
    ``np.histogramdd(sample, bins, range, density, weights)``.

    Parameters
    ----------
    sample : (N, D) array_like, a sequence of D 1-D arrays, or device arrays
        The points, as NumPy reads them. On a GPU: one (N, D) device array
        (a DeviceArray, CuPy, PyTorch or Numba array) or a sequence of D
        1-D device arrays of one dtype. At most 16 dimensions; bool,
        integers, float32, float64.
    bins, range, density, weights
        As NumPy's: a count for all dimensions, a count or an array of
        edges per dimension; a (min, max) or None per dimension; weights of
        the N points, summed in float64 -- on a GPU with ``method="auto"``
        by :func:`at`'s deterministic rung (fixed-point integer
        accumulators: the same bits every call), else by the weighted
        histogram ladder (a GPU's float atomics add in the order they land,
        so a named rung's last bits may differ between calls).
    method : str, optional
        A rung of ``methods("histogramdd")``: ``"global"`` (one atomicAdd
        per point on its cell's counter), ``"shared"`` (block-private
        counts of every cell in shared memory; refuses more cells than fit,
        e.g. 256 x 256 on Hopper), ``"tiled"`` (the cells cut into tiles
        that fit, each tile with its own blocks). ``"auto"`` runs
        ``tiled``, which is ``shared`` when the cells fit. With weights the
        rung is the weighted histogram's: ``method`` names a rung of
        ``methods("weighted_histogram")`` (auto on a GPU: :func:`at`'s).
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    hist : numpy.ndarray or DeviceArray
        float64, one axis per dimension (counts, weight sums, or densities);
        a DeviceArray for a sample on a device.
    edges : list of numpy.ndarray
        Each dimension's edges, exactly NumPy's.

    Raises
    ------
    ValueError, TypeError
        NumPy's, for bins, range and weights; more than 16 dimensions; a
        method that cannot count these cells (``shared``).
    CudaError
        A CUDA failure, with the CUDA error's name.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> pts = np.array([[0.1, 0.2], [0.4, 0.9], [0.8, 0.8]])
    >>> cuatomic.histogramdd(pts, bins=2, range=[(0, 1), (0, 1)])[0]
    array([[1., 1.],
           [0., 1.]])
    """
    return _histogramdd(sample, bins, range, density, weights, method, backend, blocks, threads, stream)


@on_inputs_gpu
def _histogramdd(sample, bins, range, density, weights, method, backend, blocks, threads, stream):
    be = _backend.resolve(backend)
    weighted = weights is not None
    rung = None if weighted else named_rung("histogramdd", be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    smp = _prepare(sample, be, s)
    if smp.ndim > 16:
        raise ValueError(f"cuatomic's histogramdd takes at most 16 dimensions (got {smp.ndim})")
    if weighted:
        refuse_masked(weights, "weights")
        wshape = shape_of(weights)
        if wshape != (smp.n,):
            raise ValueError(f"weights should be a 1-D array of the sample's {smp.n} points (got shape {wshape})")
    edges = _numpy_edges(smp, bins, range, s)
    shape = tuple(e.size - 1 for e in edges)
    if smp.ndim == 0 or min(shape, default=0) < 1:
        hist = np.zeros(shape)
        return (DeviceArray.from_host(hist) if smp.given_on_device else hist), edges
    kbs = _kernel_bins(edges, smp, bins)
    dt_id = dtype_id(smp.dtype)
    be_id = _backend.backend_id(be)
    if weighted:
        hist = _weighted(smp, kbs, weights, be, be_id, dt_id, method, blocks, threads, s)
    else:
        if rung is None:
            rung = auto_rung("histogramdd", be, smp.n, smp.dtype, fits=_fits(be_id, kbs, dt_id, nb, nt))
        out = _C.histogramdd(backend=be_id, rung=rung.index, cols=smp.cols, strides=smp.strides, n=smp.n,
                             dtype=dt_id, bins=kbs, blocks=nb, threads=nt, device_out=smp.device, stream=s)
        hist = DeviceArray(out, shape, _F64) if smp.device else out.reshape(shape)
    if smp.device and not smp.given_on_device:
        hist = hist.copy_to_host()
    if density:
        on_device = isinstance(hist, DeviceArray)
        host = _density(hist.copy_to_host() if on_device else hist, edges)
        hist = DeviceArray.from_host(host) if on_device else host
    return hist, edges


def _fits(be_id, kbs, dt_id, blocks, threads):
    """Why each rung cannot count these cells (None: it can), for auto."""
    return lambda row: _C.histogramdd_fits(backend=be_id, rung=row.index, bins=kbs, dtype=dt_id, blocks=blocks,
                                           threads=threads)


def _weighted(smp, kbs, weights, be, be_id, dt_id, method, blocks, threads, s):
    """The weights summed per cell: every point's cell (the cell count for
    one dropped), then bincount with weights over cells + 1 bins, the last
    dropped."""
    from ._bincount import bincount
    cells = math.prod(kb.edges.size - 1 for kb in kbs)
    shape = tuple(kb.edges.size - 1 for kb in kbs)
    if smp.device:
        ids = DeviceArray.empty((smp.n,), np.int64)
        if not _is_device(weights):  # (np.bincount sums weights as float64 too)
            weights = DeviceArray.from_host(np.ascontiguousarray(weights, dtype=np.float64))
        out_ptr = ids.ptr
    else:
        ids = np.empty(smp.n, np.int64)
        if _is_device(weights):
            raise TypeError("weights are on a device but the sample is not: put them on one side")
        out_ptr = ids.ctypes.data
    _C.histogramdd_cells(be_id, smp.cols, smp.strides, smp.n, dt_id, kbs, out_ptr, s)
    if smp.device and method == "auto" and _float64_weights(weights):
        # On a GPU, auto sums the weights into their cells by np.add.at's deterministic rung (the scatter ladder's
        # fixed-point integer accumulators, cuatomic.at): the same bits every call, where the weighted histogram
        # ladder's float atomics add in the order they land.
        from ._scatter import at
        sums = DeviceArray.from_host(np.zeros(cells + 1))
        at(sums, ids, weights, "add", method="auto", backend=be, blocks=blocks, threads=threads, stream=s)
    else:
        sums = bincount(ids, weights, minlength=cells + 1, method=method, backend=be, blocks=blocks, threads=threads,
                        stream=s)
    if smp.device:
        return DeviceArray(sums._buffer, shape, sums.dtype)
    return sums[:cells].reshape(shape)


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, method="auto", backend=None,
                blocks=None, threads=None, stream=None):
    """The two-dimensional histogram of points (x, y), as
    ``np.histogram2d(x, y, bins, range, density, weights)``.

    Parameters
    ----------
    x, y : array_like or device arrays
        The points' coordinates, 1-D, of one length.
    bins, range, density, weights
        As NumPy's (bins: a count, [nx, ny], an array of edges for both, or
        [x_edges, y_edges]).
    method, backend, blocks, threads, stream
        As for :func:`histogramdd`.

    Returns
    -------
    hist : numpy.ndarray or DeviceArray
        float64, shape (nx, ny).
    xedges, yedges : numpy.ndarray

    Raises
    ------
    ValueError, TypeError, CudaError
        As for :func:`histogramdd`.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> h, xe, ye = cuatomic.histogram2d([0.1, 0.4, 0.8], [0.2, 0.9, 0.8], bins=2, range=[(0, 1), (0, 1)])
    >>> h
    array([[1., 1.],
           [0., 1.]])
    """
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        xedges = yedges = np.asarray(bins)
        bins = [xedges, yedges]
    if not (_is_device(x) and _is_device(y)):
        if _is_device(x) or _is_device(y):
            raise TypeError("x and y must be on one side: both device arrays or both host arrays")
    hist, edges = histogramdd([x, y], bins, range, density, weights, method=method, backend=backend, blocks=blocks,
                              threads=threads, stream=stream)
    return hist, edges[0], edges[1]


@on_inputs_gpu
def explain(backend, sample, bins=10, range=None, blocks=None, threads=None, stream=0):
    """The :class:`Choice` ``method="auto"`` makes for ``histogramdd(sample,
    bins, range)`` on `backend` (:func:`cuatomic.explain` of "histogramdd",
    and of "histogram2d" with the sample ``[x, y]``)."""
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    smp = _prepare(sample, backend, s)
    edges = _numpy_edges(smp, bins, range, s)
    facts = {"n": smp.n, "dtype": str(smp.dtype), "cells": math.prod(e.size - 1 for e in edges)}
    if facts["cells"] < 1:
        return _auto.choose("histogramdd", backend, facts)
    kbs = _kernel_bins(edges, smp, bins)
    return _auto.choose("histogramdd", backend, facts,
                        fits=_fits(_backend.backend_id(backend), kbs, dtype_id(smp.dtype), nb, nt))
