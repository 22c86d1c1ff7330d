"""What every table of the bench shares: the environment a run records,
results brought to the host, the check against NumPy, and whole calls
timed as a user sees them.

The bottom of ``cuatomic.bench``: ``suite``, ``targets``, ``toolkit``,
``small`` and ``auto`` all read it, and it reads only ``peers`` and the
package below.
"""
import platform
import time

import numpy as np

from .. import _C, _backend, _exact
from . import peers


def host(value):
    """A result on the host: a DeviceArray copied there, anything else as it is."""
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


def peer_host(value):
    """A result of cuatomic, CuPy, PyTorch or NumPy as a NumPy array."""
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    if hasattr(value, "get"):  # CuPy
        return value.get()
    if hasattr(value, "cpu"):  # PyTorch
        return value.cpu().numpy()
    return np.asarray(value)


def table_markdown(rows):
    """One line per case of a table benchmark's rows: every system's median ms."""
    systems = list(dict.fromkeys(r["system"] for r in rows))
    cases = list(dict.fromkeys(r["case"] for r in rows))
    at = {(r["case"], r["system"]): r["median_ms"] for r in rows}
    lines = ["| case | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for c in cases:
        lines.append(f"| {c} | " + " | ".join(f"{at[c, s]:.3f}" if (c, s) in at else "" for s in systems) + " |")
    return "\n".join(lines)


def table_cli(argv, name, doc, run, quick):
    """``python -m cuatomic bench <name>`` of a table benchmark: --backend,
    --quick (`quick` says what it shrinks to), --out; runs run(backend,
    quick, out)."""
    import argparse
    p = argparse.ArgumentParser(prog=f"python -m cuatomic bench {name}", description=doc.split("\n\n")[0])
    p.add_argument("--backend", choices=["cpu", "cuda"], default=None)
    p.add_argument("--quick", action="store_true", help=quick)
    p.add_argument("--out", help="write the rows as JSON here")
    args = p.parse_args(argv)
    run(args.backend or _backend.resolve(None), args.quick, args.out)
    return 0


def write_table(rows, env, out):
    """A table benchmark's result: its rows and environment, written to
    `out` as JSON when given, and printed as markdown."""
    import json
    result = {"environment": env, "rows": rows}
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    print(table_markdown(rows))
    return result


def agrees(op, got, ref, x, ordered=True):
    """Whether a result matches NumPy: exactly for integers and counts,
    against the exact answer for float reductions (no worse than NumPy's
    own error, or than a naive float sum for the tutorial's rungs and the
    peers: see cuatomic._exact), as a multiset for an unordered filter."""
    got, ref = host(got), np.asarray(ref)
    if op in ("sum", "dot") and ref.dtype.kind == "f":
        return _exact.float_result_ok(op, got, x, x if op == "dot" else None, wide=False)
    got = np.asarray(got)
    if not ordered:
        got, ref = np.sort(got), np.sort(ref)
    return got.shape == ref.shape and bool(np.array_equal(got, ref, equal_nan=ref.dtype.kind == "f"))


def environment(be):
    """What a table records of the run: backend, device, NumPy, Python, and
    the peers' versions on a GPU (the cpu threads on the cpu backend)."""
    env = {"backend": be, "numpy": np.__version__, "python": platform.python_version()}
    if be == "cuda":
        probe = _backend.cuda_probe()
        env.update(device=probe["name"], driver_version=probe["driver_version"],
                   cuda_runtime_version=probe["runtime_version"])
        env.update(peers.versions())
    else:
        env.update(device=cpu_name(), cpu_threads=_C.cpu_threads())
    return env


def cpu_name():
    """The processor's model name (Linux: /proc/cpuinfo's first "model
    name" with a value), else what `platform` knows of it, so that cpu
    tables from different machines can be told apart."""
    try:
        with open("/proc/cpuinfo", errors="replace") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    name = line.split(":", 1)[1].strip()
                    if name:
                        return name
    except OSError:
        pass
    return platform.processor() or platform.machine()


def call_times(fn, repeat, warmup=3, warm_s=0.2):
    """Wall-clock milliseconds of `repeat` whole calls as a user sees them:
    fn() and, on a GPU, a device synchronization, after at least `warmup`
    calls and `warm_s` seconds of calls. (Not CUDA events: on a call of tens
    of microseconds recording them costs a measurable part of what is timed.
    The seconds: three calls of tens of microseconds leave an H200 at the
    clocks of an idle GPU -- the 5.7 MB histogram measured 31.3 us alone in
    a process, 22.8 us after the larger histograms had run.)"""
    return interleaved_times({None: fn}, repeat, warmup, warm_s)[None]


def interleaved_times(fns, repeat, warmup=3, warm_s=0.2):
    """call_times for several systems at once (call_times is this with one),
    taken in turns: round r times one whole call of each system, in order,
    so that a machine whose speed drifts while the table runs (a shared
    2-core VM: 1.5x within minutes) slows every system alike and their
    ratio is that of the same moments. `fns`: name -> fn; returns name ->
    `repeat` milliseconds."""
    sync = _C.synchronize if _backend.usable()[0] == "cuda" else (lambda: None)
    for fn in fns.values():
        start, calls = time.perf_counter(), 0
        while calls < warmup or time.perf_counter() - start < warm_s:
            fn()
            sync()
            calls += 1
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            sync()
            times[name].append(1e3 * (time.perf_counter() - t0))
    return times
