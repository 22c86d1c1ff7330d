"""python -m cuatomic: every function against NumPy on built-in data.

Prints, for each operation and each method of the chosen backend, whether the
result matches NumPy and both times (best of a few runs, after a warm-up).
Options: --backend cpu|cuda, --size N (elements of the random arrays).
``python -m cuatomic bench ...`` runs the benchmark suite instead (see
cuatomic.bench).
"""
import argparse
import math
import time

import numpy as np

import cuatomic
from cuatomic import _C
from cuatomic._backend import is_wide, rung
from cuatomic._exact import float_result_ok
from cuatomic.datasets import english_like_text, text_to_array


def best_ms(fn, repeat):
    fn()  # warm-up: first-call costs stay out of the numbers
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def host(x):
    return x.copy_to_host() if isinstance(x, cuatomic.DeviceArray) else x


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cuatomic", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--size", type=int, default=1 << 22)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    be = args.backend or cuatomic.backends()[0]
    info = cuatomic.backend_info()
    where = info["cuda"]["name"] if be == "cuda" else f"{info['cpu_threads']} OpenMP threads"
    print(f"cuatomic {cuatomic.__version__} | backend {be} ({where}) | NumPy {np.__version__}")
    if be == "cpu" and not info["cuda"]["usable"]:
        print(f"  (cuda not usable: {info['cuda']['reason']})")

    rng = np.random.default_rng(0)
    n = args.size
    ints = rng.integers(-1000, 1000, n, dtype=np.int32)
    floats = rng.standard_normal(n).astype(np.float32)
    other = rng.standard_normal(n).astype(np.float32)
    text = text_to_array(english_like_text(n, seed=1))
    # Device data once, as a GPU user would hold it: the times are compute, not transfers.
    d_ints, d_floats, d_other, d_text = (cuatomic.to_device(a, backend=be) for a in (ints, floats, other, text))

    rows = []

    def run(op, method, ours, ref, same):
        got = ours()
        expected = ref()
        ok = same(host(got) if not isinstance(got, tuple) else (host(got[0]), got[1]), expected)
        ms = best_ms(ours, args.repeat)
        ref_ms = best_ms(ref, args.repeat)
        rows.append((op, method, "yes" if ok else "NO", ms, ref_ms))

    exact = lambda a, b: a == b  # noqa: E731
    for m, _, _ in cuatomic.methods("sum", be):
        run("sum int32", m, lambda: cuatomic.sum(d_ints, method=m, backend=be), lambda: np.sum(ints), exact)
        run("sum float32", m, lambda: cuatomic.sum(d_floats, method=m, backend=be), lambda: np.sum(floats),
            lambda a, b, m=m: float_result_ok("sum", a, floats, wide=is_wide("sum", be, m)))
    near_one = (1 + rng.uniform(-1e-4, 1e-4, n)).astype(np.float64)
    d_near_one = cuatomic.to_device(near_one, backend=be)
    for m, _, _ in cuatomic.methods("prod", be):
        run("prod float64 (multiply from CAS)", m, lambda: cuatomic.prod(d_near_one, method=m, backend=be),
            lambda: np.prod(near_one), lambda a, b: abs(float(a) - float(b)) <= 2 * math.sqrt(n) * 2**-52 * abs(float(b)))
    for m, _, _ in cuatomic.methods("dot", be):
        run("dot float32", m, lambda: cuatomic.dot(d_floats, d_other, method=m, backend=be),
            lambda: np.dot(floats, other),
            lambda a, b, m=m: float_result_ok("dot", a, floats, other, wide=is_wide("dot", be, m)))
    for m, _, _ in cuatomic.methods("histogram", be):
        run("histogram text 128", m, lambda: cuatomic.histogram(d_text, bins=128, range=(0, 128), method=m,
                                                                backend=be),
            lambda: np.histogram(text, bins=128, range=(0, 128)),
            lambda a, b: np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))
    for m, _, _ in cuatomic.methods("filter", be):
        ordered = m == "ordered"
        run(f"filter int32 >= 2 ({'ordered' if ordered else 'any order'})", m,
            lambda: cuatomic.filter(d_ints, ">=", 2, ordered=ordered, method=m, backend=be),
            lambda: ints[ints >= 2],
            lambda a, b: np.array_equal(a if ordered else np.sort(a), b if ordered else np.sort(b)))
    blocks, threads = 10, 16
    total = blocks * threads
    for m, _, _ in cuatomic.methods("add_one", be):
        got = cuatomic.add_one(blocks, threads, method=m, backend=be)
        ok = 1 <= got <= total if rung("add_one", be, m).flags & _C.F_RACY else got == total
        ms = best_ms(lambda: cuatomic.add_one(blocks, threads, method=m, backend=be), args.repeat)
        rows.append((f"add_one {blocks}x{threads} -> {got}", m, "yes" if ok else "NO", ms, float("nan")))
    got = cuatomic.mutex_add_one(blocks, threads, backend=be)
    ran = cuatomic.last_launch()["method"]
    ms = best_ms(lambda: cuatomic.mutex_add_one(blocks, threads, backend=be), args.repeat)
    rows.append((f"mutex_add_one {blocks}x{threads} -> {got}", f"auto: {ran}", "yes" if got == total else "NO", ms,
                 float("nan")))

    print(f"{n:,} elements; times are the best of {args.repeat} runs in ms (NumPy: the same work with NumPy)")
    print(f"{'operation':42s} {'method':13s} {'NumPy?':>6s} {'cuatomic':>10s} {'NumPy':>10s}")
    for op, m, ok, ms, ref_ms in rows:
        ref = "" if np.isnan(ref_ms) else f"{ref_ms:10.3f}"
        print(f"{op:42s} {m:13s} {ok:>6s} {ms:10.3f} {ref:>10s}")
    bad = [r for r in rows if r[2] != "yes"]
    print("all results match NumPy" if not bad else f"{len(bad)} results differ from NumPy")
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["bench"]:
        from cuatomic.bench import main as bench_main
        raise SystemExit(bench_main(sys.argv[2:]))
    raise SystemExit(main())
