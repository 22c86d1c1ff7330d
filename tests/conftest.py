"""Shared parametrization: every usable backend x every method of its
variant table, and for cuda both host (NumPy) and device (DeviceArray) input."""
import numpy as np
import pytest

import cuatomic
from cuatomic import _auto, _backend, _bins, _common, _filter
from cuatomic._exact import error_bound

BACKENDS = cuatomic.backends()
CUDA = "cuda" in BACKENDS
CUDA_REASON = cuatomic.backend_info()["cuda"].get("reason") or "no usable CUDA device"
requires_cuda = pytest.mark.skipif(not CUDA, reason=f"cuda backend not usable: {CUDA_REASON}")

SIZES = [0, 1, 31, 32, 33, 255, 256, 257, 1000, 2**20 + 3]
INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOAT_DTYPES = [np.float32, np.float64]
DTYPES = [np.bool_] + INT_DTYPES + FLOAT_DTYPES


class FakeCAI:
    """A minimal __cuda_array_interface__ producer over a DeviceArray."""

    def __init__(self, base, **override):
        self.base = base
        self.__cuda_array_interface__ = dict(base.__cuda_array_interface__, **override)


class DLOnly:
    """Exposes only DLPack, to exercise that path (legacy=True: no max_version)."""

    def __init__(self, obj, legacy=False):
        self.obj, self.legacy = obj, legacy

    def __dlpack_device__(self):
        return self.obj.__dlpack_device__()

    def __dlpack__(self, stream=None, **kwargs):
        if self.legacy:
            if kwargs:
                raise TypeError("a pre-1.0 producer")
            return self.obj.__dlpack__(stream=stream)
        return self.obj.__dlpack__(stream=stream, **kwargs)


def where_params(op):
    """(backend, method, where) for every rung of every usable backend."""
    out = []
    for be in BACKENDS:
        for name, _, _ in cuatomic.methods(op, be):
            for where in (["host", "device"] if be == "cuda" else ["host"]):
                out.append(pytest.param(be, name, where, id=f"{be}-{name}-{where}"))
    return out


# What hist_call returns for a call the rung refuses by its limits.
REFUSED = ("refused",)


def hist_refusal(x, bins=10, range=None, *, method, backend, blocks=None, threads=None):
    """Why the histogram rung `method` refuses np.histogram(x, bins,
    range) by its limits (its `fits`: the `bytes` rung takes only bytes in
    bins of width one), or None."""
    if method == "auto":
        return None
    inp = _common.prepare(x, backend)
    kb = _bins.bins_for(inp, bins, range, 0)[2]
    if kb is None:
        return None
    fits = _bins.rung_fits(backend, kb, inp.id, blocks or -1, threads or -1)
    return fits(_backend.rung("histogram", backend, method))


def bincount_refusal(x, *, method, backend):
    """hist_refusal for np.bincount(x) of a NumPy array x: bins of width
    one from 0 to max(x)."""
    if method == "auto":
        return None
    inp = _common.prepare(x, backend)
    kb = _bins.unit_bins(int(np.max(x)) + 1, inp.dtype)
    return _bins.rung_fits(backend, kb, inp.id, -1, -1)(_backend.rung("histogram", backend, method))


def filter_refusal(x, *, method, backend, blocks=None, threads=None):
    """Why the filter rung `method` refuses to filter x with this grid (its
    `fits`: the GPU's `pipelined` needs sm_80, 16-byte aligned input and its
    own block size), or None."""
    if method == "auto":
        return None
    inp = _common.prepare(x, backend)
    return _filter.rung_fits(backend, inp, blocks or -1, threads or -1)(_backend.rung("filter", backend, method))


def hist_call(x, bins=10, range=None, *, method, backend, **kwargs):
    """cuatomic.histogram(x, bins, range, ...) -- or REFUSED where the
    named rung refuses these data and bins (hist_refusal): then the call
    must raise a ValueError naming the rung, which this checks. A test of
    every rung runs the rungs that can take its data, and checks the
    refusal of the others."""
    why = hist_refusal(x, bins, range, method=method, backend=backend, blocks=kwargs.get("blocks"),
                       threads=kwargs.get("threads"))
    if why is None:
        return cuatomic.histogram(x, bins, range, method=method, backend=backend, **kwargs)
    with pytest.raises(ValueError, match=f"method '{method}'"):
        cuatomic.histogram(x, bins, range, method=method, backend=backend, **kwargs)
    return REFUSED


def placed(a, backend, where):
    """a as the function receives it: NumPy, or a DeviceArray."""
    return cuatomic.to_device(a, backend=backend) if where == "device" else a


def host(x):
    return x.copy_to_host() if isinstance(x, cuatomic.DeviceArray) else np.asarray(x)


def make(dtype, n, kind="uniform", seed=0):
    """Test data: uniform over the dtype's range (floats: normal), skewed
    (most elements from a few values), or one value. Never all zeros."""
    rng = np.random.default_rng(seed + n * 7919 + np.dtype(dtype).num)
    dt = np.dtype(dtype)
    if kind == "one":
        return np.full(n, 1 if dt.kind == "b" else 3, dtype=dt)
    if dt.kind == "b":
        p = 0.9 if kind == "skewed" else 0.5
        return rng.random(n) < p
    if dt.kind == "f":
        if kind == "skewed":
            return rng.choice(np.array([0.5, -1.25, 7.0], dt), size=n, p=[0.8, 0.15, 0.05])
        return rng.standard_normal(n).astype(dt) * dt.type(100)
    info = np.iinfo(dt)
    if kind == "skewed":
        return rng.choice(np.array([info.max, 1, info.min if info.min else 2], dt), size=n, p=[0.8, 0.15, 0.05])
    return rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)


is_wide = _auto.is_wide


def assert_float_close(got, exact, numpy_value, dtype, *, wide=True, n=0, abs_sum=0.0):
    """got is no further from the exact answer than _exact.error_bound
    allows: twice NumPy's error or two ulps (the tutorial's rungs: also
    sqrt(n) * eps * sum|x|, asserted to be below |exact| so that a wrong
    answer such as 0 cannot pass)."""
    bound = error_bound(exact, numpy_value, dtype, wide=wide, n=n, abs_sum=abs_sum)
    if exact != 0:
        assert bound < abs(exact), f"bound {bound} does not separate the answer {exact} from 0"
    assert abs(float(got) - exact) <= bound, f"{got} vs exact {exact} (NumPy {numpy_value}, bound {bound})"
