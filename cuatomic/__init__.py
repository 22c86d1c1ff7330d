"""cuatomic: the classic lessons on GPU atomics and mutexes as a library.

Five operations -- :func:`sum`, :func:`dot`, :func:`histogram`,
:func:`filter` and :func:`mutex_add_one` (plus the race demonstration
:func:`add_one`, :func:`prod`, a multiply built from atomicCAS, weighted
histograms and :func:`bincount`, and :func:`reduce` with any of NumPy's
folding ufuncs, behind :func:`min` and :func:`max`) -- each a ladder of methods from the tutorial's naive
version upwards (see :func:`methods`). They run on CUDA when a GPU is usable
and on a real CPU backend (OpenMP threads, C11 atomics) otherwise, and agree
with NumPy: same result dtypes, exact integers.

>>> import numpy as np, cuatomic
>>> x = np.arange(10, dtype=np.int32)
>>> int(cuatomic.sum(x, method="atomic"))
45
"""
from . import _C, datasets
from ._argmin import argmax, argmin
from ._axis import mean
from ._auto import Choice
from ._counter import add_one, mutex_add_one
from ._device import DeviceArray, pinned_array, pinned_empty, to_device
from ._errors import CudaError
from ._exactsum import ExactSum
from ._filter import filter
from ._bincount import bincount
from ._histogram import histogram
from ._histogramdd import histogram2d, histogramdd
from ._info import backend_info, backends, explain, last_launch, methods
from ._memory import free_memory, memory_info
from ._nonzero import argwhere, compress, flatnonzero, nonzero
from ._interop import Stream
from ._reduce import dot, prod, sum
from ._reduce_op import max, min, reduce
from ._scatter import add_at, at, reduceat
from ._unique import (UniqueAllResult, UniqueCountsResult, UniqueInverseResult, unique, unique_all, unique_counts,
                      unique_inverse, unique_values)
from .timing import BenchmarkResult, SweepRow, Timer, benchmark, sweep

_C._set_cuda_error(CudaError)

__version__ = "0.1.0"
__all__ = [
    "BenchmarkResult",
    "Choice",
    "ExactSum",
    "CudaError",
    "Stream",
    "SweepRow",
    "Timer",
    "benchmark",
    "sweep",
    "prod",
    "reduceat",
    "DeviceArray",
    "add_at",
    "add_one",
    "argmax",
    "argmin",
    "argwhere",
    "at",
    "backend_info",
    "bincount",
    "backends",
    "compress",
    "datasets",
    "dot",
    "explain",
    "filter",
    "flatnonzero",
    "free_memory",
    "histogram",
    "histogram2d",
    "histogramdd",
    "last_launch",
    "max",
    "mean",
    "memory_info",
    "methods",
    "min",
    "pinned_array",
    "pinned_empty",
    "mutex_add_one",
    "nonzero",
    "reduce",
    "sum",
    "to_device",
    "UniqueAllResult",
    "UniqueCountsResult",
    "UniqueInverseResult",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]
