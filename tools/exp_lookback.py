"""Tuning experiment: the lookback filter on 2^28 int32, validated against
NumPy, beside CUB. It compared kernel variants selected by
CUATOMIC_LOOKBACK_VARIANT (8/16/32 elements per thread, register caps) in a
build that had them; on an H200: 16 items 1294 GB/s, 16 items <= 40 regs
1411 GB/s, 8 items <= 32 regs 1030 GB/s, 32 items 1274 GB/s, CUB 2502 GB/s.
The winner is the kernel in cuda/filter.cu; the variants were removed."""
import numpy as np

import cuatomic
from cuatomic import _C

n = 1 << 28
x = np.random.default_rng(0).integers(-1000, 1000, n, dtype=np.int32)
keep = x[x >= 2]
d = cuatomic.to_device(x)
moved = x.nbytes + keep.nbytes
for label in ["16 items, <= 40 regs"]:
    ok = np.array_equal(cuatomic.filter(d, ">=", 2, method="lookback").copy_to_host(), keep)
    ms = cuatomic.benchmark(cuatomic.filter, d, ">=", 2, method="lookback", repeat=20, backend="cuda").median
    print(f"lookback {label:22s} ok={ok} {ms:.4f} ms {moved / ms / 1e6:.0f} GB/s")
out = cuatomic.DeviceArray.empty((n,), np.int32)
ms = cuatomic.benchmark(lambda backend: _C.cub_select(d.ptr, n, 5, 2.0, out.ptr, None), repeat=20,
                        backend="cuda").median
print(f"CUB DeviceSelect::If {ms:.4f} ms {moved / ms / 1e6:.0f} GB/s")
