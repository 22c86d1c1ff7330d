"""The exact rungs' superaccumulator, read on the host: its words as one
Python integer, and that integer rounded once.

The exact rungs of sum and dot (``method="exact"``, ``"exact_shared"``,
``"exact_global"``) add every term -- every value, or every exact product
-- as an integer into a superaccumulator (cuda/xacc.h): ``_C.XACC_WORDS``
words of 32-bit digits, word k weighing ``2**(32*k + _C.XACC_E0)``. Here the
normalized words become one Python integer ``N`` with the sum equal to
``N * 2**XACC_E0`` exactly, so states of chunks combine by integer addition
-- exactly, in any order -- and the result is rounded once, to nearest with
ties to even, into float64 or float32 directly (never through another
rounding).

Below ``_reduce``, which rounds an exact rung's result here, and
``_exactsum``, whose :class:`ExactSum` keeps the integer between calls.
"""
import math

import numpy as np

from . import _C

_E0 = _C.XACC_E0
_TOP = 32 * (_C.XACC_WORDS - 1)
_NONFINITE = _C.XACC_NAN | _C.XACC_PINF | _C.XACC_NINF

# (significand bits, smallest normal exponent, largest exponent) per result type
_FORMATS = {np.dtype(np.float64): (53, -1022, 1023), np.dtype(np.float32): (24, -126, 127)}


def value_of(words):
    """The integer ``N`` of a rung's normalized words (an int64 array:
    every word but the last in [0, 2**32), the last signed): the sum is
    ``N * 2**XACC_E0``."""
    words = np.asarray(words, dtype=np.int64)
    low = int.from_bytes(words[:-1].astype("<u4").tobytes(), "little")
    return low + (int(words[-1]) << _TOP)


def rounded(value, special, dt):
    """The sum ``value * 2**XACC_E0`` with the `special` flags rounded once
    to the numpy.dtype `dt` (float64 or float32, else TypeError), nearest
    with ties to even: a NumPy scalar (see :meth:`ExactSum.result`)."""
    if dt not in _FORMATS:
        raise TypeError(f"an exact sum rounds to float32 or float64, not dtype {dt}")
    if special & _NONFINITE:
        if special & _C.XACC_NAN or (special & _C.XACC_PINF and special & _C.XACC_NINF):
            return dt.type(math.nan)
        return dt.type(math.inf if special & _C.XACC_PINF else -math.inf)
    return dt.type(_round(value, dt))  # an exact zero is +0.0, as np.sum and math.fsum give


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
