"""Exact references for float results, and the accuracy rule cuatomic is
held to (by the tests, the demo, the benchmarks and the figures).

A float sum or dot is compared with the exact answer -- the exact sum of
the values (of the exact products), rounded once -- and with NumPy's own
error on the same data, never with a bound that grows past the answer.
"""
import math

import numpy as np


def exact_sum(x):
    """The exact sum of the elements of x, correctly rounded to float64.

    float32 and float64 values are exact in float64, and ``math.fsum``
    rounds their exact sum once."""
    return math.fsum(np.asarray(x).astype(np.float64, copy=False).ravel())


def _split(a):
    """Veltkamp's split: a == hi + lo exactly, each with at most 26
    significant bits, so products of halves are exact in float64."""
    c = a * 134217729.0  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def exact_dot(a, b):
    """The exact sum of the exact products a[i] * b[i], correctly rounded
    to float64 (finite inputs below 1e290 in magnitude)."""
    a = np.asarray(a)
    b = np.asarray(b)
    x = a.astype(np.float64, copy=False).ravel()
    y = b.astype(np.float64, copy=False).ravel()
    if a.dtype.itemsize <= 4 and b.dtype.itemsize <= 4:  # float32 products are exact in float64
        return math.fsum(x * y)
    xh, xl = _split(x)
    yh, yl = _split(y)
    return math.fsum(np.concatenate([xh * yh, xh * yl, xl * yh, xl * yl]))


def ulp(value, dtype):
    """One unit in the last place of |value| in dtype."""
    return float(np.spacing(np.abs(np.asarray(value, dtype=dtype))))


def error_bound(exact, numpy_value, dtype, *, wide=True, n=0, abs_sum=0.0):
    """The largest error allowed for a float result whose exact value is
    ``exact``: twice NumPy's own error on the same data, or two ulps of the
    answer, whichever is larger.

    ``wide=False`` is for the tutorial's rungs, which accumulate in the
    result's own precision in an order the atomics choose: they may also
    err by sqrt(n) * eps * sum(|x|) -- a sequential float sum errs by about
    eps * sum(|x|) -- which stays far below |exact| for any data without
    heavy cancellation.
    """
    bound = max(2 * abs(float(numpy_value) - exact), 2 * ulp(exact, dtype))
    if not wide:
        bound = max(bound, math.sqrt(n) * float(np.finfo(dtype).eps) * abs_sum)
    return bound


def close(got, exact, numpy_value, dtype, **kw):
    """Whether a float result meets :func:`error_bound`."""
    return abs(float(got) - exact) <= error_bound(exact, numpy_value, dtype, **kw)


def float_result_ok(op, got, a, b=None, *, wide=True):
    """Whether ``got`` is an acceptable float ``op`` ("sum" or "dot") of the
    float arrays a (and b), by :func:`error_bound`, with NumPy's error that
    of ``np.sum(a)`` or ``np.sum(a * b)`` (its pairwise sum of the
    products; ``np.dot`` of float32 is often less accurate)."""
    return float_result_check(op, a, b, wide=wide)(got)


def float_result_check(op, a, b=None, *, wide=True):
    """:func:`float_result_ok` of any result, the exact answer computed
    once: a function of ``got`` (a benchmark checks several systems'
    results of one input; ``math.fsum`` of 2^28 elements takes seconds)."""
    a = np.asarray(a)
    if op == "sum":
        exact, reference = exact_sum(a), np.sum(a)
        terms = np.abs(a.astype(np.float64))
    else:
        b = np.asarray(b)
        exact, reference = exact_dot(a, b), np.sum(a * b)
        terms = np.abs(a.astype(np.float64) * b.astype(np.float64))
    abs_sum = float(terms.sum())
    return lambda got: close(got, exact, reference, reference.dtype, wide=wide, n=a.size, abs_sum=abs_sum)
