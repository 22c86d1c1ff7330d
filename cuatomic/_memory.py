"""What cuatomic holds of GPU (and host scratch) memory, and giving it back.

cuatomic allocates device memory (results, staged host input, scratch) from
a stream-ordered pool of its own, one per GPU; the device's default pool,
which CuPy, PyTorch, JAX and the user's own code may share, keeps the
settings its owner gave it. The pool caches freed memory up to a limit
(``CUATOMIC_CACHE_BYTES``, a number of bytes, read when a GPU's pool is
first used; else 1/16 of the GPU's memory up to 2 GiB). Whenever cuatomic
frees memory and the pool then caches more than the limit, the GPU is
synchronized, as ``cudaFree`` does, and the excess goes back to the driver.

The cpu backend keeps its large scratch blocks (1 MiB and more: a
partition's pages, a thread's lists) for the next call instead of handing
them back to the system, which would zero every page again at the next
first touch: up to ``CUATOMIC_HOST_CACHE_BYTES`` (a number of bytes, read
once, at the first cpu call that may keep scratch or the first
``memory_info()``; 0 keeps nothing), else 1/32 of the machine's memory up
to 512 MiB.
"""
import numbers

from . import _C, _backend
from ._backend import _check_host_cache_bytes


def _gpus(device, what):
    """The GPU ordinals `device` names: all the process sees for None."""
    if device is not None and (isinstance(device, bool) or not isinstance(device, numbers.Integral)):
        raise TypeError(f"{what}: device must be an int GPU ordinal or None (got {type(device).__name__})")
    if not _backend.cuda_built() or not _backend.cuda_probe()["usable"]:
        if device is not None:
            raise ValueError(f"{what}: device={device} names a GPU, but the cuda backend is not usable")
        return []
    count = _C.devices()[0]
    if device is None:
        return list(range(count))
    if not 0 <= device < count:
        raise ValueError(f"{what}: device={device} is not a GPU of this process: it sees {count} (0 to {count - 1})")
    return [int(device)]


def memory_info(device=None):
    """Bytes of GPU memory cuatomic uses and caches.

    Parameters
    ----------
    device : int, optional
        One GPU's ordinal. Default: the sum over every GPU the process sees.

    Returns
    -------
    dict
        ``in_use``: bytes allocated by cuatomic and not yet freed (device
        results such as :class:`DeviceArray` data, and the scratch of calls
        in flight); ``cached``: bytes the pool reserves beyond those, kept
        for reuse: at most ``cache_limit`` after any cuatomic free, except
        for what shares a chunk of the driver's with memory in use;
        ``cache_limit``: that limit (of `device`, or the sum);
        ``pinned_host``: page-locked host bytes of the staging buffers that
        stream large NumPy inputs to the GPU. All 0 without a usable GPU,
        or before cuatomic's first allocation. ``host_cached``: bytes of
        host memory the cpu backend keeps as scratch for its next call
        (with or without a GPU, whatever `device` is), at most
        ``host_cache_limit``.

    Raises
    ------
    TypeError
        A `device` that is not an int.
    ValueError
        A `device` the process does not see.

    See Also
    --------
    free_memory : give the cached bytes back.

    Examples
    --------
    >>> import cuatomic
    >>> sorted(cuatomic.memory_info())
    ['cache_limit', 'cached', 'host_cache_limit', 'host_cached', 'in_use', 'pinned_host']
    """
    _check_host_cache_bytes()
    host_cached, host_limit = _C.host_cache(False)
    info = {"in_use": 0, "cached": 0, "cache_limit": 0, "pinned_host": 0,
            "host_cached": host_cached, "host_cache_limit": host_limit}
    for g in _gpus(device, "memory_info"):
        in_use, cached, limit, pinned = _C.memory_info(g)
        info["in_use"] += in_use
        info["cached"] += cached
        info["cache_limit"] += limit
        info["pinned_host"] = pinned  # one set of staging buffers for the process
    return info


def free_memory(device=None):
    """Give back to the driver all the GPU memory cuatomic caches.

    Like CuPy's ``MemoryPool.free_all_blocks`` and PyTorch's
    ``torch.cuda.empty_cache``: memory still in use (live device results)
    stays, with what shares the driver's chunks with it; the rest of the
    cache goes back, and so do the page-locked staging buffers of the host
    pipeline unless a call is streaming through them. Each GPU is
    synchronized first (every free queued on any stream is then done); the
    wait cannot be interrupted. Without `device`, the host scratch the cpu
    backend keeps (``memory_info()["host_cached"]``) goes back to the
    system too, with or without a GPU.

    Parameters
    ----------
    device : int, optional
        One GPU's ordinal (its pool alone). Default: every GPU the process
        sees, and the host scratch.

    Raises
    ------
    TypeError
        A `device` that is not an int.
    ValueError
        A `device` the process does not see.

    Examples
    --------
    >>> import cuatomic
    >>> cuatomic.free_memory()
    >>> info = cuatomic.memory_info()
    >>> info["cached"] <= info["cache_limit"]
    True
    """
    gpus = _gpus(device, "free_memory")
    for g in gpus:
        _C.free_memory(g)
    if device is None:
        _C.host_cache(True)
