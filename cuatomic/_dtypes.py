"""The dtypes cuatomic computes on, and the ABI id of each.

Below ``_device`` and ``_common``: ``to_device`` refuses what no call
takes with the same error every call raises, and every call finds the id
its input crosses into ``_C`` with."""
import numpy as np

from . import _C

# (kind, itemsize) -> the ABI's dtype id, from _C's names in id order (the
# core's one list, CUA_DTYPES).
_DTYPE_IDS = {(np.dtype(name).kind, np.dtype(name).itemsize): i for i, name in enumerate(_C.DTYPES)}
DTYPES = frozenset(np.dtype(name) for name in _C.DTYPES)  # in native byte order
SUPPORTED = ", ".join(_C.DTYPES[:-1]) + " and " + _C.DTYPES[-1]


_ID_OF_DTYPE = {}


def dtype_id(dt, name=None):
    """The ABI id of a NumPy dtype; TypeError for what cuatomic cannot take
    (naming the argument `name` when given)."""
    found = _ID_OF_DTYPE.get(dt)
    if found is not None:
        return found
    dt = np.dtype(dt)
    key = (dt.kind, dt.itemsize)
    if key not in _DTYPE_IDS or dt.fields is not None:
        hint = " (cast to float32)" if key == ("f", 2) else ""
        whose = f"{name} has " if name else ""
        raise TypeError(f"{whose}unsupported dtype {dt}{hint}: cuatomic works on {SUPPORTED} arrays")
    if dt.isnative:
        _ID_OF_DTYPE[dt] = _DTYPE_IDS[key]
    return _DTYPE_IDS[key]
