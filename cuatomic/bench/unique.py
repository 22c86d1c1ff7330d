"""The unique table: ``np.unique(x, return_counts=True)`` of 2^26 keys (2^24
on the cpu backend) with 10^3, 10^6 and 2^24 distinct values, every rung of
the unique ladder (sorted and unsorted output) beside the peers, whole calls
on device arrays (cuda) or NumPy arrays (cpu).

    python -m cuatomic bench unique [--backend cpu|cuda] [--quick] [--out FILE.json]

Peers on a GPU: ``torch.unique(return_counts=True)`` (sorted), CuPy's
``cupy.unique(return_counts=True)`` and raw CUB (``DeviceRadixSort::SortKeys``
then ``DeviceRunLengthEncode::Encode``); on the cpu backend NumPy (and its
hash-based ``sorted=False`` where the installed NumPy has it). Every row is
validated against NumPy's values and counts before it is timed (unsorted
rows after sorting them). Times are the median of 20 whole calls (3 for a
lower rung whose second call takes over 0.2 s), device synchronized. A
case's rows take their calls in turns, one call of each a round (the row's
``timed``: "in turns"), so that a machine whose speed drifts while a table
runs (the 2-core cpu machine's, by 1.5x within minutes) moves them alike;
the tutorial's slower rungs are timed alone. The rows the targets compare
(the top rung, auto, NumPy and the peers) are always in turns.
"""
import inspect
import statistics
import sys
import time

import numpy as np

from .. import _backend, _C, unique
from .._device import DeviceArray
from .._dtypes import dtype_id
from .measure import call_times, environment, interleaved_times, peer_host, table_cli, write_table

DISTINCT = (1000, 10**6, 1 << 24)
DTYPES = ("int32", "int64", "float32")


def make(dtype, n, distinct, seed=0):
    """n keys drawn uniformly from `distinct` values spread over the type
    (ints times a large odd number, floats as such values over 7)."""
    rng = np.random.default_rng(seed + distinct)
    k = rng.integers(0, distinct, n, dtype=np.int64)
    if np.dtype(dtype).kind == "f":
        return (k.astype(np.float64) * 1.000001 - distinct / 2).astype(dtype)
    return (k * 2654435761 % (1 << 31) - (1 << 30)).astype(dtype)


def _systems(x, backend):
    """name -> (call() giving (values, counts), sorted?)."""
    systems = {}
    if backend == "cuda":
        d = DeviceArray.from_host(x)
        for r in _backend.table("unique", "cuda"):
            systems[f"cuatomic {r.name}"] = (lambda m=r.name: unique(d, return_counts=True, method=m), True)
        systems["cuatomic auto"] = (lambda: unique(d, return_counts=True), True)
        systems["cuatomic auto, sorted=False"] = (lambda: unique(d, return_counts=True, sorted=False), False)
        if x.dtype in (np.int32, np.int64, np.float32):
            values = DeviceArray.empty((x.size,), x.dtype)
            counts = DeviceArray.empty((x.size,), np.int64)

            def cub():
                """CUB's two calls into buffers of n: the k values and counts, left on the device."""
                k = _C.cub_unique(d.ptr, d.size, dtype_id(x.dtype), values.ptr, counts.ptr, None)
                return (DeviceArray._vector(values._buffer, k, values.dtype),
                        DeviceArray._vector(counts._buffer, k, counts.dtype))
            systems["raw CUB (SortKeys + RunLengthEncode)"] = (cub, True)
        try:
            import cupy as cp
            c = cp.asarray(x)
            systems["cupy.unique"] = (lambda: cp.unique(c, return_counts=True), True)
        except ImportError:
            pass
        try:
            import torch
            if torch.cuda.is_available():
                t = torch.as_tensor(x, device="cuda")
                systems["torch.unique"] = (lambda: torch.unique(t, return_counts=True), True)
        except ImportError:
            pass
    else:
        for r in _backend.table("unique", "cpu"):
            systems[f"cuatomic {r.name}"] = (lambda m=r.name: unique(x, return_counts=True, method=m,
                                                                     backend="cpu"), True)
        systems["cuatomic auto"] = (lambda: unique(x, return_counts=True, backend="cpu"), True)
        systems["cuatomic auto, sorted=False"] = (lambda: unique(x, return_counts=True, sorted=False,
                                                                 backend="cpu"), False)
        systems["numpy unique"] = (lambda: np.unique(x, return_counts=True), True)
        if "sorted" in inspect.signature(np.unique).parameters:
            systems["numpy unique, sorted=False"] = (lambda: np.unique(x, return_counts=True, sorted=False), False)
    return systems


def _compared(backend):
    """The rows the targets compare, always timed in turns however long
    their calls (NumPy's take 0.15-0.3 s on the 2-core machine): the top
    rung, auto, and the peers. The tutorial's lower rungs are timed alone
    (3 calls) where a call takes over 0.2 s."""
    top = _backend.table("unique", backend)[-1].name
    return {f"cuatomic {top}", "cuatomic auto", "cuatomic auto, sorted=False", "numpy unique",
            "numpy unique, sorted=False", "torch.unique", "cupy.unique", "raw CUB (SortKeys + RunLengthEncode)"}


def _check(system, got, want, is_sorted):
    v, c = (np.asarray(peer_host(g)) for g in got)
    if not is_sorted:
        order = np.argsort(v, kind="stable")
        v, c = v[order], c[order]
    if not (np.array_equal(v, want[0]) and np.array_equal(c, want[1])):
        raise AssertionError(f"{system}: values or counts differ from NumPy's")


def run(backend="cuda", quick=False, out=None):
    rows, env, compared = [], environment(backend), _compared(backend)
    n = (1 << 26) if backend == "cuda" else (1 << 24)
    if quick:
        n = 1 << 20
    for dtype in DTYPES:
        for distinct in DISTINCT:
            if backend == "cpu" and distinct > 10**6 and not quick:
                continue  # the cpu target is at most 10^6 distinct values
            if dtype != "int32" and distinct == 1 << 24 and backend == "cuda":
                continue  # the int64 and float32 rows beside the int32 ones at 10^3 and 10^6
            x = make(dtype, n, distinct)
            want = np.unique(x, return_counts=True)
            label = f"{np.dtype(dtype).name}, n = 2^{n.bit_length() - 1}, {len(want[0])} distinct"
            systems, in_turns, times = _systems(x, backend), {}, {}
            for system, (call, is_sorted) in systems.items():
                _check(system, call(), want, is_sorted)
                t0 = time.perf_counter()  # a second call: the first may compile (CuPy) or fill a pool
                call()
                if backend == "cuda":
                    _C.synchronize()
                if system in compared or time.perf_counter() - t0 <= 0.2:
                    in_turns[system] = call
                else:
                    times[system] = call_times(call, 3)
            # In turns (measure.interleaved_times): the 2-core machine's speed
            # drifts within a table, and a GPU's clocks may (stop 48's H200
            # table: auto 0.945 ms and vector, the same kernels, 0.834).
            times.update(interleaved_times(in_turns, 20))
            for system, (call, is_sorted) in systems.items():
                med = statistics.median(times[system])
                rows.append({"case": label, "system": system, "median_ms": med, "n": n, "dtype": np.dtype(dtype).name,
                             "distinct": int(len(want[0])), "sorted": is_sorted,
                             "timed": "in turns" if system in in_turns else "alone",
                             "gkeys_per_s": n / med / 1e6})
                print(f"{label:40s} {system:40s} {med:9.3f} ms {rows[-1]['gkeys_per_s']:8.2f} Gkeys/s", flush=True)
    return write_table(rows, env, out)


def main(argv=None):
    return table_cli(argv, "unique", __doc__, run, "2^20 elements per case")


if __name__ == "__main__":
    sys.exit(main())
