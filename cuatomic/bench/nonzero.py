"""The nonzero table: ``np.nonzero`` of a whole array at 50%, 1% and 99%
nonzero, every ordered rung of the filter ladder (returning indices) beside
the peers, whole calls on device arrays (cuda) or NumPy arrays (cpu).

    python -m cuatomic bench nonzero [--backend cpu|cuda] [--quick] [--out FILE.json]

Peers on a GPU: ``cupy.nonzero``, ``torch.nonzero`` (as
``torch.nonzero(t, as_tuple=True)``: NumPy's form), and raw CUB
(``DeviceSelect::Flagged`` of the indices with the data as flags, into a
buffer made once); on the cpu backend NumPy. A 2-D case (4096 rows) adds
the coordinates. Every row is validated against NumPy on the same data
before it is timed; times are the median of 20 whole calls, device
synchronized.
"""
import statistics
import sys
import time

import numpy as np

from .. import _backend, _C, nonzero
from .._device import DeviceArray
from .._dtypes import dtype_id
from .measure import call_times, environment, peer_host, table_cli, write_table

DENSITIES = (0.5, 0.01, 0.99)
N_GPU, N_CPU = 1 << 28, 1 << 24
INT32 = dtype_id(np.dtype(np.int32))


def make(n, density, seed=0):
    """int32, each element nonzero with probability `density` (values 1..100)."""
    rng = np.random.default_rng(seed)
    keep = rng.random(n, dtype=np.float32) < density
    return np.where(keep, rng.integers(1, 101, n, dtype=np.int32), np.int32(0))


def _systems(x, backend, shape):
    """name -> call() giving NumPy's tuple of index arrays, as a user calls it."""
    systems = {}
    xs = x.reshape(shape)
    if backend == "cuda":
        d = DeviceArray.from_host(xs)
        for r in _backend.table("filter", "cuda"):
            if r.has(_C.F_ORDERED):
                systems[f"cuatomic {r.name}"] = lambda m=r.name: nonzero(d, method=m)
        systems["cuatomic auto"] = lambda: nonzero(d)
        if len(shape) == 1:
            out = DeviceArray.empty(x.size, np.int64)

            def cub():
                k = _C.cub_nonzero(d.ptr, d.size, INT32, out.ptr, None)
                return (out.copy_to_host()[:k],)
            systems["raw CUB DeviceSelect::Flagged"] = (cub, lambda: _C.cub_nonzero(d.ptr, d.size, INT32,
                                                                                    out.ptr, None))
        try:
            import cupy as cp
            c = cp.asarray(xs)
            systems["cupy.nonzero"] = lambda: cp.nonzero(c)
        except ImportError:
            pass
        try:
            import torch
            if torch.cuda.is_available():
                t = torch.as_tensor(xs, device="cuda")
                systems["torch.nonzero"] = lambda: torch.nonzero(t, as_tuple=True)
        except ImportError:
            pass
    else:
        for r in _backend.table("filter", "cpu"):
            if r.has(_C.F_ORDERED):
                systems[f"cuatomic {r.name}"] = lambda m=r.name: nonzero(xs, method=m, backend="cpu")
        systems["cuatomic auto"] = lambda: nonzero(xs, backend="cpu")
        systems["numpy nonzero"] = lambda: np.nonzero(xs)
    return systems


def _check(got, want, system, case):
    got = tuple(peer_host(g) for g in got)
    if len(got) != len(want) or not all(np.array_equal(g, w) for g, w in zip(got, want)):
        raise AssertionError(f"{system} {case}: indices differ from np.nonzero")


def run(backend="cuda", quick=False, out=None):
    rows, env = [], environment(backend)
    n = N_GPU if backend == "cuda" else N_CPU
    if quick:
        n = min(n, 1 << 20)
    for density in DENSITIES:
        x = make(n, density)
        for shape in ((n,), (4096, n // 4096)):
            want = np.nonzero(x.reshape(shape))
            case = f"int32 2^{n.bit_length() - 1} {'1-D' if len(shape) == 1 else '4096 rows'}, {density:.0%} nonzero"
            for system, call in _systems(x, backend, shape).items():
                timed = call
                if isinstance(call, tuple):  # (validating call, the call timed)
                    call, timed = call
                t0 = time.perf_counter()
                _check(call(), want, system, case)
                first = time.perf_counter() - t0
                ms = call_times(timed, 3 if first > 0.5 else 20)
                med = statistics.median(ms)
                rows.append({"case": case, "system": system, "median_ms": med, "n": n, "density": density,
                             "shape": list(shape), "gb_per_s": n * 4 / med / 1e6})
                print(f"{case:42s} {system:32s} {med:9.3f} ms {rows[-1]['gb_per_s']:8.1f} GB/s", flush=True)
    return write_table(rows, env, out)


def main(argv=None):
    return table_cli(argv, "nonzero", __doc__, run, "2^20 elements per case")


if __name__ == "__main__":
    sys.exit(main())
