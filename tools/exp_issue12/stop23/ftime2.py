"""Whole filter calls (H200): the planned path, the resolving path (backend='cuda'), CUB; wall clock, device synchronized, median of 20."""
import time
import numpy as np, cupy as cp
import cuatomic
from cuatomic.bench import peers

def wall(f, reps=20):
    for _ in range(5): f()
    cp.cuda.runtime.deviceSynchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); cp.cuda.runtime.deviceSynchronize(); ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))

rng = np.random.default_rng(0)
x = rng.integers(-1000, 1000, 1 << 28, dtype=np.int32)
dx = cuatomic.to_device(x)
out = cuatomic.DeviceArray.empty((dx.size,), np.int32)
for v in (2, 980, -980):
    keep = x[x >= v]
    for name, f in (("planned", lambda: cuatomic.filter(dx, ">=", v)), ("resolving (backend='cuda')", lambda: cuatomic.filter(dx, ">=", v, backend="cuda"))):
        got = f()
        assert np.array_equal(got.copy_to_host(), keep)
        print(f">= {v:4d} {name:28s} {wall(f):.4f} ms")
    print(f">= {v:4d} {'CUB DeviceSelect::If':28s} {wall(lambda: peers.cub_select(dx, float(v), out)):.4f} ms")
small = rng.integers(-1000, 1000, 1024, dtype=np.int32)
ds = cuatomic.to_device(small)
cs = cp.asarray(ds)
for name, f in (("planned", lambda: cuatomic.filter(ds, ">=", 2)), ("resolving", lambda: cuatomic.filter(ds, ">=", 2, backend="cuda")),
                ("cupy input, planned", lambda: cuatomic.filter(cs, ">=", 2)), ("cupy x[x >= 2]", lambda: cs[cs >= 2])):
    got = f()
    assert np.array_equal(cp.asnumpy(cp.asarray(got)), small[small >= 2])
    print(f"1,024 elements, {name:24s} {1e3 * wall(f, 200):.1f} us")
