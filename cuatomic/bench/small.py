"""Small calls on a busy machine: every rung of every ladder at 1,024
elements, with the machine as it is and with one core taken by a spinning
process (``python -m cuatomic bench --small``).

What it shows: a call this small must cost microseconds whatever else the
machine runs. On the cpu backend a rung that started its whole OpenMP team
for 1,024 elements waited for a thread the OS had not scheduled -- up to a
scheduler tick (4 ms on a 250 Hz kernel) at a time, 12 to 24 ms a call with
one of two cores busy -- while NumPy took microseconds. The counters
(``add_one``, ``mutex_add_one``) run a grid of 32 x 32 logical threads: 1,024
increments.

The "busy" load is one process spinning in pure Python (``while True:
pass``), started before the timed calls and killed after them: it takes one
core, as another user's job would. "idle" means no such process; what else
the machine runs is not controlled, so the 1-minute load average is written
beside each load's rows.
"""
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import cuatomic

from .. import _backend
from .measure import call_times, environment

N = 1024
GRID = (32, 32)  # the counters: 1,024 logical threads, one increment each
LOADS = ("idle", "one core busy")


def _calls(be, rng):
    """(op, dtype name, call(method), check(result)) of every op at N elements."""
    x = rng.integers(-1000, 1000, N, dtype=np.int32)
    f = rng.standard_normal(N)
    near_one = 1 + rng.uniform(-1e-4, 1e-4, N)
    b = x[x >= 2]
    h = np.histogram(x & 127, 128, (0, 128))[0]
    w = rng.random(N)
    hw = np.histogram(x & 127, 128, (0, 128), weights=w)[0]
    total = GRID[0] * GRID[1]
    d = (lambda a: cuatomic.to_device(a, backend=be)) if be == "cuda" else (lambda a: a)
    # the histogram's input: bytes in bins of width one, which every rung takes
    dx, df, dn, dh, dw = d(x), d(f), d(near_one), d((x & 127).astype(np.uint8)), d(w)
    host = lambda v: v.copy_to_host() if hasattr(v, "copy_to_host") else v  # noqa: E731
    return [
        ("sum", "int32", lambda m: cuatomic.sum(dx, method=m, backend=be), lambda v: v == x.sum()),
        ("dot", "float64", lambda m: cuatomic.dot(df, df, method=m, backend=be),
         lambda v: abs(v - np.dot(f, f)) <= 1e-9 * np.dot(f, f)),
        ("prod", "float64", lambda m: cuatomic.prod(dn, method=m, backend=be),
         lambda v: abs(v - np.prod(near_one)) <= 1e-12),
        ("reduce", "int32 maximum", lambda m: cuatomic.reduce(dx, "maximum", method=m, backend=be),
         lambda v: v == x.max()),
        ("histogram", "uint8, 128 bins", lambda m: cuatomic.histogram(dh, 128, (0, 128), method=m, backend=be)[0],
         lambda v: np.array_equal(host(v), h)),
        ("weighted_histogram", "uint8, float64 weights",
         lambda m: cuatomic.histogram(dh, 128, (0, 128), weights=dw, method=m, backend=be)[0],
         lambda v: np.allclose(host(v), hw, rtol=1e-12, atol=1e-12)),
        ("filter", "int32 >= 2", lambda m: cuatomic.filter(dx, ">=", 2, ordered=False, method=m, backend=be),
         lambda v: np.array_equal(np.sort(host(v)), np.sort(b))),
        ("add_one", "32 x 32 grid", lambda m: cuatomic.add_one(*GRID, method=m, backend=be),
         lambda v: 1 <= v <= total),
        ("mutex_add_one", "32 x 32 grid", lambda m: cuatomic.mutex_add_one(*GRID, method=m, backend=be),
         lambda v: v == total),
    ], {"sum": lambda: np.sum(x), "dot": lambda: np.dot(f, f), "prod": lambda: np.prod(near_one),
        "reduce": lambda: np.max(x), "histogram": lambda: np.histogram(x & 127, 128, (0, 128)),
        "weighted_histogram": lambda: np.histogram(x & 127, 128, (0, 128), weights=w),
        "filter": lambda: x[x >= 2]}


def spinner():
    """A process spinning on one core until killed (what --small's busy load runs)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.3)  # started and spinning before the first timed call
    return proc


def small_calls(backend=None, repeat=50, loads=LOADS, progress=print, warm_s=0.2):
    """Every rung (and ``auto``) of every op at 1,024 elements, under each load.

    Parameters
    ----------
    backend : {"cuda", "cpu"}, optional
    repeat : int, optional
        Timed whole calls per row (after at least 3 calls and 0.2 s of
        warm-up); the median, the mean (which counts the stalls of the
        calls that waited) and the slowest are kept.
    loads : sequence of {"idle", "one core busy"}, optional
    warm_s : float, optional
        Seconds of warm-up calls per row (at least 3 calls in any case).

    Returns
    -------
    dict
        ``environment``, ``n`` and ``rows``: op, dtype, system
        (``cuatomic <method>``, ``numpy``), load, load_average (the 1-minute
        load average as the load's first row started), ok, median_ms, mean_ms,
        max_ms.
    """
    be = _backend.resolve(backend)
    rows = []
    for load in loads:
        proc = spinner() if load != "idle" else None
        try:
            avg = os.getloadavg()[0]
            calls, numpy_calls = _calls(be, np.random.default_rng(0))
            for op, dtype, call, check in calls:
                for name in [m for m, _, _ in cuatomic.methods(op, be)] + ["auto"]:
                    row = {"op": op, "dtype": dtype, "system": f"cuatomic {name}", "load": load,
                           "load_average": avg}
                    row["ok"] = bool(check(call(name)))
                    if row["ok"]:  # validated first; a wrong method is reported, never timed
                        row.update(_times(lambda: call(name), repeat, warm_s))
                    rows.append(row)
                    _show(row, progress)
                if op in numpy_calls:
                    row = {"op": op, "dtype": dtype, "system": "numpy", "load": load, "load_average": avg,
                           "ok": True, **_times(numpy_calls[op], repeat, warm_s)}
                    rows.append(row)
                    _show(row, progress)
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
    return {"environment": environment(be), "n": N, "rows": rows}


def _times(fn, repeat, warm_s):
    """Median, mean and slowest ms of `repeat` whole calls (measure.call_times)."""
    times = call_times(fn, repeat, warm_s=warm_s)
    return {"median_ms": statistics.median(times), "mean_ms": statistics.fmean(times), "max_ms": max(times)}


def _show(row, progress):
    if progress:
        shown = (f"{row['median_ms']:9.4f} ms (mean {row['mean_ms']:.3f}, max {row['max_ms']:.3f})"
                 if "median_ms" in row else "WRONG")
        progress(f"{row['load']:14s} {row['op']:18s} {row['system']:26s} {shown}")


def small_markdown(results):
    """The rows as one table: a row per op and system, a column pair per load."""
    env, rows = results["environment"], results["rows"]
    loads = list(dict.fromkeys(r["load"] for r in rows))
    avg = {load: next(r["load_average"] for r in rows if r["load"] == load) for load in loads}
    lines = [f"Device: {env['device']} ({env['backend']}"
             + (f", {env['cpu_threads']} OpenMP threads" if "cpu_threads" in env else "")
             + f"); {results['n']:,} elements (counters: a {GRID[0]} x {GRID[1]} grid); median / mean / max ms of "
             "whole calls; load average as each load started: "
             + ", ".join(f"{load} {avg[load]:.2f}" for load in loads) + ".", "",
             "| op | system | " + " | ".join(f"{load}: median / mean / max ms" for load in loads) + " |",
             "|---|---|" + "---|" * len(loads)]
    for op, system in dict.fromkeys((r["op"], r["system"]) for r in rows):
        cells = []
        for load in loads:
            r = next((r for r in rows if (r["op"], r["system"], r["load"]) == (op, system, load)), None)
            cells.append("" if r is None else (f"{r['median_ms']:.4f} / {r['mean_ms']:.3f} / {r['max_ms']:.2f}"
                                               if "median_ms" in r else "WRONG"))
        lines.append(f"| {op} | {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
