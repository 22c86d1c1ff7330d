"""Time one call of every method on small and large inputs (diagnostics)."""
import sys
import time

import numpy as np

import cuatomic

be = sys.argv[1] if len(sys.argv) > 1 else None


def t(label, fn, reps=3):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    print(f"{label:45s} {1e3 * min(ts):10.3f} ms", flush=True)


for n in (1000, 2**20 + 3):
    x = np.arange(n, dtype=np.float32)
    d = cuatomic.to_device(x, backend=be)
    for m, _, _ in cuatomic.methods("sum", be):
        t(f"sum {m} n={n} host", lambda: cuatomic.sum(x, method=m, backend=be))
        t(f"sum {m} n={n} device", lambda: cuatomic.sum(d, method=m, backend=be))
    for m, _, _ in cuatomic.methods("dot", be):
        t(f"dot {m} n={n}", lambda: cuatomic.dot(d, d, method=m, backend=be))
    for m, _, _ in cuatomic.methods("histogram", be):
        t(f"histogram {m} n={n}", lambda: cuatomic.histogram(d, bins=17, method=m, backend=be))
    for m, _, _ in cuatomic.methods("filter", be):
        t(f"filter {m} n={n}", lambda: cuatomic.filter(d, ">", 3.0, ordered=False, method=m, backend=be))
    t(f"to_device n={n}", lambda: cuatomic.to_device(x, backend=be))
for b, th in [(10, 16), (64, 256), (100, 1024)]:
    for m, _, _ in cuatomic.methods("add_one", be):
        t(f"add_one {m} {b}x{th}", lambda: cuatomic.add_one(b, th, method=m, backend=be), reps=1)
