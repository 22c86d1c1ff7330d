"""argmin and argmax: the index of the first smallest (largest) element of
the flattened array, as ``np.argmin(a)``/``np.argmax(a)``, on the argmin
ladder (one ladder for both: argmax inverts the keys the rungs compare)."""
import numpy as np

from . import _C, _auto, _backend
from ._common import auto_rung, launch_config, named_rung, prepare, stream_of
from ._interop import on_inputs_gpu

_DOC = """The index of the first {what} element of the flattened array, as ``np.{name}(a)``.

    Parameters
    ----------
    a : array_like, DeviceArray, or a device array of another library
        Any shape (the index is into ``a.ravel()``, as NumPy's without
        ``axis``), layout or byte order; bool (any nonzero byte is True),
        integers, float32, float64.
    axis : None
        Only None, the flattened array (NumPy's default); any other value is
        a TypeError, never a silent flattening.
    method : str, optional
        A rung of the argmin ladder (see ``methods("argmin")``; argmax runs
        the same rungs on inverted keys). ``"auto"`` runs the top rung that
        can take the input (``vector``; argmin has no measured rule yet:
        ``bench argmin`` finds it fastest on every case it times);
        :func:`explain` says which and why. Every rung gives the same index.
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.intp
        The first index of the {what} value; a NaN counts as {than} than
        every number, so the first NaN's index where there is one (NumPy's
        rule). -0.0 and +0.0 are equal (the first of them wins).

    Raises
    ------
    ValueError
        An empty array ("attempt to get {name} of an empty sequence", as
        NumPy); an unknown method or backend, a launch configuration the
        method cannot take, or a method that cannot take this input
        (``packed`` needs elements of at most 4 bytes and at most 2^32 of
        them for 4-byte elements).
    TypeError
        An unsupported dtype (float16, complex, object), a masked array.
    CudaError
        A CUDA failure, with the CUDA error's name.

    Notes
    -----
    Every rung orders the pair (key, index): the key is an unsigned integer
    in the values' order (integers with the sign bit flipped, float bits
    made monotonic, every NaN first, argmax's keys inverted), so ties and
    NaN are settled by integer comparison. ``packed`` puts both in one
    64-bit word and takes one ``atomicMin`` per element.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> x = np.array([3.0, -1.0, 7.0, -1.0])
    >>> int(cuatomic.{name}(x, backend="cpu"))
    {example}
    >>> int(cuatomic.{name}(np.array([1.0, np.nan, 2.0, np.nan]), backend="cpu"))
    1
    """


@on_inputs_gpu
def argmin(a, axis=None, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    return _run(a, axis, False, method, backend, blocks, threads, stream)


@on_inputs_gpu
def argmax(a, axis=None, *, method="auto", backend=None, blocks=None, threads=None, stream=None):
    return _run(a, axis, True, method, backend, blocks, threads, stream)


argmin.__doc__ = _DOC.format(what="smallest", than="smaller", name="argmin", example=1)
argmax.__doc__ = _DOC.format(what="largest", than="larger", name="argmax", example=2)


def _run(a, axis, largest, method, backend, blocks, threads, stream):
    if axis is not None:
        raise TypeError(f"{'argmax' if largest else 'argmin'}(axis={axis!r}): only axis=None (the index into the "
                        "flattened array) is implemented; along an axis, use NumPy, CuPy or PyTorch for now")
    be = _backend.resolve(backend)
    rung = named_rung("argmin", be, method)
    b, t = launch_config(blocks, threads)
    s = stream_of(stream)
    inp = _prepared(a, largest, be, s)
    if rung is None:
        rung = auto_rung("argmin", be, inp.n, inp.dtype, fits=_fits(be, inp))
    index = _C.argmin(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                      max=largest, blocks=b, threads=t, stream=s)
    return np.intp(index)


def _prepared(a, largest, backend, stream):
    inp = prepare(a, backend, stream=stream)
    if inp.n == 0:
        raise ValueError(f"attempt to get {'argmax' if largest else 'argmin'} of an empty sequence")
    return inp


def _fits(backend, inp):
    """Why each rung cannot take this input (None: it can), for auto to pass it by."""
    be = _backend.backend_id(backend)
    return lambda rung: _C.argmin_fits(backend=be, rung=rung.index, n=inp.n, dtype=inp.id)


@on_inputs_gpu
def explain(backend, a, largest=False, stream=0):
    """The :class:`Choice` ``method="auto"`` makes for ``argmin(a)`` (or
    argmax) on `backend` (:func:`cuatomic.explain` of "argmin"/"argmax")."""
    facts, fits = {}, None
    if a is not None:
        inp = _prepared(a, largest, backend, stream)
        facts, fits = {"n": inp.n, "dtype": str(inp.dtype)}, _fits(backend, inp)
    return _auto.choose("argmin", backend, facts, fits=fits)
