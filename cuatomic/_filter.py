"""filter: ``x <op> value`` under NumPy's comparison rules, reduced to one
interval test the kernels make in the data's own type."""
import collections
import operator
import os

import numpy as np

from . import _C, _backend
from ._common import (BytesLRU, auto_rung, direct_input, flag, gpu_of, launch_config, named_rung, prepare, read_as_is,
                      stream_of)
from ._device import DeviceArray, refuse_masked
from ._interop import on_inputs_gpu

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


# NumPy's comparison ufuncs, taken as op the way reduce takes its ufuncs.
_UFUNC_OPS = {np.less: "<", np.less_equal: "<=", np.greater: ">", np.greater_equal: ">=", np.equal: "==",
              np.not_equal: "!="}


def check_op(op):
    """The comparison as its string: op itself, or the string of a NumPy
    comparison ufunc (``np.greater`` is ``">"``). TypeError for anything
    else that is not a string, ValueError for an unknown string, each
    naming the valid ones."""
    if isinstance(op, np.ufunc):
        if op in _UFUNC_OPS:
            return _UFUNC_OPS[op]
        raise ValueError(f"unknown op {op.__name__!r}: expected one of {', '.join(_COMPARE)} or NumPy's comparison "
                         f"ufuncs ({', '.join('np.' + u.__name__ for u in _UFUNC_OPS)})")
    if not isinstance(op, str):
        raise TypeError(f"op must be a string, one of {', '.join(_COMPARE)}, or a NumPy comparison ufunc (got "
                        f"{type(op).__name__} {op!r})")
    if op not in _COMPARE:
        raise ValueError(f"unknown op {op!r}: expected one of {', '.join(_COMPARE)}")
    return op


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
                raise TypeError(f"value {value!r} cannot be compared with {dt} elements: {e}") from None
        if not isinstance(r, (bool, np.bool_, np.ndarray)):
            raise TypeError(f"value {value!r} cannot be compared with {dt} elements")
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


def filter(a, op, value, *, ordered=True, method="auto", backend=None, blocks=None, threads=None, stream=None):
    """The elements x of ``a`` (flattened, C order) with ``x <op> value``.

    Parameters
    ----------
    a : array_like or DeviceArray
    op : {"<", "<=", ">", ">=", "==", "!="} or ufunc
        The comparison, or NumPy's ufunc of it (``np.less``,
        ``np.less_equal``, ``np.greater``, ``np.greater_equal``,
        ``np.equal``, ``np.not_equal``).
    value : scalar
        Compared as NumPy compares ``a.ravel() <op> value`` (out-of-range,
        fractional and NaN values included).
    ordered : bool, optional
        True (default): exactly ``a.ravel()[a.ravel() <op> value]``. False:
        the same multiset in any order.
    method : str, optional
        A rung of :func:`methods` ``("filter")``: ``"atomic"`` (push_back
        with atomicAdd's old value; unordered), ``"ordered"`` (count, scan,
        scatter), ``"lookback"`` (single pass with decoupled look-back;
        ordered), ``"warp_aggregated"`` (push_back with one atomic per warp;
        unordered) or ``"pipelined"`` (lookback with the next tile copied in
        while it looks back; ordered; on a GPU it needs sm_80 and input on a
        16-byte boundary, and raises ValueError otherwise). ``"auto"``: the
        rung measured fastest for this dtype and size among those that keep
        order when ``ordered=True`` and can run this call (see
        :func:`explain`).
    backend, blocks, threads, stream
        As for :func:`sum`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        1-D, of a's dtype (its byte order too, as NumPy's); a DeviceArray
        for device input. When at least
        1/8 of the elements pass, a DeviceArray result lives in the call's
        output buffer, sized for all of them (never more than the input),
        which is freed with the result; fewer are copied to a buffer of
        their own size (a copy of all of them would cost up to a third of
        the call again).

    Raises
    ------
    TypeError
        An op that is not a string, a value that cannot be compared with
        the elements, or a masked array or ``numpy.ma.masked`` value.
    ValueError
        An unknown op, a non-scalar value, or ``ordered=True`` with a method
        that cannot keep order.
    """
    if type(ordered) is not bool:
        ordered = flag("ordered", ordered)
    key = None
    if (type(value) in _PLAIN_VALUES and type(op) is str and type(method) is str and backend is None
            and blocks is None and threads is None and stream is None and (direct := direct_input(a)) is not None):
        x, n, dt, _ = direct
        # auto's choice depends on the size and, on a GPU, on the device and
        # on whether the data starts on a 16-byte boundary (pipelined's limits)
        key = (type(a), dt, op, type(value), value, bool(ordered), method, os.environ.get("CUATOMIC_BACKEND"),
               (n, gpu_of(x), type(x) is not int or x % 16 == 0) if method == "auto" else None)
        plan = _PLANS.get(key)
        if plan is not None:
            return _run(plan, x, n, -1, -1, None)
    return _filter(a, op, value, ordered, method, backend, blocks, threads, stream,
                   (key, x) if key is not None else None)


# A repeated call with no launch options goes straight to the core with the
# plan its first call left: the backend, the rung and the predicate's
# interval. Resolving them cost about 9 us of Python on the H200's host (a
# 1,024-element DeviceArray filter: 33.2 us resolving, 24.4 us planned).
# Plans are made only for arrays the core reads as they are
# (_common.direct_input) and a Python int or float value. Every threshold is
# a key of its own, so the cache keeps only the last _PLAN_COUNT plans.
_PLAIN_VALUES = frozenset((int, float))
_PLAN_COUNT = 1024
_PLANS = BytesLRU(_PLAN_COUNT)  # (each plan counted as one "byte")

# What the core is told: every resolved argument but the data and the
# launch options.
_Plan = collections.namedtuple("_Plan", "backend rung dtype_id negate lo hi device dtype")


def rung_fits(backend, inp, blocks, threads):
    """fits(rung) for :func:`cuatomic._auto.choose`: None if the filter
    rung can filter this prepared input with this launch configuration on
    this device, else the limit it would refuse with (the same test its
    launcher makes: ``pipelined`` needs sm_80 and input on a 16-byte
    boundary). Host input is staged into memory the call allocates, which
    is aligned."""
    be_id = _backend.backend_id(backend)
    address = inp.x if inp.device else 0
    return lambda row: _C.filter_fits(be_id, row.index, address, inp.id, blocks, threads)


def _run(plan, x, n, blocks, threads, stream):
    """The kept elements of the n at x, as `plan` says."""
    # Positional, in _C.filter's order (backend, rung, x, n, dtype, negate,
    # lo, hi, blocks, threads, device_out, stream): keywords cost about a
    # microsecond of every call.
    out, count = _C.filter(plan.backend, plan.rung, x, n, plan.dtype_id, plan.negate, plan.lo, plan.hi, blocks,
                           threads, plan.device, stream)
    # (the core has cut a host result to the count, and copied a device
    # result of fewer than n/8 elements to a buffer of its own)
    return DeviceArray._vector(out, count, plan.dtype) if plan.device else out


@on_inputs_gpu
def _filter(a, op, value, ordered, method, backend, blocks, threads, stream, plan_for):
    """filter without a plan, on the input's GPU; plan_for (a plan's key,
    and what the core reads) when the call can leave a plan for the next
    one."""
    op = check_op(op)
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
        rung = auto_rung("filter", be, inp.n, inp.dtype, require=_C.F_ORDERED if ordered else 0,
                         fits=rung_fits(be, inp, nb, nt))
    plan = _Plan(_backend.backend_id(be), rung.index, inp.id, negate, lo, hi, inp.device, inp.dtype)
    result = _run(plan, inp.x, inp.n, nb, nt, s)
    if inp.given != inp.dtype:  # a.ravel()[mask] keeps a's byte order (the core wrote native order)
        return result.astype(inp.given)
    if plan_for and read_as_is(inp, plan_for[1], a):
        _PLANS.put(plan_for[0], plan, 1)
    return result
