"""Where a small call's microseconds go, on the device (median of 2000)."""
import cProfile, pstats, io, statistics, sys, time
import numpy as np, cupy as cp
import cuatomic
from cuatomic import _C, _interop
from cuatomic._device import DeviceArray

def med(f, n=2000, warm=200, sync=True):
    for _ in range(warm):
        f()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f()
        if sync:
            _C.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6

text = np.fromfile(".devdata/exp/text.bin", np.uint8)
ct = cp.asarray(text); dt = DeviceArray.from_host(text)
small = np.random.default_rng(0).integers(0, 100, 1024).astype(np.int32)
cs = cp.asarray(small); ds = DeviceArray.from_host(small)
rows = []
def row(name, f, **kw):
    v = med(f, **kw); rows.append((name, v)); print(f"{name:60s} {v:7.2f} us", flush=True)
row("sync alone", lambda: None)
row("hist 5.7MB cupy (whole)", lambda: cuatomic.histogram(ct, 128, (0, 128)))
row("hist 5.7MB DeviceArray (whole)", lambda: cuatomic.histogram(dt, 128, (0, 128)))
row("hist 5.7MB cupy warp_private", lambda: cuatomic.histogram(ct, 128, (0, 128), method="warp_private"))
edges = np.arange(129, dtype=np.float64)
from cuatomic import _backend
rung = _backend.rung("histogram", "cuda", "warp_private").index
C = lambda: _C.histogram(backend=1, rung=rung, x=dt.ptr, n=dt.size, dtype=2, edges=edges, uniform=1, inv_width=1.0, integer=1, ilo=0, iwidth=1, blocks=-1, threads=-1, device_out=False, stream=0)
try:
    print(C()[:5], np.bincount(text, minlength=128)[:5])
    row("_C.histogram direct (DeviceArray ptr)", C)
except Exception as e:
    print("direct failed", repr(e))
row("cupy __cuda_array_interface__", lambda: ct.__cuda_array_interface__, sync=False)
row("_interop.foreign(cupy)", lambda: _interop.foreign(ct, 0), sync=False)
row("_C.pointer_info", lambda: _C.pointer_info(dt.ptr), sync=False)
row("DeviceArray.ptr", lambda: dt.ptr, sync=False)
row("sum 1024 cupy (whole)", lambda: cuatomic.sum(cs))
row("sum 1024 DeviceArray (whole)", lambda: cuatomic.sum(ds))
row("cupy x.sum().get()", lambda: cs.sum().get())
pr = cProfile.Profile()
pr.enable()
for _ in range(2000):
    cuatomic.histogram(ct, 128, (0, 128))
pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25); print(s.getvalue()[:6000])
pr = cProfile.Profile()
pr.enable()
for _ in range(2000):
    cuatomic.sum(cs)
pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(20); print(s.getvalue()[:5000])
