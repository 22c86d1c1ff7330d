"""The benchmark suite: every op x method x dtype x size x input entropy,
validated against NumPy, then timed beside the best peer of the same run.

    python -m cuatomic bench [--quick] [--backend cpu|cuda] [--out DIR]

Writes ``bench.json`` (every row), ``bench.md`` (a table) and one scaling
plot per op (time against n, log-log, every system). Peers: NumPy on the
CPU; CuPy and PyTorch on the GPU when they are installed.
"""
import argparse
import json
import pathlib
import platform

import numpy as np

from . import _backend, _ops
from ._device import to_device
from .datasets import english_like_text, text_to_array
from .timing import benchmark

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
        return (lambda x, **k: _ops.sum(x, **k), lambda x: np.sum(x), lambda x, out: x.nbytes)
    if op == "dot":
        return (lambda x, **k: _ops.dot(x, x, **k), lambda x: np.dot(x, x), lambda x, out: 2 * x.nbytes)
    if op == "histogram":
        return (lambda x, **k: _ops.histogram(x, bins=128, range=(0, 128), **k)[0],
                lambda x: np.histogram(x, bins=128, range=(0, 128))[0], lambda x, out: x.nbytes)
    return (lambda x, **k: _ops.filter(x, ">=", 2, **k), lambda x: x[x >= 2],
            lambda x, out: x.nbytes + out.size * x.itemsize)


def _host(value):
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


def agrees(op, got, ref, x, ordered=True):
    """Whether a result matches NumPy: exactly for integers and counts,
    within (n+1)*eps*sum|x| for float reductions, as a multiset for an
    unordered filter."""
    got, ref = _host(got), np.asarray(ref)
    if op in ("sum", "dot") and ref.dtype.kind == "f":
        terms = np.abs(x.astype(np.float64)) * (np.abs(x.astype(np.float64)) if op == "dot" else 1)
        bound = (x.size + 1) * np.finfo(ref.dtype).eps * float(terms.sum())
        return abs(float(got) - float(ref)) <= bound
    got = np.asarray(got)
    if not ordered:
        got, ref = np.sort(got), np.sort(ref)
    return got.shape == ref.shape and bool(np.array_equal(got, ref, equal_nan=ref.dtype.kind == "f"))


def _peers(op, backend):
    """name -> (prepare(host array) -> peer input, run(peer input))."""
    peers = {}
    if backend == "cpu":
        ref = _call(op)[1]
        peers["numpy"] = (lambda x: x, ref)
        return peers
    try:
        import cupy as cp
        runs = {"sum": lambda x: x.sum(), "dot": lambda x: cp.dot(x, x),
                "histogram": lambda x: cp.histogram(x, bins=128, range=(0, 128))[0], "filter": lambda x: x[x >= 2]}
        peers["cupy"] = (cp.asarray, lambda x, f=runs[op]: (f(x), cp.cuda.runtime.deviceSynchronize()))
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            runs = {"sum": lambda t: t.sum(), "dot": lambda t: torch.dot(t, t),
                    "histogram": lambda t: torch.histc(t.float(), bins=128, min=0, max=128),
                    "filter": lambda t: t[t >= 2]}
            peers["torch"] = (lambda x: torch.as_tensor(x, device="cuda"),
                              lambda t, f=runs[op]: (f(t), torch.cuda.synchronize()))
    except ImportError:
        pass
    return peers


def read_ceiling_gbps(backend, nbytes=1 << 28):
    """The read bandwidth this run can reach: a large copy (bytes read plus
    bytes written, over time), measured once."""
    if backend == "cpu":
        a = np.ones(nbytes // 8)
        b = np.empty_like(a)
        ms = benchmark(np.copyto, b, a, repeat=5, warmup=1).median
        return 2 * a.nbytes / (ms * 1e-3) / 1e9
    from ._device import DeviceArray
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
                    for name, _, _ in _ops.methods(op, be):
                        kw = {"method": name, "backend": be}
                        if op == "filter" and name != "ordered":
                            kw["ordered"] = False
                        got = ours(placed[0], **kw)
                        ok = agrees(op, got, ref, x, ordered=kw.get("ordered", True))
                        row = {"op": op, "system": f"cuatomic {name}", "dtype": np.dtype(dt).name, "n": n,
                               "entropy": entropy, "ok": bool(ok)}
                        if ok:  # validated first; a wrong method is reported, never timed
                            ms = benchmark(lambda backend: ours(placed[next(turn) % copies], **kw), repeat=repeat,
                                           warmup=1, backend=be).median
                            row.update(median_ms=ms, gbps=moved(x, _host(got)) / (ms * 1e-3) / 1e9)
                        group.append(row)
                    for name, (prepare, call) in _peers(op, be).items():
                        inputs = [prepare(x) for _ in range(copies)]
                        ms = benchmark(lambda: call(inputs[next(turn) % copies]), repeat=repeat, warmup=1).median
                        group.append({"op": op, "system": name, "dtype": np.dtype(dt).name, "n": n,
                                      "entropy": entropy, "ok": True, "median_ms": ms,
                                      "gbps": moved(x, np.asarray(ref)) / (ms * 1e-3) / 1e9})
                    peer_times = [r["median_ms"] for r in group if not r["system"].startswith("cuatomic")]
                    best_peer = min(peer_times) if peer_times else None
                    for r in group:
                        if "median_ms" in r:
                            r["pct_of_ceiling"] = 100 * r["gbps"] / ceiling
                            r["ratio_to_best_peer"] = best_peer / r["median_ms"] if best_peer else None
                    rows.extend(group)
                    if progress:
                        progress(f"{op} {np.dtype(dt).name} n={n} {entropy}: {len(group)} systems")
    env = {"backend": be, "numpy": np.__version__, "python": platform.python_version()}
    if be == "cuda":
        probe = _backend.cuda_probe()
        env.update(device=probe["name"], driver_version=probe["driver_version"],
                   cuda_runtime_version=probe["runtime_version"])
    else:
        from . import _C
        env.update(device=platform.processor() or platform.machine(), cpu_threads=_C.cpu_threads())
    return {"environment": env, "ceiling_gbps": ceiling, "rows": rows}


def markdown(results):
    """The rows as a Markdown table (largest size per op, dtype and entropy)."""
    env = results["environment"]
    lines = [f"Device: {env['device']} ({env['backend']}); read ceiling {results['ceiling_gbps']:.1f} GB/s.", "",
             "| op | dtype | n | entropy | system | median ms | GB/s | % ceiling | vs best peer |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        if "median_ms" not in r:
            lines.append(f"| {r['op']} | {r['dtype']} | {r['n']} | {r['entropy']} | {r['system']} | WRONG | | | |")
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
        for system in dict.fromkeys(r["system"] for r in rows):
            for dtype in dict.fromkeys(r["dtype"] for r in rows):
                pts = sorted((r["n"], r["median_ms"]) for r in rows if r["system"] == system and r["dtype"] == dtype)
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=f"{system} ({dtype})")
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cuatomic bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run")
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--out", default="bench_results")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    results = run(ops=args.ops, backend=args.backend, repeat=args.repeat, quick=args.quick)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(results, indent=1))
    (out / "bench.md").write_text(markdown(results))
    if not args.no_plots:
        try:
            scaling_plots(results, out)
        except ImportError:
            print("matplotlib is not installed: no scaling plots")
    wrong = [r for r in results["rows"] if not r["ok"]]
    print(f"bench: {len(results['rows'])} rows, {len(wrong)} wrong, written to {out}")
    return 1 if wrong else 0
