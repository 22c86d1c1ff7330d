"""The library's filter kernel and CUB's select on 2^28 int32 at 50%, 1% and 99% kept, for Nsight Compute."""
import numpy as np
import cuatomic
from cuatomic import _C, _common
rng = np.random.default_rng(0)
n = 1 << 28
x = cuatomic.to_device(rng.integers(-1000, 1000, n, dtype=np.int32))
out = cuatomic.DeviceArray.empty((n,), np.int32)
for v in (2, 980, -980):
    cuatomic.filter(x, ">=", v)
    _C.cub_select(x.ptr, n, _common.dtype_id(np.int32), float(v), out.ptr, None)
