"""The peers cuatomic is measured against, in one module: NumPy on the CPU;
on the GPU, CUB (compiled into ``cuatomic._C`` beside the CUDA backend),
CuPy, PyTorch and the tutorial's own Numba kernels (``tutorial_numba``).

Every import of a peer library is in this module, inside a function, so
neither ``import cuatomic`` nor ``import cuatomic.bench`` loads CuPy,
PyTorch or Numba: only a benchmark that asks for its peers does. A peer
that is not installed (or has no usable GPU) is left out, never an error.

- :func:`suite_peers`: the peers of one op in the ladder benchmark
  (``suite.run``).
- :func:`found` and the ``*_rows`` functions: the rows each peer adds to a
  work of the target table (``suite.targets``), validated and timed by the
  table's ``add(work, system, fn, check, nbytes, repeat, ...)``.
"""
import numpy as np

from .. import _C
from .._common import dtype_id
from .._device import DeviceArray


def suite_peers(op, backend, numpy_reference):
    """name -> (prepare(host array) -> peer input, run(peer input)) for one
    op of the ladder benchmark: NumPy (`numpy_reference`) on the cpu
    backend, CuPy and PyTorch on cuda when they are installed."""
    peers = {}
    if backend == "cpu":
        peers["numpy"] = (lambda x: x, numpy_reference)
        return peers
    try:
        import cupy as cp
        runs = {"sum": lambda x: x.sum(), "dot": lambda x: cp.dot(x, x),
                "histogram": lambda x: cp.histogram(x, bins=128, range=(0, 128))[0], "filter": lambda x: x[x >= 2]}
        peers["cupy"] = (cp.asarray, lambda x, f=runs[op]: (f(x), cp.cuda.runtime.deviceSynchronize()))
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            runs = {"sum": lambda t: t.sum(), "dot": lambda t: torch.dot(t, t),
                    "histogram": lambda t: torch.histc(t.float(), bins=128, min=0, max=128),
                    "filter": lambda t: t[t >= 2]}
            peers["torch"] = (lambda x: torch.as_tensor(x, device="cuda"),
                              lambda t, f=runs[op]: (f(t), torch.cuda.synchronize()))
    except ImportError:
        pass
    return peers


def found():
    """The GPU peers this machine has: {"cupy": module, "torch": module
    (only with a usable GPU), "numba": the tutorial_numba module (only when
    numba-cuda imports)}."""
    peers = {}
    try:
        import cupy
        peers["cupy"] = cupy
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            peers["torch"] = torch
    except ImportError:
        pass
    try:
        from . import tutorial_numba
        peers["numba"] = tutorial_numba
    except Exception:  # numba-cuda missing or unusable
        pass
    return peers


def versions():
    """{"cupy": ..., "torch": ..., "numba": ...}: the versions of the GPU
    peer libraries that import, for a result file's environment."""
    out = {}
    for name in ("cupy", "torch", "numba"):
        try:
            out[name] = __import__(name).__version__
        except Exception:
            pass
    return out


# ------------------------------------------------------------------- CUB
# CUB's primitives on a DeviceArray, through _C (the benchmark owns the
# arrays; CUB's temporary storage comes from cuatomic's stream-ordered pool).

def cub_sum(d):
    """CUB DeviceReduce::Sum of a DeviceArray (int64 for integers)."""
    return _C.cub_sum(d.ptr, d.size, dtype_id(d.dtype), None)


_CUB_REDUCE_OPS = {"minimum": b"m", "maximum": b"M", "bitwise_and": b"&", "bitwise_or": b"|", "bitwise_xor": b"^"}


def cub_reduce(d, op):
    """CUB DeviceReduce::Min/Max, or Reduce with a bitwise functor, of an
    int32 or float32 DeviceArray; `op` as cuatomic.reduce names it."""
    return _C.cub_reduce(d.ptr, d.size, dtype_id(d.dtype), _CUB_REDUCE_OPS[op], None)


def cub_histogram(d, bins, lo, hi):
    """CUB DeviceHistogram::HistogramEven: counts on the host. Its top
    level is exclusive (NumPy's last bin is closed)."""
    return _C.cub_histogram(d.ptr, d.size, dtype_id(d.dtype), bins, lo, hi, None)


def cub_select(d, value, out):
    """CUB DeviceSelect::If x >= value into the DeviceArray `out`: the count."""
    return _C.cub_select(d.ptr, d.size, dtype_id(d.dtype), value, out.ptr, None)


# ------------------------------------------------------- target-table rows

def sum_rows(t, peers, work, d, check, nbytes, repeat, cub=True):
    """CUB (unless `cub` is false), CuPy and PyTorch summing the DeviceArray
    `d` (integers into int64, floats in their own type), each to a host
    number."""
    cp, torch = peers.get("cupy"), peers.get("torch")
    integer = d.dtype.kind in "iu"
    if cub:
        t.add(work, "CUB DeviceReduce", lambda: cub_sum(d), check, nbytes, repeat)
    if cp is not None:
        cx = cp.asarray(d)
        run = (lambda: int(cx.sum(dtype=cp.int64))) if integer else (lambda: float(cx.sum()))
        t.add(work, "cupy", run, check, nbytes, repeat)
    if torch is not None:
        tx = torch.from_dlpack(d)
        run = (lambda: int(tx.sum(dtype=torch.int64))) if integer else (lambda: float(tx.sum()))
        t.add(work, "torch", run, check, nbytes, repeat)


def dot_rows(t, peers, work, da, db, check, nbytes, repeat):
    """cuBLAS (through CuPy), PyTorch and the tutorial's Numba mutex dot."""
    cp, torch, nb = peers.get("cupy"), peers.get("torch"), peers.get("numba")
    if cp is not None:
        ca, cb = cp.asarray(da), cp.asarray(db)
        t.add(work, "cupy (cuBLAS)", lambda: float(cp.dot(ca, cb)), check, nbytes, repeat)
    if torch is not None:
        ta, tb = torch.from_dlpack(da), torch.from_dlpack(db)
        t.add(work, "torch", lambda: float(torch.dot(ta, tb)), check, nbytes, repeat)
    if nb is not None:
        na, nbb = nb.as_device(da), nb.as_device(db)
        t.add(work, "tutorial numba (mutex)", lambda: nb.dot(na, nbb), check, nbytes, max(3, repeat // 4))


def filter_rows(t, peers, work, d, keep, nbytes, repeat, value=2):
    """CUB DeviceSelect::If, CuPy and PyTorch keeping d >= value in order
    (`keep`: NumPy's answer)."""
    cp, torch = peers.get("cupy"), peers.get("torch")
    out = DeviceArray.empty((d.size,), d.dtype)
    t.add(work, "CUB DeviceSelect::If", lambda: cub_select(d, float(value), out),
          lambda c: c == keep.size and np.array_equal(out.copy_to_host()[:c], keep), nbytes, repeat)
    if cp is not None:
        cx = cp.asarray(d)
        t.add(work, "cupy", lambda: cx[cx >= value], lambda o: np.array_equal(cp.asnumpy(o), keep), nbytes, repeat)
    if torch is not None:
        tx = torch.from_dlpack(d)
        t.add(work, "torch", lambda: tx[tx >= value], lambda o: np.array_equal(o.cpu().numpy(), keep), nbytes,
              repeat)


def byte_histogram_rows(t, peers, work, d, same, same_open, nbytes, repeat):
    """CUB, CuPy and the tutorial's two Numba kernels counting the bytes of
    `d` into 128 bins over [0, 128). `same` checks NumPy's counts; CUB and
    the tutorial's kernels leave the top edge (128) out, which `same_open`
    allows for."""
    cp, nb = peers.get("cupy"), peers.get("numba")
    t.add(work, "CUB HistogramEven", lambda: cub_histogram(d, 128, 0, 128), same_open, nbytes, repeat)
    if cp is not None:
        cd = cp.asarray(d)
        t.add(work, "cupy", lambda: cp.histogram(cd, 128, (0, 128))[0].get(), same, nbytes, max(3, repeat // 4))
    if nb is not None:
        nd = nb.as_device(d)
        for kind in ("shared", "global"):
            run_kind = nb.histogram(kind)
            t.add(work, f"tutorial numba ({kind})", lambda run_kind=run_kind: run_kind(nd), same_open,
                  nbytes, max(3, repeat // 4))


def histogram_rows(t, peers, work, d, bins, lo, hi, same, near, nbytes, repeat):
    """CUB and CuPy counting `d` into `bins` even bins over [lo, hi).
    CUB bins floats by (x - lo) * scale, so values within rounding of an
    edge may land one bin over: its rows are checked by `near`."""
    cp = peers.get("cupy")
    t.add(work, "CUB HistogramEven", lambda: cub_histogram(d, bins, lo, hi), near, nbytes, repeat,
          note="" if d.dtype.kind in "iu" else "edge rounding differs from NumPy's")
    if cp is not None:
        cd = cp.asarray(d)
        t.add(work, "cupy", lambda: cp.histogram(cd, bins, (lo, hi))[0].get(), same, nbytes, max(3, repeat // 4))


def mutex_rows(t, peers, work, blocks, threads):
    """The tutorial's Numba spin lock, every thread adding one (slow: timed
    once, compiled outside the timing)."""
    nb = peers.get("numba")
    if nb is None:
        return
    nb.mutex_add_one(1, 1)
    t.add(work, "tutorial numba (spin)", lambda: nb.mutex_add_one(blocks, threads),
          lambda v: v == blocks * threads, 0, 1, warmup=0)
