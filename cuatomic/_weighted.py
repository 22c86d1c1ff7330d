"""histogram(weights=...): the weights as the core takes them (where the
data is, of its shape, real numbers, NumPy's result dtype) and the sums per
bin by a rung of the weighted_histogram ladder. bincount's weights come
through here too."""
import numpy as np

from . import _C, _backend, _interop
from ._bins import bins_for, rung_fits
from ._common import auto_rung, launch_config, prepare, shape_of, stream_of
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu


WEIGHTED = "weighted_histogram"
ESTIMATOR_WITH_WEIGHTS = "Automated estimation of the number of bins is not supported for weighted data"
BOOL_WEIGHTS_WITH_EDGES = ("Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') with casting rule "
                            "'same_kind'")


def weighted_rung(backend, method):
    """The rung of the weighted ladder that `method` names (None for
    "auto"), checked before any input is read. A histogram rung without a
    weighted twin is a ValueError naming the rungs that take weights."""
    _backend.check_method(WEIGHTED, backend, method)
    if method == "auto":
        return None
    names = [r.name for r in _backend.table(WEIGHTED, backend)]
    if method not in names and method in (r.name for r in _backend.table("histogram", backend)):
        raise ValueError(f"method {method!r} cannot take weights: the methods that can are "
                         f"{', '.join(['auto'] + names)} (methods('weighted_histogram'))")
    return _backend.rung(WEIGHTED, backend, method)


class _Weights:
    """Weights as the core takes them: ``x`` (a flat float64/int64 host
    array, or a device pointer), its ABI dtype ``id``, and ``dtype``, the
    dtype NumPy gives the result (the weights' own)."""

    __slots__ = ("x", "id", "dtype")

    def __init__(self, x, id_, dtype):
        self.x, self.id, self.dtype = x, id_, dtype


def on_device(obj):
    return isinstance(obj, DeviceArray) or _interop.on_cuda(obj)


def real_weights(dt, to):
    """TypeError, as NumPy's, for weights that are not real numbers."""
    if dt.kind not in "biuf":
        raise TypeError(f"weights must be real numbers: Cannot cast array data from dtype('{dt}') to dtype('{to}') "
                        "according to the rule 'safe'" +
                        (": pass the real and imaginary parts as two calls" if dt.kind == "c" else ""))


def host_weights(wa, float_only):
    """A flat, C-ordered float64 array of host weights (all of them when
    float_only, else float ones), or int64 for bool and integer weights
    (uint64 as their bits: the wrapping sums are the same bits)."""
    if float_only or wa.dtype.kind == "f":
        return _Weights(np.ascontiguousarray(wa.reshape(-1), dtype=np.float64), _C.DTYPES.index("float64"),
                        wa.dtype)
    flat = np.ascontiguousarray(wa.reshape(-1))
    core = flat.view(np.int64) if flat.dtype.itemsize == 8 and flat.dtype.isnative else flat.astype(np.int64)
    return _Weights(core, _C.DTYPES.index("int64"), wa.dtype)


def device_weights(w, dtypes):
    """Device weights: read in place, of one of `dtypes`."""
    if w.dtype.name not in dtypes:
        raise TypeError(f"weights on the GPU must be {' or '.join(dtypes)} (got {w.dtype}): cast them before "
                        "to_device()")
    core = "float64" if w.dtype.kind == "f" else "int64"
    return _Weights(w.x, _C.DTYPES.index(core), w.dtype)


def histogram_weights(weights, a, inp, backend, stream):
    """The weights of histogram(a, weights=...): of a's shape, where a is."""
    refuse_masked(weights, "weights")
    if on_device(weights) != inp.device:
        where = ("a is on the GPU and weights are not: pass cuatomic.to_device(weights)" if inp.device else
                 "weights are on the GPU and a is not: pass both on the host or both on the device")
        raise TypeError(where)
    if shape_of(weights) != shape_of(a):
        raise ValueError("weights should have the same shape as a.")
    if inp.device:
        return device_weights(prepare(weights, backend, name="weights", stream=stream),
                               ("float64", "int64", "uint64"))
    wa = np.asarray(weights)
    real_weights(wa.dtype, wa.dtype)
    return host_weights(wa, float_only=False)


@on_inputs_gpu
def weighted_histogram(a, bins, range, weights, density, method, backend, blocks, threads, stream):
    """histogram(weights=...): the weighted ladder, NumPy's result dtype."""
    be = _backend.resolve(backend)
    rung = weighted_rung(be, method)
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    inp = prepare(a, be, stream=s)
    w = histogram_weights(weights, a, inp, be, s)
    if isinstance(bins, str):
        raise TypeError(ESTIMATOR_WITH_WEIGHTS)
    _, edges, kb = bins_for(inp, bins, range, s)
    if w.dtype.kind == "b" and np.ndim(bins) == 1 and inp.n:
        raise TypeError(BOOL_WEIGHTS_WITH_EDGES)  # NumPy's cumulative sum of booleans, cast back to bool
    # NumPy fills the sums of a bin count in an array of the weights' own
    # dtype (a big-endian one stays so), and takes those of explicit edges
    # as differences of a cumulative sum: native byte order.
    hdt = w.dtype if np.ndim(bins) == 0 else w.dtype.newbyteorder("=")
    if kb is None:
        hist = np.zeros(0, np.float64 if density else hdt)
        return (DeviceArray.from_host(hist) if inp.device else hist), edges
    sums = sum_weights(be, rung, inp, w, kb, nb, nt, s)
    if inp.device:  # device weights are float64, int64 or uint64: the sums' own bits
        hist = DeviceArray(sums, (kb.edges.size - 1,), w.dtype)
    else:
        hist = sums.astype(hdt, copy=False)
    if density:
        host = hist.copy_to_host() if inp.device else hist
        with np.errstate(divide="ignore", invalid="ignore"):
            dens = host / np.array(np.diff(edges), float) / host.sum()
        return (DeviceArray.from_host(dens) if inp.device else dens), edges
    return hist, edges


def sum_weights(be, rung, inp, w, bins, nb, nt, s):
    """The core's sums per bin (float64 or int64; a DeviceBuffer for device
    input) of the KernelBins `bins`, by `rung`, or by the rung auto picks."""
    nbins = bins.edges.size - 1
    if rung is None:
        rung = auto_rung(WEIGHTED, be, inp.n, inp.dtype, nbins, fits=rung_fits(be, bins, inp.id, nb, nt, WEIGHTED))
    return _C.weighted_histogram(_backend.backend_id(be), rung.index, inp.x, inp.n, inp.id, w.x, w.id, bins, nb, nt,
                                 inp.device, s)
