"""The histogramdd table: ``np.histogram2d`` of 2^26 float32 points into
256 x 256 bins and ``np.histogramdd`` of 2^26 points of 3 dimensions into
32^3 bins, every rung of the histogramdd ladder beside the peers, whole
calls on device arrays (cuda) or NumPy arrays (cpu).

    python -m cuatomic bench histogramdd [--backend cpu|cuda] [--quick] [--out FILE.json]

Peers on a GPU: ``cupy.histogram2d`` / ``cupy.histogramdd`` and
``torch.histogramdd`` where it runs on CUDA tensors; on the cpu backend
NumPy. CUB has no joint histogram of several dimensions
(``DeviceHistogram::MultiHistogramEven`` bins each channel on its own), so
there is no raw CUB row. Each case runs with the range given and without
(the range then comes from each dimension's minimum and maximum, one pass
more); the 2-D case runs once more with float64 weights (auto's
deterministic sums on a GPU beside the weighted histogram ladder's named
rungs). Every row is validated against NumPy on the same data before it is
timed (weight sums within 1e-9 of NumPy's, relative to the cell's sum of
absolute weights); times are the median of 20 whole calls, device
synchronized.
"""
import statistics
import sys
import time

import numpy as np

from .. import _backend, histogramdd
from .._device import DeviceArray
from .measure import call_times, environment, peer_host, table_cli, write_table

N_GPU, N_CPU = 1 << 26, 1 << 22


def make(n, d, seed=0):
    """n points of d float32 coordinates, normal around the middle of [0, 1)
    (denser cells in the middle, as measured data has), a few outside."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d), dtype=np.float32) * np.float32(0.2) + np.float32(0.5))


def _systems(pts, backend, bins, rng_, w=None):
    """name -> call() giving the histogram, as a user calls it; with
    weights `w`, the weighted histogram ladder's rungs stand for the
    histogramdd ladder's."""
    d = pts.shape[1]
    systems = {}
    rungs = [r.name for r in _backend.table("weighted_histogram" if w is not None else "histogramdd", backend)]
    if backend == "cuda":
        if d == 2:
            cols = [DeviceArray.from_host(np.ascontiguousarray(pts[:, k])) for k in range(2)]
            sample = cols
        else:
            sample = DeviceArray.from_host(pts)
        dw = None if w is None else DeviceArray.from_host(w)
        for name in rungs:
            systems[f"cuatomic {name}"] = lambda m=name: histogramdd(sample, bins, rng_, weights=dw, method=m)[0]
        systems["cuatomic auto"] = lambda: histogramdd(sample, bins, rng_, weights=dw)[0]
        try:
            import cupy as cp
            cw = None if w is None else cp.asarray(w)
            if d == 2:
                cx, cy = cp.asarray(pts[:, 0]), cp.asarray(pts[:, 1])
                systems["cupy.histogram2d"] = lambda: cp.histogram2d(cx, cy, bins, rng_, weights=cw)[0]
            else:
                cs = cp.asarray(pts)
                systems["cupy.histogramdd"] = lambda: cp.histogramdd(cs, bins, rng_, weights=cw)[0]
        except ImportError:
            pass
        try:
            import torch
            t = torch.as_tensor(pts, device="cuda")
            kw = {"range": [v for pair in rng_ for v in pair]} if rng_ is not None else {}
            if w is not None:  # (torch.histogramdd weighs in the sample's dtype)
                kw["weight"] = torch.as_tensor(w.astype(np.float32), device="cuda")
            torch.histogramdd(t, [bins] * d, **kw)
            if w is None:
                systems["torch.histogramdd"] = lambda: torch.histogramdd(t, [bins] * d, **kw)[0]
        except Exception:  # no torch, or no CUDA kernel for it
            pass
    else:
        for name in rungs:
            systems[f"cuatomic {name}"] = lambda m=name: histogramdd(pts, bins, rng_, weights=w, method=m,
                                                                     backend="cpu")[0]
        systems["cuatomic auto"] = lambda: histogramdd(pts, bins, rng_, weights=w, backend="cpu")[0]
        systems["numpy histogramdd"] = lambda: np.histogramdd(pts, bins, rng_, weights=w)[0]
    return systems


def run(backend="cuda", quick=False, out=None):
    rows, env = [], environment(backend)
    n = N_GPU if backend == "cuda" else N_CPU
    if quick:
        n = min(n, 1 << 20)
    weights = np.random.default_rng(1).standard_normal(n)
    for d, bins, rng_, w in ((2, 256, [(0.0, 1.0)] * 2, None), (2, 256, None, None),
                             (2, 256, [(0.0, 1.0)] * 2, weights),
                             (3, 32, [(0.0, 1.0)] * 3, None), (3, 32, None, None)):
        pts = make(n, d)
        want = np.histogramdd(pts, bins, rng_, weights=w)[0]
        # (the weighted sums' tolerance: each cell's sum of absolute weights; counts are compared exactly)
        scale = None if w is None else np.histogramdd(pts, bins, rng_, weights=np.abs(w))[0]
        case = (f"{d}-D float32 2^{n.bit_length() - 1} points, {'x'.join([str(bins)] * d)} bins, "
                f"{'range given' if rng_ else 'range from the data'}{', float64 weights' if w is not None else ''}")
        for system, call in _systems(pts, backend, bins, rng_, w).items():
            t0 = time.perf_counter()
            try:
                got = peer_host(call())
            except ValueError as e:  # a rung that refuses these cells (shared past its shared memory)
                if "method '" not in str(e):
                    raise
                print(f"{case:62s} {system:22s}   refused: {e}", flush=True)
                continue
            first = time.perf_counter() - t0
            exact = w is None or system.startswith("numpy")
            if got.shape != want.shape or (not np.array_equal(got.astype(np.float64), want) if exact else
                                           not np.all(np.abs(got - want) <= 1e-9 * scale)):
                raise AssertionError(f"{system} {case}: counts differ from np.histogramdd "
                                     f"(max diff {np.abs(got - want).max()})")
            ms = call_times(call, 3 if first > 1.0 else 20)
            med = statistics.median(ms)
            rows.append({"case": case, "system": system, "median_ms": med, "n": n, "dims": d, "bins": bins,
                         "range_given": rng_ is not None, "weights": w is not None,
                         "gb_per_s": (n * d * 4 + (0 if w is None else n * 8)) / med / 1e6})
            print(f"{case:62s} {system:22s} {med:9.3f} ms {rows[-1]['gb_per_s']:8.1f} GB/s", flush=True)
    return write_table(rows, env, out)


def main(argv=None):
    return table_cli(argv, "histogramdd", __doc__, run, "2^20 points per case")


if __name__ == "__main__":
    sys.exit(main())
