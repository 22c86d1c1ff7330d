"""cuatomic: the classic lessons on GPU atomics and mutexes as a library.

Five operations -- :func:`sum`, :func:`dot`, :func:`histogram`,
:func:`filter` and :func:`mutex_add_one` (plus the race demonstration
:func:`add_one` and :func:`prod`, a multiply built from atomicCAS) -- each a ladder of methods from the tutorial's naive
version upwards (see :func:`methods`). They run on CUDA when a GPU is usable
and on a real CPU backend (OpenMP threads, C11 atomics) otherwise, and agree
with NumPy: same result dtypes, exact integers.

>>> import numpy as np, cuatomic
>>> x = np.arange(10, dtype=np.int32)
>>> int(cuatomic.sum(x, method="atomic"))
45
"""
from . import _C, bench, datasets
from ._device import DeviceArray, pinned_array, pinned_empty, to_device
from ._errors import CudaError
from ._interop import Stream
from .timing import BenchmarkResult, SweepRow, Timer, benchmark, sweep
from ._auto import Choice
from ._ops import (
    add_one,
    prod,
    backend_info,
    backends,
    dot,
    explain,
    filter,
    histogram,
    methods,
    mutex_add_one,
    sum,
)

_C._set_cuda_error(CudaError)

__version__ = "0.1.0"
__all__ = [
    "BenchmarkResult",
    "Choice",
    "CudaError",
    "Stream",
    "SweepRow",
    "Timer",
    "benchmark",
    "sweep",
    "prod",
    "DeviceArray",
    "add_one",
    "backend_info",
    "backends",
    "bench",
    "datasets",
    "dot",
    "explain",
    "filter",
    "histogram",
    "methods",
    "pinned_array",
    "pinned_empty",
    "mutex_add_one",
    "sum",
    "to_device",
]
