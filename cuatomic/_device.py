"""DeviceArray: device memory with a shape and a dtype."""
import numpy as np

from . import _C, _backend


class DeviceArray:
    """An array in GPU memory, owned by cuatomic.

    Created by :func:`cuatomic.to_device` and returned by histogram and filter
    for device input. It is C-contiguous and exports
    ``__cuda_array_interface__`` (version 3), so CuPy, PyTorch and Numba can
    read it without a copy.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
    size : int
        Number of elements.
    nbytes : int
        Bytes of device memory the elements occupy.
    ndim : int
    """

    __slots__ = ("_buffer", "_shape", "_dtype")

    def __init__(self, buffer, shape, dtype):
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize > buffer.nbytes:
            raise ValueError("shape and dtype need more bytes than the buffer holds")
        self._buffer = buffer
        self._shape = shape
        self._dtype = dtype

    @classmethod
    def empty(cls, shape, dtype):
        """An uninitialized device array."""
        dtype = np.dtype(dtype)
        shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return cls(_C.DeviceBuffer(nbytes), shape, dtype)

    @classmethod
    def from_host(cls, a):
        """A device copy of a host array (C order, native byte order)."""
        a = np.asarray(a)
        a = np.ascontiguousarray(a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("=")))
        out = cls.empty(a.shape, a.dtype)
        if a.nbytes:
            out._buffer.copy_from_host(a.reshape(-1).view(np.uint8), 0, a.nbytes)
        return out

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self._dtype.itemsize)

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
            # cuatomic works on the legacy default stream and has finished
            # writing before it returns the array.
            "stream": 1,
        }

    def __array__(self, dtype=None, copy=None):
        raise TypeError("implicit conversion of a cuatomic.DeviceArray to a NumPy array is not allowed: "
                        "use .copy_to_host()")

    def __repr__(self):
        return f"DeviceArray(shape={self._shape}, dtype={self._dtype})"


def to_device(a, backend=None):
    """Put an array where a backend computes on it.

    Parameters
    ----------
    a : array_like or DeviceArray
    backend : {"cuda", "cpu"}, optional
        Default: the default backend (see :func:`cuatomic.backends`).

    Returns
    -------
    DeviceArray or numpy.ndarray
        On ``"cuda"`` a :class:`DeviceArray` owning a copy in device memory
        (a DeviceArray passed in is returned as it is); on ``"cpu"`` a
        C-contiguous NumPy array in native byte order, so that the same code
        runs on both backends.
    """
    name = _backend.resolve(backend)
    if isinstance(a, DeviceArray):
        if name == "cuda":
            return a
        return a.copy_to_host()
    if name == "cuda":
        return DeviceArray.from_host(a)
    a = np.asarray(a)
    return np.ascontiguousarray(a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("=")))
