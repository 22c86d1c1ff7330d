"""NumPy's ufuncs as reduce folds them: their names and ids, the result
dtype of ``np.<op>.reduce`` and whether the kernels can fold the input
unconverted (shared by the flat reduce, the axis reductions and dask)."""
import functools

import numpy as np

from . import _C
from ._common import _check_result_dtype, cached_call

OPS = _C.REDUCE_OPS  # the ufuncs reduce folds with, in ABI id order
_OP_IDS = {name: i for i, name in enumerate(OPS)}
_ROUNDING = ("add", "multiply")  # the ops whose float results are rounded
_NO_IDENTITY = ("minimum", "maximum")


def _op_name(op):
    """The ufunc's name, from a name or a NumPy ufunc; ValueError naming the
    valid ones."""
    name = op.__name__ if isinstance(op, np.ufunc) else op
    if not isinstance(name, str) or name not in _OP_IDS:
        raise ValueError(f"unknown reduce op {op!r}: expected one of {', '.join(OPS)}")
    return name


def result_dtype(name, in_dt, dtype):
    """NumPy's result dtype of ``<name>.reduce`` of `in_dt` elements with
    ``dtype=``, refused (TypeError) when NumPy has none or cuatomic cannot
    compute in it: the in-memory call's check, and cuatomic.dask's."""
    out_dt = cached_call(_result_dtype, name, in_dt, dtype)
    _check_result_dtype(out_dt, f"{name}.reduce")
    return out_dt


@functools.lru_cache(maxsize=512)
def _result_dtype(name, in_dt, dtype):
    """NumPy's result dtype of the reduce (NumPy's own TypeError for a loop
    it does not have, such as a bitwise op on floats)."""
    try:
        # keepdims: an array even for dtype=object (whose scalar result is a Python object)
        return getattr(np, name).reduce(np.zeros(1, in_dt), dtype=dtype, keepdims=True).dtype
    except TypeError as e:
        raise TypeError(f"cannot {name}.reduce {in_dt}" + ("" if dtype is None else f" with dtype={dtype!r}")
                        + f": {e}") from None


def _folds_unconverted(name, dt, out):
    """Whether the kernels, folding `dt` data in their own type
    (cua_reduce_kind: 64-bit integers, double) and narrowing to `out` at
    the end, give what NumPy gives by converting every element to `out`
    first. Otherwise the input is converted first, as NumPy does."""
    if dt == out:
        return True
    ints = dt.kind in "biu" and out.kind in "iu"
    widening = dt.kind == out.kind == "f" and out.itemsize >= dt.itemsize
    if name in _ROUNDING:  # sums and products wrap modulo 2^64: their low bits are any integer type's
        return ints or widening
    if name in _NO_IDENTITY:  # a value-preserving conversion keeps the order
        return widening or (ints and np.can_cast(dt, out, "safe"))
    return ints  # bitwise: the bits of the extended (truncated) value are those of the op's result
