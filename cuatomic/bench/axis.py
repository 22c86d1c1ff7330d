"""The axis table: sum, min and max along axis 0 and axis 1 of float32
arrays of 16384 x 16384, 2^20 x 16 and 16 x 2^20, every rung of the
segmented ladder beside the peers, whole calls on device arrays (cuda) or
NumPy arrays (cpu).

    python -m cuatomic bench axis [--backend cpu|cuda] [--quick] [--out FILE.json]

Peers on a GPU: CuPy (``cupy.sum``/``min``/``max`` with ``axis=``; CUB's
segmented reduction where CuPy takes it), PyTorch (``torch.sum``,
``torch.amin``, ``torch.amax`` with ``dim=``) and, along the last axis, raw
CUB (``DeviceSegmentedReduce`` over rows, float32 sums); on the cpu backend
NumPy.
Every row is validated before it is timed (min/max exactly; cuatomic's
sums against the float64 sums within NumPy's float32 error, the peers'
and CUB's float32 sums within 1e-4); times are the median of 20
whole calls (3 for a row whose first call takes over 0.5 s), device
synchronized.
"""
import statistics
import sys
import time

import numpy as np

from .. import _C, _backend, max as cmax, min as cmin, sum as csum
from .._dtypes import dtype_id
from .._device import DeviceArray
from .measure import call_times, environment, peer_host, table_cli, write_table

SHAPES_GPU = [(16384, 16384), (1 << 20, 16), (16, 1 << 20)]
SHAPES_CPU = [(4096, 4096), (1 << 18, 16), (16, 1 << 18)]
OPS = {"sum": (csum, np.sum), "min": (cmin, np.min), "max": (cmax, np.max)}


def _systems(x, backend, op, axis):
    ours = OPS[op][0]
    systems = {}
    if backend == "cuda":
        d = DeviceArray.from_host(x)
        for r in _backend.table("segmented", "cuda"):
            systems[f"cuatomic {r.name}"] = lambda m=r.name: ours(d, axis=axis, method=m)
        systems["cuatomic auto"] = lambda: ours(d, axis=axis)
        if axis == x.ndim - 1:  # rows of contiguous elements: CUB's segmented reduction (it has no strided one)
            rows, m = x.size // x.shape[-1], x.shape[-1]
            out = DeviceArray.empty((rows,), np.float32)

            def cub(op_char={"sum": "+", "min": "m", "max": "M"}[op]):
                _C.cub_segmented(d.ptr, rows, m, dtype_id(np.float32), op_char, out.ptr, 0)
                return out
            systems["raw CUB DeviceSegmentedReduce"] = cub
        try:
            import cupy as cp
            c = cp.asarray(x)
            systems["cupy"] = lambda: getattr(cp, op)(c, axis=axis)
        except ImportError:
            pass
        try:
            import torch
            if torch.cuda.is_available():
                t = torch.as_tensor(x, device="cuda")
                fn = {"sum": torch.sum, "min": torch.amin, "max": torch.amax}[op]
                systems["torch"] = lambda: fn(t, dim=axis)
        except ImportError:
            pass
    else:
        for r in _backend.table("segmented", "cpu"):
            systems[f"cuatomic {r.name}"] = lambda m=r.name: ours(x, axis=axis, method=m, backend="cpu")
        systems["cuatomic auto"] = lambda: ours(x, axis=axis, backend="cpu")
        systems["numpy"] = lambda: OPS[op][1](x, axis=axis)
    return systems


def _ok(op, got, x, axis, want, peer):
    """min/max exactly; cuatomic's sums within NumPy's own error of the
    float64 sums (or 2 ulps), a peer's (float32 accumulation) within 1e-4
    of the largest sum's magnitude."""
    if op != "sum":
        return got.shape == want.shape and np.array_equal(got, want)
    if peer:
        return got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    exact = np.sum(x.astype(np.float64), axis=axis)
    err, np_err = np.abs(got.astype(np.float64) - exact), np.abs(want.astype(np.float64) - exact)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return got.shape == want.shape and bool(np.all(err <= np.maximum(np_err, 2 * ulp)))


def run(backend="cuda", quick=False, out=None):
    rows, env = [], environment(backend)
    rng = np.random.default_rng(0)
    for shape in (SHAPES_GPU if backend == "cuda" else SHAPES_CPU):
        if quick:
            shape = tuple(min(s, 1024) for s in shape)
        x = rng.standard_normal(shape, dtype=np.float32)
        for op in OPS:
            for axis in (0, 1):
                want = OPS[op][1](x, axis=axis)
                case = f"{op} float32 {shape[0]}x{shape[1]}, axis={axis}"
                for system, call in _systems(x, backend, op, axis).items():
                    t0 = time.perf_counter()
                    got = np.asarray(peer_host(call()))
                    first = time.perf_counter() - t0
                    if not _ok(op, got, x, axis, want, not system.startswith("cuatomic")):
                        raise AssertionError(f"{system} {case}: differs from NumPy beyond NumPy's own error")
                    ms = call_times(call, 3 if first > 0.5 else 20)
                    med = statistics.median(ms)
                    rows.append({"case": case, "system": system, "median_ms": med, "shape": list(shape),
                                 "op": op, "axis": axis, "gb_per_s": x.nbytes / med / 1e6})
                    print(f"{case:40s} {system:20s} {med:9.3f} ms {rows[-1]['gb_per_s']:8.1f} GB/s", flush=True)
    return write_table(rows, env, out)


def main(argv=None):
    return table_cli(argv, "axis", __doc__, run, "each dimension at most 1024")


if __name__ == "__main__":
    sys.exit(main())
