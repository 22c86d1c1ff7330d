"""bincount: NumPy's bincount on the histogram ladders -- bins of width one
from 0 (cuatomic._bins.unit_bins), counted by a histogram rung, or with
weights summed by a weighted one (cuatomic._weighted)."""
import operator

import numpy as np

from . import _C, _auto, _backend
from ._bins import facts, rung_fits, unit_bins
from ._common import auto_rung, check_fits_memory, launch_config, named_rung, prepare, stream_of
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu
from ._weighted import WEIGHTED, device_weights, host_weights, on_device, real_weights, sum_weights, weighted_rung


_INT64_MAX = np.iinfo(np.int64).max


def minlength_of(minlength):
    """bincount's `minlength` as NumPy takes it (its errors, naming it)."""
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    if isinstance(minlength, (bool, np.bool_)):
        raise TypeError("minlength must be an integer, not bool")
    try:
        minlength = operator.index(minlength)
    except TypeError:
        raise TypeError(f"minlength must be an integer (got {type(minlength).__name__})") from None
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    return minlength


def one_dimensional(ndim, name):
    """bincount's arguments are 1-D: NumPy's ValueError, naming the argument."""
    if ndim > 1:
        raise ValueError(f"{name} must be 1-D, not {ndim}-D: object too deep for desired array")
    if ndim < 1:
        raise ValueError(f"{name} must be 1-D, not 0-D: object of too small depth for desired array")


def bincount_dtype(dt, name="x"):
    """bincount counts integers and bools: NumPy's TypeError, naming x."""
    if dt.kind not in "biu":
        raise TypeError(f"{name} must hold integers or bools: Cannot cast array data from dtype('{dt}') to "
                        "dtype('int64') according to the rule 'safe'")


def _bincount_input(x, backend, stream):
    """x as bincount takes it: 1-D, of integers or bools (an empty list too,
    as NumPy takes it)."""
    if isinstance(x, (list, tuple)) and len(x) == 0:
        x = np.empty(0, np.intp)
    inp = prepare(x, backend, name="x", stream=stream)
    one_dimensional(inp.ndim, "x")
    bincount_dtype(inp.dtype)
    return inp


def _bincount_weights(weights, inp, backend, stream):
    """float64 weights, one per element of x, where x is."""
    refuse_masked(weights, "weights")
    if on_device(weights) != inp.device:
        where = ("x is on the GPU and weights are not: pass cuatomic.to_device(weights)" if inp.device else
                 "weights are on the GPU and x is not: pass both on the host or both on the device")
        raise TypeError(where)
    if inp.device:
        w = prepare(weights, backend, name="weights", stream=stream)
        one_dimensional(w.ndim, "weights")
        found = device_weights(w, ("float64",))
        size = w.n
    else:
        wa = np.asarray(weights)
        one_dimensional(wa.ndim, "weights")
        real_weights(wa.dtype, "float64")
        found = host_weights(wa, float_only=True)
        size = wa.size
    if size != inp.n:
        raise ValueError(f"The weights and list don't have the same length: {size} weights, {inp.n} elements of x.")
    return found


def _extremes(inp, stream):
    """(min, max) of a non-empty integer input, as Python ints."""
    if inp.device:
        lo, hi, _ = _C.minmax(inp.x, inp.n, inp.id, stream)
        size = inp.dtype.itemsize
        return int(np.frombuffer(lo[:size], inp.dtype)[0]), int(np.frombuffer(hi[:size], inp.dtype)[0])
    return int(inp.x.min()), int(inp.x.max())


def _bincount_plan(x, weights, minlength, backend, stream):
    """(input, weights or None, number of bins) of a bincount call. Empty
    input needs no weights (NumPy answers it before reading them)."""
    minlength = minlength_of(minlength)
    inp = _bincount_input(x, backend, stream)
    if inp.n == 0:
        return inp, None, minlength
    w = None if weights is None else _bincount_weights(weights, inp, backend, stream)
    lo, hi = _extremes(inp, stream)  # negative input is refused before anything is counted
    if lo < 0 or hi > _INT64_MAX:  # uint64 past INT64_MAX is negative as NumPy's intp
        raise ValueError("x must have no negative elements ('list' argument must have no negative elements)")
    nbins = max(minlength, hi + 1)
    if minlength > hi:
        check_fits_memory(16 * (nbins + 1), f"minlength={minlength} asks for {nbins} bins: they",
                          lambda memory: f"minlength may be at most {memory // 16 - 1}")
    else:
        check_fits_memory(16 * (nbins + 1), f"the largest value of x, {hi}, asks for {nbins} bins, one for each "
                          "value from 0: they", lambda memory: f"x may hold values up to {memory // 16 - 2}")
    return inp, w, nbins


@on_inputs_gpu
def bincount(x, weights=None, minlength=0, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """Count the occurrences of each value, as ``np.bincount(x, weights, minlength)``.

    Built on the histogram ladders: bins of width one from 0, binned with
    integer arithmetic alone; without weights a rung of ``histogram``
    counts, with weights a rung of ``weighted_histogram`` sums. The largest
    and smallest value come first (on the GPU from ``minmax``, without a
    copy), so negative input is refused before anything is counted.

    Parameters
    ----------
    x : array_like or DeviceArray
        1-D, of non-negative integers or bools.
    weights : array_like or DeviceArray, optional
        One real weight per element of `x`, where `x` is; host weights are
        cast to float64 (as NumPy does), device weights must be float64.
    minlength : int, optional
        The least number of bins of the result.
    method : str, optional
        A rung of ``methods("histogram")``, or with weights of
        ``methods("weighted_histogram")``; ``"auto"`` as for
        :func:`histogram`.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        ``max(max(x) + 1, minlength)`` int64 counts, or float64 sums of the
        weights; a DeviceArray for device input.

    Raises
    ------
    ValueError
        A negative value, a negative `minlength`, weights of another length,
        input that is not 1-D (NumPy's messages).
    TypeError
        Input that is not integers or bools, weights that are not real
        numbers, a `minlength` that is not an integer.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> cuatomic.bincount(np.array([0, 1, 1, 3]), backend="cpu")
    array([1, 2, 0, 1])
    >>> cuatomic.bincount(np.array([0, 1, 1, 3]), weights=[0.5, 1.0, 1.0, 2.0], backend="cpu")
    array([0.5, 2. , 0. , 2. ])
    """
    be = _backend.resolve(backend)
    rung = named_rung("histogram", be, method) if weights is None else weighted_rung(be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    inp, w, nbins = _bincount_plan(x, weights, minlength, be, s)
    if inp.n == 0:  # NumPy's int64 zeros, weights or not
        zeros = np.zeros(nbins, np.int64)
        return DeviceArray.from_host(zeros) if inp.device else zeros
    bins = unit_bins(nbins, inp.dtype)
    if w is not None:
        sums = sum_weights(be, rung, inp, w, bins, nb, nt, s)
        return DeviceArray(sums, (nbins,), np.float64) if inp.device else sums
    if rung is None:
        rung = auto_rung("histogram", be, inp.n, inp.dtype, nbins, fits=rung_fits(be, bins, inp.id, nb, nt))
    counts = _C.histogram(_backend.backend_id(be), rung.index, inp.x, inp.n, inp.id, bins, nb, nt, inp.device, s)
    return DeviceArray(counts, (nbins,), np.int64) if inp.device else counts


@on_inputs_gpu
def explain(backend, x, weights=None, minlength=0, *, blocks=None, threads=None, stream=0):
    """The Choice of bincount(method="auto"): a rung of the histogram
    ladder, or with weights of the weighted one, for max(x) + 1 bins."""
    nb, nt = launch_config(blocks, threads)
    inp, _, nbins = _bincount_plan(x, weights, minlength, backend, stream)
    op = "histogram" if weights is None else WEIGHTED
    if inp.n == 0:  # NumPy's int64 zeros, and nothing launched
        return _auto.Choice(op, backend, None, "empty input: the call returns NumPy's int64 zeros and launches no "
                            "rung", facts(inp, nbins))
    kb = unit_bins(max(nbins, 1), inp.dtype)
    return _auto.choose(op, backend, facts(inp, max(nbins, 1)), fits=rung_fits(backend, kb, inp.id, nb, nt, op))
