"""ExactSum: the state of an exact sum, as the exact rungs leave it.

The state is the exact sum as one Python integer (``_xacc``: the sum is
``value * 2**_C.XACC_E0``), so states of chunks combine by integer addition
-- exactly, in any order -- and the result is rounded once. It sits above
``_reduce``: :meth:`ExactSum.add` runs an exact rung of the sum ladder.
"""
import numpy as np

from . import _xacc
from ._common import integer_arg
from ._reduce import _dot, _reduce


class ExactSum:
    """The exact sum of float terms, kept as an integer so that parts
    combine exactly.

    ``ExactSum()`` is the empty sum. :meth:`add` adds the exact sum of an
    array's elements, :meth:`add_dot` the exact sum of the exact products
    of two vectors (each through an exact rung, on any backend); ``s + t``
    (or :meth:`merge`) combines two states, as the partial sums of chunks
    combine in a dask graph; :meth:`result` rounds once. The same terms give
    the same state whatever the order, chunking, backend or launch.
    States pickle (an int and two small ints).

    Parameters
    ----------
    value : int, optional
        The state's integer (see `value` below): an int, exactly; a float
        is refused, not truncated (``ExactSum(1.5)`` is no state).
    special : int, optional
        Flag bits, as `special` below (a non-negative int; the cores set
        bits of their own beside these three).

    Attributes
    ----------
    value : int
        The finite terms' sum is ``value * 2**_C.XACC_E0`` exactly.
    special : int
        Bits of ``_C.XACC_*``: a NaN, +inf or -inf term was seen.

    Raises
    ------
    TypeError
        A `value` or `special` that is not an int (a float, a str, None,
        a bool), an `other` to :meth:`merge` that is not an ExactSum.
    ValueError
        A negative `special`.
    """

    __slots__ = ("value", "special")

    def __init__(self, value=0, special=0):
        self.value = integer_arg("value", value)
        self.special = integer_arg("special", special, 0)

    @classmethod
    def from_words(cls, words, special):
        """The state from a rung's normalized words (an int64 array:
        every word but the last in [0, 2**32), the last signed)."""
        return cls(_xacc.value_of(words), special)

    def add(self, a, *, method="exact", backend=None, blocks=None, threads=None, stream=None):
        """Add the exact sum of the elements of `a` (float32 or float64,
        host or device) through the sum ladder's exact rung `method`;
        returns self."""
        value, special = _reduce("sum", a, None, method, backend, blocks, threads, stream, state=True)
        return self.merge(ExactSum(value, special))

    def add_dot(self, a, b, *, method="exact", backend=None, blocks=None, threads=None, stream=None):
        """Add the exact sum of the exact products ``a[i] * b[i]``; returns
        self."""
        value, special = _dot(a, b, method, backend, blocks, threads, stream, state=True)
        return self.merge(ExactSum(value, special))

    def merge(self, other):
        """Add another state into this one (exactly); returns self."""
        if not isinstance(other, ExactSum):
            raise TypeError(f"other must be an ExactSum (got {type(other).__name__}): add an array's terms with "
                            "add() or add_dot()")
        self.value += other.value
        self.special |= other.special
        return self

    def __add__(self, other):
        if not isinstance(other, ExactSum):
            return NotImplemented
        return ExactSum(self.value + other.value, self.special | other.special)

    def __eq__(self, other):
        if not isinstance(other, ExactSum):
            return NotImplemented
        return self.value == other.value and self.special == other.special

    __hash__ = None

    def __getstate__(self):
        return (self.value, self.special)

    def __setstate__(self, state):
        self.value, self.special = state

    def __repr__(self):
        return f"ExactSum({self.result()!r})"

    def result(self, dtype=np.float64):
        """The sum rounded once to `dtype` (float64 or float32), nearest
        with ties to even: a NumPy scalar. NaN if a term was NaN or both
        infinities were; an infinity if one was; inf where the exact sum
        lies beyond the type's range; +0.0 for an exact zero (np.sum's and
        math.fsum's zero, even of -0.0 terms), -0.0 for a negative sum too
        small for the type."""
        try:
            dt = np.dtype(dtype)
        except TypeError as e:
            raise TypeError(f"dtype={dtype!r}: {e} (an exact sum rounds to float32 or float64)") from None
        return _xacc.rounded(self.value, self.special, dt)

    def __float__(self):
        return float(self.result(np.float64))
