"""Why the targets bench times the 5.7 MB histogram slower than prof.py."""
import statistics, time
import numpy as np
import cuatomic
from cuatomic import _C
from cuatomic._device import DeviceArray
from cuatomic.bench.suite import _ms

def med(f, n=2000, warm=200):
    for _ in range(warm):
        f()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); _C.synchronize(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6

text = np.fromfile(".devdata/exp/text.bin", np.uint8)
dt = DeviceArray.from_host(text)
small = DeviceArray.from_host(np.arange(1024, dtype=np.int32))
h = lambda: cuatomic.histogram(dt, 128, (0, 128))[0]
s = lambda: int(cuatomic.sum(small))
print("fresh: hist med2000 %.2f us, _ms(20) %.2f us; sum med2000 %.2f, _ms %.2f" % (med(h), _ms(h, 20) * 1e3, med(s), _ms(s, 20) * 1e3), flush=True)
import cupy as cp
x = cp.arange(10); x.sum().get()
print("after cupy: hist %.2f / %.2f; sum %.2f / %.2f" % (med(h), _ms(h, 20) * 1e3, med(s), _ms(s, 20) * 1e3), flush=True)
import torch
t = torch.arange(10, device="cuda"); t.sum().item()
print("after torch: hist %.2f / %.2f; sum %.2f / %.2f" % (med(h), _ms(h, 20) * 1e3, med(s), _ms(s, 20) * 1e3), flush=True)
from numba import cuda as nc
a = nc.to_device(np.arange(10)); a.copy_to_host()
print("after numba: hist %.2f / %.2f; sum %.2f / %.2f" % (med(h), _ms(h, 20) * 1e3, med(s), _ms(s, 20) * 1e3), flush=True)
from cuatomic.bench import peers
big = DeviceArray.from_host(np.resize(text, 1 << 30))
for _ in range(20):
    cuatomic.histogram(big, 128, (0, 128))
print("after 1 GiB histograms: hist %.2f / %.2f" % (med(h, 500, 3), _ms(h, 20) * 1e3), flush=True)
del big
print("after del: hist %.2f / %.2f" % (med(h), _ms(h, 20) * 1e3), flush=True)
print(_C.build_info() if hasattr(_C, "build_info") else "")
