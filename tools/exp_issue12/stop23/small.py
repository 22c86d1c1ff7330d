"""Small whole calls (H200): the 5.7 MB histogram and the 1,024-element sum, DeviceArray and CuPy inputs, median of 200 after 0.3 s of warm-up, three rounds."""
import time
import numpy as np, cupy as cp
import cuatomic
from cuatomic import datasets

def wall(f, reps=200):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        f()
    cp.cuda.runtime.deviceSynchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); cp.cuda.runtime.deviceSynchronize(); ts.append(time.perf_counter() - t)
    return 1e6 * float(np.median(ts))

text = datasets.text_to_array(datasets.english_like_text(5_700_000))
d = cuatomic.to_device(text); c = cp.asarray(d)
small = np.arange(1024, dtype=np.int32); ds = cuatomic.to_device(small); cs = cp.asarray(ds)
ref = np.histogram(text, 128, (0, 128))[0]
assert np.array_equal(cuatomic.histogram(c, 128, (0, 128))[0].copy_to_host(), ref)
for r in range(3):
    print(f"round {r}: hist DeviceArray {wall(lambda: cuatomic.histogram(d, 128, (0, 128))):.1f} us, "
          f"hist cupy {wall(lambda: cuatomic.histogram(c, 128, (0, 128))):.1f} us, "
          f"sum DeviceArray {wall(lambda: int(cuatomic.sum(ds))):.1f} us, sum cupy {wall(lambda: int(cuatomic.sum(cs))):.1f} us, "
          f"cupy empty kernel+sync {wall(lambda: cs.fill(0)):.1f} us")
