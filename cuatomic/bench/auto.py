"""``python -m cuatomic bench auto``: measure the rule of ``method="auto"``.

Times every rung of every ladder on a set of cases (op, dtype, size, bins)
and writes, per case, each rung's median time in milliseconds: the file
:mod:`cuatomic._auto` reads. A rung is checked against NumPy before it is
timed; one that refuses the case (bins that do not fit, a grid that cannot
be resident) or gives a wrong answer gets no time, so auto never picks it
there. The racy lesson is not timed.

    python -m cuatomic bench auto [--backend cpu|cuda] [--quick] [--out FILE]

The files measured for a release live in ``cuatomic/rules/``: ``cpu.json``,
and one ``cuda-<GPU name>.json`` per GPU measured, each with the GPU's
facts (``device_facts``) that auto matches the GPU a call runs on against.
To use one measured on your own machine, point ``CUATOMIC_AUTO_RULES`` at
it (the file this command writes is named as a shipped one would be).
"""
import argparse
import textwrap
import datetime
import json
import pathlib
import platform

import numpy as np

import cuatomic

from .. import _C, _auto, _backend, _exact
from ..datasets import english_like_text, text_to_array
from ..timing import benchmark
from .measure import agrees, host as measure_host
from .scatter import _reference, _values, make_indices

# Sizes (log2 elements) measured per backend: small calls, cache-sized, and
# past the last-level cache (a GPU's 2^26 float32 is 256 MiB). A GPU's 2^23
# sits where histogram rungs trade places (the tutorial's 5.7 MB text: with
# 2^20 the nearest measurement, auto took thread_counters there, 15% slower
# than warp_private on the H200).
SIZES = {"cpu": (12, 18, 22), "cuda": (12, 20, 23, 26)}
QUICK_SIZES = {"cpu": (12,), "cuda": (12,)}
REDUCE_DTYPES = ("int32", "float32", "float64")
FILTER_DTYPES = ("int32", "float32")
# (dtype, bins, data): the histogram cases -- the tutorial's letters, bytes,
# then bin counts that leave shared memory behind on a GPU.
HISTOGRAMS = (("uint8", 128, "text"), ("uint8", 256, "uniform"), ("float32", 64, "normal"),
              ("int32", 4096, "uniform"), ("float32", 16384, "normal"), ("int32", 65536, "uniform"))
GRIDS = ((10, 16), (64, 256))  # the counters: the tutorial's grid, and a contended one
# (rows, data, row length): the at cases -- one output, a contended hundred,
# outputs that fit a GPU block's shared memory, and a million, past it; each
# of the last three also with Zipf(1.2) indices (the skew auto samples from
# a call's indices, :func:`cuatomic._scatter.skew_of`); and rows of 128
# elements (embedding gradients: an update names a whole row). A case's
# "bins" is its output elements (rows * row), "n" its updated elements.
AT_OUTPUTS = ((1, "uniform", 1), (100, "uniform", 1), (100, "zipf", 1), (10**4, "uniform", 1),
              (10**4, "zipf", 1), (10**6, "uniform", 1), (10**6, "zipf", 1), (5 * 10**4, "uniform", 128))
AT_SIZES = {"cpu": (16, 22), "cuda": (20, 26)}


# The ops whose auto rule these measurements decide (cases() below).
MEASURED_OPS = ("sum", "dot", "histogram", "filter", "at", "add_one", "mutex_add_one")


def cases(backend, quick=False, ops=None):
    """The cases to measure, as dicts of facts (op, dtype, n, bins)."""
    sizes = [1 << k for k in (QUICK_SIZES if quick else SIZES)[backend]]
    out = []
    for op in ("sum", "dot"):
        out += [{"op": op, "dtype": dt, "n": n} for dt in REDUCE_DTYPES for n in sizes]
    hist_sizes = sizes[-1:] if quick else sizes[1:]  # past the smallest
    out += [{"op": "histogram", "dtype": dt, "n": n, "bins": bins, "data": data}
            for dt, bins, data in HISTOGRAMS for n in hist_sizes]
    out += [{"op": "filter", "dtype": dt, "n": n} for dt in FILTER_DTYPES for n in sizes]
    at_sizes = [1 << k for k in AT_SIZES[backend][:1 if quick else None]]
    out += [{"op": "at", "dtype": dt, "n": n, "bins": m * row, "data": data, "row": row}
            for dt in REDUCE_DTYPES for m, data, row in AT_OUTPUTS for n in at_sizes]
    for op in ("add_one", "mutex_add_one"):
        out += [{"op": op, "n": b * t, "grid": [b, t]} for b, t in (GRIDS[:1] if quick else GRIDS)]
    return [c for c in out if ops is None or c["op"] in ops]


def _data(case, seed=0):
    """The host input of an array case."""
    rng = np.random.default_rng(seed)
    dt, n = np.dtype(case.get("dtype", "int32")), case["n"]
    if case["op"] == "at":  # (indices, values)
        row = case.get("row", 1)
        return (make_indices(case["bins"] // row, n // row, case["data"], rng),
                _values(rng, (n,) if row == 1 else (n // row, row), dt))
    if case["op"] == "histogram":
        if case["data"] == "text":
            return text_to_array(english_like_text(n, seed=seed)).astype(dt)
        if case["data"] == "normal":
            return rng.standard_normal(n).astype(dt)
        return rng.integers(0, case["bins"], n).astype(dt)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    return rng.integers(-1000, 1000, n).astype(dt)


def _calls(case, backend, x):
    """(call(method), verify(method) -> whether that rung's answer is NumPy's) of a case."""
    op = case["op"]
    if op == "at":
        return _at_calls(case, backend, x)
    call, check = _checked_calls(case, backend, x)
    return call, (lambda m: check(call(m)))


def _at_calls(case, backend, x):
    """at's: the timed calls add into one output again and again, the check
    adds once into a zeroed one (integers exactly NumPy's, floats within
    the error any order of additions may make)."""
    idx, vals = x
    host_idx, host_vals = (v.copy_to_host() if isinstance(v, cuatomic.DeviceArray) else v for v in (idx, vals))
    row = case.get("row", 1)
    start = np.zeros((case["bins"],) if row == 1 else (case["bins"] // row, row), vals.dtype)
    if start.dtype.kind == "f":
        ref, bound = _reference(start, host_idx, host_vals, row)
    else:
        ref, bound = start.copy(), 0
        np.add.at(ref, host_idx, host_vals)
    fresh = (lambda: cuatomic.to_device(start)) if backend == "cuda" else start.copy
    out = fresh()

    def verify(m):
        got = fresh()
        cuatomic.at(got, idx, vals, method=m, backend=backend)
        got = got.copy_to_host() if isinstance(got, cuatomic.DeviceArray) else got
        return bool(np.all(np.abs(got.astype(np.float64) - ref) <= bound))

    return (lambda m: cuatomic.at(out, idx, vals, method=m, backend=backend)), verify


def _checked_calls(case, backend, x):
    """(call(method) -> result, check(result) -> bool) of a reduction, histogram, filter or counter case."""
    op = case["op"]
    if op in ("add_one", "mutex_add_one"):
        b, t = case["grid"]
        fn = getattr(cuatomic, op)
        return (lambda m: fn(b, t, method=m, backend=backend)), (lambda v: v == b * t)
    host = x.copy_to_host() if isinstance(x, cuatomic.DeviceArray) else x
    if op in ("sum", "dot"):
        call = (lambda m: cuatomic.sum(x, method=m, backend=backend)) if op == "sum" else \
            (lambda m: cuatomic.dot(x, x, method=m, backend=backend))
        if host.dtype.kind == "f":  # the exact answer once for every rung (fsum of 2^26 elements takes seconds)
            ok = _exact.float_result_check(op, host, host if op == "dot" else None, wide=False)
            return call, (lambda v: ok(measure_host(v)))
        ref = np.sum(host) if op == "sum" else np.dot(host, host)
        return call, (lambda v: agrees(op, v, ref, host))
    if op == "histogram":
        bins = case["bins"]
        bounds = (-4.0, 4.0) if case["data"] == "normal" else (0, bins)
        ref = np.histogram(host, bins, bounds)[0]
        return (lambda m: cuatomic.histogram(x, bins, bounds, method=m, backend=backend)[0]), \
            (lambda v: agrees("histogram", v, ref, host))
    ref = host[host >= 0]
    return (lambda m: cuatomic.filter(x, ">=", 0, ordered=False, method=m, backend=backend)), \
        (lambda v: agrees("filter", v, ref, host, ordered=False))


def measure(case, backend, repeat=10, progress=print):
    """Median ms of every rung on one case: {"ms": {rung: ms or None}, ...}."""
    x = None
    if case["op"] not in ("add_one", "mutex_add_one"):
        x = _data(case)
        if backend == "cuda":
            x = tuple(map(cuatomic.to_device, x)) if case["op"] == "at" else cuatomic.to_device(x)
    call, verify = _calls(case, backend, x)
    ms, why = {}, {}
    for rung in _backend.table(case["op"], backend):
        if rung.flags & _C.F_RACY:
            continue
        if case["op"] == "at" and backend == "cuda" and rung.name == "cas" and (
                case["bins"] <= 10**4 or case["data"] == "zipf"):
            ms[rung.name], why[rung.name] = None, "not timed: every update retried on a few contended words (minutes)"
            continue
        try:
            ok = verify(rung.name)
        except ValueError as e:  # the rung's limits: it cannot run this case
            ms[rung.name], why[rung.name] = None, f"refused: {e}"
            continue
        if not ok:
            ms[rung.name], why[rung.name] = None, "wrong answer"
            continue
        ms[rung.name] = round(benchmark(lambda backend, m=rung.name: call(m), repeat=repeat, warmup=2,
                                        backend=backend).median, 5)
    row = dict(case, ms=ms)
    if why:
        row["not_timed"] = why
    timed = {k: v for k, v in ms.items() if v is not None}
    progress(f"  {_describe(case)}: " + (f"fastest {min(timed, key=timed.get)}" if timed else "nothing ran")
             + (f" ({len(why)} not timed)" if why else ""))
    return row


def _describe(case):
    return " ".join(f"{k}={case[k]}" for k in ("op", "dtype", "n", "bins", "data", "row") if k in case)


def _device(backend):
    if backend == "cuda":
        return _backend.cuda_probe()["name"]
    return f"{platform.processor() or platform.machine()}, {_C.cpu_threads()} OpenMP threads"


# The facts of the measured GPU that auto matches another GPU against (_auto.gpu_distance).
FACTS = ("name", "compute_capability", "sm_count", "memory_gbps", "l2_bytes", "shared_per_block_optin",
         "total_memory")


def device_facts():
    """The current GPU's facts as a rules file keeps them."""
    facts = _C.device_facts(_C.devices()[1])
    return {k: list(facts[k]) if isinstance(facts[k], tuple) else facts[k] for k in FACTS}


def run(backend=None, quick=False, repeat=10, ops=None, progress=print):
    """Measure every case on one backend: the rules file's contents."""
    be = _backend.resolve(backend)
    todo = cases(be, quick, ops)
    progress(f"bench auto: {len(todo)} cases on {be} ({_device(be)}), median of {repeat}")
    rows = [measure(c, be, repeat, progress) for c in todo]
    return {
        "backend": be,
        "device": _device(be),
        **({"device_facts": device_facts()} if be == "cuda" else {}),
        "produced_by": f"python -m cuatomic bench auto --backend {be}" + (" --quick" if quick else "")
                       + f" --repeat {repeat}" + (f" --ops {' '.join(ops)}" if ops else ""),
        "cuatomic": cuatomic.__version__,
        "numpy": np.__version__,
        "date": datetime.date.today().isoformat(),
        "repeat": repeat,
        "cases": rows,
    }


def merge(old, new):
    """A rules file of `old`'s measurements with `new`'s ops re-measured: the
    cases of the ops `new` measured replace `old`'s; the rest are kept. Both
    must come from the same backend and device."""
    for key in ("backend", "device"):
        if old.get(key) != new.get(key):
            raise ValueError(f"cannot update rules measured on {key} {old.get(key)!r} with ones from {new.get(key)!r}")
    remeasured = {c["op"] for c in new["cases"]}
    kept = [c for c in old["cases"] if c["op"] not in remeasured]
    order = {op: i for i, op in enumerate(MEASURED_OPS)}
    cases_ = sorted(kept + new["cases"], key=lambda c: order.get(c["op"], len(order)))  # stable: sizes stay in order
    return dict(new, cases=cases_, produced_by=f"{old['produced_by']} (on {old['date']}); then {new['produced_by']} "
                                              f"--update, re-measuring {', '.join(sorted(remeasured))}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m cuatomic bench auto", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill("Times every rung that method='auto' may pick, per op, dtype, size (and bins), on "
                                  "this machine, and writes the measurements auto reads: point CUATOMIC_AUTO_RULES "
                                  "at the file."),
        epilog="examples:\n"
               "  python -m cuatomic bench auto --backend cpu                 writes cpu.json\n"
               "  CUATOMIC_AUTO_RULES=cpu.json python -m cuatomic             the demo with those rules\n"
               "  python -m cuatomic bench auto --backend cuda                writes cuda-<this GPU's name>.json\n"
               "  python -m cuatomic bench auto --ops histogram --update cpu.json\n"
               "                                                             re-measures the histograms only\n")
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None,
                        help="where to measure (default: CUATOMIC_BACKEND, else cuda when usable, else cpu)")
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke test, not a rule)")
    parser.add_argument("--repeat", type=int, default=10, metavar="R",
                        help="timed calls per case, the median kept (default: %(default)s)")
    parser.add_argument("--ops", nargs="+", choices=MEASURED_OPS, default=None, metavar="OP",
                        help=f"the ops to measure, of {', '.join(MEASURED_OPS)} (default: all of them; the other "
                             f"ops' auto takes the top rung that fits)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="default: the --update FILE, else the name a shipped file of this backend and device "
                             "has: cpu.json, cuda-<GPU name>.json (e.g. cuda-nvidia-h100-80gb-hbm3.json)")
    parser.add_argument("--update", default=None, metavar="FILE",
                        help="keep FILE's measurements of the ops not measured now (with --ops: re-measure some ops "
                             "of a rules file from the same device)")
    args = parser.parse_args(argv)
    old = json.loads(pathlib.Path(args.update).read_text()) if args.update else None
    data = run(args.backend, args.quick, args.repeat, args.ops)
    if old is not None:
        try:
            data = merge(old, data)
        except ValueError as e:
            parser.error(str(e))
    out = pathlib.Path(args.out or args.update or _auto.rules_file_name(data["backend"], data["device"]))
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"bench auto: {len(data['cases'])} cases written to {out}; use them with CUATOMIC_AUTO_RULES={out}")
    return 0
