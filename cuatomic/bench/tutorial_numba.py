"""The tutorial's own Numba kernels, as peers for the benchmark.

These are the kernels of the Numba CUDA lessons on atomics and mutexes --
global and shared-memory histograms of text bytes, the dot product finished
under a CAS mutex, every thread taking the mutex to add one -- written as
plain Numba so that ``python -m cuatomic bench`` can time them beside
cuatomic's rungs on the same data. Imported only when numba-cuda is
installed (the package itself never needs Numba).

numba-cuda refers to ``np.row_stack``, which NumPy 2.5 removed: it is
restored (as ``np.vstack``, what it always was) before Numba is imported.
"""
import numpy as np

if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

import numba  # noqa: E402
from numba import cuda  # noqa: E402

BINS = 128


@cuda.jit
def _histogram_global(data, hist):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, data.shape[0], step):
        v = data[i]
        if v < BINS:  # the tutorial's text is ASCII; other bytes are dropped
            cuda.atomic.add(hist, v, 1)


@cuda.jit
def _histogram_shared(data, hist):
    local = cuda.shared.array(BINS, numba.int32)
    t = cuda.threadIdx.x
    for j in range(t, BINS, cuda.blockDim.x):
        local[j] = 0
    cuda.syncthreads()
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, data.shape[0], step):
        v = data[i]
        if v < BINS:
            cuda.atomic.add(local, v, 1)
    cuda.syncthreads()
    for j in range(t, BINS, cuda.blockDim.x):
        cuda.atomic.add(hist, j, local[j])


@cuda.jit
def _dot_mutex(a, b, total, mutex):
    cache = cuda.shared.array(256, numba.float32)
    t = cuda.threadIdx.x
    start, step = cuda.grid(1), cuda.gridsize(1)
    acc = numba.float32(0)
    for i in range(start, a.shape[0], step):
        acc += a[i] * b[i]
    cache[t] = acc
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            cache[t] += cache[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        while cuda.atomic.compare_and_swap(mutex, 0, 1) != 0:
            pass  # spin: another block holds the lock
        cuda.threadfence()
        total[0] += cache[0]
        cuda.threadfence()
        cuda.atomic.exch(mutex, 0, 0)


@cuda.jit
def _mutex_add_one(counter, mutex):
    while cuda.atomic.compare_and_swap(mutex, 0, 1) != 0:
        pass  # spin: another thread holds the lock
    cuda.threadfence()
    counter[0] += 1
    cuda.threadfence()
    cuda.atomic.exch(mutex, 0, 0)


def _grid():
    return 32 * cuda.get_current_device().MULTIPROCESSOR_COUNT


def histogram(kernel_name):
    """A function of a device byte array returning host counts (128 bins);
    make it once, outside the timing."""
    kernel = _histogram_shared if kernel_name == "shared" else _histogram_global
    zeros = np.zeros(BINS, np.int32)

    def run(data):
        hist = cuda.to_device(zeros)
        kernel[_grid(), 128](data, hist)
        return hist.copy_to_host()
    return run


def dot(a, b):
    """The tutorial's mutex dot product of two device float32 vectors."""
    total = cuda.to_device(np.zeros(1, np.float32))
    mutex = cuda.to_device(np.zeros(1, np.int32))
    _dot_mutex[_grid(), 256](a, b, total, mutex)
    return total.copy_to_host()[0]


def mutex_add_one(blocks, threads):
    """blocks*threads threads each take the mutex and add one."""
    counter = cuda.to_device(np.zeros(1, np.int64))
    mutex = cuda.to_device(np.zeros(1, np.int32))
    _mutex_add_one[blocks, threads](counter, mutex)
    return int(counter.copy_to_host()[0])


def as_device(x):
    """A Numba device array over any CUDA array (zero copy) or host array (copied)."""
    return cuda.as_cuda_array(x) if hasattr(x, "__cuda_array_interface__") else cuda.to_device(x)
