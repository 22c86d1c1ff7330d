"""The benchmark suite: every op x method x dtype x size x input entropy,
validated against NumPy, then timed beside the best peer of the same run.

    python -m cuatomic bench [--quick] [--backend cpu|cuda] [--out DIR]

Writes ``bench.json`` (every row), ``bench.md`` (a table) and one scaling
plot per op (time against n, log-log, every system). The peers (NumPy on
the CPU; CUB, CuPy, PyTorch and the tutorial's Numba kernels on the GPU,
when installed) live in ``peers``; what every table shares (the NumPy
check, the environment, whole-call timing) in ``measure``. ``main`` is
``python -m cuatomic bench`` and runs the other tables too: ``targets``,
``toolkit`` and ``small``.
"""
import argparse
import json
import pathlib
import textwrap

import numpy as np

import cuatomic

from .. import _C, _backend
from .._device import DeviceArray, to_device
from ..datasets import english_like_text, text_to_array
from ..timing import benchmark
from . import peers
from .measure import agrees, environment, host
from .small import small_calls, small_markdown
from .targets import targets, targets_markdown
from .toolkit import toolkit_targets

OPS = ("sum", "dot", "histogram", "filter")
ENTROPIES = ("uniform", "text", "one")


def make_input(op, dtype, n, entropy, seed=0):
    """Deterministic data of one entropy: uniform values, English text
    bytes (widened to the dtype), or a single repeated value."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if entropy == "one":
        return np.full(n, 2, dtype=dt)
    if entropy == "text":
        return text_to_array(english_like_text(n, seed=seed)).astype(dt)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    if op == "histogram":
        return rng.integers(0, 256, n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, dtype=dt)


def _call(op):
    """(cuatomic call, NumPy reference, bytes moved) for an op."""
    if op == "sum":
        return (lambda x, **k: cuatomic.sum(x, **k), lambda x: np.sum(x), lambda x, out: x.nbytes)
    if op == "dot":
        return (lambda x, **k: cuatomic.dot(x, x, **k), lambda x: np.dot(x, x), lambda x, out: 2 * x.nbytes)
    if op == "histogram":
        return (lambda x, **k: cuatomic.histogram(x, bins=128, range=(0, 128), **k)[0],
                lambda x: np.histogram(x, bins=128, range=(0, 128))[0], lambda x, out: x.nbytes)
    return (lambda x, **k: cuatomic.filter(x, ">=", 2, **k), lambda x: x[x >= 2],
            lambda x, out: x.nbytes + out.size * x.itemsize)


def read_ceiling_gbps(backend, nbytes=1 << 28):
    """The read bandwidth this run can reach: a large copy (bytes read plus
    bytes written, over time), measured once."""
    if backend == "cpu":
        a = np.ones(nbytes // 8)
        b = np.empty_like(a)
        ms = benchmark(np.copyto, b, a, repeat=5, warmup=1).median
        return 2 * a.nbytes / (ms * 1e-3) / 1e9
    src = DeviceArray.empty(nbytes, np.uint8)
    dst = DeviceArray.empty(nbytes, np.uint8)
    ms = benchmark(lambda backend: dst._buffer.copy_from_device(src.ptr, nbytes), repeat=5, warmup=1,
                   backend="cuda").median
    return 2 * nbytes / (ms * 1e-3) / 1e9


def run(ops=OPS, sizes=None, dtypes=None, entropies=ENTROPIES, backend=None, repeat=10, quick=False,
        rotate_bytes=None, progress=print):
    """Run the suite and return its rows.

    Parameters
    ----------
    ops, sizes, dtypes, entropies : sequences, optional
        What to measure (default: every op, 2^10 ... 2^26 elements, int32 and
        float32 (uint8 too for histograms), every entropy).
    backend : {"cuda", "cpu"}, optional
    repeat : int, optional
        Timed calls per row.
    quick : bool, optional
        A small run: 2^10 and 2^16 elements, repeat 3.
    rotate_bytes : int, optional
        Inputs are replicated until they exceed this many bytes (default: 128
        MiB, larger than any L2) and the copies are used in turn.

    Returns
    -------
    dict
        ``environment``, ``ceiling_gbps`` and ``rows``: op, method or peer,
        dtype, n, entropy, ok, median_ms, gbps, pct_of_ceiling,
        ratio_to_best_peer (peer time / cuatomic time: above 1 is faster).
    """
    be = _backend.resolve(backend)
    if quick:
        sizes, repeat = sizes or [1 << 10, 1 << 16], min(repeat, 3)
    sizes = sizes or [1 << k for k in range(10, 27, 4)]
    rotate_bytes = rotate_bytes if rotate_bytes is not None else (1 << 22 if quick else 1 << 27)
    ceiling = read_ceiling_gbps(be, 1 << (24 if quick else 28))
    rows = []
    for op in ops:
        ours, reference, moved = _call(op)
        kinds = dtypes or ([np.uint8, np.int32, np.float32] if op == "histogram" else [np.int32, np.float32])
        for dt in kinds:
            for n in sizes:
                for entropy in entropies:
                    x = make_input(op, dt, n, entropy)
                    ref = reference(x)
                    copies = max(1, min(16, rotate_bytes // max(x.nbytes, 1)))
                    placed = [to_device(x, backend=be) for _ in range(copies)]
                    turn = iter(range(1 << 62))
                    group = []
                    for name, _, _ in cuatomic.methods(op, be):
                        kw = {"method": name, "backend": be}
                        if op == "filter" and not _backend.rung(op, be, name).has(_C.F_ORDERED):
                            kw["ordered"] = False  # the rung refuses to keep order: its output is a multiset
                        try:
                            got = ours(placed[0], **kw)
                        except ValueError as e:
                            if f"method {name!r}" not in str(e):
                                raise
                            continue  # the rung's limits (its `fits`): it cannot run this case
                        ok = agrees(op, got, ref, x, ordered=kw.get("ordered", True))
                        row = {"op": op, "system": f"cuatomic {name}", "dtype": np.dtype(dt).name, "n": n,
                               "entropy": entropy, "ok": bool(ok)}
                        if ok:  # validated first; a wrong method is reported, never timed
                            ms = benchmark(lambda backend: ours(placed[next(turn) % copies], **kw), repeat=repeat,
                                           warmup=1, backend=be).median
                            row.update(median_ms=ms, gbps=moved(x, host(got)) / (ms * 1e-3) / 1e9)
                        group.append(row)
                    for name, (prepare, call) in peers.suite_peers(op, be, reference).items():
                        try:
                            inputs = [prepare(x) for _ in range(copies)]
                            ms = benchmark(lambda: call(inputs[next(turn) % copies]), repeat=repeat,
                                           warmup=1).median
                        except Exception as e:  # e.g. torch.dot has no int32 kernel
                            group.append({"op": op, "system": name, "dtype": np.dtype(dt).name, "n": n,
                                          "entropy": entropy, "ok": False, "error": f"{type(e).__name__}: {e}"})
                            continue
                        group.append({"op": op, "system": name, "dtype": np.dtype(dt).name, "n": n,
                                      "entropy": entropy, "ok": True, "median_ms": ms,
                                      "gbps": moved(x, np.asarray(ref)) / (ms * 1e-3) / 1e9})
                    peer_times = [r["median_ms"] for r in group
                                  if not r["system"].startswith("cuatomic") and "median_ms" in r]
                    best_peer = min(peer_times) if peer_times else None
                    for r in group:
                        if "median_ms" in r:
                            r["pct_of_ceiling"] = 100 * r["gbps"] / ceiling
                            r["ratio_to_best_peer"] = best_peer / r["median_ms"] if best_peer else None
                    rows.extend(group)
                    if progress:
                        progress(f"{op} {np.dtype(dt).name} n={n} {entropy}: {len(group)} systems")
    env = environment(be)
    return {"environment": env, "ceiling_gbps": ceiling, "rows": rows}


def markdown(results):
    """The rows as a Markdown table (largest size per op, dtype and entropy)."""
    env = results["environment"]
    lines = [f"Device: {env['device']} ({env['backend']}); read ceiling {results['ceiling_gbps']:.1f} GB/s.", "",
             "| op | dtype | n | entropy | system | median ms | GB/s | % ceiling | vs best peer |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        if "median_ms" not in r:
            lines.append(f"| {r['op']} | {r['dtype']} | {r['n']} | {r['entropy']} | {r['system']} | "
                         f"{r.get('error', 'WRONG')} | | | |")
            continue
        ratio = r.get("ratio_to_best_peer")
        lines.append(f"| {r['op']} | {r['dtype']} | {r['n']} | {r['entropy']} | {r['system']} | "
                     f"{r['median_ms']:.4f} | {r['gbps']:.2f} | {r['pct_of_ceiling']:.1f} | "
                     f"{'' if ratio is None else f'{ratio:.2f}x'} |")
    return "\n".join(lines) + "\n"


def scaling_plots(results, out):
    """One log-log plot per op: median time against n for every system
    (int32/float32 uniform data)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = pathlib.Path(out)
    paths = []
    for op in dict.fromkeys(r["op"] for r in results["rows"]):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        rows = [r for r in results["rows"] if r["op"] == op and r["entropy"] == "uniform" and "median_ms" in r]
        # More series than the colour cycle has colours: each dtype its own line style, each system
        # its own marker, so no two series look alike.
        styles, markers = ["-", "--", ":", "-."], ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p"]
        for si, system in enumerate(dict.fromkeys(r["system"] for r in rows)):
            for di, dtype in enumerate(dict.fromkeys(r["dtype"] for r in rows)):
                pts = sorted((r["n"], r["median_ms"]) for r in rows if r["system"] == system and r["dtype"] == dtype)
                if pts:
                    ax.plot(*zip(*pts), marker=markers[si % len(markers)], linestyle=styles[di % len(styles)],
                            color=f"C{si % 10}", label=f"{system} ({dtype})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("elements")
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"{op} on {results['environment']['device']}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"scaling_{op}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


BENCH_EPILOG = """\
what it writes (into --out):
  bench.json, bench.md, scaling_<op>.png   the suite: every row validated against NumPy, then timed
  targets.json, targets.md                 --targets: the top rungs and auto against every peer
  toolkit.json, toolkit.md                 --toolkit: exact sums, weighted histograms, bincount, reduce
  small.json, small.md                     --small: every rung at 1,024 elements, idle and with a core busy

peers: NumPy on the cpu backend; CUB (built in), CuPy, PyTorch and the tutorial's Numba kernels on the
GPU, each when installed. Times are medians of whole calls with the inputs already where they run.

examples:
  python -m cuatomic bench --quick --backend cpu               a small run (seconds)
  python -m cuatomic bench --ops sum histogram --sizes 20 24   two ops at 2^20 and 2^24 elements
  python -m cuatomic bench --targets --out results/            the target table (GPU: against CUB, CuPy, PyTorch)
  python -m cuatomic bench --small --backend cpu               small calls, idle and with one core busy
  python -m cuatomic bench auto --backend cpu                  re-measure what method="auto" reads
"""


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m cuatomic bench", epilog=BENCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill("The benchmark suite: every op x method x dtype x size x input entropy, validated "
                                  "against NumPy, then timed beside the best peer of the same run; or (--targets, "
                                  "--toolkit) the target tables; or (--small) every rung at 1,024 elements, idle and with a "
                                  "core busy. Prints the table and writes it to --out."))
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats: a smoke run, not a result")
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None,
                        help="where to run (default: CUATOMIC_BACKEND, else cuda when usable, else cpu)")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS), metavar="OP",
                        help=f"the ops of the suite, of {', '.join(OPS)} (default: all)")
    parser.add_argument("--out", default="bench_results", metavar="DIR",
                        help="where the files go (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=10, metavar="R",
                        help="timed calls per row, the median kept (default: %(default)s)")
    parser.add_argument("--no-plots", action="store_true", help="no scaling plots (they need matplotlib)")
    parser.add_argument("--entropies", nargs="+", choices=ENTROPIES, default=list(ENTROPIES), metavar="E",
                        help="input kinds: uniform values, English-like text, one repeated value (default: all)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, metavar="LOG2",
                        help="sizes as powers of two (default: 10 14 18 22 26; --quick: smaller)")
    parser.add_argument("--targets", action="store_true",
                        help="the target table: auto and the top rungs against every peer at the targets' sizes")
    parser.add_argument("--toolkit", action="store_true",
                        help="the atomics toolkit's target table (exact sums, weighted histograms, bincount, reduce)")
    parser.add_argument("--small", action="store_true",
                        help="every rung at 1,024 elements, idle and with one core taken by a spinning process")
    parser.add_argument("--only", default=None, metavar="TEXT",
                        help="with --targets or --toolkit: only the works whose name contains TEXT "
                             "(e.g. '5.7 MB'; the table is then a diagnosis, not the whole table)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.small:
        results = small_calls(backend=args.backend, repeat=3 if args.quick else 5 * args.repeat)
        (out / "small.json").write_text(json.dumps(results, indent=1))
        (out / "small.md").write_text(small_markdown(results))
        print(small_markdown(results))
        wrong = [r for r in results["rows"] if not r["ok"]]
        print(f"small: {len(results['rows'])} rows, {len(wrong)} wrong, written to {out}")
        return 1 if wrong else 0
    if args.targets or args.toolkit:
        table, name = (toolkit_targets, "toolkit") if args.toolkit else (targets, "targets")

        def checkpoint(rows):  # what a run cut short measured, in partial.json until the table is done
            (out / f"{name}.partial.json").write_text(json.dumps({"environment": env, "rows": rows}, indent=1))
        env = environment(_backend.resolve(args.backend))
        results = table(backend=args.backend, repeat=args.repeat, quick=args.quick, only=args.only,
                        checkpoint=checkpoint)
        (out / f"{name}.partial.json").unlink(missing_ok=True)
        (out / f"{name}.json").write_text(json.dumps(results, indent=1))
        (out / f"{name}.md").write_text(targets_markdown(results))
        print(targets_markdown(results))
        wrong = [r for r in results["rows"] if not r["ok"] and r["system"].startswith("cuatomic")]
        print(f"targets: {len(results['rows'])} rows, {len(wrong)} cuatomic rows wrong, written to {out}")
        return 1 if wrong else 0
    sizes = [1 << k for k in args.sizes] if args.sizes else None
    results = run(ops=args.ops, sizes=sizes, entropies=args.entropies, backend=args.backend, repeat=args.repeat,
                  quick=args.quick)
    (out / "bench.json").write_text(json.dumps(results, indent=1))
    (out / "bench.md").write_text(markdown(results))
    print(markdown(results))
    if not args.no_plots:
        try:
            scaling_plots(results, out)
        except ImportError:
            print("matplotlib is not installed: no scaling plots")
    wrong = [r for r in results["rows"] if not r["ok"] and r["system"].startswith("cuatomic")]
    print(f"bench: {len(results['rows'])} rows, {len(wrong)} wrong, written to {out}")
    return 1 if wrong else 0
