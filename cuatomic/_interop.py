"""Meeting the GPU ecosystem: streams, and device arrays from anywhere.

Objects with ``__cuda_array_interface__`` (versions 2 and 3) or with
``__dlpack__``/``__dlpack_device__`` on a CUDA device are read in place:
their pointer goes straight to the kernels, and the producer is kept alive
while the memory is in use. Non-contiguous device input is made contiguous
by a gather kernel on the device, never through the host.
"""
import contextlib
import functools
import math
import threading

import numpy as np

from . import _C, _backend

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_DL_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}


POINTER_BITS = np.dtype(np.uintp).itemsize * 8


def stream_handle(stream):
    """A raw stream handle from None (the legacy default stream, 0), an int,
    a :class:`Stream`, or any object with ``.ptr`` (CuPy) or
    ``.cuda_stream`` (PyTorch).

    Raises
    ------
    TypeError
        For a bool or an object that is neither an int nor a stream.
    ValueError
        For an int that is not a pointer-sized handle (negative, or 2**64 or
        more on a 64-bit machine): a ``cudaStream_t`` is a pointer.
    """
    if stream is None:
        return 0
    if isinstance(stream, (bool, np.bool_)):
        raise TypeError("stream must be a stream object or an int handle, not bool")
    if isinstance(stream, (int, np.integer)):
        return _pointer_sized(int(stream), "stream")
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            handle = getattr(stream, attr)
            if isinstance(handle, (bool, np.bool_)) or not isinstance(handle, (int, np.integer)):
                raise TypeError(f"{type(stream).__name__}.{attr} is not an int stream handle "
                                f"(got {type(handle).__name__})")
            return _pointer_sized(int(handle), f"{type(stream).__name__}.{attr}")
    raise TypeError(f"cannot use {type(stream).__name__} as a CUDA stream: pass an int handle or an object "
                    "with .ptr or .cuda_stream")


def _pointer_sized(handle, what):
    if not 0 <= handle < 1 << POINTER_BITS:
        raise ValueError(f"{what}={handle} is not a valid stream handle: a cudaStream_t is a pointer, an int "
                         f"from 0 to 2**{POINTER_BITS}-1")
    return handle


class Stream:
    """A CUDA stream owned by cuatomic (non-blocking with respect to the
    legacy default stream).

    Pass it as ``stream=`` to any call: work is queued on it, and only what
    must reach the host waits, for this stream alone.

    Attributes
    ----------
    ptr : int
        The ``cudaStream_t`` handle.
    """

    def __init__(self):
        _backend.resolve("cuda")  # a clear error when CUDA is not usable
        self._handle = _C.stream_create()

    @property
    def ptr(self):
        return self._handle

    def synchronize(self):
        """Wait until all work queued on this stream has finished."""
        _C.stream_synchronize(self._handle)

    def close(self):
        """Destroy the stream (work already queued still completes)."""
        handle, self._handle = getattr(self, "_handle", 0), 0
        if handle:
            _C.stream_destroy(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self):
        return f"cuatomic.Stream(ptr=0x{self._handle:x})"


class ForeignDevice:
    """A device array of another library, as cuatomic reads it: a pointer to
    C-contiguous elements, their dtype and shape, and what keeps them alive."""

    __slots__ = ("ptr", "shape", "dtype", "keep")

    def __init__(self, ptr, shape, dtype, keep):
        self.ptr, self.shape, self.dtype, self.keep = ptr, shape, dtype, keep

    @property
    def size(self):
        return math.prod(self.shape)


class _CallGpu(threading.local):
    """The GPU of the call this thread is in (:func:`on_inputs_gpu`): not
    active outside one; in one, gpu is None until a device input names it,
    and previous is the GPU to make current again at the end (None: the
    current one was not changed)."""
    active = False
    gpu = None
    previous = None


_CALL = _CallGpu()
_GPUS = None  # how many GPUs the process sees, asked once


def on_inputs_gpu(fn):
    """Run fn as one call on the GPU its device inputs live on.

    The first device input (:func:`take_gpu`) names the GPU. When it is not
    the current one it is made current for the rest of the call, so that the
    call's allocations, scratch memory and kernels go there too; an input on
    another GPU is refused; the caller's GPU is current again when fn
    returns or raises. A call made within a call (a histogram's minmax) runs
    on the outer call's GPU; host input runs on the current GPU.
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        here = _CALL
        if here.active:
            return fn(*args, **kwargs)
        try:
            here.active = True
            return fn(*args, **kwargs)
        finally:
            previous = here.previous
            here.active, here.gpu, here.previous = False, None, None
            if previous is not None:
                _C.use_device(previous)  # (a failure here carries the call's own exception as its context)
    return call


def take_gpu(device, current, what):
    """`what` lives on GPU `device` (`current` is the current one; None:
    ask): in a call (:func:`on_inputs_gpu`), the call runs there; outside
    one, it must be the current GPU."""
    here = _CALL
    if current is None:
        if here.active and here.gpu == device:
            return
        current = _C.devices()[1]
    if not here.active:
        if device != current:
            raise ValueError(f"{what} lives on GPU {device} but cuatomic runs on the current device, GPU "
                             f"{current}: make that device current first")
    elif here.gpu is None:
        here.gpu = device
        if device != current:
            here.previous = _C.use_device(device)
    elif device != here.gpu:
        raise ValueError(f"{what} lives on GPU {device} and the call's other input on GPU {here.gpu}: "
                         "put them on one GPU")


@contextlib.contextmanager
def current_gpu(device):
    """GPU `device` current within the block; the caller's again after it."""
    previous = _C.use_device(device)
    try:
        yield
    finally:
        if previous != device:
            _C.use_device(previous)


def gpu_count():
    """The GPUs this process sees (asked once)."""
    global _GPUS
    if _GPUS is None:
        _GPUS = _C.devices()[0]
    return _GPUS


def current_gpu_ordinal():
    """The current GPU's ordinal (0, no question asked, in a process that
    sees one GPU)."""
    return 0 if gpu_count() == 1 else _C.devices()[1]


def on_current_gpu(device):
    """Whether `device` is the current GPU (always, in a process that sees
    one GPU: no question asked)."""
    global _GPUS
    if _GPUS is None:
        _GPUS = _C.devices()[0]
    return _GPUS == 1 or device == _C.devices()[1]


def _device_of(ptr, size, what):
    """(the GPU device memory at ptr is on, the current GPU); None for no
    memory, or managed memory (any GPU reads it: the call runs on the
    current one). TypeError for host memory."""
    if size == 0 or not ptr:
        return None
    memory_type, device, current = _C.pointer_info(ptr)
    if memory_type not in (2, 3):  # device or managed memory
        raise TypeError(f"{what} points to host memory: pass a NumPy array instead")
    return (device, current) if memory_type == 2 else None


def _check_device(ptr, size, what):
    where = _device_of(ptr, size, what)
    if where is not None:
        take_gpu(*where, what)


def _contiguous(ptr, shape, dtype, byte_strides, stream, keep, what):
    """The array (its GPU taken: _check_device) as C-contiguous device
    memory: itself, or a gathered copy (in a buffer of its own, which the
    ForeignDevice keeps alive)."""
    size = math.prod(shape)
    expected, step = [], dtype.itemsize
    for extent in reversed(shape):
        expected.append(step)
        step *= extent
    expected = tuple(reversed(expected))
    dense = byte_strides is None or all(s == e for s, e, n in zip(byte_strides, expected, shape) if n > 1)
    if dense or size == 0:
        return ForeignDevice(ptr, shape, dtype, keep)
    out = _C.DeviceBuffer(size * dtype.itemsize)
    _C.gather(ptr, out.ptr, size, dtype.itemsize, shape, byte_strides, stream)
    return ForeignDevice(out.ptr, shape, dtype, (keep, out))


def from_cuda_array_interface(obj, stream):
    """Read an object's ``__cuda_array_interface__`` (v2 or v3)."""
    cai = obj.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise ValueError("masked device arrays (__cuda_array_interface__ with a mask) are not supported")
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    ptr = int(cai["data"][0] or 0)
    what = "the __cuda_array_interface__ array"
    _check_device(ptr, math.prod(shape), what)  # first: the wait below is queued on that GPU's stream
    producer_stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    if producer_stream is not None:
        if producer_stream == 0:
            raise ValueError("__cuda_array_interface__ stream 0 is not allowed (the spec reserves it)")
        _C.stream_wait(stream, int(producer_stream))  # our stream waits for the producer's work
    strides = cai.get("strides")
    strides = tuple(int(s) for s in strides) if strides is not None else None
    return _contiguous(ptr, shape, dtype, strides, stream, obj, what)


def plain_cuda_array(obj):
    """(pointer, size, typestr, ndim) of an object whose ``__cuda_array_interface__``
    describes C-contiguous memory on the current GPU (strides None), with no
    mask and no producer stream to wait for (none, or the legacy default
    stream 1) -- CuPy's array on the default stream -- else None.

    The repeated-call paths read such an array with this alone (about a
    microsecond, against four for :func:`from_cuda_array_interface`); every
    other array takes the full path, which gathers, waits or raises (as
    does every array when the cuda backend is not usable), and so does an
    array on a GPU that is not the current one. A pointer to host memory
    raises here as it does there."""
    if not (_backend.cuda_built() and _backend.cuda_probe()["usable"]):
        return None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if type(cai) is not dict or cai.get("strides") is not None or cai.get("mask") is not None or (
            cai.get("stream") not in (None, 1)):
        return None
    shape = cai["shape"]
    size = math.prod(shape)
    ptr = int(cai["data"][0] or 0)
    where = _device_of(ptr, size, "the __cuda_array_interface__ array")
    if where is not None and where[0] != where[1]:
        return None
    return ptr, size, cai["typestr"], len(shape)


def from_dlpack(obj, stream, device):
    """Consume ``obj.__dlpack__`` on a CUDA device (a versioned DLPack 1.0
    capsule when the producer offers one, a legacy one otherwise);
    `device` is its ``__dlpack_device__()``."""
    what = "the DLPack tensor"
    if device[0] == KDL_CUDA:  # first: the producer orders its work before our stream, on that GPU
        take_gpu(int(device[1]), _C.devices()[1], what)
    dl_stream = stream if stream else 1  # DLPack names the legacy default stream 1
    try:
        capsule = obj.__dlpack__(stream=dl_stream, max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0
        capsule = obj.__dlpack__(stream=dl_stream)
    view = _C.dlpack_import(capsule)
    code, bits, lanes = view.dtype
    if lanes != 1 or code not in _DL_KINDS:
        raise TypeError(f"DLPack dtype (code {code}, {bits} bits, {lanes} lanes) is not supported")
    dtype = np.dtype(np.bool_) if code == 6 else np.dtype(f"{_DL_KINDS[code]}{bits // 8}")
    shape = tuple(view.shape)
    strides = None if view.strides is None else tuple(s * dtype.itemsize for s in view.strides)
    _check_device(view.ptr, math.prod(shape), what)
    return _contiguous(view.ptr, shape, dtype, strides, stream, (obj, view), what)


def dlpack_shape(obj):
    """The shape of an array known by DLPack alone, from a capsule of its own
    -- nothing copied or gathered, no GPU made current -- or None for an
    object without DLPack."""
    device = _dlpack_device(obj)
    if device is None:
        return None
    if device[0] in (KDL_CPU, KDL_CUDA_HOST):
        return np.from_dlpack(obj).shape
    stream = 1 if device[0] == KDL_CUDA else None  # (DLPack's legacy default stream; nothing is read here)
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0
        capsule = obj.__dlpack__(stream=stream)
    return tuple(_C.dlpack_import(capsule).shape)


def _dlpack_device(obj):
    """``obj.__dlpack_device__()``, or None for an object without DLPack (or a NumPy array)."""
    if isinstance(obj, np.ndarray) or not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
        return None
    return tuple(obj.__dlpack_device__())


def _dlpack_device_type(obj):
    device = _dlpack_device(obj)
    return None if device is None else device[0]


def on_cuda(obj):
    """Whether obj is another library's array in CUDA memory."""
    return hasattr(obj, "__cuda_array_interface__") or _dlpack_device_type(obj) in (KDL_CUDA, KDL_CUDA_MANAGED)


def foreign(obj, stream):
    """A ForeignDevice for another library's device array, a NumPy array for
    DLPack host memory, or None when obj is neither."""
    if hasattr(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj, stream)
    device = _dlpack_device(obj)
    if device is not None:
        device_type = device[0]
        if device_type in (KDL_CUDA, KDL_CUDA_MANAGED):
            return from_dlpack(obj, stream, device)
        if device_type in (KDL_CPU, KDL_CUDA_HOST):
            return np.from_dlpack(obj)
        raise TypeError(f"DLPack device type {device_type} is not supported: cuatomic reads CUDA and host memory")
    return None


def dlpack_dtype(dtype):
    kind = "b" if dtype.kind == "b" else dtype.kind
    return _DL_CODES[kind], dtype.itemsize * 8
