"""A/B timing of whole calls on device arrays (median of 50 after 10 warm-ups,
cuatomic.bench.measure.call_times): the rows stop 26 touched (histogram of bytes, a
small one from the host through the call slot, filter, the 1,024-element sum, the
exact integer sum) and those the scalar result route reaches (stop 27: small sums,
dots, reductions and filters whose result or input goes through a call slot). Run it under each build, alternating, on one machine:

    PYTHONPATH=<build> python tools/bench_ab.py <label> <histogram rung>

and compare the rows of one run only. Prints label, row, median ms (tab-separated)."""
import statistics
import sys

import numpy as np

import cuatomic
from cuatomic.bench.measure import call_times
from cuatomic.datasets import english_like_text, text_to_array

label, hist_rung = sys.argv[1], sys.argv[2]


def med(fn, k=50, warm=10):
    """Median ms of k whole calls of fn after `warm` untimed ones."""
    return statistics.median(call_times(fn, k, warmup=warm, warm_s=0))


text = text_to_array(english_like_text(5_700_000))
big = cuatomic.to_device(np.resize(text, 1 << 30))
one = cuatomic.to_device(np.full(1 << 28, ord("e"), np.uint8))
small = cuatomic.to_device(text)
host_small = text.copy()
rng = np.random.default_rng(0)
x = cuatomic.to_device(rng.integers(-1000, 1000, 1 << 28, dtype=np.int32))
s1024 = cuatomic.to_device(rng.integers(-1000, 1000, 1024, dtype=np.int32))
i32 = cuatomic.to_device(rng.integers(-1000, 1000, 1 << 28, dtype=np.int32))
rows = {}
for name, d in (("text 1 GiB", big), ("one value 256 MiB", one), ("text 5.7 MB", small)):
    rows[f"histogram {name} auto"] = med(lambda: cuatomic.histogram(d, 128, (0, 128))[0])
    rows[f"histogram {name} {hist_rung}"] = med(lambda: cuatomic.histogram(d, 128, (0, 128), method=hist_rung)[0])
rows["histogram text 5.7 MB host->host auto"] = med(lambda: cuatomic.histogram(host_small, 128, (0, 128))[0])
tiny = text[:4096].copy()
rows["histogram 4,096 host bytes to the host (call slot)"] = med(lambda: cuatomic.histogram(tiny, 128, (0, 128))[0],
                                                                k=200, warm=50)
rows["filter >= 2 int32 2^28 auto"] = med(lambda: cuatomic.filter(x, ">=", 2), k=20)
rows["filter >= 980 int32 2^28 auto"] = med(lambda: cuatomic.filter(x, ">=", 980), k=20)
rows["sum 1,024 int32 to host"] = med(lambda: int(cuatomic.sum(s1024)), k=200, warm=50)
rows["sum int32 2^28 exact"] = med(lambda: cuatomic.sum(i32, method="exact"), k=10, warm=2)
f1024 = cuatomic.to_device(rng.standard_normal(1024).astype(np.float32))
rows["dot 1,024 float32 to host"] = med(lambda: float(cuatomic.dot(f1024, f1024)), k=200, warm=50)
rows["reduce maximum 1,024 int32 to host"] = med(lambda: int(cuatomic.reduce(s1024, "maximum")), k=200, warm=50)
h1000 = rng.integers(-1000, 1000, 1000, dtype=np.int32)
rows["sum 1,000 host int32 (call slot)"] = med(lambda: int(cuatomic.sum(h1000)), k=200, warm=50)
rows["filter >= 2 of 1,000 host int32 (call slot)"] = med(lambda: cuatomic.filter(h1000, ">=", 2), k=200, warm=50)
for k, v in rows.items():
    print(f"{label}\t{k}\t{v:.4f} ms")
