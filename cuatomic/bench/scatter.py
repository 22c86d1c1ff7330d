"""The scatter table: ``np.add.at`` of many updates into m outputs, every
rung of the ``at`` ladder beside the peers (PyTorch ``index_add_`` with and
without ``use_deterministic_algorithms``, CuPy ``add.at``,
``torch.bincount(weights)``), whole calls on device arrays.

    python -m cuatomic bench scatter [--quick] [--extra] [--only TEXT] [--out FILE.json]

Every row is validated before it is timed: its result against a float64
reference within the error any order of float32 additions may make, and
run three times from the same start to count its distinct results (1:
deterministic). Times are the median of 20 whole calls (fewer for a row
whose first call takes over 0.2 s), device synchronized.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from .. import _C, _backend, at
from .._device import DeviceArray
from .._dtypes import dtype_id
from .._scatter import rung_fits
from .measure import call_times, environment

N = 1 << 26
CASES = [  # (label, outputs, distribution, updates, row length)
    ("m = 100, uniform", 100, "uniform", N, 1),
    ("m = 10^4, uniform", 10**4, "uniform", N, 1),
    ("m = 10^6, uniform", 10**6, "uniform", N, 1),
    ("m = 10^7, uniform", 10**7, "uniform", N, 1),
    ("m = 10^6, Zipf(1.2)", 10**6, "zipf", N, 1),
    ("m = 1", 1, "one", N, 1),
    ("rows: 2^19 updates of 128 floats into 5*10^4 rows", 5 * 10**4, "uniform", 1 << 19, 128),
]


def make_indices(m, n, kind, rng):
    if kind == "one":
        return np.zeros(n, np.int64)
    if kind == "zipf":
        return ((rng.zipf(1.2, n) - 1) % m).astype(np.int64)
    return rng.integers(0, m, n, dtype=np.int64)


def _reference(a0, idx, b, row):
    """float64 sums and the bound any order of float32 additions keeps
    within: per element, (count + 1) * eps32 * (|start| + sum |updates|)."""
    m = a0.shape[0]
    ref = a0.astype(np.float64).reshape(m, -1).copy()
    mag = np.abs(ref)
    b64 = b.astype(np.float64).reshape(idx.size, -1)
    for j in range(ref.shape[1]):
        ref[:, j] += np.bincount(idx, weights=b64[:, j], minlength=m)
        mag[:, j] += np.bincount(idx, weights=np.abs(b64[:, j]), minlength=m)
    count = np.bincount(idx, minlength=m)[:, None]
    bound = (count + 1) * np.finfo(np.float32).eps * mag
    return ref.reshape(a0.shape), bound.reshape(a0.shape)


def _systems(a0, idx, b, row, op="add", contended=False):
    """name -> (start() -> a fresh output, run(out), read(out) -> host array)."""
    systems = {}
    m = a0.shape[0]
    didx, db = DeviceArray.from_host(idx), DeviceArray.from_host(b)
    for r in _backend.table("at", "cuda"):
        if r.name == "cas" and (m <= 10**4 or contended):
            continue  # every update queued on a few words, each retried: minutes
        if rung_fits("cuda", r, m, row, idx.size, dtype_id(a0.dtype), _C.REDUCE_OPS.index(op), False):
            continue  # the rung's limits (shared: the output must fit a block's shared memory)
        systems[f"cuatomic {r.name}"] = (lambda: DeviceArray.from_host(a0),
                                         lambda out, name=r.name: at(out, didx, db, op, method=name),
                                         lambda out: out.copy_to_host())
    systems["cuatomic auto"] = (lambda: DeviceArray.from_host(a0), lambda out: at(out, didx, db, op),
                                lambda out: out.copy_to_host())
    if op != "add":
        return systems | _reduce_peers(a0, idx, b, op)
    try:
        import torch
        if torch.cuda.is_available():
            ti, tb = torch.as_tensor(idx, device="cuda"), torch.as_tensor(b, device="cuda")

            def index_add(out):
                out.index_add_(0, ti, tb)

            def deterministic(out):
                torch.use_deterministic_algorithms(True)
                try:
                    out.index_add_(0, ti, tb)
                finally:
                    torch.use_deterministic_algorithms(False)

            fresh = lambda: torch.as_tensor(a0, device="cuda").clone()  # noqa: E731
            read = lambda out: out.cpu().numpy()  # noqa: E731
            systems["torch index_add_"] = (fresh, index_add, read)
            systems["torch index_add_ deterministic"] = (fresh, deterministic, read)
            if row == 1 and a0.dtype.kind == "f":
                def bincount(out):
                    out += torch.bincount(ti, weights=tb, minlength=m)
                systems["torch bincount(weights)"] = (fresh, bincount, read)
    except ImportError:
        pass
    try:
        import cupy as cp
        ci, cb = cp.asarray(idx), cp.asarray(b)
        systems["cupy add.at"] = (lambda: cp.asarray(a0), lambda out: cp.add.at(out, ci, cb),
                                  lambda out: cp.asnumpy(out))
    except ImportError:
        pass
    return systems


# The other element types and ops (no target: shown beside the peers).
EXTRA = [  # (label, outputs, distribution, updates, row length, dtype, op)
    ("float64, m = 10^6, uniform", 10**6, "uniform", N, 1, np.float64, "add"),
    ("int32, m = 10^6, uniform", 10**6, "uniform", N, 1, np.int32, "add"),
    ("int64, m = 10^6, uniform", 10**6, "uniform", N, 1, np.int64, "add"),
    ("float32 maximum, m = 10^6, uniform", 10**6, "uniform", N, 1, np.float32, "maximum"),
    ("float32 minimum, m = 100, uniform", 100, "uniform", N, 1, np.float32, "minimum"),
]


def _values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def _reduce_peers(a0, idx, b, op):
    """The peers of minimum.at / maximum.at: torch scatter_reduce_ (amin,
    amax), CuPy's ufunc.at."""
    systems = {}
    try:
        import torch
        if torch.cuda.is_available():
            ti, tb = torch.as_tensor(idx, device="cuda"), torch.as_tensor(b, device="cuda")
            how = {"minimum": "amin", "maximum": "amax"}[op]
            systems[f"torch scatter_reduce_ {how}"] = (
                lambda: torch.as_tensor(a0, device="cuda").clone(),
                lambda out: out.scatter_reduce_(0, ti, tb, reduce=how), lambda out: out.cpu().numpy())
    except ImportError:
        pass
    try:
        import cupy as cp
        ci, cb = cp.asarray(idx), cp.asarray(b)
        systems[f"cupy {op}.at"] = (lambda: cp.asarray(a0), lambda out: getattr(cp, op).at(out, ci, cb),
                                    lambda out: cp.asnumpy(out))
    except (ImportError, AttributeError):
        pass
    return systems


def run(cases=CASES, repeat=20, seed=0, dtype=np.float32, path=None):
    """Validate, then time, every system on every case; `path`: the rows so
    far are written there (JSON) after each one."""
    rng = np.random.default_rng(seed)
    rows = []
    for case in cases:
        label, m, kind, n, row = case[:5]
        dt, op = (case[5], case[6]) if len(case) > 5 else (dtype, "add")
        idx = make_indices(m, n, kind, rng)
        shape_b = (n,) if row == 1 else (n, row)
        b = _values(rng, shape_b, dt)
        a0 = np.zeros((m,) if row == 1 else (m, row), dt)
        if op == "add":
            ref, bound = _reference(a0, idx, b, row)
            if np.dtype(dt).kind != "f":
                bound = np.zeros_like(bound)  # integers: exact
        else:
            ref = a0.copy()
            getattr(np, op).at(ref, idx, b)
            bound = np.zeros(ref.shape)
        for system, (start, fn, read) in _systems(a0, idx, b, row, op, kind != "uniform").items():
            results, ok = set(), True
            for _ in range(3):
                out = start()
                t0 = time.perf_counter()
                fn(out)
                _C.synchronize()
                first = time.perf_counter() - t0
                got = read(out)
                results.add(got.tobytes())
                ok = ok and bool(np.all(np.abs(got.astype(np.float64) - ref) <= bound))
            out = start()
            reps = repeat if first < 0.2 else 3
            times = call_times(lambda: fn(out), reps, warmup=1 if first > 0.2 else 3)
            rows.append({"case": label, "system": system, "ms": statistics.median(times), "repeat": reps,
                         "valid": ok, "distinct_results_in_3": len(results), "dtype": np.dtype(dt).name, "op": op,
                         "updates": n * row, "outputs": m * row})
            print(f"{label:52s} {system:34s} {rows[-1]['ms']:10.3f} ms  valid={ok} distinct={len(results)}",
                  flush=True)
            if path:
                with open(path, "w") as f:
                    json.dump({"environment": environment("cuda"), "rows": rows}, f, indent=1)
    return rows


def markdown(rows):
    """One line per case: each system's median ms (* where invalid, ~ where
    its float results changed from run to run)."""
    systems = list(dict.fromkeys(r["system"] for r in rows))
    out = ["| case | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for case in dict.fromkeys(r["case"] for r in rows):
        cells = []
        for s in systems:
            r = next((r for r in rows if r["case"] == case and r["system"] == s), None)
            if r is None:
                cells.append("-")
                continue
            mark = ("" if r["valid"] else "*") + ("~" if r["distinct_results_in_3"] > 1 else "")
            cells.append(f"{r['ms']:.3f}{mark}")
        out.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m cuatomic bench scatter", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2^20 updates, 3 repeats: a smoke run")
    p.add_argument("--out", help="write the rows and the environment to this JSON file")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--extra", action="store_true", help="also float64, int32, int64 and minimum/maximum rows")
    p.add_argument("--only", help="only the cases whose label contains this text")
    args = p.parse_args(argv)
    if _backend.usable()[0] != "cuda":
        print("bench scatter needs the cuda backend", file=sys.stderr)
        return 2
    cases = CASES
    if args.quick:
        cases = [(label, min(m, 1 << 20), kind, 1 << 20 if row == 1 else 1 << 12, row)
                 for label, m, kind, n, row in CASES]
    if args.extra:
        cases = list(cases) + EXTRA
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    rows = run(cases, repeat=3 if args.quick else 20, dtype=np.dtype(args.dtype), path=args.out)
    print(markdown(rows))
    return 0 if all(r["valid"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
