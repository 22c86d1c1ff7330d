"""The lessons' experiments, shared by the notebooks and the figures script.

Each function runs one experiment with cuatomic calls and returns plain data
(dicts and lists) that the notebooks show and :func:`main` writes to JSON.

    python -m cuatomic.figures [--out DIR] [--small] [--backend cuda]

runs them all at full size and writes every figure as PNG plus
``figures.json`` with the numbers behind them and the machine they came from,
into ``./cuatomic-figures`` unless ``--out`` says where. A directory that
holds figures committed to git (the repository's ``docs/figures``) is only
written when ``--out`` names it.
"""
import argparse
import importlib
import json
import pathlib
import platform
import subprocess
import time

import numpy as np

import cuatomic

from . import _auto, _exact, datasets
from ._device import to_device
from ._backend import resolve
from .timing import benchmark, sweep


def _ms(fn, *args, repeat=5, **kwargs):
    return benchmark(fn, *args, repeat=repeat, warmup=1, **kwargs).median


def race(blocks=10, threads=16, backend=None, runs=5):
    """add_one with every method: what the counter holds, and what it should;
    the racy rung `runs` times (how many updates it loses varies)."""
    be = resolve(backend)
    counts = {m: cuatomic.add_one(blocks, threads, method=m, backend=be) for m, _, _ in cuatomic.methods("add_one", be)}
    racy = [cuatomic.add_one(blocks, threads, method="racy", backend=be) for _ in range(runs)]
    return {"blocks": blocks, "threads": threads, "expected": blocks * threads, "counts": counts,
            "racy_runs": racy, "mutex_add_one": cuatomic.mutex_add_one(blocks, threads, backend=be)}


def sum_ladder(n=1 << 24, backend=None, repeat=5, seed=0):
    """Every sum rung on int32 and float32 data against np.sum."""
    be = resolve(backend)
    rng = np.random.default_rng(seed)
    rows = []
    for dtype in (np.int32, np.float32):
        x = rng.integers(-1000, 1000, n).astype(dtype)
        d = to_device(x, backend=be)
        ref = np.sum(x)
        rows.append({"dtype": np.dtype(dtype).name, "method": "np.sum", "ms": _ms(np.sum, x, repeat=repeat),
                     "matches": True})
        for m, _, _ in cuatomic.methods("sum", be):
            got = cuatomic.sum(d, method=m, backend=be)
            ok = bool(got == ref) if x.dtype.kind == "i" else _exact.float_result_ok(
                "sum", got, x, wide=_auto.is_wide("sum", be, m))
            rows.append({"dtype": np.dtype(dtype).name, "method": m, "ms": _ms(cuatomic.sum, d, method=m, backend=be,
                                                                             repeat=repeat), "matches": ok})
    return {"n": n, "rows": rows}


def naive_histogram(text):
    """The tutorial's CPU baseline: a Python loop over the characters."""
    counts = [0] * 128
    for c in text.tolist():
        if c < 128:
            counts[c] += 1
    return np.array(counts, dtype=np.int64)


def histogram_comparison(text, backend=None, repeat=5):
    """np.histogram, a naive CPU loop, and both histogram rungs on the text."""
    be = resolve(backend)
    d = to_device(text, backend=be)
    ref = np.histogram(text, bins=128, range=(0, 128))[0]
    times, matches = {}, {}
    times["np.histogram"] = _ms(np.histogram, text, bins=128, range=(0, 128), repeat=repeat)
    t0 = time.perf_counter()
    loop = naive_histogram(text)
    times["CPU loop"] = 1e3 * (time.perf_counter() - t0)
    matches["CPU loop"] = bool(np.array_equal(loop, ref))
    label = "GPU" if be == "cuda" else "cuatomic cpu"
    for m, _, _ in cuatomic.methods("histogram", be):
        hist = cuatomic.histogram(d, bins=128, range=(0, 128), method=m, backend=be)[0]
        hist = hist.copy_to_host() if hasattr(hist, "copy_to_host") else hist
        matches[f"{label} {m}"] = bool(np.array_equal(hist, ref))
        times[f"{label} {m}"] = _ms(cuatomic.histogram, d, bins=128, range=(0, 128), method=m, backend=be,
                                    repeat=repeat)
    return {"nbytes": int(text.nbytes), "times_ms": times, "matches": matches, "counts": ref.tolist(),
            "backend": be}


def histogram_sweep(text, backend=None, blocks=None, repeat=5):
    """The tutorial's block-count sweep of both histogram rungs."""
    be = resolve(backend)
    d = to_device(text, backend=be)
    rows = sweep("histogram", d, bins=128, range=(0, 128), blocks=blocks, methods=["global", "shared"],
                 repeat=repeat, backend=be)
    return [r.__dict__ for r in rows]


def dot_ladder(n=1 << 24, backend=None, repeat=5, seed=0):
    """Every dot rung on float32 vectors against np.dot."""
    be = resolve(backend)
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    da, db = to_device(a, backend=be), to_device(b, backend=be)
    rows = [{"method": "np.dot", "ms": _ms(np.dot, a, b, repeat=repeat), "matches": True}]
    for m, _, _ in cuatomic.methods("dot", be):
        got = float(cuatomic.dot(da, db, method=m, backend=be))
        rows.append({"method": m, "ms": _ms(cuatomic.dot, da, db, method=m, backend=be, repeat=repeat),
                     "matches": _exact.float_result_ok("dot", got, a, b, wide=_auto.is_wide("dot", be, m))})
    return {"n": n, "rows": rows}


def cas_atomics(n=1 << 20, backend=None, seed=0):
    """Atomics built from atomicCAS: multiply (prod) and float/double add (sum)."""
    be = resolve(backend)
    rng = np.random.default_rng(seed)
    near_one = (1 + rng.uniform(-1e-3, 1e-3, n)).astype(np.float64)
    ints = rng.choice(np.array([1, 3, 5, 7], np.int64), n)  # odd: the wrapped product is not 0
    out = []
    for label, x, fn, ref in [
        ("prod float64 (CAS multiply)", near_one, cuatomic.prod, np.prod),
        ("prod float32 (CAS multiply)", near_one.astype(np.float32), cuatomic.prod, np.prod),
        ("prod int64 (CAS multiply, wraps mod 2^64)", ints, cuatomic.prod, np.prod),
        ("sum float32 (CAS add)", near_one.astype(np.float32), cuatomic.sum, np.sum),
        ("sum float64 (CAS add)", near_one, cuatomic.sum, np.sum),
    ]:
        got, want = fn(x, method="cas", backend=be), ref(x)
        ok = bool(got == want) if x.dtype.kind == "i" else bool(np.isclose(got, want, rtol=n * 4e-7))
        out.append({"what": label, "cuatomic": float(got) if x.dtype.kind == "f" else int(got),
                    "numpy": float(want) if x.dtype.kind == "f" else int(want), "matches": ok})
    return out


def atomic_family(n=1 << 20, backend=None, repeat=5, seed=0):
    """Every reduce rung with every ufunc on int32 data, and the minimum and
    maximum of float32 data, against ``np.<op>.reduce``: result, match,
    time."""
    be = resolve(backend)
    rng = np.random.default_rng(seed)
    ints = rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    floats = rng.standard_normal(n).astype(np.float32)
    rows = []
    for x, ops in ((ints, ("add", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor")),
                   (floats, ("minimum", "maximum"))):
        d = to_device(x, backend=be)
        for op in ops:
            want = getattr(np, op).reduce(x)
            rows.append({"dtype": x.dtype.name, "op": op, "method": f"np.{op}.reduce", "value": want.item(),
                         "ms": _ms(getattr(np, op).reduce, x, repeat=repeat), "matches": True})
            for m, _, _ in cuatomic.methods("reduce", be):
                got = cuatomic.reduce(d, op, method=m, backend=be)
                rows.append({"dtype": x.dtype.name, "op": op, "method": m, "value": got.item(),
                             "ms": _ms(cuatomic.reduce, d, op, method=m, backend=be, repeat=repeat),
                             "matches": bool(got == want and type(got) is type(want))})
    return {"n": n, "rows": rows}


def cas_float_max(backend=None):
    """A float maximum built from atomicCAS (reduce's ``cas`` rung) where it
    is hard: NaN anywhere, signed zeros, infinities; beside NumPy's."""
    be = resolve(backend)
    cases = {
        "normal values": np.array([0.5, -3.0, 2.25, 1.0]),
        "a NaN in the middle": np.array([1.0, np.nan, 7.0, -2.0]),
        "-0.0 and +0.0": np.array([-0.0, 0.0, -0.0]),
        "-inf and a value": np.array([-np.inf, -1e300]),
    }
    rows = []
    for label, x in cases.items():
        for op in ("maximum", "minimum"):
            got = cuatomic.reduce(x, op, method="cas", backend=be)
            want = getattr(np, op).reduce(x)
            # equal values; a zero's sign is IEEE 754-2019's (-0.0 < +0.0) here, NumPy's depends on where the zeros are
            same = bool(np.isnan(got) and np.isnan(want)) or bool(got == want)
            rows.append({"case": label, "op": op, "cuatomic": repr(float(got)), "numpy": repr(float(want)),
                         "matches": same})
    return rows


def weighted_histogram_comparison(n=1 << 22, bins=1000, backend=None, repeat=5, seed=0):
    """np.histogram(weights=) and every rung of the weighted ladder: float64
    weights into `bins` bins; the largest difference from NumPy relative to
    the bin's sum of |w|."""
    be = resolve(backend)
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    w = rng.standard_normal(n)
    want, _ = np.histogram(x, bins, (0, 1), weights=w)
    mags, _ = np.histogram(x, bins, (0, 1), weights=np.abs(w))
    rows = [{"method": "np.histogram", "ms": _ms(np.histogram, x, bins, (0, 1), weights=w, repeat=repeat),
             "rel_diff": 0.0}]
    dx, dw = to_device(x, backend=be), to_device(w, backend=be)
    for m, _, _ in cuatomic.methods("weighted_histogram", be):
        got, _ = cuatomic.histogram(dx, bins, (0, 1), weights=dw, method=m, backend=be)
        got = got.copy_to_host() if hasattr(got, "copy_to_host") else got
        rows.append({"method": m, "ms": _ms(cuatomic.histogram, dx, bins, (0, 1), weights=dw, method=m, backend=be,
                                            repeat=repeat),
                     "rel_diff": float(np.max(np.abs(got - want) / np.maximum(mags, 1e-300)))})
    return {"n": n, "bins": bins, "rows": rows}


def float32_error(ns=(1 << 10, 1 << 14, 1 << 18, 1 << 22), backend=None, seed=0):
    """The relative error of float32 sums of uniform [0, 1) values as n
    grows: the naive ``atomic`` rung, ``np.sum`` (pairwise), the ``vector``
    rung (auto's), and ``exact``, against the exact sum (``math.fsum`` of
    the values, correctly rounded in float64)."""
    import math
    be = resolve(backend)
    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        x = rng.random(n, dtype=np.float32)
        exact = math.fsum(x.astype(np.float64).tolist())
        d = to_device(x, backend=be)
        got = {"np.sum": np.sum(x)}
        for m in ("atomic", "vector", "exact"):
            got[m] = cuatomic.sum(d, method=m, backend=be)
        rows.append({"n": int(n), **{k: abs(float(v) - exact) / exact for k, v in got.items()}})
    return {"eps32": float(np.finfo(np.float32).eps), "rows": rows}


def barrier_table(n=1 << 24, backend=None, repeat=5, threads=256):
    """The inter-block barriers timed over block counts from 64 up to the
    co-resident limit (where a rung refuses, the row ends)."""
    be = resolve(backend)
    x = to_device(np.ones(n, dtype=np.float32), backend=be)
    rows, blocks = [], 64
    while True:
        row = {"blocks": blocks}
        for m in ("grid_lock", "grid_flags", "cooperative", "last_block"):
            try:
                if cuatomic.sum(x, method=m, backend=be, blocks=blocks, threads=threads) != n:
                    raise RuntimeError(f"{m} gave a wrong sum")
                row[m] = _ms(cuatomic.sum, x, method=m, backend=be, blocks=blocks, threads=threads, repeat=repeat)
            except ValueError:
                row[m] = None  # more blocks than can be resident
        if all(row[m] is None for m in ("grid_lock", "grid_flags", "cooperative")):
            break
        rows.append(row)
        if blocks >= 1 << 16:
            break
        blocks *= 2
    return {"n": n, "threads": threads, "rows": rows}


# -------------------------------------------------------------------- script

def _environment(be):
    from . import backend_info
    info = backend_info()
    env = {"backend": be, "numpy": np.__version__, "python": platform.python_version(),
           "cpu_threads": info["cpu_threads"], "cuatomic_build": info["build"]}
    if be == "cuda":
        c = info["cuda"]
        env.update(device=c["name"], compute_capability=c["compute_capability"], sm_count=c["sm_count"],
                   driver_version=c["driver_version"], cuda_runtime_version=c["runtime_version"])
    else:
        env["device"] = platform.processor() or platform.machine()
    return env


def draw(results, out):
    """Write the PNGs from the numbers of a run (a figures.json's content)."""
    import matplotlib
    matplotlib.use("Agg")
    from . import plots
    from .timing import SweepRow
    out = pathlib.Path(out)
    env, comparison = results["environment"], results["histogram"]
    where = f"{env.get('device', env['backend'])}, {env['backend']} backend"
    times = comparison["times_ms"]
    label = "GPU" if env["backend"] == "cuda" else "cuatomic cpu"
    plots.letter_histogram(comparison["counts"], kind="percent",
                           title=f"Letter frequencies ({results['text_source']})").savefig(out / "letters.png",
                                                                                           dpi=110)
    first = {k: times[k] for k in ("np.histogram", "CPU loop", f"{label} global")}
    plots.speedup_chart(first, f"{label} global",
                        title=f"Performance relative to {label} global ({where})").savefig(out / "speedup_global.png",
                                                                                           dpi=110)
    plots.speedup_chart(times, f"{label} shared",
                        title=f"Performance relative to {label} shared ({where})").savefig(out / "speedup_shared.png",
                                                                                           dpi=110)
    plots.sweep_plot([SweepRow(**r) for r in results["histogram_sweep"]],
                     title=f"Histogram of {results['text_nbytes']:,} bytes on {where}: time vs blocks per grid"
                     ).savefig(out / "sweep.png", dpi=110)
    import matplotlib.pyplot as plt
    plt.close("all")


DEFAULT_OUT = "cuatomic-figures"


def committed_files(directory):
    """The files in `directory` that git tracks.

    Parameters
    ----------
    directory : path-like

    Returns
    -------
    list of str
        Empty when the directory does not exist, is not in a git checkout, or
        git is not installed.
    """
    if not pathlib.Path(directory).is_dir():
        return []
    try:
        proc = subprocess.run(["git", "ls-files", "--", "."], cwd=directory, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return proc.stdout.split() if proc.returncode == 0 else []


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cuatomic.figures", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None,
                        help=f"where to write (default: ./{DEFAULT_OUT}; a directory with committed figures "
                             "only when named here)")
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--small", action="store_true", help="small sizes (CI)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--replot", metavar="JSON", help="only redraw the PNGs from a figures.json of a run")
    args = parser.parse_args(argv)
    # The PNGs need matplotlib: say so before the experiments run, not after them.
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        parser.exit(2, "python -m cuatomic.figures: error: drawing the figures needs matplotlib, from the plot "
                       "extra: python -m pip install \"cuatomic[plot]\" (or: python -m pip install matplotlib)\n")
    out = pathlib.Path(args.out or DEFAULT_OUT)
    committed = [] if args.out else committed_files(out)
    if committed:  # a run on another machine must not replace the recorded ones by accident
        parser.error(f"{out} holds {len(committed)} files committed to git (e.g. {committed[0]}): "
                     f"name it with --out {out} to overwrite them")
    if args.replot:
        results = json.loads(pathlib.Path(args.replot).read_text())
        out.mkdir(parents=True, exist_ok=True)
        draw(results, out)
        print(f"figures: drew {out} from {args.replot} ({results['environment'].get('device')})")
        return 0

    be = resolve(args.backend)
    out.mkdir(parents=True, exist_ok=True)
    n = 1 << (16 if args.small else 24)
    text, source = datasets.shakespeare(with_source=True)
    if args.small:
        text = text[: 1 << 18]
    blocks = [32 * i for i in range(10, 1000, 5)] if be == "cuda" and not args.small else None

    results = {"environment": _environment(be), "text_source": source, "text_nbytes": int(text.nbytes)}
    print(f"figures: backend {be}, text {text.nbytes:,} bytes ({source})", flush=True)
    results["race"] = race(64, 256, backend=be)
    results["sum_ladder"] = sum_ladder(n, backend=be, repeat=args.repeat)
    comparison = histogram_comparison(text, backend=be, repeat=args.repeat)
    results["histogram"] = comparison
    results["histogram_sweep"] = histogram_sweep(text, backend=be, blocks=blocks, repeat=max(3, args.repeat // 2))
    results["dot_ladder"] = dot_ladder(n, backend=be, repeat=args.repeat)
    results["cas_atomics"] = cas_atomics(1 << 16 if args.small else 1 << 20, backend=be)
    results["barriers"] = barrier_table(n, backend=be, repeat=args.repeat)

    (out / "figures.json").write_text(json.dumps(results, indent=1, default=str))
    draw(results, out)
    ok = all(comparison["matches"].values()) and all(r["matches"] for r in results["sum_ladder"]["rows"]) and \
        all(r["matches"] for r in results["dot_ladder"]["rows"]) and all(r["matches"] for r in results["cas_atomics"])
    for k, v in comparison["times_ms"].items():
        print(f"  histogram {k:22s} {v:10.3f} ms")
    print(f"figures: wrote {out} ({'all results match NumPy' if ok else 'MISMATCHES: see figures.json'})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
