"""Issue 4's measurements on a GPU: host-array transfers, call latency and
memory growth, cuatomic beside CuPy in the same run.

    python tools/bench_interop.py [--out results.json] [--gib 1]

Every result is checked against NumPy before anything is timed. Times are
wall-clock medians of whole calls that return the answer to the host.
"""
import argparse
import json
import statistics
import time

import numpy as np

import cuatomic


def median_ms(fn, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--calls", type=int, default=10_000)
    args = parser.parse_args()
    import cupy as cp

    info = cuatomic.backend_info()
    rows, results = [], {"device": info["cuda"]["name"], "driver_version": info["cuda"]["driver_version"],
                         "cuda_runtime_version": info["cuda"]["runtime_version"], "numpy": np.__version__,
                         "cupy": cp.__version__}

    def row(what, ours, peer, peer_name, target=""):
        rows.append((what, ours, peer, peer_name, target))
        results[what] = {"cuatomic_ms": ours, "peer": peer_name, "peer_ms": peer, "target": target}

    # ---- host arrays at the speed of the bus
    n = int(args.gib * (1 << 30)) // 4
    x = np.random.default_rng(0).integers(-1000, 1000, n, dtype=np.int32)
    ref = int(np.sum(x, dtype=np.int64))
    assert int(cuatomic.sum(x)) == ref and int(cp.asarray(x).sum(dtype=cp.int64).get()) == ref
    pinned = cuatomic.pinned_array(x)
    assert int(cuatomic.sum(pinned)) == ref
    dev = cp.empty(n, cp.int32)

    def copy_from(host):
        cp.cuda.runtime.memcpy(dev.data.ptr, host.ctypes.data, host.nbytes, cp.cuda.runtime.memcpyHostToDevice)

    pinned_copy = median_ms(lambda: copy_from(pinned), 5)
    pageable_copy = median_ms(lambda: copy_from(x), 5)
    results["copy_pinned_ms"], results["copy_pageable_ms"] = pinned_copy, pageable_copy
    row(f"sum of a {args.gib:g} GiB int32 NumPy array, end to end", median_ms(lambda: cuatomic.sum(x), 5),
        median_ms(lambda: cp.asarray(x).sum(dtype=cp.int64).get(), 5), "cupy.asarray(x).sum()", "<= 40 ms")
    results["numpy_sum_ms"] = median_ms(lambda: np.sum(x, dtype=np.int64), 5)
    row(f"sum of a {args.gib:g} GiB pinned int32 array", median_ms(lambda: cuatomic.sum(pinned), 5),
        pinned_copy, "pinned copy alone", "<= 1.3x the pinned copy")
    del pinned

    # ---- call latency
    small = np.arange(1024, dtype=np.float32)
    d_small = cuatomic.to_device(small)
    c_small = cp.asarray(small)
    assert float(cuatomic.sum(d_small)) == float(small.sum())
    lat = lambda fn: 1e3 * median_ms(fn, 2000, warmup=50)  # noqa: E731  (microseconds)
    row("sum of a 1,024-element device array to the host (us)", lat(lambda: cuatomic.sum(d_small)),
        lat(lambda: c_small.sum().get()), "cupy d.sum().get()", "<= 15 us")
    row("sum of a 1,024-element NumPy array (us)", lat(lambda: cuatomic.sum(small)),
        lat(lambda: cp.asarray(small).sum().get()), "cupy.asarray(x).sum().get()", "<= 30 us")

    # ---- memory does not grow
    for _ in range(100):
        cuatomic.sum(d_small)
        cuatomic.histogram(d_small, bins=10)
    free_before = cp.cuda.runtime.memGetInfo()[0]
    for _ in range(args.calls):
        cuatomic.sum(d_small)
        cuatomic.histogram(d_small, bins=10)
        cuatomic.filter(small, ">", 100.0)
    free_after = cp.cuda.runtime.memGetInfo()[0]
    results["device_memory_growth_bytes_over_calls"] = {"calls": args.calls, "bytes": free_before - free_after}

    print(f"{results['device']}, driver {results['driver_version']}, CUDA runtime {results['cuda_runtime_version']}, "
          f"NumPy {results['numpy']}, CuPy {results['cupy']}")
    print(f"pinned copy {pinned_copy:.1f} ms, pageable copy {pageable_copy:.1f} ms, "
          f"np.sum {results['numpy_sum_ms']:.1f} ms")
    print(f"{'measure':58s} {'cuatomic':>10s} {'peer':>10s}  peer / target")
    for what, ours, peer, name, target in rows:
        print(f"{what:58s} {ours:10.2f} {peer:10.2f}  {name} / {target}")
    g = results["device_memory_growth_bytes_over_calls"]
    print(f"device memory change over {g['calls']} x (sum + histogram + filter): {g['bytes']} bytes")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
