"""How accurate each sum/dot rung is, and what the accurate `vector` rung
costs: the measurements behind the accuracy table of docs/accuracy.md.

    python tools/bench_accuracy.py [--backend cpu|cuda] [--out FILE.json]

Accuracy: every rung of sum and dot on float32 and float64 cases (the
adversarial ones of the tests, plus plain normal data), each error taken
against the exact answer (math.fsum, exact products) and printed beside
NumPy's own error on the same data (np.sum; np.sum(a * b) for dot).

Speed: whole calls on device-resident (cuda) or host (cpu) data, median of
20 after warm-ups, of the `vector` rung as it runs now (floats in
compensated double) beside the same kernel accumulating in the input's own
precision (the path it had before, still reachable through _C with a
float32 accumulator) and beside integer sums of the same byte count.
"""
import argparse
import json
import time

import numpy as np

import cuatomic
from cuatomic import _C, _auto, _backend
from cuatomic._common import dtype_id
from cuatomic._exact import exact_dot, exact_sum


def cases(n):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n // 2)
    out = {
        "normal": (rng.standard_normal(n), None),
        "0.1 repeated": (np.full(n, 0.1), None),
        "1e8 then ones": (np.concatenate([[1e8], np.ones(n - 1)]), None),
        "cancellation": (np.concatenate([x, -x[::-1], [1e-3]]), None),
        "dot normal": (rng.standard_normal(n), rng.standard_normal(n)),
        "dot ones . ones/N": (np.ones(n), np.ones(n) / n),
    }
    return out


def accuracy(backend, n):
    rows = []
    for name, (a64, b64) in cases(n).items():
        for dt in (np.float32, np.float64):
            a = a64.astype(dt)
            b = None if b64 is None else b64.astype(dt)
            op = "sum" if b is None else "dot"
            exact = exact_sum(a) if b is None else exact_dot(a, b)
            numpy_err = abs(float(np.sum(a) if b is None else np.sum(a * b)) - exact)
            ulp = float(np.spacing(np.abs(np.asarray(exact, dt))))
            for m, _, _ in cuatomic.methods(op, backend):
                got = cuatomic.sum(a, method=m, backend=backend) if b is None else cuatomic.dot(a, b, method=m,
                                                                                             backend=backend)
                err = abs(float(got) - exact)
                rows.append({"case": name, "dtype": np.dtype(dt).name, "op": op, "method": m, "error": err,
                             "numpy_error": numpy_err, "ulps": err / ulp, "numpy_ulps": numpy_err / ulp,
                             "wide": _auto.is_wide(op, backend, m)})
    return rows


def median_ms(f, repeat=20, warm=3):
    for _ in range(warm):
        f()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times))


def speed(backend, n):
    be_id = _backend.backend_id(backend)
    vector = _backend.rung("sum", backend, "vector")
    rng = np.random.default_rng(1)
    rows = []
    data = {
        "float32": rng.standard_normal(n).astype(np.float32),
        "float64": rng.standard_normal(n),
        "int32": rng.integers(-100, 100, n, dtype=np.int32),
        "int64": rng.integers(-100, 100, n, dtype=np.int64),
    }
    for name, host in data.items():
        x = cuatomic.to_device(host, backend=backend)
        ptr = x.ptr if backend == "cuda" else x
        dt = np.dtype(name)
        variants = [("vector (as shipped)", lambda: cuatomic.sum(x, method="vector", backend=backend))]
        if dt == np.float32:  # the same kernel accumulating in float32: the path before compensation
            variants.append(("vector, float32 accumulator",
                             lambda: _C.sum(backend=be_id, rung=vector.index, x=ptr, n=n, dtype=dtype_id(dt),
                                            acc=_C.ACC_FLOAT32, blocks=-1, threads=-1, stream=None,
                                            out_type=np.dtype(np.float32).num)))
        for label, f in variants:
            ms = median_ms(f)
            rows.append({"op": "sum", "dtype": name, "variant": label, "ms": ms, "GBps": host.nbytes / ms / 1e6})
        if dt.kind == "f":
            ms = median_ms(lambda: cuatomic.dot(x, x, method="vector", backend=backend))
            rows.append({"op": "dot", "dtype": name, "variant": "vector (as shipped)", "ms": ms,
                         "GBps": 2 * host.nbytes / ms / 1e6})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--n", type=int, default=10**6, help="elements of the accuracy cases")
    p.add_argument("--speed-n", type=int, default=1 << 26, help="elements of the speed runs")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    be = _backend.resolve(args.backend)
    info = cuatomic.backend_info()
    acc = accuracy(be, args.n)
    print(f"accuracy, backend {be}, n = {args.n}: error / NumPy's error (ulps of the exact answer)")
    for r in acc:
        print(f"  {r['op']:3s} {r['case']:18s} {r['dtype']:7s} {r['method']:12s} "
              f"{r['ulps']:12.3g} ulp   NumPy {r['numpy_ulps']:10.3g} ulp{'  (wide)' if r['wide'] else ''}")
    sp = speed(be, args.speed_n)
    print(f"speed, backend {be}, n = {args.speed_n}: whole calls, median of 20")
    for r in sp:
        print(f"  {r['op']:3s} {r['dtype']:7s} {r['variant']:30s} {r['ms']:9.3f} ms {r['GBps']:9.1f} GB/s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"backend": be, "device": info["cuda"].get("name") if be == "cuda" else
                       f"{info['cpu_threads']} OpenMP threads", "numpy": np.__version__, "accuracy": acc,
                       "speed": sp}, f, indent=1)


if __name__ == "__main__":
    main()
