"""The atomics toolkit's target table: exact sums and dots, weighted
histograms, bincount and the atomic reductions, against the peers measured
in the same run (``python -m cuatomic bench --toolkit``).

Every row is validated before it is timed (targets._Targets): the exact
rungs must equal, bit for bit, the exact answer computed by the cpu
backend's exact rung (itself tested against math.fsum and Fraction), the
others NumPy's answer.
"""
import math

import numpy as np

import cuatomic

from .. import _backend
from .._device import to_device
from . import peers
from .measure import environment, host
from .targets import RUNG, _Targets


def toolkit_targets(backend=None, repeat=20, quick=False, progress=print, only=None, checkpoint=None):
    """The toolkit's targets, each work timed for cuatomic and every peer.

    Parameters
    ----------
    backend : {"cuda", "cpu"}, optional
    repeat : int, optional
    quick : bool, optional
        Sizes divided by 2^8 (a smoke run; not the targets' sizes).
    only : str, optional
        Only the works whose name contains it.
    checkpoint : callable, optional
        As for :func:`cuatomic.bench.targets`.

    Returns
    -------
    dict
        ``environment`` and ``rows``, as :func:`cuatomic.bench.targets`.
    """
    be = _backend.resolve(backend)
    t = _Targets(progress, only, checkpoint)
    shrink = 8 if quick else 0
    rng = np.random.default_rng(0)
    (_gpu if be == "cuda" else _cpu)(t, rng, shrink, repeat)
    t.best_peer()
    return {"environment": environment(be), "rows": t.rows, **({"only": only} if only else {})}


def _same_bits(want):
    return lambda v: np.asarray(v).tobytes() == np.asarray(want).tobytes()


def _gpu(t, rng, shrink, repeat):
    found = peers.found()
    cp, torch = found.get("cupy"), found.get("torch")
    n = 1 << (28 - shrink)

    # -- exact sums and dot: level with CUB's plain (not exact) sum of the same data
    xi = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    di = to_device(xi)
    want = int(xi.sum(dtype=np.int64))
    work = f"exact sum int32, 2^{28 - shrink}, uniform over int32"
    t.add(work, "cuatomic exact", lambda: cuatomic.sum(di, method="exact"), lambda v: v == want, xi.nbytes, repeat,
          ("ratio", 1.0), "exact integers: at the plain integer sum's speed")
    t.add(work, f"cuatomic auto ({RUNG})", lambda: cuatomic.sum(di), lambda v: v == want, xi.nbytes, repeat)
    peers.sum_rows(t, found, work, di, lambda v: v == want, xi.nbytes, repeat)
    xi = di = None
    for dt in (np.float64, np.float32):
        x = rng.standard_normal(n).astype(dt)
        d = to_device(x)
        want = cuatomic.sum(x, method="exact", backend="cpu")
        work = f"exact sum {np.dtype(dt).name}, 2^{28 - shrink}, normal"
        t.add(work, "cuatomic exact", lambda: cuatomic.sum(d, method="exact"), _same_bits(want), x.nbytes, repeat,
              ("ratio", 1.0), "correctly rounded: equal to the cpu backend's exact sum, bit for bit")
        t.add(work, f"cuatomic auto ({RUNG}, not exact)", lambda: cuatomic.sum(d), lambda v: True, x.nbytes, repeat)
        t.add(work, "CUB DeviceReduce (not exact)", lambda: peers.cub_sum(d),
              lambda v: True, x.nbytes, repeat)
        if cp is not None:
            cx = cp.asarray(d)
            t.add(work, "cupy (not exact)", lambda: float(cx.sum()), lambda v: True, x.nbytes, repeat)
        if torch is not None:
            tx = torch.from_dlpack(d)
            t.add(work, "torch (not exact)", lambda: float(tx.sum()), lambda v: True, x.nbytes, repeat)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    da, db = to_device(a), to_device(b)
    want = cuatomic.dot(a, b, method="exact", backend="cpu")
    work = f"exact dot float64, 2^{28 - shrink}, normal"
    t.add(work, "cuatomic exact", lambda: cuatomic.dot(da, db, method="exact"), _same_bits(want), 2 * a.nbytes,
          repeat, ("ratio", 1.0), "correctly rounded exact dot")
    t.add(work, f"cuatomic auto ({RUNG}, not exact)", lambda: cuatomic.dot(da, db), lambda v: True, 2 * a.nbytes,
          repeat)
    if cp is not None:
        ca, cb = cp.asarray(da), cp.asarray(db)
        t.add(work, "cupy (cuBLAS, not exact)", lambda: float(cp.dot(ca, cb)), lambda v: True, 2 * a.nbytes, repeat)
    if torch is not None:
        ta, tb_ = torch.from_dlpack(da), torch.from_dlpack(db)
        t.add(work, "torch (not exact)", lambda: float(torch.dot(ta, tb_)), lambda v: True, 2 * a.nbytes, repeat)

    # -- weighted histogram
    m = 1 << (27 - shrink)
    x = rng.standard_normal(m).astype(np.float32)
    w = rng.random(m)
    ref = np.histogram(x, 1000, (-4.0, 4.0), weights=w)[0]
    near = lambda h: np.allclose(host(h), ref, rtol=1e-9, atol=1e-9)  # noqa: E731
    dx, dw = to_device(x), to_device(w)
    work = f"weighted histogram 1,000 bins, float64 weights, 2^{27 - shrink}"
    t.add(work, "cuatomic auto", lambda: cuatomic.histogram(dx, 1000, (-4.0, 4.0), weights=dw)[0], near,
          x.nbytes + w.nbytes, repeat, ("ratio", 5.0))
    if cp is not None:
        cx, cw = cp.asarray(dx), cp.asarray(dw)
        t.add(work, "cupy", lambda: cp.histogram(cx, 1000, (-4.0, 4.0), weights=cw)[0].get(), near,
              x.nbytes + w.nbytes, max(3, repeat // 4))

    # -- bincount
    v = rng.integers(0, 1000, n, dtype=np.int32)
    wv = rng.random(n)
    dv, dwv = to_device(v), to_device(wv)
    for weighted in (False, True):
        ref = np.bincount(v, wv if weighted else None)
        check = ((lambda h, ref=ref: np.allclose(host(h), ref, rtol=1e-9)) if weighted
                 else (lambda h, ref=ref: np.array_equal(host(h), ref)))
        nbytes = v.nbytes + (wv.nbytes if weighted else 0)
        work = f"bincount int32 in [0, 1000), 2^{28 - shrink}" + (", float64 weights" if weighted else "")
        t.add(work, "cuatomic auto", lambda wt=weighted: cuatomic.bincount(dv, dwv if wt else None), check, nbytes,
              repeat, ("ratio", 2.0))
        for rung in ("global", "shared", "warp_private") if weighted else ():  # where the time goes
            t.add(work, f"cuatomic {rung}", lambda r=rung: cuatomic.bincount(dv, dwv, method=r), check, nbytes, repeat)
        if torch is not None:
            tv, tw = torch.from_dlpack(dv), torch.from_dlpack(dwv)
            t.add(work, "torch", lambda wt=weighted: torch.bincount(tv, tw if wt else None).cpu().numpy(), check,
                  nbytes, repeat)
        if cp is not None:
            cv, cw = cp.asarray(dv), cp.asarray(dwv)
            t.add(work, "cupy", lambda wt=weighted: cp.bincount(cv, cw if wt else None).get(), check, nbytes, repeat)

    # -- reductions
    xi = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    xf = rng.standard_normal(n).astype(np.float32)
    for data, ops in ((xi, ("minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor")),
                      (xf, ("minimum", "maximum"))):
        d = to_device(data)
        for op in ops:
            want = getattr(np, op).reduce(data)
            work = f"reduce {op} {data.dtype.name}, 2^{28 - shrink}"
            t.add(work, "cuatomic auto", lambda op=op: cuatomic.reduce(d, op), _same_bits(want), data.nbytes, repeat,
                  ("ratio", 0.97))
            t.add(work, "CUB DeviceReduce", lambda op=op: peers.cub_reduce(d, op),
                  lambda got, want=want: got == want, data.nbytes, repeat)
            if op in ("minimum", "maximum"):  # the peers' min and max, to the host as cuatomic's
                name = op[:3]
                if cp is not None:
                    cd = cp.asarray(d)
                    t.add(work, f"cupy.{name}", lambda name=name, cd=cd: getattr(cp, name)(cd).item(),
                          lambda got, want=want: got == want, data.nbytes, repeat)
                if torch is not None:
                    td = torch.from_dlpack(d)
                    fn = {"min": torch.amin, "max": torch.amax}[name]
                    t.add(work, f"torch.{'amin' if name == 'min' else 'amax'}", lambda fn=fn, td=td: fn(td).item(),
                          lambda got, want=want: got == want, data.nbytes, repeat)


def _cpu(t, rng, shrink, repeat):
    n = 1 << (24 - shrink)
    x = rng.standard_normal(n)
    want = np.float64(math.fsum(x))
    work = f"exact sum float64, 2^{24 - shrink}, normal"
    t.add(work, "cuatomic exact", lambda: cuatomic.sum(x, method="exact", backend="cpu"), _same_bits(want), x.nbytes,
          repeat, ("ratio", 0.5), "goal: >= 0.5x np.sum's speed and >= 20x math.fsum's")
    t.add(work, "numpy (not exact)", lambda: np.sum(x), lambda v: True, x.nbytes, repeat)
    t.add(work, "math.fsum", lambda: math.fsum(x), _same_bits(want), x.nbytes, max(3, repeat // 4))
    v = rng.integers(0, 1000, n, dtype=np.int32)
    wv = rng.random(n)
    for weighted in (False, True):
        ref = np.bincount(v, wv if weighted else None)
        check = (lambda h, ref=ref: np.allclose(h, ref, rtol=1e-9)) if weighted else (
            lambda h, ref=ref: np.array_equal(h, ref))
        work = f"bincount int32 in [0, 1000), 2^{24 - shrink}" + (", float64 weights" if weighted else "")
        t.add(work, "cuatomic auto", lambda wt=weighted: cuatomic.bincount(v, wv if wt else None, backend="cpu"),
              check, v.nbytes, repeat, ("ratio", 1.0))
        t.add(work, "numpy", lambda wt=weighted: np.bincount(v, wv if wt else None), check, v.nbytes, repeat)
    f = rng.standard_normal(n).astype(np.float32)
    ref = np.histogram(f, 1000, (-4.0, 4.0), weights=wv)[0]
    work = f"weighted histogram 1,000 bins, float64 weights, 2^{24 - shrink}"
    t.add(work, "cuatomic auto", lambda: cuatomic.histogram(f, 1000, (-4.0, 4.0), weights=wv, backend="cpu")[0],
          lambda h: np.allclose(h, ref, rtol=1e-9), f.nbytes + wv.nbytes, repeat, ("ratio", 5.0))
    t.add(work, "numpy", lambda: np.histogram(f, 1000, (-4.0, 4.0), weights=wv)[0], lambda h: True,
          f.nbytes + wv.nbytes, max(3, repeat // 4))
    xi = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
    for data, op in ((xi, "minimum"), (xi, "maximum"), (xi, "bitwise_xor"), (f, "minimum"), (f, "maximum")):
        want = getattr(np, op).reduce(data)
        work = f"reduce {op} {data.dtype.name}, 2^{24 - shrink}"
        t.add(work, "cuatomic auto", lambda d=data, op=op: cuatomic.reduce(d, op, backend="cpu"), _same_bits(want),
              data.nbytes, repeat, ("ratio", 1.0))
        t.add(work, "numpy", lambda d=data, op=op: getattr(np, op).reduce(d), lambda v: True, data.nbytes, repeat)

