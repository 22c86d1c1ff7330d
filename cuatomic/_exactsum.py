"""ExactSum: the state of an exact sum, as the exact rungs leave it.

The exact rungs of sum and dot (``method="exact"``, ``"exact_shared"``,
``"exact_global"``) add every term -- every value, or every exact product
-- as an integer into a superaccumulator (cuda/xacc.h): ``_C.XACC_WORDS``
words of 32-bit digits, word k weighing ``2**(32*k + _C.XACC_E0)``. Here the
normalized words become one Python integer ``N`` with the sum equal to
``N * 2**XACC_E0`` exactly, so states of chunks combine by integer addition
-- exactly, in any order -- and the result is rounded once, to nearest with
ties to even, into float64 or float32 directly (never through another
rounding).
"""
import math

import numpy as np

from . import _C
from ._common import integer_arg

_E0 = _C.XACC_E0
_TOP = 32 * (_C.XACC_WORDS - 1)
_NONFINITE = _C.XACC_NAN | _C.XACC_PINF | _C.XACC_NINF

# (significand bits, smallest normal exponent, largest exponent) per result type
_FORMATS = {np.dtype(np.float64): (53, -1022, 1023), np.dtype(np.float32): (24, -126, 127)}


def _round(n, dtype):
    """``n * 2**XACC_E0`` rounded once to `dtype` (nearest, ties to even),
    as a Python float holding that dtype's value (inf beyond its range)."""
    p, emin, emax = _FORMATS[dtype]
    m, e = abs(n), _E0
    lsb = max(e + m.bit_length() - p, emin - p + 1)  # last kept bit: p bits, or the subnormal grid
    shift = lsb - e
    if shift > 0:
        q, r = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        m, e = q, lsb
    if m and e + m.bit_length() - 1 > emax:
        return -math.inf if n < 0 else math.inf
    return math.copysign(math.ldexp(m, e), -1.0 if n < 0 else 1.0)  # exact: m has at most p + 1 bits;
    # a negative sum too small for the type rounds to -0.0, as IEEE rounds it


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
        words = np.asarray(words, dtype=np.int64)
        low = int.from_bytes(words[:-1].astype("<u4").tobytes(), "little")
        return cls(low + (int(words[-1]) << _TOP), special)

    def add(self, a, *, method="exact", backend=None, blocks=None, threads=None, stream=None):
        """Add the exact sum of the elements of `a` (float32 or float64,
        host or device) through the sum ladder's exact rung `method`;
        returns self."""
        from ._reduce import _reduce
        part = _reduce("sum", a, None, method, backend, blocks, threads, stream, state=True)
        return self.merge(part)

    def add_dot(self, a, b, *, method="exact", backend=None, blocks=None, threads=None, stream=None):
        """Add the exact sum of the exact products ``a[i] * b[i]``; returns
        self."""
        from ._reduce import _dot
        return self.merge(_dot(a, b, method, backend, blocks, threads, stream, state=True))

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
        if dt not in _FORMATS:
            raise TypeError(f"an exact sum rounds to float32 or float64, not dtype {dt}")
        s = self.special
        if s & _NONFINITE:
            if s & _C.XACC_NAN or (s & _C.XACC_PINF and s & _C.XACC_NINF):
                return dt.type(math.nan)
            return dt.type(math.inf if s & _C.XACC_PINF else -math.inf)
        return dt.type(_round(self.value, dt))  # an exact zero is +0.0, as np.sum and math.fsum give

    def __float__(self):
        return float(self.result(np.float64))
