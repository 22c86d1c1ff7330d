"""python -m cuatomic: every function against NumPy on built-in data.

Runs every method of every operation of the chosen backend on random arrays
and English-like text, and prints a row as each one finishes: whether the
result matches NumPy, and both times in ms (the best of --repeat runs after
a warm-up; device data stays on the device, so the times are compute, not
transfers). The counters (add_one, mutex_add_one) have no NumPy
counterpart: their rows compare the count with the exact one, blocks x
threads. Exits with 1 if any result is wrong.
"""
import argparse
import math
import os
import platform
import time

import numpy as np

import cuatomic
from cuatomic import _C
from cuatomic._auto import is_wide
from cuatomic._backend import OPS, resolve, rung, table
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


WRONG = "WRONG"


def host(x):
    return x.copy_to_host() if isinstance(x, cuatomic.DeviceArray) else x


def version_line():
    """As pip's: the version, where it is imported from, and what the build contains (no GPU is probed)."""
    build = _C.build_info()
    archs = [a for a in build["archs"].split(",") if a]
    if not build["cuda"]:
        what = "built without CUDA"
    elif archs:
        what = f"built with CUDA for sm_{', sm_'.join(archs)} (+PTX compute_{build['ptx']})"
    else:
        what = f"built with CUDA as PTX for compute_{build['ptx']} only: the driver compiles it at first use"
    return (f"cuatomic {cuatomic.__version__} from {os.path.dirname(cuatomic.__file__)} ({what}; "
            f"Python {platform.python_version()}, NumPy {np.__version__})")


EPILOG = """\
more commands:
  python -m cuatomic bench ...       the benchmark suite and target tables (bench --help)
  python -m cuatomic bench auto ...  re-measure the rule method="auto" reads (bench auto --help)
  python -m cuatomic.figures ...     the lessons' figures as PNG and JSON (cuatomic.figures --help)

examples:
  python -m cuatomic                                     the demo on the default backend
  python -m cuatomic --backend cpu --size 200000 --repeat 2
  python -m cuatomic bench --quick --backend cpu         a small benchmark run
  python -m cuatomic bench --targets --out results/      the target table against CuPy, PyTorch, CUB
"""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cuatomic", description=__doc__.split("\n\n")[1] if __doc__ else None,
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None,
                        help="where to run (default: CUATOMIC_BACKEND, else cuda when usable, else cpu)")
    parser.add_argument("--size", type=int, default=1 << 22, metavar="N",
                        help="elements of the random arrays and bytes of text (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=5, metavar="R",
                        help="timed runs per call after a warm-up, the best kept (default: %(default)s)")
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print cuatomic's version and what its build contains, and exit")
    args = parser.parse_args(argv)
    be = resolve(args.backend)
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
    blocks, threads = 10, 16  # the counters' grid: the tutorial's
    total = blocks * threads
    # Columns as wide as the longest method name of any ladder (and auto's "auto: <rung>").
    mw = max(len(name) for op in OPS for name, _, _ in cuatomic.methods(op, be)) + len("auto: ")
    ow = 44
    print(f"{n:,} elements; times are the best of {args.repeat} runs in ms (NumPy: the same work with NumPy)")
    print("result: '= NumPy' equal to NumPy's; the counters, which NumPy lacks, against the exact count "
          f"{blocks} x {threads} = {total}: '= count', or '< count' for the racy rung (it loses increments)")
    cw = 8
    print(f"{'operation':{ow}s} {'method':{mw}s} {'result':{cw}s} {'cuatomic':>10s} {'NumPy':>10s}", flush=True)

    def emit(op, method, check, ms, ref_ms):
        rows.append((op, method, check, ms, ref_ms))
        ref = "" if np.isnan(ref_ms) else f"{ref_ms:10.3f}"
        print(f"{op:{ow}s} {method:{mw}s} {check:{cw}s} {ms:10.3f} {ref:>10s}", flush=True)

    def run(op, method, ours, ref, same):
        got = ours()
        expected = ref()
        ok = same(host(got) if not isinstance(got, tuple) else (host(got[0]), got[1]), expected)
        ms = best_ms(ours, args.repeat)
        ref_ms = best_ms(ref, args.repeat)
        emit(op, method, "= NumPy" if ok else WRONG, ms, ref_ms)

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
    # reduce's CAS rungs retry per element on one word: a smaller array keeps the demo short
    r_ints = ints[:1 << 18]
    d_r_ints = cuatomic.to_device(r_ints, backend=be)
    for m, _, _ in cuatomic.methods("reduce", be):
        for op in ("maximum", "bitwise_xor"):
            run(f"reduce {op} int32, {r_ints.size:,}", m,
                lambda op=op: cuatomic.reduce(d_r_ints, op, method=m, backend=be),
                lambda op=op: getattr(np, op).reduce(r_ints), exact)
    # argmin/argmax: the per-element rungs (one atomic or CAS per element on one word) on the same smaller array
    for m, _, _ in cuatomic.methods("argmin", be):
        for name in ("argmin", "argmax"):
            run(f"{name} int32, {r_ints.size:,}", m,
                lambda name=name: getattr(cuatomic, name)(d_r_ints, method=m, backend=be),
                lambda name=name: getattr(np, name)(r_ints), exact)
    # unique: the hash tables (atomicCAS claims a slot) against the peers' sort, on 997 distinct keys
    u_keys = r_ints % 997
    d_u_keys = cuatomic.to_device(u_keys, backend=be)
    for m, _, _ in cuatomic.methods("unique", be):
        run(f"unique int32, {u_keys.size:,} (997 values)", m,
            lambda: cuatomic.unique(d_u_keys, method=m, backend=be), lambda: np.unique(u_keys), np.array_equal)
    # histogram2d: shared keeps every cell in one block's shared memory (a GPU's 128 x 128 fits, 300 x 300 does
    # not); cluster spreads cells that one block (on a CPU one thread's copy, 2^20) cannot hold
    xy_range = [(-4.0, 4.0), (-4.0, 4.0)]
    for m, _, _ in cuatomic.methods("histogramdd", be):
        bins = (128, 128) if m == "shared" and be == "cuda" else (1100, 1000) if m == "cluster" and be == "cpu" \
            else (300, 300)
        run(f"histogramdd float32 {bins[0]}x{bins[1]} (x, y)", m,
            lambda bins=bins: cuatomic.histogram2d(d_floats, d_other, bins, xy_range, method=m, backend=be)[0],
            lambda bins=bins: np.histogram2d(floats, other, bins, xy_range)[0], np.array_equal)
    # reductions along an axis: the segmented ladder on the floats as (rows, 16)
    rows16 = floats[: n - n % 16].reshape(-1, 16)
    d_rows16 = cuatomic.to_device(rows16, backend=be)
    for m, _, _ in cuatomic.methods("segmented", be):
        for axis in (0, 1):
            run(f"segmented max float32 {rows16.shape[0]}x16 axis={axis}", m,
                lambda axis=axis: cuatomic.max(d_rows16, axis=axis, method=m, backend=be),
                lambda axis=axis: np.max(rows16, axis=axis), np.array_equal)
    weights = rng.random(n)
    d_weights = cuatomic.to_device(weights, backend=be)
    for m, _, _ in cuatomic.methods("weighted_histogram", be):
        run("histogram float32 64 bins, float64 weights", m,
            lambda: cuatomic.histogram(d_floats, 64, (-4.0, 4.0), weights=d_weights, method=m, backend=be),
            lambda: np.histogram(floats, 64, (-4.0, 4.0), weights=weights),
            lambda a, b: np.allclose(a[0], b[0], rtol=1e-12, atol=1e-12 * n) and np.array_equal(a[1], b[1]))
    # np.add.at: every element scattered into 1,000 outputs (a fresh copy each call, on both sides); int32
    # results equal NumPy's, the exact rungs' float32 sums are never further from the exact sums than NumPy's
    where = (ints & 0x7FFFFFFF) % 1000
    d_where = cuatomic.to_device(where, backend=be)
    order = np.argsort(where, kind="stable")
    cuts = np.searchsorted(where[order], np.arange(1001))
    exact_at = np.array([math.fsum(floats[order[cuts[e]:cuts[e + 1]]].tolist()) for e in range(1000)])
    closer = lambda a, b: bool(np.all(np.abs(a.astype(np.float64) - exact_at)  # noqa: E731
                                      <= np.abs(b.astype(np.float64) - exact_at)))
    for dtype, values, d_values, exact_only, same in ((np.int32, ints, d_ints, False, np.array_equal),
                                                      (np.float32, floats, d_floats, True, closer)):
        for m in [r.name for r in table("at", be) if bool(r.flags & _C.F_EXACT) == exact_only]:
            def scatter(m=m, dtype=dtype, d_values=d_values):
                out = cuatomic.to_device(np.zeros(1000, dtype), backend=be)
                cuatomic.at(out, d_where, d_values, method=m, backend=be)
                return out

            def numpy_at(dtype=dtype, values=values):
                out = np.zeros(1000, dtype)
                np.add.at(out, where, values)
                return out
            run(f"at add {np.dtype(dtype).name} into 1,000", m, scatter, numpy_at, same)
    small = ints & 1023  # non-negative, below 1024
    d_small = cuatomic.to_device(small, backend=be)
    run("bincount int32 in [0, 1024)", "auto", lambda: cuatomic.bincount(d_small, backend=be),
        lambda: np.bincount(small), lambda a, b: np.array_equal(a, b))
    def count_check(got, racy):
        if got == total:
            return "= count"
        return "< count" if racy and 1 <= got < total else WRONG

    for m, _, _ in cuatomic.methods("add_one", be):
        got = cuatomic.add_one(blocks, threads, method=m, backend=be)
        racy = rung("add_one", be, m).flags & _C.F_RACY
        check = count_check(got, racy)
        ms = best_ms(lambda: cuatomic.add_one(blocks, threads, method=m, backend=be), args.repeat)
        lost = f" ({total - got} of {total} lost)" if racy else ""  # the lesson: what the race lost
        emit(f"add_one {blocks}x{threads} -> {got}{lost}", m, check, ms, float("nan"))
    for m in [name for name, _, _ in cuatomic.methods("mutex_add_one", be)] + ["auto"]:
        got = cuatomic.mutex_add_one(blocks, threads, method=m, backend=be)
        label = m if m != "auto" else f"auto: {cuatomic.last_launch()['method']}"
        ms = best_ms(lambda: cuatomic.mutex_add_one(blocks, threads, method=m, backend=be), args.repeat)
        emit(f"mutex_add_one {blocks}x{threads} -> {got}", label, count_check(got, False), ms, float("nan"))

    bad = [r for r in rows if r[2] == WRONG]
    print("all results match NumPy or the exact count" if not bad else f"{len(bad)} results are WRONG")
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["bench"]:
        from cuatomic.bench import main as bench_main
        raise SystemExit(bench_main(sys.argv[2:]))
    raise SystemExit(main())
