"""DeviceArray: device memory with a shape and a dtype; and any array's
elements put where a backend computes (:func:`to_device`) or brought to the
host (:func:`host_copy`)."""
import math

import numpy as np

from . import _C, _backend, _interop
from ._dtypes import dtype_id
from ._interop import KDL_CPU, KDL_CUDA, current_gpu, dlpack_dtype


def host_array(a, name="a"):
    """``np.asarray(a)``, refusing a masked array: NumPy's conversion drops
    the mask, and cuatomic would then count the hidden elements.

    Parameters
    ----------
    a : array_like
    name : str, optional
        The argument's name, for the error message.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    TypeError
        If `a` is a ``numpy.ma.MaskedArray`` (or ``numpy.ma.masked``).
    """
    refuse_masked(a, name)
    return np.asarray(a)


def native_c_order(a):
    """a in C order and native byte order: itself when it is, else a copy.
    A 0-d array stays 0-d (np.ascontiguousarray would make it 1-d)."""
    return a.astype(a.dtype.newbyteorder("="), order="C", copy=False)


def refuse_masked(a, name="a"):
    """Raise TypeError when `a` is a ``numpy.ma.MaskedArray``."""
    if a is np.ma.masked:
        raise TypeError(f"{name} is numpy.ma.masked, a missing value: pass a number")
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array (numpy.ma.MaskedArray), and cuatomic does not apply masks: "
                        f"pass {name}.filled(value) to replace the masked elements, or {name}.compressed() "
                        "to drop them")


class DeviceArray:
    """An array in GPU memory, owned by cuatomic.

    Created by :func:`cuatomic.to_device` and returned by histogram and filter
    for device input. It is C-contiguous and exports
    ``__cuda_array_interface__`` (version 3) and ``__dlpack__`` (DLPack 1.0
    and legacy capsules), so CuPy, PyTorch and Numba read it without a copy.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
    size : int
        Number of elements.
    nbytes : int
        Bytes of device memory the elements occupy.
    ndim : int
    device : int
        The GPU the memory is on (a CUDA device ordinal). cuatomic computes
        on an array where it lives.
    """

    __slots__ = ("_buffer", "_shape", "_dtype", "_size")

    def __init__(self, buffer, shape, dtype):
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        size = math.prod(shape)
        if size * dtype.itemsize > buffer.nbytes:
            raise ValueError("shape and dtype need more bytes than the buffer holds")
        self._buffer = buffer
        self._shape = shape
        self._dtype = dtype
        self._size = size  # asked on every call: computed once

    @classmethod
    def _shaped(cls, buffer, shape, size, dtype):
        """An array of `shape` (a tuple of ints, `size` elements) and `dtype`
        (a numpy.dtype) over a buffer the core has just made to hold them:
        the checks of the constructor skipped, on the path of every call
        that returns device results."""
        self = cls.__new__(cls)
        self._buffer, self._shape, self._dtype, self._size = buffer, shape, dtype, size
        return self

    @classmethod
    def _vector(cls, buffer, n, dtype):
        """:meth:`_shaped` of n elements in one dimension."""
        return cls._shaped(buffer, (n,), n, dtype)

    @classmethod
    def empty(cls, shape, dtype):
        """An uninitialized device array, on the current GPU."""
        dtype = np.dtype(dtype)
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"negative dimensions are not allowed (got {shape})")
        size = math.prod(shape)
        self = cls.__new__(cls)  # the constructor's checks hold by construction
        self._buffer, self._shape, self._dtype, self._size = _C.DeviceBuffer(size * dtype.itemsize), shape, dtype, size
        return self

    @classmethod
    def _copy_of(cls, ptr, shape, dtype):
        """A new array on the current GPU holding a copy of the device memory
        at ptr (on any GPU), of `shape` and `dtype`."""
        out = cls.empty(shape, dtype)
        if out.nbytes:
            out._buffer.copy_from_device(ptr, out.nbytes)
        return out

    @classmethod
    def from_host(cls, a):
        """A device copy of a host array (C order, native byte order)."""
        a = host_array(a)
        a = native_c_order(a)
        out = cls.empty(a.shape, a.dtype)
        if a.nbytes:
            out._buffer.copy_from_host(a.reshape(-1).view(np.uint8), 0, a.nbytes)
        return out

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: self._size)
    nbytes = property(lambda self: self.size * self._dtype.itemsize)
    device = property(lambda self: self._buffer.device)

    @property
    def ptr(self):
        """The device address of the first element, as an int."""
        return self._buffer.ptr

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def copy_to_host(self):
        """Copy the array to a new NumPy array.

        Returns
        -------
        numpy.ndarray
        """
        out = np.empty(self._shape, self._dtype)
        if out.nbytes:
            self._buffer.copy_to_host(out.reshape(-1).view(np.uint8), 0, out.nbytes)
        return out

    def reshape(self, *shape):
        """A view of the same memory with another shape."""
        shape = shape[0] if len(shape) == 1 and np.ndim(shape[0]) == 1 else shape
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
            shape = tuple(self.size // max(known, 1) if s == -1 else s for s in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape array of size {self.size} into shape {shape}")
        return DeviceArray(self._buffer, shape, self._dtype)

    @property
    def __cuda_array_interface__(self):
        return {
            "shape": self._shape,
            "typestr": self._dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            # cuatomic returns an array only after the work that wrote it has
            # finished, so a consumer needs no synchronization (v3: None).
            "stream": None,
        }

    def __dlpack_device__(self):
        """``(kDLCUDA, device ordinal)``, per the DLPack Python specification."""
        return (KDL_CUDA, self._buffer.device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the array as a DLPack capsule, without a copy.

        Parameters
        ----------
        stream : int, optional
            The consumer's stream. The data is complete when cuatomic returns
            an array, so there is nothing for it to wait on.
        max_version : tuple of int, optional
            The highest DLPack version the consumer understands: (1, x) gets
            a versioned capsule, None or (0, x) a legacy one.
        dl_device : tuple of int, optional
            ``(kDLCPU, 0)`` gives a host copy (``np.from_dlpack(x,
            device="cpu")``); another device is refused.
        copy : bool, optional
            True: export a fresh copy; False: refuse anything but the array
            itself; None: whichever is needed.

        Returns
        -------
        PyCapsule
        """
        here = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != here:
            if tuple(dl_device)[0] != KDL_CPU or copy is False:
                raise BufferError(f"cannot export a DeviceArray on {here} to device {tuple(dl_device)}")
            host = self.copy_to_host()
            return host.__dlpack__(max_version=max_version) if max_version is not None else host.__dlpack__()
        source = self
        if copy:
            with current_gpu(self.device):  # the copy on the array's GPU
                source = DeviceArray._copy_of(self.ptr, self._shape, self._dtype)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return _C.dlpack_export(source._buffer, source.ptr, source._shape, dlpack_dtype(self._dtype), here[0],
                                here[1], versioned)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("implicit conversion of a cuatomic.DeviceArray to a NumPy array is not allowed: "
                        "use .copy_to_host()")

    def __repr__(self):
        return f"DeviceArray(shape={self._shape}, dtype={self._dtype})"


def to_device(a, backend=None, device=None):
    """Put an array where a backend computes on it.

    Parameters
    ----------
    a : array_like or DeviceArray
        An object that offers host memory through ``__dlpack__`` alone is
        read through it, as every call reads it.
    backend : {"cuda", "cpu"}, optional
        Default: the default backend (see :func:`cuatomic.backends`).
    device : int, optional
        The GPU to put it on (cuda backend; a CUDA device ordinal). Default:
        the current one. cuatomic's calls then run on that GPU.

    Returns
    -------
    DeviceArray or numpy.ndarray
        On ``"cuda"`` a :class:`DeviceArray` owning a copy in device memory
        (a DeviceArray passed in is returned as it is when it is on
        `device`, else copied there); on ``"cpu"`` a C-contiguous NumPy
        array in native byte order, so that the same code runs on both
        backends.

    Raises
    ------
    TypeError
        For a ``numpy.ma.MaskedArray``: its mask would be lost; an array of
        a dtype no call takes (strings, objects: ``to_device(None)``); a
        `device` that is not an int.
    ValueError
        `device` with the cpu backend, or a negative `device`.
    CudaError
        A `device` the process does not see (``cudaErrorInvalidDevice``).
    """
    name = _backend.resolve(backend)
    if device is not None:
        if isinstance(device, (bool, np.bool_)) or not isinstance(device, (int, np.integer)):
            raise TypeError(f"device must be an int GPU ordinal (got {type(device).__name__})")
        if name != "cuda":
            raise ValueError(f"device={device} names a GPU, but the backend is {name!r}")
    a = _host_dlpack(a)  # read as the calls read it
    if not isinstance(a, DeviceArray) and not _interop.on_cuda(a):
        a = host_array(a)
        dtype_id(a.dtype, "a")  # what no call takes (strings, objects, None) is refused on either backend
    if name == "cuda" and device is not None:
        with current_gpu(int(device)):
            if isinstance(a, DeviceArray):
                if a.device == device:
                    return a
                return DeviceArray._copy_of(a.ptr, a.shape, a.dtype)
            return DeviceArray.from_host(a)
    if isinstance(a, DeviceArray):
        if name == "cuda":
            return a
        return a.copy_to_host()
    if name == "cuda":
        return DeviceArray.from_host(a)
    a = host_array(a)
    return native_c_order(a)


def _host_dlpack(a):
    """An object that offers its elements in host memory through DLPack
    alone, as a NumPy array (np.from_dlpack), as every call reads it
    (_interop.foreign); anything else as it is (np.asarray would make it
    a 0-d object array)."""
    if isinstance(a, np.ndarray) or _interop._dlpack_device_type(a) not in (_interop.KDL_CPU,
                                                                          _interop.KDL_CUDA_HOST):
        return a
    return _interop.foreign(a, 0)


@_interop.on_inputs_gpu
def host_copy(obj, name="a", stream=0):
    """A NumPy array of obj's elements, wherever they live.

    Parameters
    ----------
    obj : array_like, DeviceArray, or another library's array
        A DeviceArray is copied from the device; another library's CUDA
        array (``__cuda_array_interface__`` or a CUDA ``__dlpack__``) is
        read in place (gathered first if strided) and copied; DLPack host
        memory and anything NumPy converts are taken as NumPy takes them.
    name : str, optional
        The argument's name, for errors.
    stream : int, optional
        Stream a foreign producer's work is ordered on.

    Returns
    -------
    numpy.ndarray
        Of obj's shape and dtype.

    Raises
    ------
    TypeError
        For a masked array (its mask would be lost).
    """
    if isinstance(obj, DeviceArray):
        return obj.copy_to_host()
    found = _interop.foreign(obj, stream)
    if isinstance(found, _interop.ForeignDevice):
        # (found.keep holds the source meanwhile)
        return DeviceArray._copy_of(found.ptr, found.shape, found.dtype).copy_to_host()
    return host_array(obj if found is None else found, name)


def pinned_empty(shape, dtype=float):
    """An uninitialized NumPy array in page-locked (pinned) host memory.

    Copies between it and the GPU run at the bus's full speed, and cuatomic
    copies from it without an extra staging copy.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : data-type, optional

    Returns
    -------
    numpy.ndarray
        Its memory is freed when the array (and every view of it) is gone.

    Raises
    ------
    RuntimeError
        When the cuda backend is not usable.
    """
    _backend.resolve("cuda")
    dtype = np.dtype(dtype)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return np.empty(shape, dtype)
    buffer = _C.PinnedBuffer(size * dtype.itemsize)
    return np.frombuffer(buffer, dtype=dtype, count=size).reshape(shape)  # the array keeps the buffer alive


def pinned_array(a):
    """A copy of `a` in page-locked host memory (C order, native byte order).

    Parameters
    ----------
    a : array_like

    Returns
    -------
    numpy.ndarray
    """
    a = host_array(a)
    out = pinned_empty(a.shape, a.dtype.newbyteorder("="))
    out[...] = a
    return out
