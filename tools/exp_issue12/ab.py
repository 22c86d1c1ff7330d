"""A/B: the 5.7 MB text histogram, whole calls, forced rungs and CUB; run with
PYTHONPATH at the tree to time. Median of 20 after 3 warm-ups. With --calls:
where a small call's microseconds go (new tree only)."""
import os
import statistics
import sys
import time

import numpy as np

import cuatomic
from cuatomic import _C

text = np.fromfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "text.bin"), dtype=np.uint8)
ref = np.bincount(text, minlength=256)[:128]


def med(fn, reps=20):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(ts)


tag = sys.argv[1]
d = cuatomic.to_device(text)
rows = []
for m in ("warp_private", "thread_counters", "shared", "auto"):
    got = cuatomic.histogram(d, 128, (0, 128), method=m)[0]
    got = got.copy_to_host() if hasattr(got, "copy_to_host") else np.asarray(got)
    assert np.array_equal(got, ref), m
    rows.append((m, med(lambda: cuatomic.histogram(d, 128, (0, 128), method=m))))
rows.append(("CUB", med(lambda: _C.cub_histogram(d.ptr, d.size, 2, 128, 0, 128, None))))
cub = rows[-1][1]
for m, ms in rows:
    print(f"{tag:4s} {m:16s} {ms:8.4f} ms  vs CUB {cub / ms:5.2f}x", flush=True)

if "--calls" in sys.argv:
    import cupy as cp
    import cuatomic._histogram as H

    real = H._C
    seen = {}

    class Spy:
        def __getattr__(self, k):
            return getattr(real, k)

        def histogram(self, **kw):
            seen.update(kw)
            return real.histogram(**kw)

    H._C = Spy()
    cuatomic.histogram(d, 128, (0, 128), method="warp_private")
    H._C = real
    print("calls: histogram whole call       %8.2f us" % (1e3 * med(lambda: cuatomic.histogram(d, 128, (0, 128), method="warp_private"), 200)))
    print("calls: _C.histogram (kwargs ready) %8.2f us" % (1e3 * med(lambda: real.histogram(**seen), 200)))
    dc = cp.asarray(text)
    print("calls: histogram, CuPy input      %8.2f us" % (1e3 * med(lambda: cuatomic.histogram(dc, 128, (0, 128), method="warp_private"), 200)))
    for n in (1024,):
        x = cp.arange(n, dtype=cp.float32)
        xd = cuatomic.to_device(np.arange(n, dtype=np.float32))
        print("calls: sum 1024 float32 CuPy      %8.2f us" % (1e3 * med(lambda: cuatomic.sum(x), 200)))
        print("calls: sum 1024 float32 DeviceArray %6.2f us" % (1e3 * med(lambda: cuatomic.sum(xd), 200)))
        print("calls: sum 1024 float32 CuPy, to host (cp.sum().get()) %6.2f us" % (1e3 * med(lambda: x.sum().get(), 200)))
        print("calls: explain sum: %s" % cuatomic.explain("sum", x))
    import cProfile
    import pstats
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(2000):
        cuatomic.histogram(d, 128, (0, 128), method="warp_private")
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(2000):
        cuatomic.sum(xd)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(14)
