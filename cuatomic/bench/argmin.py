"""The argmin table: ``np.argmin``/``np.argmax`` of a whole array, every
rung of the argmin ladder beside the peers, whole calls on device arrays
(cuda) or NumPy arrays (cpu); then along each axis of a float32 matrix
(16384 x 16384 on cuda, 4096 x 4096 on cpu: the segmented ladder's top and
first rungs over the packed keys) beside ``cupy.argmin(axis=)``,
``torch.argmin(dim=)`` or NumPy.

    python -m cuatomic bench argmin [--backend cpu|cuda] [--quick] [--out FILE.json]

Peers on a GPU: ``cupy.argmin`` with CuPy's CUB accelerator (CUB's
``DeviceReduce::ArgMin``, the raw CUB row) and without it (CuPy's own
reduction kernel), ``torch.argmin``; on the cpu backend NumPy. Every row is
validated against NumPy's index on the same data before it is timed. Times
are the median of 20 whole calls (3 for a row whose first call takes over
0.2 s: the per-element atomic rungs), device synchronized.
"""
import statistics
import sys
import time

import numpy as np

from .. import _backend, argmax, argmin
from .._device import DeviceArray
from .measure import call_times, environment, peer_host, table_cli, write_table

CASES = {  # label -> (dtype, n on cuda, n on cpu)
    "float32": (np.float32, 1 << 28, 1 << 24),
    "int8": (np.int8, 1 << 28, 1 << 26),
    "float64": (np.float64, 1 << 27, 1 << 23),
    "int32": (np.int32, 1 << 28, 1 << 24),
}


def make(dtype, n, seed=0):
    """Normal floats (a unique extreme), uniform int8 over its whole range
    (ties everywhere: the first index must win), int32 over +-10^9."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(n, dtype=np.float32 if dt.itemsize == 4 else np.float64)
    info = np.iinfo(dt)
    lo, hi = (info.min, info.max) if dt.itemsize == 1 else (-10**9, 10**9)
    return rng.integers(lo, hi, n, dtype=dt, endpoint=True)


def _systems(x, backend, largest):
    """name -> call() giving the index, as a user calls it."""
    ours = argmax if largest else argmin
    name = "argmax" if largest else "argmin"
    systems = {}
    if backend == "cuda":
        d = DeviceArray.from_host(x)
        for r in _backend.table("argmin", "cuda"):
            if r.name == "packed" and x.dtype.itemsize == 8:
                continue  # no bits left for the index: the rung refuses
            systems[f"cuatomic {r.name}"] = lambda m=r.name: ours(d, method=m)
        systems["cuatomic auto"] = lambda: ours(d)
        try:
            import cupy as cp
            from cupy._core import _accelerator as acc
            c = cp.asarray(x)

            def with_accelerators(names):
                """cupy.argmin/argmax with CuPy's accelerators set to `names`: its argmin takes CUB's
                DeviceReduce::ArgMin through the *routine* accelerators, its reductions through the
                reduction ones; both are set, and restored after the call."""
                def call():
                    before = acc.get_routine_accelerators(), acc.get_reduction_accelerators()
                    acc.set_routine_accelerators(names)
                    acc.set_reduction_accelerators(names)
                    try:
                        return int(getattr(cp, name)(c))
                    finally:
                        acc.set_routine_accelerators(before[0])
                        acc.set_reduction_accelerators(before[1])
                return call
            systems["cupy (CUB DeviceReduce::Arg*)"] = with_accelerators(["cub"])
            systems["cupy (its own kernel)"] = with_accelerators([])
        except ImportError:
            pass
        try:
            import torch
            if torch.cuda.is_available():
                t = torch.as_tensor(x, device="cuda")
                systems[f"torch.{name}"] = lambda: int(getattr(torch, name)(t))
        except ImportError:
            pass
    else:
        for r in _backend.table("argmin", "cpu"):
            if r.name == "packed" and x.dtype.itemsize == 8:
                continue
            systems[f"cuatomic {r.name}"] = lambda m=r.name: ours(x, method=m, backend="cpu")
        systems["cuatomic auto"] = lambda: ours(x, backend="cpu")
        systems[f"numpy {name}"] = lambda: getattr(np, name)(x)
    return systems


def _axis_systems(x, backend, largest, axis):
    """name -> call() giving the indices along `axis`, as a user calls it."""
    ours = argmax if largest else argmin
    name = "argmax" if largest else "argmin"
    systems = {}
    if backend == "cuda":
        d = DeviceArray.from_host(x)
        systems["cuatomic atomic (segmented)"] = lambda: ours(d, axis=axis, method="atomic")
        systems["cuatomic auto"] = lambda: ours(d, axis=axis)
        try:
            import cupy as cp
            c = cp.asarray(x)
            systems[f"cupy.{name}"] = lambda: getattr(cp, name)(c, axis=axis)
        except ImportError:
            pass
        try:
            import torch
            if torch.cuda.is_available():
                t = torch.as_tensor(x, device="cuda")
                systems[f"torch.{name}"] = lambda: getattr(torch, name)(t, dim=axis)
        except ImportError:
            pass
    else:
        systems["cuatomic auto"] = lambda: ours(x, axis=axis, backend="cpu")
        systems[f"numpy {name}"] = lambda: getattr(np, name)(x, axis=axis)
    return systems


def _along_axes(backend, quick, rows):
    side = (16384 if backend == "cuda" else 4096) if not quick else 1024
    x = np.random.default_rng(1).standard_normal((side, side), dtype=np.float32)
    for largest in (False, True):
        name = "argmax" if largest else "argmin"
        for axis in (0, 1):
            want = getattr(np, name)(x, axis=axis)
            for system, call in _axis_systems(x, backend, largest, axis).items():
                t0 = time.perf_counter()
                got = np.asarray(peer_host(call()))
                first = time.perf_counter() - t0
                if not np.array_equal(got, want):
                    raise AssertionError(f"{system} {name} axis={axis}: differs from NumPy")
                ms = call_times(call, 3 if first > 0.2 else 20)
                med = statistics.median(ms)
                rows.append({"case": f"{name} float32 {side}x{side}, axis={axis}", "system": system,
                             "median_ms": med, "n": x.size, "dtype": "float32", "axis": axis,
                             "gb_per_s": x.nbytes / med / 1e6})
                print(f"{rows[-1]['case']:32s} {system:34s} {med:9.3f} ms {rows[-1]['gb_per_s']:8.1f} GB/s",
                      flush=True)


def run(backend="cuda", quick=False, out=None):
    rows, env = [], environment(backend)
    for label, (dtype, n_gpu, n_cpu) in CASES.items():
        n = n_gpu if backend == "cuda" else n_cpu
        if quick:
            n = min(n, 1 << 20)
        x = make(dtype, n)
        for largest in (False, True):
            want = int((np.argmax if largest else np.argmin)(x))
            for system, call in _systems(x, backend, largest).items():
                t0 = time.perf_counter()
                got = int(call())
                first = time.perf_counter() - t0
                if got != want:
                    raise AssertionError(f"{system} {label} {'argmax' if largest else 'argmin'}: {got} != {want}")
                ms = call_times(call, 3 if first > 0.2 else 20)
                med = statistics.median(ms)
                rows.append({"case": f"{'argmax' if largest else 'argmin'} {label}, n = 2^{n.bit_length() - 1}",
                             "system": system, "median_ms": med, "n": n, "dtype": np.dtype(dtype).name,
                             "gb_per_s": n * np.dtype(dtype).itemsize / med / 1e6})
                print(f"{rows[-1]['case']:32s} {system:34s} {med:9.3f} ms {rows[-1]['gb_per_s']:8.1f} GB/s",
                      flush=True)
    _along_axes(backend, quick, rows)
    return write_table(rows, env, out)


def main(argv=None):
    return table_cli(argv, "argmin", __doc__, run, "2^20 elements per case")


if __name__ == "__main__":
    sys.exit(main())
