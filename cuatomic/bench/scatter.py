"""The scatter table: ``np.add.at`` of many updates into m outputs, every
rung of the ``at`` ladder beside the peers (PyTorch ``index_add_`` with and
without ``use_deterministic_algorithms``, CuPy ``add.at``,
``torch.bincount(weights)``, JAX ``.at[].add`` with and without
``--xla_gpu_deterministic_ops``), whole calls on device arrays.

    python -m cuatomic bench scatter [--quick] [--extra] [--only TEXT] [--out FILE.json]

Every row is validated before it is timed: its result against a float64
reference within the error any order of float32 additions may make, and
run three times from the same start to count its distinct results (1:
deterministic). Times are the median of 20 whole calls (fewer for a row
whose first call takes over 0.2 s), device synchronized.

The JAX columns ("jax .at[].add", "jax .at[].add deterministic") come
from a child process per mode, as XLA reads its flags when it starts
(``XLA_FLAGS=--xla_gpu_deterministic_ops=true`` for the second;
``XLA_PYTHON_CLIENT_PREALLOCATE=false`` for both). Each child draws the
same inputs from the same seed, jits ``a.at[i].add(v)`` on the GPU
(64-bit types enabled, so the indices stay int64), validates, counts and
times as above, with ``block_until_ready()`` in each call, and prints its
rows as JSON lines; the parent adds them to the table. Without JAX, or
with JAX but no GPU, the columns are left out with a note; so is a child
that fails or runs past ``JAX_TIMEOUT_S`` (600 s, all its cases
together), keeping the rows it printed.
"""
import argparse
import contextlib
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys

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


def _whole(case, dtype):
    """(label, outputs, distribution, updates, row length, dtype name, op):
    a case of CASES (five fields) adds in `dtype`, one of EXTRA names both."""
    return tuple(case[:5]) + ((np.dtype(case[5]).name, case[6]) if len(case) > 5 else (np.dtype(dtype).name, "add"))


def _inputs(cases, seed, dtype):
    """Each case, whole, with its start, indices, values, reference and
    bound, drawn in order from one generator: a process given the same
    cases and seed draws the same data."""
    rng = np.random.default_rng(seed)
    for case in cases:
        label, m, kind, n, row, dt, op = case = _whole(case, dtype)
        dt = np.dtype(dt)
        idx = make_indices(m, n, kind, rng)
        shape_b = (n,) if row == 1 else (n, row)
        b = _values(rng, shape_b, dt)
        a0 = np.zeros((m,) if row == 1 else (m, row), dt)
        if op == "add":
            ref, bound = _reference(a0, idx, b, row)
            if dt.kind != "f":
                bound = np.zeros_like(bound)  # integers: exact
        else:
            ref = a0.copy()
            getattr(np, op).at(ref, idx, b)
            bound = np.zeros(ref.shape)
        yield case, a0, idx, b, ref, bound


def _measure(case, system, start, fn, read, ref, bound, repeat):
    """One row: three runs from `start()` validated and their distinct
    results counted, then the median of `repeat` timed calls (3 when a
    call takes over 0.2 s)."""
    label, m, kind, n, row, dt, op = case
    results, ok = set(), True
    for _ in range(3):
        out = start()
        first = call_times(lambda: fn(out), 1, warmup=0, warm_s=0)[0]
        got = read(out)
        results.add(got.tobytes())
        ok = ok and bool(np.all(np.abs(got.astype(np.float64) - ref) <= bound))
    out = start()
    reps = repeat if first < 200 else 3
    ms = statistics.median(call_times(lambda: fn(out), reps, warmup=1 if first > 200 else 3))
    print(f"{label:52s} {system:34s} {ms:10.3f} ms  valid={ok} distinct={len(results)}", flush=True)
    return {"case": label, "system": system, "ms": ms, "repeat": reps, "valid": ok,
            "distinct_results_in_3": len(results), "dtype": dt, "op": op, "updates": n * row, "outputs": m * row}


def run(cases=CASES, repeat=20, seed=0, dtype=np.float32, path=None):
    """Validate, then time, every system on every case, then the JAX
    children's rows; `path`: the rows so far are written there (JSON)
    after each one."""
    rows, notes = [], []

    def save():
        if path:
            with open(path, "w") as f:
                json.dump({"environment": environment("cuda"), "rows": rows, "notes": notes}, f, indent=1)

    for case, a0, idx, b, ref, bound in _inputs(cases, seed, dtype):
        kind, row, op = case[2], case[4], case[6]
        for system, (start, fn, read) in _systems(a0, idx, b, row, op, kind != "uniform").items():
            rows.append(_measure(case, system, start, fn, read, ref, bound, repeat))
            save()
    for system, flags in JAX_MODES.items():
        got, note = _jax_rows(system, flags, cases, seed, dtype, repeat)
        rows += got
        if note:
            print(f"note: {note}", flush=True)
            notes.append(note)
        save()
    return rows


# JAX's columns: name -> XLA_FLAGS of its child process.
JAX_MODES = {"jax .at[].add": "", "jax .at[].add deterministic": "--xla_gpu_deterministic_ops=true"}
JAX_TIMEOUT_S = 600  # one child, all its cases


def _jax_rows(system, flags, cases, seed, dtype, repeat, backend="gpu"):
    """(rows, note) of one JAX mode, measured by a child process with
    `flags` as its XLA_FLAGS; the note (else None) says why rows are
    missing."""
    if importlib.util.find_spec("jax") is None:
        return [], f"{system}: jax is not installed"
    spec = {"system": system, "cases": [_whole(c, dtype) for c in cases], "seed": seed, "repeat": repeat,
            "backend": backend}
    root = str(pathlib.Path(__file__).resolve().parents[2])  # the child imports this cuatomic
    env = dict(os.environ, XLA_FLAGS=flags, XLA_PYTHON_CLIENT_PREALLOCATE="false",
               PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    try:  # progress lines on stderr, passed through; rows and notes as JSON lines on stdout
        child = subprocess.run([sys.executable, "-m", "cuatomic.bench.scatter", "--jax-child", json.dumps(spec)],
                               env=env, stdout=subprocess.PIPE, text=True, timeout=JAX_TIMEOUT_S)
        out, note = child.stdout, child.returncode and f"{system}: its process exited with {child.returncode}"
    except subprocess.TimeoutExpired as e:  # what it printed so far, as bytes
        out, note = (e.stdout or b"").decode(), f"{system}: its process ran past {JAX_TIMEOUT_S} s and was stopped"
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    notes = [line["note"] for line in lines if "note" in line] + ([note] if note else [])
    return [line for line in lines if "case" in line], "; ".join(notes) or None


def _jax_child(system, cases, seed, repeat, backend):
    """``--jax-child``: the rows of `system` (the XLA flags are the
    parent's to set) as JSON lines on stdout, progress on stderr."""
    rows_out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        import jax
        jax.config.update("jax_enable_x64", True)  # int64 indices, float64 values: as the other rows have them
        try:
            device = jax.devices(backend)[0]
        except RuntimeError as e:
            print(json.dumps({"note": f"{system}: jax has no {backend} device ({e})"}), file=rows_out)
            return 0
        add = jax.jit(lambda a, i, v: a.at[i].add(v))
        for case, a0, idx, b, ref, bound in _inputs(cases, seed, None):
            if case[6] != "add":
                continue
            a, i, v = (jax.device_put(x, device) for x in (a0, idx, b))

            def fn(out):  # JAX arrays are immutable: `out` holds the latest result
                out[0] = add(out[0], i, v).block_until_ready()

            row = _measure(case, system, lambda: [a], fn, lambda out: np.asarray(out[0]), ref, bound, repeat)
            print(json.dumps(dict(row, jax=jax.__version__)), file=rows_out, flush=True)
    return 0


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
    p.add_argument("--jax-child", help=argparse.SUPPRESS)  # JSON of _jax_child's arguments, from _jax_rows
    args = p.parse_args(argv)
    if args.jax_child:
        return _jax_child(**json.loads(args.jax_child))
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
