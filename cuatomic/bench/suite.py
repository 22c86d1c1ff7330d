"""The benchmark suite: every op x method x dtype x size x input entropy,
validated against NumPy, then timed beside the best peer of the same run.

    python -m cuatomic bench [--quick] [--backend cpu|cuda] [--out DIR]

Writes ``bench.json`` (every row), ``bench.md`` (a table) and one scaling
plot per op (time against n, log-log, every system). The peers (NumPy on
the CPU; CUB, CuPy, PyTorch and the tutorial's Numba kernels on the GPU,
when installed) live in ``peers``.
"""
import argparse
import json
import pathlib
import platform
import statistics
import textwrap
import time

import numpy as np

import cuatomic

from .. import _C, _backend, _exact
from .._device import to_device
from ..datasets import english_like_text, text_to_array
from ..timing import benchmark
from . import peers

OPS = ("sum", "dot", "histogram", "filter")
ENTROPIES = ("uniform", "text", "one")


def make_input(op, dtype, n, entropy, seed=0):
    """Deterministic data of one entropy: uniform values, English text
    bytes (widened to the dtype), or a single repeated value."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if entropy == "one":
        return np.full(n, 2, dtype=dt)
    if entropy == "text":
        return text_to_array(english_like_text(n, seed=seed)).astype(dt)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    if op == "histogram":
        return rng.integers(0, 256, n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, dtype=dt)


def _call(op):
    """(cuatomic call, NumPy reference, bytes moved) for an op."""
    if op == "sum":
        return (lambda x, **k: cuatomic.sum(x, **k), lambda x: np.sum(x), lambda x, out: x.nbytes)
    if op == "dot":
        return (lambda x, **k: cuatomic.dot(x, x, **k), lambda x: np.dot(x, x), lambda x, out: 2 * x.nbytes)
    if op == "histogram":
        return (lambda x, **k: cuatomic.histogram(x, bins=128, range=(0, 128), **k)[0],
                lambda x: np.histogram(x, bins=128, range=(0, 128))[0], lambda x, out: x.nbytes)
    return (lambda x, **k: cuatomic.filter(x, ">=", 2, **k), lambda x: x[x >= 2],
            lambda x, out: x.nbytes + out.size * x.itemsize)


def _host(value):
    return value.copy_to_host() if hasattr(value, "copy_to_host") else value


def agrees(op, got, ref, x, ordered=True):
    """Whether a result matches NumPy: exactly for integers and counts,
    against the exact answer for float reductions (no worse than NumPy's
    own error, or than a naive float sum for the tutorial's rungs and the
    peers: see cuatomic._exact), as a multiset for an unordered filter."""
    got, ref = _host(got), np.asarray(ref)
    if op in ("sum", "dot") and ref.dtype.kind == "f":
        return _exact.float_result_ok(op, got, x, x if op == "dot" else None, wide=False)
    got = np.asarray(got)
    if not ordered:
        got, ref = np.sort(got), np.sort(ref)
    return got.shape == ref.shape and bool(np.array_equal(got, ref, equal_nan=ref.dtype.kind == "f"))


def read_ceiling_gbps(backend, nbytes=1 << 28):
    """The read bandwidth this run can reach: a large copy (bytes read plus
    bytes written, over time), measured once."""
    if backend == "cpu":
        a = np.ones(nbytes // 8)
        b = np.empty_like(a)
        ms = benchmark(np.copyto, b, a, repeat=5, warmup=1).median
        return 2 * a.nbytes / (ms * 1e-3) / 1e9
    from .._device import DeviceArray
    src = DeviceArray.empty(nbytes, np.uint8)
    dst = DeviceArray.empty(nbytes, np.uint8)
    ms = benchmark(lambda backend: dst._buffer.copy_from_device(src.ptr, nbytes), repeat=5, warmup=1,
                   backend="cuda").median
    return 2 * nbytes / (ms * 1e-3) / 1e9


def run(ops=OPS, sizes=None, dtypes=None, entropies=ENTROPIES, backend=None, repeat=10, quick=False,
        rotate_bytes=None, progress=print):
    """Run the suite and return its rows.

    Parameters
    ----------
    ops, sizes, dtypes, entropies : sequences, optional
        What to measure (default: every op, 2^10 ... 2^26 elements, int32 and
        float32 (uint8 too for histograms), every entropy).
    backend : {"cuda", "cpu"}, optional
    repeat : int, optional
        Timed calls per row.
    quick : bool, optional
        A small run: 2^10 and 2^16 elements, repeat 3.
    rotate_bytes : int, optional
        Inputs are replicated until they exceed this many bytes (default: 128
        MiB, larger than any L2) and the copies are used in turn.

    Returns
    -------
    dict
        ``environment``, ``ceiling_gbps`` and ``rows``: op, method or peer,
        dtype, n, entropy, ok, median_ms, gbps, pct_of_ceiling,
        ratio_to_best_peer (peer time / cuatomic time: above 1 is faster).
    """
    be = _backend.resolve(backend)
    if quick:
        sizes, repeat = sizes or [1 << 10, 1 << 16], min(repeat, 3)
    sizes = sizes or [1 << k for k in range(10, 27, 4)]
    rotate_bytes = rotate_bytes if rotate_bytes is not None else (1 << 22 if quick else 1 << 27)
    ceiling = read_ceiling_gbps(be, 1 << (24 if quick else 28))
    rows = []
    for op in ops:
        ours, reference, moved = _call(op)
        kinds = dtypes or ([np.uint8, np.int32, np.float32] if op == "histogram" else [np.int32, np.float32])
        for dt in kinds:
            for n in sizes:
                for entropy in entropies:
                    x = make_input(op, dt, n, entropy)
                    ref = reference(x)
                    copies = max(1, min(16, rotate_bytes // max(x.nbytes, 1)))
                    placed = [to_device(x, backend=be) for _ in range(copies)]
                    turn = iter(range(1 << 62))
                    group = []
                    for name, _, _ in cuatomic.methods(op, be):
                        kw = {"method": name, "backend": be}
                        if op == "filter" and not _backend.rung(op, be, name).has(_C.F_ORDERED):
                            kw["ordered"] = False  # the rung refuses to keep order: its output is a multiset
                        got = ours(placed[0], **kw)
                        ok = agrees(op, got, ref, x, ordered=kw.get("ordered", True))
                        row = {"op": op, "system": f"cuatomic {name}", "dtype": np.dtype(dt).name, "n": n,
                               "entropy": entropy, "ok": bool(ok)}
                        if ok:  # validated first; a wrong method is reported, never timed
                            ms = benchmark(lambda backend: ours(placed[next(turn) % copies], **kw), repeat=repeat,
                                           warmup=1, backend=be).median
                            row.update(median_ms=ms, gbps=moved(x, _host(got)) / (ms * 1e-3) / 1e9)
                        group.append(row)
                    for name, (prepare, call) in peers.suite_peers(op, be, reference).items():
                        try:
                            inputs = [prepare(x) for _ in range(copies)]
                            ms = benchmark(lambda: call(inputs[next(turn) % copies]), repeat=repeat,
                                           warmup=1).median
                        except Exception as e:  # e.g. torch.dot has no int32 kernel
                            group.append({"op": op, "system": name, "dtype": np.dtype(dt).name, "n": n,
                                          "entropy": entropy, "ok": False, "error": f"{type(e).__name__}: {e}"})
                            continue
                        group.append({"op": op, "system": name, "dtype": np.dtype(dt).name, "n": n,
                                      "entropy": entropy, "ok": True, "median_ms": ms,
                                      "gbps": moved(x, np.asarray(ref)) / (ms * 1e-3) / 1e9})
                    peer_times = [r["median_ms"] for r in group
                                  if not r["system"].startswith("cuatomic") and "median_ms" in r]
                    best_peer = min(peer_times) if peer_times else None
                    for r in group:
                        if "median_ms" in r:
                            r["pct_of_ceiling"] = 100 * r["gbps"] / ceiling
                            r["ratio_to_best_peer"] = best_peer / r["median_ms"] if best_peer else None
                    rows.extend(group)
                    if progress:
                        progress(f"{op} {np.dtype(dt).name} n={n} {entropy}: {len(group)} systems")
    env = _environment(be)
    return {"environment": env, "ceiling_gbps": ceiling, "rows": rows}


# ------------------------------------------------------------------ targets

def call_times(fn, repeat, warmup=3, warm_s=0.2):
    """Wall-clock milliseconds of `repeat` whole calls as a user sees them:
    fn() and, on a GPU, a device synchronization, after at least `warmup`
    calls and `warm_s` seconds of calls. (Not CUDA events: on a call of tens
    of microseconds recording them costs a measurable part of what is timed.
    The seconds: three calls of tens of microseconds leave an H200 at the
    clocks of an idle GPU -- the 5.7 MB histogram measured 31.3 us alone in
    a process, 22.8 us after the larger histograms had run.)"""
    sync = _C.synchronize if _backend.usable()[0] == "cuda" else (lambda: None)
    start, calls = time.perf_counter(), 0
    while calls < warmup or time.perf_counter() - start < warm_s:
        fn()
        sync()
        calls += 1
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(1e3 * (time.perf_counter() - t0))
    return times


def _ms(fn, repeat, warmup=3, warm_s=0.2):
    """The median of :func:`call_times`."""
    return statistics.median(call_times(fn, repeat, warmup, warm_s))


class _Targets:
    """Collects rows of the targets table: one per (work, system)."""

    def __init__(self, progress, only=None):
        self.rows, self.progress, self.only = [], progress, only

    def add(self, work, system, fn, check, nbytes, repeat, goal=None, note="", warmup=3):
        """Validate fn() with check(result) first; time it only if right.
        Works whose name does not contain ``only`` (when given) are skipped."""
        if self.only and self.only not in work:
            return None
        try:
            value = fn()
            ok = bool(check(value))
        except Exception as e:  # a peer that cannot run this input is reported, not fatal
            self.rows.append({"work": work, "system": system, "ok": False, "error": f"{type(e).__name__}: {e}"})
            return None
        row = {"work": work, "system": system, "ok": ok, "note": note}
        if ok:
            self._timed(row, _ms(fn, repeat, warmup), nbytes, goal)
        self.rows.append(row)
        self._show(row)
        return row

    def difference(self, work, system, minuend, subtrahend, goal=None, note=""):
        """A row whose time is the difference of two rows' medians measured
        in this run (what one path adds to another); None if either is
        missing."""
        if minuend is None or subtrahend is None or "median_ms" not in minuend or "median_ms" not in subtrahend:
            return None
        row = {"work": work, "system": system, "ok": True, "note": note}
        self._timed(row, minuend["median_ms"] - subtrahend["median_ms"], 0, goal)
        row["derived"] = f"{minuend['system']} - {subtrahend['system']} ({minuend['work']})"
        self.rows.append(row)
        self._show(row)
        return row

    @staticmethod
    def _timed(row, ms, nbytes, goal):
        row.update(median_ms=ms, gbps=nbytes / (ms * 1e-3) / 1e9 if ms > 0 else 0.0)
        if goal:
            kind, bound = goal
            row["goal"] = {"gbps": f">= {bound:g} GB/s", "ms": f"<= {bound:g} ms",
                           "ratio": f">= {bound:g}x the best peer"}[kind]
            if kind == "ratio":  # judged once every peer is measured (best_peer)
                row["_goal"] = goal
            else:
                row["met"] = row["gbps"] >= bound if kind == "gbps" else ms <= bound

    def _show(self, row):
        if self.progress:
            shown = f"{row['median_ms']:.4f} ms" if "median_ms" in row else ("WRONG" if not row["ok"] else "")
            self.progress(f"{row['work']:45s} {row['system']:28s} {shown}")

    def best_peer(self):
        """ratio_to_best_peer for cuatomic's rows of each work."""
        for work in dict.fromkeys(r["work"] for r in self.rows):
            group = [r for r in self.rows if r["work"] == work and "median_ms" in r and "derived" not in r]
            peers = [r["median_ms"] for r in group if not r["system"].startswith("cuatomic")]
            for r in group:
                r["ratio_to_best_peer"] = min(peers) / r["median_ms"] if peers else None
                kind, bound = r.pop("_goal", (None, None))
                if kind == "ratio" and r["ratio_to_best_peer"] is not None:
                    r["met"] = r["ratio_to_best_peer"] >= bound


def _hist_ref(x, bins, lo, hi):
    if x.dtype == np.uint8 and (bins, lo, hi) == (128, 0, 128):  # fast, and what np.histogram gives
        bc = np.bincount(x, minlength=256)
        ref = bc[:128].copy()
        ref[127] += bc[128]
        return ref
    return np.histogram(x, bins, (lo, hi))[0]


def targets(backend=None, repeat=20, quick=False, progress=print, only=None):
    """The target table (issue 12's goals on the GPU): each work measured
    for cuatomic's top rungs and every peer, in one run, as whole calls
    (wall clock, device synchronized, median of `repeat` after at least 3
    calls and 0.2 s of warm-up).
    A goal of a ratio is judged against the best peer of the same run; a
    derived row (``derived``) is the difference of two rows' medians.

    Parameters
    ----------
    backend : {"cuda", "cpu"}, optional
    repeat : int, optional
    quick : bool, optional
        Sizes divided by 2^8 (a smoke run; not the targets' sizes).
    only : str, optional
        Only the works whose name contains it (every work by default).

    Returns
    -------
    dict
        ``environment`` and ``rows`` (work, system, ok, median_ms, gbps,
        goal, met, ratio_to_best_peer, note); ``only`` when given.
    """
    be = _backend.resolve(backend)
    t = _Targets(progress, only)
    shrink = 8 if quick else 0
    rng = np.random.default_rng(0)
    text = text_to_array(english_like_text(5_700_000 >> shrink))
    if be == "cpu":
        _cpu_targets(t, rng, text, shrink, repeat)
    else:
        _gpu_targets(t, rng, text, shrink, repeat)
    t.best_peer()
    return {"environment": _environment(be), "rows": t.rows, **({"only": only} if only else {})}


def _cpu_targets(t, rng, text, shrink, repeat):
    n = 1 << (26 - shrink)
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    f = rng.standard_normal(n).astype(np.float32)
    ref_hist = np.histogram(text, 128, (0, 128))[0]
    work = f"histogram 128 bins, text {text.nbytes / 1e6:.1f} MB"
    t.add(work, "cuatomic auto", lambda: cuatomic.histogram(text, 128, (0, 128), backend="cpu")[0],
          lambda h: np.array_equal(h, ref_hist), text.nbytes, repeat, ("ratio", 20))
    t.add(work, "numpy", lambda: np.histogram(text, 128, (0, 128))[0], lambda h: np.array_equal(h, ref_hist),
          text.nbytes, repeat)
    work = f"sum int32 -> int64, 2^{26 - shrink}"
    t.add(work, "cuatomic auto", lambda: cuatomic.sum(x, backend="cpu"), lambda v: v == x.sum(), x.nbytes, repeat,
          ("ratio", 1.5))
    t.add(work, "numpy", lambda: np.sum(x), lambda v: True, x.nbytes, repeat)
    work = f"sum float32, 2^{26 - shrink}"
    t.add(work, "cuatomic auto", lambda: cuatomic.sum(f, backend="cpu"), lambda v: agrees("sum", v, f.sum(), f),
          f.nbytes, repeat, ("ratio", 1.5))
    t.add(work, "numpy", lambda: np.sum(f), lambda v: True, f.nbytes, repeat)
    g = rng.standard_normal(n).astype(np.float32)
    work = f"dot float32, 2^{26 - shrink}"
    t.add(work, "cuatomic auto", lambda: cuatomic.dot(f, g, backend="cpu"),
          lambda v: _exact.float_result_ok("dot", v, f, g), 2 * f.nbytes, repeat, ("ratio", 1.0))
    t.add(work, "numpy", lambda: np.dot(f, g), lambda v: True, 2 * f.nbytes, repeat)
    work = f"filter >= 2, int32, 2^{26 - shrink}"
    ref = x[x >= 2]
    moved = x.nbytes + ref.nbytes
    t.add(work, "cuatomic auto", lambda: cuatomic.filter(x, ">=", 2, backend="cpu"), lambda o: np.array_equal(o, ref),
          moved, repeat, ("ratio", 1.5))
    t.add(work, "numpy", lambda: x[x >= 2], lambda o: True, moved, repeat)


def _gpu_targets(t, rng, text, shrink, repeat):
    """cuatomic's rows of each GPU work, then its peers' rows (``peers``)."""
    found = peers.found()
    tb = lambda x: x * 1e3  # noqa: E731  (TB/s goals in GB/s)

    # -- sums
    n = 1 << (28 - shrink)
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    dx = to_device(x)
    exact = int(x.sum(dtype=np.int64))
    work = f"sum int32 -> int64, 2^{28 - shrink}"
    t.add(work, "cuatomic auto (vector)", lambda: int(cuatomic.sum(dx)), lambda v: v == exact, x.nbytes, repeat,
          ("gbps", tb(4.2)))
    peers.sum_rows(t, found, work, dx, lambda v: v == exact, x.nbytes, repeat)
    del dx

    f = rng.standard_normal(n).astype(np.float32)
    df = to_device(f)
    work = f"sum float32, 2^{28 - shrink}"
    runs = {np.float32(cuatomic.sum(df)).tobytes() for _ in range(10)}
    note = "bit-identical over 10 runs" if len(runs) == 1 else f"{len(runs)} different results over 10 runs"
    t.add(work, "cuatomic auto (vector)", lambda: cuatomic.sum(df), lambda v: agrees("sum", v, f.sum(), f) and len(runs) == 1,
          f.nbytes, repeat, ("gbps", tb(4.2)), note)
    peers.sum_rows(t, found, work, df, lambda v: agrees("sum", v, f.sum(), f), f.nbytes, repeat)

    # -- dot
    g = rng.standard_normal(n).astype(np.float32)
    dg = to_device(g)
    close = lambda v: _exact.float_result_ok("dot", v, f, g, wide=False)  # noqa: E731 (peers too)
    work = f"dot float32, 2^{28 - shrink}"
    runs = {np.float32(cuatomic.dot(df, dg)).tobytes() for _ in range(10)}
    note = "bit-identical over 10 runs" if len(runs) == 1 else f"{len(runs)} different results over 10 runs"
    t.add(work, "cuatomic auto (vector)", lambda: cuatomic.dot(df, dg), lambda v: close(v) and len(runs) == 1,
          2 * f.nbytes, repeat, ("ratio", 1.0), note)
    # the same call on other libraries' arrays, read in place
    for lib, convert in (("cupy", lambda m, d: m.asarray(d)), ("torch", lambda m, d: m.from_dlpack(d))):
        if found.get(lib) is not None:
            fa, fb = convert(found[lib], df), convert(found[lib], dg)
            t.add(work, f"cuatomic auto ({lib} inputs)", lambda fa=fa, fb=fb: cuatomic.dot(fa, fb), close,
                  2 * f.nbytes, repeat, ("ratio", 1.0))
    peers.dot_rows(t, found, work, df, dg, close, 2 * f.nbytes, repeat)
    del df, dg

    # -- small calls: the result of a 1,024-element device array to the host
    small = rng.integers(-1000, 1000, 1024, dtype=np.int32)
    ds, want = to_device(small), int(small.sum(dtype=np.int64))
    work = "sum of 1,024 int32 on the device, to the host"
    whole = t.add(work, "cuatomic auto (DeviceArray)", lambda: int(cuatomic.sum(ds)), lambda v: v == want,
                  small.nbytes, repeat, ("ms", 0.010))
    if found.get("cupy") is not None:
        cs = found["cupy"].asarray(ds)
        foreign = t.add(work, "cuatomic auto (cupy input)", lambda: int(cuatomic.sum(cs)), lambda v: v == want,
                        small.nbytes, repeat, ("ms", 0.010))
        t.difference("interface path per array (cupy input, 1,024-element sum)", "cuatomic", foreign, whole,
                     ("ms", 0.003), "the cupy-input call's median minus the DeviceArray call's, same run")
    peers.sum_rows(t, found, work, ds, lambda v: v == want, small.nbytes, repeat, cub=False)

    # -- filter: half of the elements kept, then 1% and 99% (at least CUB's)
    dx = to_device(x)
    for value, kept, goal in ((2, "50%", ("gbps", tb(2.7))), (980, "1%", ("ratio", 1.0)),
                              (-980, "99%", ("ratio", 1.0))):
        work = f"filter >= {value}, int32, 2^{28 - shrink}, ordered, {kept} kept"
        keep = x[x >= value]
        moved = x.nbytes + keep.nbytes
        same = lambda o, keep=keep: np.array_equal(_host(o), keep)  # noqa: E731
        t.add(work, "cuatomic auto (lookback)", lambda value=value: cuatomic.filter(dx, ">=", value), same, moved,
              repeat, goal)
        t.add(work, "cuatomic ordered", lambda value=value: cuatomic.filter(dx, ">=", value, method="ordered"), same,
              moved, repeat)
        peers.filter_rows(t, found, work, dx, keep, moved, repeat, value)
    del dx

    # -- histograms: the tutorial's 128 bins of bytes, then more bins and floats
    big = np.resize(text, 1 << (30 - shrink))
    uniform = rng.integers(0, 256, 1 << (28 - shrink), dtype=np.uint8)
    one = np.full(1 << (28 - shrink), ord("e"), np.uint8)
    # (every entropy: at least CUB's, which the ratio to the best peer shows)
    cases = [(f"histogram 128 bins, text {big.nbytes / 2**20:.0f} MiB", big, ("gbps", tb(3.0))),
             (f"histogram 128 bins, one value {one.nbytes / 2**20:.0f} MiB", one, ("ratio", 1.0)),
             (f"histogram 128 bins, uniform bytes {uniform.nbytes / 2**20:.0f} MiB", uniform, ("gbps", tb(2.0))),
             (f"histogram 128 bins, text {text.nbytes / 1e6:.1f} MB (tutorial size)", text, ("ms", 0.020))]
    for work, data, goal in cases:
        ref = _hist_ref(data, 128, 0, 128)
        same = lambda h, ref=ref: np.array_equal(_host(h), ref)  # noqa: E731
        # CUB and the tutorial's kernels leave the top edge (128) out; NumPy's last bin is closed
        open_ref = ref.copy()
        open_ref[-1] -= int(np.count_nonzero(data == 128))
        same_open = lambda h, ref=open_ref: np.array_equal(_host(h), ref)  # noqa: E731
        d = to_device(data)
        choice = cuatomic.explain("histogram", d, 128, (0, 128), backend="cuda")
        t.add(work, f"cuatomic auto ({choice.method})", lambda: cuatomic.histogram(d, 128, (0, 128))[0], same,
              data.nbytes, repeat, goal, choice.reason)
        if data is text and found.get("cupy") is not None:
            cd = found["cupy"].asarray(d)
            t.add(work, "cuatomic auto (cupy input)", lambda: cuatomic.histogram(cd, 128, (0, 128))[0], same,
                  data.nbytes, repeat, goal)
        for m in ("warp_private", "thread_counters", "shared"):
            t.add(work, f"cuatomic {m}", lambda m=m: cuatomic.histogram(d, 128, (0, 128), method=m)[0], same,
                  data.nbytes, repeat)
        peers.byte_histogram_rows(t, found, work, d, same, same_open, data.nbytes, repeat)
        del d
    for work, data, bins, lo, hi, dt in [
            (f"histogram 1,000 bins, float32 normal, 2^{26 - shrink}", None, 1000, -4.0, 4.0, np.float32),
            (f"histogram 65,536 bins, int32 uniform, 2^{26 - shrink}", None, 65536, 0, 65536, np.int32)]:
        m = 1 << (26 - shrink)
        data = (rng.standard_normal(m).astype(dt) if dt == np.float32 else rng.integers(0, 65536, m, dtype=dt))
        ref = np.histogram(data, bins, (lo, hi))[0]
        same = lambda h, ref=ref: np.array_equal(_host(h), ref)  # noqa: E731
        d = to_device(data)
        choice = cuatomic.explain("histogram", d, bins, (lo, hi), backend="cuda")
        t.add(work, f"cuatomic auto ({choice.method})", lambda: cuatomic.histogram(d, bins, (lo, hi))[0], same,
              data.nbytes, repeat, note=choice.reason)
        near = lambda h, ref=ref, m=m: (np.array_equal(h, ref) if dt == np.int32 else  # noqa: E731
                                        int(np.abs(h - ref).sum()) <= max(2, m // 10_000))
        peers.histogram_rows(t, found, work, d, bins, lo, hi, same, near, data.nbytes, repeat)
        del d

    # -- the mutex
    blocks, threads = 264, 256
    work = f"mutex_add_one {blocks} x {threads}"
    t.add(work, "cuatomic auto (warp_lock)", lambda: cuatomic.mutex_add_one(blocks, threads, method="auto"),
          lambda v: v == blocks * threads, 0, repeat, ("ms", 20.0))
    peers.mutex_rows(t, found, work, blocks, threads)


def _environment(be):
    env = {"backend": be, "numpy": np.__version__, "python": platform.python_version()}
    if be == "cuda":
        probe = _backend.cuda_probe()
        env.update(device=probe["name"], driver_version=probe["driver_version"],
                   cuda_runtime_version=probe["runtime_version"])
        env.update(peers.versions())
    else:
        from .. import _C
        env.update(device=platform.processor() or platform.machine(), cpu_threads=_C.cpu_threads())
    return env


def targets_markdown(results):
    """The targets table as Markdown."""
    env = results["environment"]
    lines = [f"Device: {env['device']} ({env['backend']}).", "",
             "| work | system | median ms | GB/s | vs best peer | goal | met | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        if "median_ms" not in r:
            lines.append(f"| {r['work']} | {r['system']} | {r.get('error', 'WRONG')} | | | | | |")
            continue
        ratio = r.get("ratio_to_best_peer")
        met = {True: "yes", False: "**no**"}.get(r.get("met"), "")
        lines.append(f"| {r['work']} | {r['system']} | {r['median_ms']:.4f} | {r['gbps']:.1f} | "
                     f"{'' if ratio is None else f'{ratio:.2f}x'} | {r.get('goal', '')} | {met} | "
                     f"{r.get('note', '')} |")
    return "\n".join(lines) + "\n"


def markdown(results):
    """The rows as a Markdown table (largest size per op, dtype and entropy)."""
    env = results["environment"]
    lines = [f"Device: {env['device']} ({env['backend']}); read ceiling {results['ceiling_gbps']:.1f} GB/s.", "",
             "| op | dtype | n | entropy | system | median ms | GB/s | % ceiling | vs best peer |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        if "median_ms" not in r:
            lines.append(f"| {r['op']} | {r['dtype']} | {r['n']} | {r['entropy']} | {r['system']} | "
                         f"{r.get('error', 'WRONG')} | | | |")
            continue
        ratio = r.get("ratio_to_best_peer")
        lines.append(f"| {r['op']} | {r['dtype']} | {r['n']} | {r['entropy']} | {r['system']} | "
                     f"{r['median_ms']:.4f} | {r['gbps']:.2f} | {r['pct_of_ceiling']:.1f} | "
                     f"{'' if ratio is None else f'{ratio:.2f}x'} |")
    return "\n".join(lines) + "\n"


def scaling_plots(results, out):
    """One log-log plot per op: median time against n for every system
    (int32/float32 uniform data)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = pathlib.Path(out)
    paths = []
    for op in dict.fromkeys(r["op"] for r in results["rows"]):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        rows = [r for r in results["rows"] if r["op"] == op and r["entropy"] == "uniform" and "median_ms" in r]
        # More series than the colour cycle has colours: each dtype its own line style, each system
        # its own marker, so no two series look alike.
        styles, markers = ["-", "--", ":", "-."], ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p"]
        for si, system in enumerate(dict.fromkeys(r["system"] for r in rows)):
            for di, dtype in enumerate(dict.fromkeys(r["dtype"] for r in rows)):
                pts = sorted((r["n"], r["median_ms"]) for r in rows if r["system"] == system and r["dtype"] == dtype)
                if pts:
                    ax.plot(*zip(*pts), marker=markers[si % len(markers)], linestyle=styles[di % len(styles)],
                            color=f"C{si % 10}", label=f"{system} ({dtype})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("elements")
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"{op} on {results['environment']['device']}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"scaling_{op}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


BENCH_EPILOG = """\
what it writes (into --out):
  bench.json, bench.md, scaling_<op>.png   the suite: every row validated against NumPy, then timed
  targets.json, targets.md                 --targets: the top rungs and auto against every peer
  toolkit.json, toolkit.md                 --toolkit: exact sums, weighted histograms, bincount, reduce
  small.json, small.md                     --small: every rung at 1,024 elements, idle and with a core busy

peers: NumPy on the cpu backend; CUB (built in), CuPy, PyTorch and the tutorial's Numba kernels on the
GPU, each when installed. Times are medians of whole calls with the inputs already where they run.

examples:
  python -m cuatomic bench --quick --backend cpu               a small run (seconds)
  python -m cuatomic bench --ops sum histogram --sizes 20 24   two ops at 2^20 and 2^24 elements
  python -m cuatomic bench --targets --out results/            the target table (GPU: against CUB, CuPy, PyTorch)
  python -m cuatomic bench --small --backend cpu               small calls, idle and with one core busy
  python -m cuatomic bench auto --backend cpu                  re-measure what method="auto" reads
"""


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m cuatomic bench", epilog=BENCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill("The benchmark suite: every op x method x dtype x size x input entropy, validated "
                                  "against NumPy, then timed beside the best peer of the same run; or (--targets, "
                                  "--toolkit) the target tables; or (--small) every rung at 1,024 elements, idle and with a "
                                  "core busy. Prints the table and writes it to --out."))
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats: a smoke run, not a result")
    parser.add_argument("--backend", choices=["cpu", "cuda"], default=None,
                        help="where to run (default: CUATOMIC_BACKEND, else cuda when usable, else cpu)")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS), metavar="OP",
                        help=f"the ops of the suite, of {', '.join(OPS)} (default: all)")
    parser.add_argument("--out", default="bench_results", metavar="DIR",
                        help="where the files go (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=10, metavar="R",
                        help="timed calls per row, the median kept (default: %(default)s)")
    parser.add_argument("--no-plots", action="store_true", help="no scaling plots (they need matplotlib)")
    parser.add_argument("--entropies", nargs="+", choices=ENTROPIES, default=list(ENTROPIES), metavar="E",
                        help="input kinds: uniform values, English-like text, one repeated value (default: all)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, metavar="LOG2",
                        help="sizes as powers of two (default: 10 14 18 22 26; --quick: smaller)")
    parser.add_argument("--targets", action="store_true",
                        help="the target table: auto and the top rungs against every peer at the targets' sizes")
    parser.add_argument("--toolkit", action="store_true",
                        help="the atomics toolkit's target table (exact sums, weighted histograms, bincount, reduce)")
    parser.add_argument("--small", action="store_true",
                        help="every rung at 1,024 elements, idle and with one core taken by a spinning process")
    parser.add_argument("--only", default=None, metavar="TEXT",
                        help="with --targets or --toolkit: only the works whose name contains TEXT "
                             "(e.g. '5.7 MB'; the table is then a diagnosis, not the whole table)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.small:
        from .small import small_calls, small_markdown
        results = small_calls(backend=args.backend, repeat=3 if args.quick else 5 * args.repeat)
        (out / "small.json").write_text(json.dumps(results, indent=1))
        (out / "small.md").write_text(small_markdown(results))
        print(small_markdown(results))
        wrong = [r for r in results["rows"] if not r["ok"]]
        print(f"small: {len(results['rows'])} rows, {len(wrong)} wrong, written to {out}")
        return 1 if wrong else 0
    if args.targets or args.toolkit:
        from .toolkit import toolkit_targets
        table, name = (toolkit_targets, "toolkit") if args.toolkit else (targets, "targets")
        results = table(backend=args.backend, repeat=args.repeat, quick=args.quick, only=args.only)
        (out / f"{name}.json").write_text(json.dumps(results, indent=1))
        (out / f"{name}.md").write_text(targets_markdown(results))
        print(targets_markdown(results))
        wrong = [r for r in results["rows"] if not r["ok"] and r["system"].startswith("cuatomic")]
        print(f"targets: {len(results['rows'])} rows, {len(wrong)} cuatomic rows wrong, written to {out}")
        return 1 if wrong else 0
    sizes = [1 << k for k in args.sizes] if args.sizes else None
    results = run(ops=args.ops, sizes=sizes, entropies=args.entropies, backend=args.backend, repeat=args.repeat,
                  quick=args.quick)
    (out / "bench.json").write_text(json.dumps(results, indent=1))
    (out / "bench.md").write_text(markdown(results))
    print(markdown(results))
    if not args.no_plots:
        try:
            scaling_plots(results, out)
        except ImportError:
            print("matplotlib is not installed: no scaling plots")
    wrong = [r for r in results["rows"] if not r["ok"] and r["system"].startswith("cuatomic")]
    print(f"bench: {len(results['rows'])} rows, {len(wrong)} wrong, written to {out}")
    return 1 if wrong else 0
