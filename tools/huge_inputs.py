"""Calls on device arrays of 2**31 elements and more, checked against CuPy.

Sizes past what a 32-bit index holds are where a kernel's int arithmetic
overflows: the answer goes wrong, or a loop never ends. Each size runs in
this process; a call that runs past 60 s prints where it is (faulthandler)
and ends the process.

    python tools/huge_inputs.py 2147483651 4294967299
"""
import faulthandler
import sys
import time

import numpy as np


def last_bin_closed(counts):
    """Counts of the values 0..255 as 128 bins over [0, 128]: NumPy's last
    bin holds its right edge, so 128 counts in bin 127."""
    out = counts[:128].copy()
    out[127] += counts[128]
    return out


def main(sizes):
    import cupy as cp

    import cuatomic
    wrong = 0
    for n in sizes:
        x = (cp.arange(n, dtype=cp.uint64) % 251).astype(cp.uint8)
        cp.cuda.runtime.deviceSynchronize()
        expected = {
            "sum": int(cp.sum(x, dtype=cp.uint64)),
            "histogram": last_bin_closed(cp.asnumpy(cp.bincount(x, minlength=256))),
            "bincount": cp.asnumpy(cp.bincount(x)),
            "filter >= 200": int(cp.count_nonzero(x >= 200)),
            "max": int(x.max()),
        }
        calls = {
            "sum": lambda: int(cuatomic.sum(x)),
            "histogram": lambda: cuatomic.histogram(x, 128, (0, 128))[0].copy_to_host(),
            "bincount": lambda: cuatomic.bincount(x).copy_to_host(),
            "filter >= 200": lambda: cuatomic.filter(x, ">=", 200, ordered=False).size,
            "max": lambda: int(cuatomic.max(x)),
        }
        for name, call in calls.items():
            faulthandler.dump_traceback_later(60, exit=True)  # a call that hangs: where, then exit
            t0 = time.perf_counter()
            got = call()
            cp.cuda.runtime.deviceSynchronize()
            faulthandler.cancel_dump_traceback_later()
            ok = np.array_equal(got, expected[name])
            wrong += not ok
            print(f"n={n} {name}: {'ok' if ok else 'WRONG'} ({time.perf_counter() - t0:.3f} s)", flush=True)
        x = calls = None
        cp.get_default_memory_pool().free_all_blocks()
    print(f"huge_inputs: {wrong} wrong", flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [2**31 + 3, 2**32 + 3]))
