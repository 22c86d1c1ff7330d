"""The target table: each work of issue 12's goals measured for cuatomic's
top rungs, ``method="auto"`` and every peer, in one run, as whole calls
(``python -m cuatomic bench --targets``).

A row of auto is labelled with the rung auto ran for that call, as
:func:`cuatomic.last_launch` reports it right after the row's validating
call: the label is read from the library, never written in by hand
(``"cuatomic auto ({rung})"`` in :meth:`_Targets.add`). The toolkit's
table (``toolkit``) collects its rows with the same :class:`_Targets`.
"""
import statistics

import numpy as np

import cuatomic

from .. import _backend, _exact
from .._device import to_device
from ..datasets import english_like_text, text_to_array
from . import peers
from .measure import agrees, call_times, environment, host

RUNG = "{rung}"  # in a system's label: the rung the row's call launched
AUTO = f"cuatomic auto ({RUNG})"


def _ms(fn, repeat, warmup=3, warm_s=0.2):
    """The median of :func:`call_times`."""
    return statistics.median(call_times(fn, repeat, warmup, warm_s))


class _Targets:
    """Collects rows of the targets table: one per (work, system)."""

    # A row whose second call (synchronized; the first may compile or load
    # kernels) takes longer -- a peer's or a lesson's slow kernel -- is timed
    # over SLOW_REPEAT calls after one warm-up call: the table's time goes
    # to the rows that decide its goals.
    SLOW_S, SLOW_REPEAT = 0.05, 3

    def __init__(self, progress, only=None, checkpoint=None):
        self.rows, self.progress, self.only, self.checkpoint = [], progress, only, checkpoint

    def add(self, work, system, fn, check, nbytes, repeat, goal=None, note="", warmup=3):
        """Validate fn() with check(result) first; time it only if right.
        Works whose name does not contain ``only`` (when given) are skipped.
        ``{rung}`` in `system` becomes the rung fn's call launched (see
        :func:`_ran`), so a row of ``method="auto"`` says what auto chose."""
        if self.only and self.only not in work:
            return None
        try:
            value = fn()
            system = _ran(system)  # before check(), which may make calls of its own
            ok = bool(check(value))
        except Exception as e:  # a peer that cannot run this input is reported, not fatal
            self._append({"work": work, "system": system.replace(RUNG, "raised"), "ok": False,
                          "error": f"{type(e).__name__}: {e}"})
            return None
        row = {"work": work, "system": system, "ok": ok, "note": note}
        if ok:
            slow = call_times(fn, 1, 0, 0.0)[0] > 1e3 * self.SLOW_S
            self._timed(row, _ms(fn, min(repeat, self.SLOW_REPEAT) if slow else repeat, 1 if slow else warmup,
                                 0.0 if slow else 0.2), nbytes, goal)
        self._append(row)
        self._show(row)
        return row

    def _append(self, row):
        self.rows.append(row)
        if self.checkpoint:
            self.checkpoint(self.rows)

    def difference(self, work, system, minuend, subtrahend, goal=None, note=""):
        """A row whose time is the difference of two rows' medians measured
        in this run (what one path adds to another); None if either is
        missing."""
        if minuend is None or subtrahend is None or "median_ms" not in minuend or "median_ms" not in subtrahend:
            return None
        row = {"work": work, "system": system, "ok": True, "note": note}
        self._timed(row, minuend["median_ms"] - subtrahend["median_ms"], 0, goal)
        row["derived"] = f"{minuend['system']} - {subtrahend['system']} ({minuend['work']})"
        self._append(row)
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


def _ran(system):
    """`system` with ``{rung}`` replaced by the rung the last call on this
    thread launched (:func:`cuatomic.last_launch`), read right after the
    call. Auto's choice depends only on the call's op, backend, dtype,
    size and bins, so the timed calls that follow run the same rung. A
    call so labelled must launch a rung (every one here does): after a
    call that launched none, last_launch still names an earlier call's."""
    if RUNG not in system:
        return system
    launch = cuatomic.last_launch()
    return system.replace(RUNG, launch["method"] if launch else "nothing launched")


def _hist_ref(x, bins, lo, hi):
    if x.dtype == np.uint8 and (bins, lo, hi) == (128, 0, 128):  # fast, and what np.histogram gives
        bc = np.bincount(x, minlength=256)
        ref = bc[:128].copy()
        ref[127] += bc[128]
        return ref
    return np.histogram(x, bins, (lo, hi))[0]


def targets(backend=None, repeat=20, quick=False, progress=print, only=None, checkpoint=None):
    """The target table (issue 12's goals on the GPU): each work measured
    for cuatomic's top rungs and every peer, in one run, as whole calls
    (wall clock, device synchronized, median of `repeat` after at least 3
    calls and 0.2 s of warm-up; a row whose second call takes over 50 ms,
    median of 3 after one warm-up call).
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
    checkpoint : callable, optional
        Called with the rows so far after each row (a run cut short keeps
        what it measured).

    Returns
    -------
    dict
        ``environment`` and ``rows`` (work, system, ok, median_ms, gbps,
        goal, met, ratio_to_best_peer, note); ``only`` when given.
    """
    be = _backend.resolve(backend)
    t = _Targets(progress, only, checkpoint)
    shrink = 8 if quick else 0
    rng = np.random.default_rng(0)
    text = text_to_array(english_like_text(5_700_000 >> shrink))
    if be == "cpu":
        _cpu_targets(t, rng, text, shrink, repeat)
    else:
        _gpu_targets(t, rng, text, shrink, repeat)
    t.best_peer()
    return {"environment": environment(be), "rows": t.rows, **({"only": only} if only else {})}


def _cpu_targets(t, rng, text, shrink, repeat):
    n = 1 << (26 - shrink)
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    f = rng.standard_normal(n).astype(np.float32)
    ref_hist = np.histogram(text, 128, (0, 128))[0]
    work = f"histogram 128 bins, text {text.nbytes / 1e6:.1f} MB"
    t.add(work, AUTO, lambda: cuatomic.histogram(text, 128, (0, 128), backend="cpu")[0],
          lambda h: np.array_equal(h, ref_hist), text.nbytes, repeat, ("ratio", 20))
    t.add(work, "numpy", lambda: np.histogram(text, 128, (0, 128))[0], lambda h: np.array_equal(h, ref_hist),
          text.nbytes, repeat)
    work = f"sum int32 -> int64, 2^{26 - shrink}"
    t.add(work, AUTO, lambda: cuatomic.sum(x, backend="cpu"), lambda v: v == x.sum(), x.nbytes, repeat,
          ("ratio", 1.5))
    t.add(work, "numpy", lambda: np.sum(x), lambda v: True, x.nbytes, repeat)
    work = f"sum float32, 2^{26 - shrink}"
    t.add(work, AUTO, lambda: cuatomic.sum(f, backend="cpu"), lambda v: agrees("sum", v, f.sum(), f),
          f.nbytes, repeat, ("ratio", 1.5))
    t.add(work, "numpy", lambda: np.sum(f), lambda v: True, f.nbytes, repeat)
    g = rng.standard_normal(n).astype(np.float32)
    work = f"dot float32, 2^{26 - shrink}"
    t.add(work, AUTO, lambda: cuatomic.dot(f, g, backend="cpu"),
          lambda v: _exact.float_result_ok("dot", v, f, g), 2 * f.nbytes, repeat, ("ratio", 1.0))
    t.add(work, "numpy", lambda: np.dot(f, g), lambda v: True, 2 * f.nbytes, repeat)
    work = f"filter >= 2, int32, 2^{26 - shrink}"
    ref = x[x >= 2]
    moved = x.nbytes + ref.nbytes
    t.add(work, AUTO, lambda: cuatomic.filter(x, ">=", 2, backend="cpu"), lambda o: np.array_equal(o, ref),
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
    t.add(work, AUTO, lambda: int(cuatomic.sum(dx)), lambda v: v == exact, x.nbytes, repeat,
          ("gbps", tb(4.2)))
    peers.sum_rows(t, found, work, dx, lambda v: v == exact, x.nbytes, repeat)
    dx = None  # the device copy freed before the next work (not del: the rows' lambdas close over it)

    f = rng.standard_normal(n).astype(np.float32)
    df = to_device(f)
    work = f"sum float32, 2^{28 - shrink}"
    runs = {np.float32(cuatomic.sum(df)).tobytes() for _ in range(10)}
    note = "bit-identical over 10 runs" if len(runs) == 1 else f"{len(runs)} different results over 10 runs"
    # (the exact answer computed once per input: every row of the work is checked against it)
    ok = _exact.float_result_check("sum", f, wide=False)
    t.add(work, AUTO, lambda: cuatomic.sum(df), lambda v: ok(host(v)) and len(runs) == 1,
          f.nbytes, repeat, ("gbps", tb(4.2)), note)
    peers.sum_rows(t, found, work, df, lambda v: ok(host(v)), f.nbytes, repeat)

    h = f.astype(np.float64)
    dh = to_device(h)
    work = f"sum float64, 2^{28 - shrink}"
    ok64 = _exact.float_result_check("sum", h, wide=False)
    t.add(work, AUTO, lambda: cuatomic.sum(dh), lambda v: ok64(host(v)), h.nbytes, repeat, ("ratio", 1.0))
    peers.sum_rows(t, found, work, dh, lambda v: ok64(host(v)), h.nbytes, repeat)
    h = dh = None

    # -- dot
    g = rng.standard_normal(n).astype(np.float32)
    dg = to_device(g)
    close = _exact.float_result_check("dot", f, g, wide=False)  # (peers too)
    work = f"dot float32, 2^{28 - shrink}"
    runs = {np.float32(cuatomic.dot(df, dg)).tobytes() for _ in range(10)}
    note = "bit-identical over 10 runs" if len(runs) == 1 else f"{len(runs)} different results over 10 runs"
    t.add(work, AUTO, lambda: cuatomic.dot(df, dg), lambda v: close(v) and len(runs) == 1,
          2 * f.nbytes, repeat, ("ratio", 1.0), note)
    # the same call on other libraries' arrays, read in place
    for lib, convert in (("cupy", lambda m, d: m.asarray(d)), ("torch", lambda m, d: m.from_dlpack(d))):
        if found.get(lib) is not None:
            fa, fb = convert(found[lib], df), convert(found[lib], dg)
            t.add(work, f"cuatomic auto ({RUNG}, {lib} inputs)", lambda fa=fa, fb=fb: cuatomic.dot(fa, fb), close,
                  2 * f.nbytes, repeat, ("ratio", 1.0))
    peers.dot_rows(t, found, work, df, dg, close, 2 * f.nbytes, repeat)
    df, dg = None, None

    # -- small calls: the result of a 1,024-element device array to the host
    small = rng.integers(-1000, 1000, 1024, dtype=np.int32)
    ds, want = to_device(small), int(small.sum(dtype=np.int64))
    work = "sum of 1,024 int32 on the device, to the host"
    whole = t.add(work, f"cuatomic auto ({RUNG}, DeviceArray)", lambda: int(cuatomic.sum(ds)), lambda v: v == want,
                  small.nbytes, repeat, ("ms", 0.010))
    if found.get("cupy") is not None:
        cs = found["cupy"].asarray(ds)
        foreign = t.add(work, f"cuatomic auto ({RUNG}, cupy input)", lambda: int(cuatomic.sum(cs)), lambda v: v == want,
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
        same = lambda o, keep=keep: np.array_equal(host(o), keep)  # noqa: E731
        t.add(work, AUTO, lambda value=value: cuatomic.filter(dx, ">=", value), same, moved,
              repeat, goal)
        t.add(work, "cuatomic ordered", lambda value=value: cuatomic.filter(dx, ">=", value, method="ordered"), same,
              moved, repeat)
        peers.filter_rows(t, found, work, dx, keep, moved, repeat, value)
    dx = None

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
        same = lambda h, ref=ref: np.array_equal(host(h), ref)  # noqa: E731
        # CUB and the tutorial's kernels leave the top edge (128) out; NumPy's last bin is closed
        open_ref = ref.copy()
        open_ref[-1] -= int(np.count_nonzero(data == 128))
        same_open = lambda h, ref=open_ref: np.array_equal(host(h), ref)  # noqa: E731
        d = to_device(data)
        choice = cuatomic.explain("histogram", d, 128, (0, 128), backend="cuda")
        t.add(work, AUTO, lambda: cuatomic.histogram(d, 128, (0, 128))[0], same,
              data.nbytes, repeat, goal, choice.reason)
        if data is text and found.get("cupy") is not None:
            cd = found["cupy"].asarray(d)
            t.add(work, f"cuatomic auto ({RUNG}, cupy input)", lambda: cuatomic.histogram(cd, 128, (0, 128))[0], same,
                  data.nbytes, repeat, goal)
        for m in ("bytes", "warp_private", "thread_counters", "shared"):
            t.add(work, f"cuatomic {m}", lambda m=m: cuatomic.histogram(d, 128, (0, 128), method=m)[0], same,
                  data.nbytes, repeat)
        peers.byte_histogram_rows(t, found, work, d, same, same_open, data.nbytes, repeat)
        d = None
    for work, data, bins, lo, hi, dt in [
            (f"histogram 1,000 bins, float32 normal, 2^{26 - shrink}", None, 1000, -4.0, 4.0, np.float32),
            (f"histogram 65,536 bins, int32 uniform, 2^{26 - shrink}", None, 65536, 0, 65536, np.int32)]:
        m = 1 << (26 - shrink)
        data = (rng.standard_normal(m).astype(dt) if dt == np.float32 else rng.integers(0, 65536, m, dtype=dt))
        ref = np.histogram(data, bins, (lo, hi))[0]
        same = lambda h, ref=ref: np.array_equal(host(h), ref)  # noqa: E731
        d = to_device(data)
        choice = cuatomic.explain("histogram", d, bins, (lo, hi), backend="cuda")
        t.add(work, AUTO, lambda: cuatomic.histogram(d, bins, (lo, hi))[0], same,
              data.nbytes, repeat, note=choice.reason)
        near = lambda h, ref=ref, m=m: (np.array_equal(h, ref) if dt == np.int32 else  # noqa: E731
                                        int(np.abs(h - ref).sum()) <= max(2, m // 10_000))
        peers.histogram_rows(t, found, work, d, bins, lo, hi, same, near, data.nbytes, repeat)
        d = None

    _new_ops(t, found, rng, shrink, repeat)

    # -- the mutex
    blocks, threads = 264, 256
    work = f"mutex_add_one {blocks} x {threads}"
    t.add(work, AUTO, lambda: cuatomic.mutex_add_one(blocks, threads, method="auto"),
          lambda v: v == blocks * threads, 0, repeat, ("ms", 20.0))
    peers.mutex_rows(t, found, work, blocks, threads)


def _peer_rows(t, work, systems, check, nbytes, repeat, goal=("ratio", 1.0), keep=("cuatomic auto",)):
    """Rows of another table's systems (name -> call) for one work: the
    cuatomic systems named in `keep` (auto labelled with its rung) and
    every peer, each checked by check(system, result) first."""
    for name, call in systems.items():
        if name.startswith("cuatomic") and name not in keep:
            continue
        ours = name.startswith("cuatomic")
        system = AUTO + name[len("cuatomic auto"):] if name.startswith("cuatomic auto") else name
        t.add(work, system, call, lambda got, name=name: check(name, got), nbytes, repeat, goal if ours else None)


def _new_ops(t, found, rng, shrink, repeat):
    """The ops of the issues after the targets' (scatter, unique, argmin,
    reductions along an axis, histogram2d, nonzero): one work of each
    table beside its peers, built by that table's own `_systems` and
    checked as it checks them. Goal: level with the best peer."""
    from . import argmin as argmin_bench, axis as axis_bench, histogramdd as dd_bench, nonzero as nz_bench
    from . import scatter as scatter_bench, unique as unique_bench
    from .measure import peer_host

    n = 1 << (26 - shrink)
    for m in (100, 10**6):  # np.add.at: float32 updates into m outputs (the scatter table's cases)
        work = f"np.add.at float32, 2^{26 - shrink} updates into {m:,} outputs"
        idx = scatter_bench.make_indices(m, n, "uniform", rng)
        b = rng.standard_normal(n).astype(np.float32)
        a0 = np.zeros(m, np.float32)
        ref, bound = scatter_bench._reference(a0, idx, b, 1)
        systems = scatter_bench._systems(a0, idx, b, 1)
        outs = {}  # each system's timed calls add into one output of its own

        def call(name, systems=systems, outs=outs):
            if name not in outs:
                outs[name] = systems[name][0]()
            systems[name][1](outs[name])
            return outs[name]

        def check(name, got, systems=systems, ref=ref, bound=bound):  # (validated on a fresh output)
            start, run, read = systems[name]
            fresh = start()
            run(fresh)
            return bool(np.all(np.abs(read(fresh).astype(np.float64) - ref) <= bound))
        _peer_rows(t, work, {name: (lambda name=name: call(name)) for name in systems}, check,
                   idx.nbytes + b.nbytes, repeat)

    for distinct in (1000, 10**6):  # np.unique(return_counts=True) of int32 keys
        x = unique_bench.make("int32", n, distinct)
        want = np.unique(x, return_counts=True)
        systems = unique_bench._systems(x, "cuda")
        sortedness = {name: is_sorted for name, (call, is_sorted) in systems.items()}

        def check(name, got, want=want, sortedness=sortedness):
            try:
                unique_bench._check(name, got, want, sortedness[name])
                return True
            except AssertionError:
                return False
        _peer_rows(t, f"unique int32, 2^{26 - shrink} keys, {len(want[0]):,} distinct, return_counts",
                   {name: call for name, (call, _) in systems.items()}, check, x.nbytes, repeat)

    x = argmin_bench.make("float32", 1 << (28 - shrink))
    want = int(np.argmin(x))
    _peer_rows(t, f"argmin float32, 2^{28 - shrink}", argmin_bench._systems(x, "cuda", False),
               lambda name, got: int(got) == want, x.nbytes, repeat)

    side = 16384 >> (shrink // 2)
    x = rng.standard_normal((side, side), dtype=np.float32)
    for axis in (0, 1):
        want = np.sum(x, axis=axis)
        _peer_rows(t, f"sum float32 {side} x {side}, axis={axis}", axis_bench._systems(x, "cuda", "sum", axis),
                   lambda name, got, axis=axis, want=want: axis_bench._ok(
                       "sum", peer_host(got), x, axis, want, not name.startswith("cuatomic")), x.nbytes, repeat)

    pts = dd_bench.make(n, 2)
    want = np.histogramdd(pts, 256, [(0.0, 1.0)] * 2)[0]
    _peer_rows(t, f"histogram2d float32, 2^{26 - shrink} points, 256 x 256 bins",
               dd_bench._systems(pts, "cuda", 256, [(0.0, 1.0)] * 2),
               lambda name, got: np.array_equal(peer_host(got).astype(np.float64), want), pts.nbytes, repeat)

    x = nz_bench.make(n, 0.5)
    want = np.nonzero(x)
    systems = nz_bench._systems(x, "cuda", (n,))  # raw CUB's: (a call that reads its indices, the call timed)

    def check(name, got):
        got = systems[name][0]() if isinstance(systems[name], tuple) else got
        return len(got) == 1 and np.array_equal(peer_host(got[0]), want[0])
    _peer_rows(t, f"nonzero int32, 2^{26 - shrink}, 50% nonzero",
               {name: call[1] if isinstance(call, tuple) else call for name, call in systems.items()}, check,
               x.nbytes, repeat)


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
