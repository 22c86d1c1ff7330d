"""filter: ``x <op> value`` under NumPy's comparison rules, reduced to one
interval test the kernels make in the data's own type."""
import operator

import numpy as np

from . import _C, _backend
from ._common import auto_rung, launch_config, named_rung, prepare, stream_of
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu

# A device call's output is made for all n elements to pass. When at least
# 1/_TRIM of them pass, the result keeps that buffer (never larger than the
# input): a trimmed copy would cost up to a third of the call again. Fewer
# are copied to a buffer of their own size (cheap), so a few elements do not
# hold a capacity-n buffer alive.
_TRIM = 8

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


class _Domain:
    """The values of a dtype as ordered integer keys, so a monotone
    predicate's edge can be found by bisection."""

    def __init__(self, dt):
        self.dt = dt
        if dt.kind == "b":
            self.lo, self.hi = 0, 1
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            self.lo, self.hi = int(info.min), int(info.max)
        else:
            self.bits = dt.itemsize * 8
            self.uint = np.dtype(f"u{dt.itemsize}")
            self.lo, self.hi = self.key(-np.inf), self.key(np.inf)

    def key(self, v):
        if self.dt.kind != "f":
            return int(v)
        u = int(np.array(v, self.dt).view(self.uint))
        sign = 1 << (self.bits - 1)
        return u | sign if u < sign else ~u & ((1 << self.bits) - 1)

    def value(self, k):
        if self.dt.kind != "f":
            return np.array(k, self.dt)[()]
        sign = 1 << (self.bits - 1)
        u = k & ~sign if k & sign else ~k & ((1 << self.bits) - 1)
        return np.array(u, self.uint).view(self.dt)[()]

    def pack(self, k):
        v = self.value(k)
        if self.dt.kind == "f":
            return np.array(v, self.dt).tobytes().ljust(8, b"\0")
        return np.array(int(v), np.int64 if self.dt.kind == "i" else np.uint64).tobytes()


def _first_true(lo, hi, test):
    """Smallest k in [lo, hi] with test(k), for test false...true; hi+1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if test(mid):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _last_true(lo, hi, test):
    """Largest k in [lo, hi] with test(k), for test true...false; lo-1 if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if test(mid):
            lo = mid + 1
        else:
            hi = mid - 1
    return hi


def predicate(dt, op, value):
    """``x <op> value`` over elements of dtype dt, under NumPy's comparison
    rules, as (negate, lo, hi): keep x iff (lo <= x <= hi) != negate."""
    refuse_masked(value, "value")
    if isinstance(value, DeviceArray) or np.ndim(value) != 0:
        raise ValueError("value must be a scalar")
    dom = _Domain(dt)
    compare = _COMPARE[op]

    def holds(k, cmp=compare):
        with np.errstate(all="ignore"):
            try:
                r = cmp(np.array(dom.value(k), dt), value)
            except TypeError as e:
                raise TypeError(f"cannot compare {dt} elements with {value!r}: {e}") from None
        if not isinstance(r, (bool, np.bool_, np.ndarray)):
            raise TypeError(f"cannot compare {dt} elements with {value!r}")
        return bool(r)

    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if dt.kind in "iu" and is_int and dom.lo <= int(value) <= dom.hi:
        v = int(value)  # exact comparisons: no search needed
        lo, hi = {"<": (dom.lo, v - 1), "<=": (dom.lo, v), ">": (v + 1, dom.hi), ">=": (v, dom.hi)}.get(op, (v, v))
    elif op in ("<", "<="):
        lo, hi = dom.lo, _last_true(dom.lo, dom.hi, holds)
    elif op in (">", ">="):
        lo, hi = _first_true(dom.lo, dom.hi, holds), dom.hi
    else:
        lo = _first_true(dom.lo, dom.hi, lambda k: holds(k, operator.ge))
        hi = _last_true(dom.lo, dom.hi, lambda k: holds(k, operator.le))
        if lo > hi or not holds(lo, operator.eq):
            lo, hi = dom.hi, dom.lo
    if lo > hi:  # empty: an interval no element is inside
        lo, hi = dom.hi, dom.lo
    return op == "!=", dom.pack(lo), dom.pack(hi)


@on_inputs_gpu
def filter(a, op, value, *, ordered=True, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The elements x of ``a`` (flattened, C order) with ``x <op> value``.

    Parameters
    ----------
    a : array_like or DeviceArray
    op : {"<", "<=", ">", ">=", "==", "!="}
    value : scalar
        Compared as NumPy compares ``a.ravel() <op> value`` (out-of-range,
        fractional and NaN values included).
    ordered : bool, optional
        True (default): exactly ``a.ravel()[a.ravel() <op> value]``. False:
        the same multiset in any order.
    method : str, optional
        ``"atomic"`` (push_back with atomicAdd's old value; unordered),
        ``"ordered"`` (count, scan, scatter) or ``"lookback"`` (single pass
        with decoupled look-back; ordered). ``"auto"``: the rung measured
        fastest for this dtype and size among those that keep order when
        ``ordered=True`` (see :func:`explain`).
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        1-D, of a's dtype; a DeviceArray for device input. When at least
        1/8 of the elements pass, a DeviceArray result lives in the call's
        output buffer, sized for all of them (never more than the input),
        which is freed with the result; fewer are copied to a buffer of
        their own size.

    Raises
    ------
    TypeError
        An op that is not a string, a value that cannot be compared with
        the elements, or a masked array or ``numpy.ma.masked`` value.
    ValueError
        An unknown op, a non-scalar value, or ``ordered=True`` with a method
        that cannot keep order.
    """
    if not isinstance(op, str):
        raise TypeError(f"op must be a string, one of {', '.join(_COMPARE)} (got {type(op).__name__} {op!r})")
    if op not in _COMPARE:
        raise ValueError(f"unknown op {op!r}: expected one of {', '.join(_COMPARE)}")
    be = _backend.resolve(backend)
    rung = named_rung("filter", be, method)
    if ordered and rung is not None and not rung.has(_C.F_ORDERED):
        raise ValueError(f"method {rung.name!r} cannot keep input order: pass ordered=False, or a method that "
                         f"keeps it ({', '.join(r.name for r in _backend.table('filter', be) if r.has(_C.F_ORDERED))})")
    nb, nt = launch_config(blocks, threads)
    s = stream_of(stream)
    inp = prepare(a, be, stream=s)
    negate, lo, hi = predicate(inp.dtype, op, value)
    if rung is None:
        rung = auto_rung("filter", be, inp.n, inp.dtype,
                         require=_C.F_ORDERED if ordered else 0)
    out, count = _C.filter(backend=_backend.backend_id(be), rung=rung.index, x=inp.x, n=inp.n, dtype=inp.id,
                           negate=negate, lo=lo, hi=hi, blocks=nb, threads=nt, device_out=inp.device, stream=s)
    if not inp.device:
        return out  # already cut to the count in C
    if _TRIM * count < inp.n:
        return DeviceArray._copy_of(out.ptr, count, inp.dtype)
    return DeviceArray(out, (count,), inp.dtype)


