"""Call every CUDA method of every operation (unique: with `unique` alone as the argument, only its) once on small inputs, checking
each result against NumPy; run under compute-sanitizer by tools/device_check.sh.
Exits non-zero on any mismatch."""
import sys

import numpy as np

import cuatomic
from cuatomic import _C, _backend, _bins, _common, _filter

DTYPES = [np.uint8, np.int32, np.int64, np.float32, np.float64]


def refuses(method, d, kw):
    """Why the histogram rung refuses these data and bins (its fits), or None."""
    inp = _common.prepare(d, "cuda")
    kb = _bins.bins_for(inp, kw["bins"], kw.get("range"), 0)[2]
    return _bins.rung_fits("cuda", kb, inp.id, -1, -1)(_backend.rung("histogram", "cuda", method))


def unique_calls(check, rng):
    """Every unique rung with every output, on few and many distinct keys
    (tables that grow and are built again) and the tables' empty key."""
    for dt in (np.int8, np.int32, np.uint64, np.float32, np.float64):
        for distinct in (7, 40_000):
            x = rng.integers(0, distinct, 50_001).astype(dt)
            if np.dtype(dt).kind == "u":
                x[::97] = np.iinfo(dt).max
            d = cuatomic.to_device(x, backend="cuda")
            want = np.unique(x, True, True, True)
            for m, _, _ in cuatomic.methods("unique", "cuda"):
                got = [g.copy_to_host() for g in cuatomic.unique(d, True, True, True, method=m, backend="cuda")]
                check(f"unique {m} {dt.__name__} {distinct}",
                      all(np.array_equal(g, w) for g, w in zip(got, want)))
                v, c = cuatomic.unique(d, return_counts=True, sorted=False, method=m, backend="cuda")
                check(f"unique unsorted {m} {dt.__name__} {distinct}", int(c.copy_to_host().sum()) == x.size)
                # (no inverse: vector's partition by hash, past 2^13 distinct values)
                got = [g.copy_to_host() for g in cuatomic.unique(d, True, False, True, method=m, backend="cuda")]
                check(f"unique no inverse {m} {dt.__name__} {distinct}",
                      all(np.array_equal(g, w) for g, w in zip(got, (want[0], want[1], want[3]))))
                # (counts alone: the sort's runs)
                got = [g.copy_to_host() for g in cuatomic.unique(d, return_counts=True, method=m, backend="cuda")]
                check(f"unique counts {m} {dt.__name__} {distinct}",
                      all(np.array_equal(g, w) for g, w in zip(got, (want[0], want[3]))))
    # 2^20 keys: the vector rung's sample first (it proves many distinct values in random order; sorted, it proves
    # nothing, and the first table is built and overflows; with few values it proves nothing and the first table
    # holds them; all distinct, it guesses too many for the partition and the call sorts)
    def spread(k):
        return (k * 2654435761 % (1 << 31) - (1 << 30)).astype(np.int32)
    x = spread(rng.integers(0, 50_000, 1 << 20))
    # 6000 values whose hashes (murmur3's 32-bit finalizer of the word: the int32 with its sign bit flipped) all
    # have 0 in their top 4 bits: one of the sample's blocks takes every sampled key and stops at half full
    w = rng.choice(np.uint64(1) << np.uint64(32), 240_000, replace=False).astype(np.uint64)
    h = w ^ (w >> 16)
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & 0xFFFFFFFF
    one = (w[(h ^ (h >> 16)) >> 28 == 0][:6000].astype(np.uint32) ^ np.uint32(1 << 31)).view(np.int32)
    for label, keys in (("shuffled", x), ("sorted", np.sort(x)), ("few", spread(rng.integers(0, 1000, 1 << 20))),
                        ("all distinct", spread(rng.permutation((1 << 20) + 3))),
                        ("one sample block", rng.choice(one, 1 << 20))):
        want = np.unique(keys, return_counts=True)
        got = [g.copy_to_host() for g in cuatomic.unique(cuatomic.to_device(keys, backend="cuda"), return_counts=True,
                                                         method="vector", backend="cuda")]
        check(f"unique vector sampled {label}", all(np.array_equal(g, w) for g, w in zip(got, want)))
    # sorted output of the partition: segments by digits of the sample's range, with first indices too (int32,
    # float64), and most values in a few digits of a wide range (the whole list sorted)
    wide = np.concatenate([rng.integers(0, 60_000, 1 << 20), spread(rng.integers(0, 1 << 30, 1 << 14))])
    floats = rng.uniform(-1e6, 1e6, 50_000)[rng.integers(0, 50_000, 1 << 20)]
    for label, keys in (("segments", x), ("float segments", floats),
                        ("crowded digits", rng.permutation(wide).astype(np.int32))):
        want = np.unique(keys, return_index=True, return_counts=True)
        got = [g.copy_to_host() for g in cuatomic.unique(cuatomic.to_device(keys, backend="cuda"), return_index=True,
                                                         return_counts=True, method="vector", backend="cuda")]
        check(f"unique vector sorted {label}", all(np.array_equal(g, w) for g, w in zip(got, want)))


def main():
    rng = np.random.default_rng(0)
    failures, calls = [], 0

    def check(label, ok):
        nonlocal calls
        calls += 1
        if not ok:
            failures.append(label)

    for dt in DTYPES:
        a = (rng.standard_normal(4099) * 50).astype(dt) if np.dtype(dt).kind == "f" else \
            rng.integers(0, 120, 4099).astype(dt)
        b = a[::-1].copy()
        d = cuatomic.to_device(a, backend="cuda")
        for m, _, _ in cuatomic.methods("sum", "cuda"):
            got = cuatomic.sum(d, method=m, backend="cuda")
            check(f"sum {m} {dt.__name__}", np.isclose(got, np.sum(a), rtol=1e-4))
        if np.dtype(dt).kind == "i":  # the integer digit sums' warp fold, in a block ending in a partial warp
            signed = (a.astype(np.int64) - 60).astype(dt)  # negative sums too: the digit sums' signed high halves
            got = cuatomic.sum(cuatomic.to_device(signed, backend="cuda"), method="exact", backend="cuda", blocks=3,
                               threads=37)
            check(f"sum exact {dt.__name__} 3x37", got == np.sum(signed))
        for m, _, _ in cuatomic.methods("prod", "cuda"):
            small = d if np.dtype(dt).kind != "f" else cuatomic.to_device(np.ones(4099, dt), backend="cuda")
            want = np.prod(a) if np.dtype(dt).kind != "f" else 1.0
            check(f"prod {m} {dt.__name__}", cuatomic.prod(small, method=m, backend="cuda") == want)
        for m, _, _ in cuatomic.methods("dot", "cuda"):
            got = cuatomic.dot(d, cuatomic.to_device(b, backend="cuda"), method=m, backend="cuda")
            check(f"dot {m} {dt.__name__}", np.isclose(got, np.dot(a, b), rtol=1e-4))
        for m, _, _ in cuatomic.methods("histogram", "cuda"):
            for kw in ({"bins": 128, "range": (0, 128)}, {"bins": 37}, {"bins": [0, 3, 50, 51, 119]},
                       {"bins": 300, "range": (-20, 280)}):
                if refuses(m, d, kw):  # the rung's limits (bytes: bytes in bins of width one): it must say so
                    try:
                        cuatomic.histogram(d, method=m, backend="cuda", **kw)
                        check(f"histogram {m} {dt.__name__} {kw} refuses", False)
                    except ValueError as e:
                        check(f"histogram {m} {dt.__name__} {kw} refuses", f"method '{m}'" in str(e))
                    continue
                hist, _ = cuatomic.histogram(d, method=m, backend="cuda", **kw)
                check(f"histogram {m} {dt.__name__} {kw}", np.array_equal(hist.copy_to_host(),
                                                                         np.histogram(a, **kw)[0]))
        for m, _, _ in cuatomic.methods("reduce", "cuda"):
            for op in ("add", "multiply", "minimum", "maximum") + (("bitwise_xor",) if np.dtype(dt).kind != "f" else ()):
                src = d if op != "multiply" else cuatomic.to_device(np.ones(4099, dt), backend="cuda")
                with np.errstate(all="ignore"):
                    want = getattr(np, op).reduce(a if op != "multiply" else np.ones(4099, dt))
                got = cuatomic.reduce(src, op, method=m, backend="cuda")
                check(f"reduce {op} {m} {dt.__name__}", np.isclose(got, want, rtol=1e-4))
        for m, _, _ in cuatomic.methods("argmin", "cuda"):
            if m == "packed" and np.dtype(dt).itemsize == 8:
                continue  # refused: no bits left for the index
            for name in ("argmin", "argmax"):
                got = getattr(cuatomic, name)(d, method=m, backend="cuda")
                check(f"{name} {m} {dt.__name__}", got == getattr(np, name)(a))
        w = cuatomic.to_device(b.astype(np.float64), backend="cuda")
        for m, _, _ in cuatomic.methods("weighted_histogram", "cuda"):
            hist, _ = cuatomic.histogram(d, 37, weights=w, method=m, backend="cuda")
            check(f"weighted histogram {m} {dt.__name__}",
                  np.allclose(hist.copy_to_host(), np.histogram(a, 37, weights=b.astype(np.float64))[0]))
            if np.dtype(dt).kind != "f":
                got = cuatomic.bincount(d, weights=w, method=m, backend="cuda")
                check(f"bincount {m} {dt.__name__}",
                      np.allclose(got.copy_to_host(), np.bincount(a, weights=b.astype(np.float64))))
        idx = rng.integers(-97, 97, 4099)
        for m, _, _ in cuatomic.methods("at", "cuda"):
            if _backend.rung("at", "cuda", m).flags & _C.F_EXACT:  # float add and subtract only
                ops = ("add", "subtract") if np.dtype(dt).kind == "f" else ()
            else:
                ops = ("add", "minimum", "maximum") + (("bitwise_xor",) if np.dtype(dt).kind != "f" else ())
            for op in ops:
                for rows in (1, 3):
                    start = (a[:97 * rows].reshape(97, rows) if rows > 1 else a[:97]).copy()
                    vals = np.repeat(b[:, None], rows, 1) if rows > 1 else b
                    want = start.copy()
                    getattr(np, op).at(want, idx, vals)
                    got = cuatomic.to_device(start, backend="cuda")
                    cuatomic.at(got, idx, vals, op, method=m, backend="cuda")
                    got = got.copy_to_host()
                    if np.dtype(dt).kind == "f":  # within what any order of float additions can differ by
                        mag = np.abs(start).astype(np.float64)
                        np.add.at(mag, idx, np.abs(vals).astype(np.float64))
                        ok = bool(np.all(np.abs(got - want.astype(np.float64)) <= 2 * 4099 * np.finfo(dt).eps * mag))
                    else:
                        ok = np.array_equal(got, want)
                    check(f"at {op} {m} rows={rows} {dt.__name__}", ok)
            if ops and _backend.rung("at", "cuda", m).flags & _C.F_EXACT:
                # an output past 48 KiB of accumulators (rung 6's opted-in shared memory), then a bad
                # index found by the rung's own check: nothing written
                many = rng.integers(0, 5000, 20000)
                vals = ((1 + rng.random(20000)) * rng.choice([-1, 1], 20000)).astype(dt)  # within 63 bits: narrow
                want = np.zeros(5000, dt)
                np.add.at(want, many, vals)
                got = cuatomic.to_device(np.zeros(5000, dt), backend="cuda")
                cuatomic.at(got, many, vals, method=m, backend="cuda")
                check(f"at add {m} m=5000 {dt.__name__}", np.allclose(got.copy_to_host(), want, atol=1e-3))
                many[15000] = 5000
                try:
                    cuatomic.at(got, many, vals, method=m, backend="cuda")
                    check(f"at bad index {m} {dt.__name__}", False)
                except IndexError:
                    check(f"at bad index {m} {dt.__name__}", np.allclose(got.copy_to_host(), want, atol=1e-3))
        for m, _, _ in cuatomic.methods("filter", "cuda"):
            keeps_order = _backend.rung("filter", "cuda", m).has(_C.F_ORDERED)
            got = cuatomic.filter(d, ">=", 2, ordered=keeps_order, method=m, backend="cuda").copy_to_host()
            check(f"filter {m} {dt.__name__}", np.array_equal(np.sort(got), np.sort(a[a >= 2])))
            # the same rungs returning indices (nonzero & co.), then unravel and take
            z = np.where(a >= 2, a, 0).astype(dt)[:4096].reshape(-1, 4)  # (a 4096 x 4 slice: 2-D coordinates)
            dz = cuatomic.to_device(z, backend="cuda")
            if _filter.rung_fits("cuda", _common.prepare(dz, "cuda"), -1, -1)(
                    _backend.rung("filter", "cuda", m)) is None:
                got = cuatomic.nonzero(dz, ordered=keeps_order, method=m, backend="cuda")
                pairs = sorted(zip(got[0].copy_to_host().tolist(), got[1].copy_to_host().tolist()))
                want = list(zip(*[w.tolist() for w in np.nonzero(z)]))
                check(f"nonzero {m} {dt.__name__}", pairs == want)
                if keeps_order:
                    cond = cuatomic.to_device(z[:, 0] != 0, backend="cuda")
                    got = cuatomic.compress(cond, dz, axis=0, method=m, backend="cuda").copy_to_host()
                    check(f"compress {m} {dt.__name__}", np.array_equal(got, np.compress(z[:, 0] != 0, z, 0)))
    # reductions along axes: every segmented rung, strided and contiguous axes, the chunked cases (tiled's
    # and vector's: few long rows, a long strided axis with rows of whole and partial 16-byte vectors)
    mats = [rng.standard_normal((37, 300)).astype(np.float32), rng.integers(-9, 9, (3, 5000)).astype(np.int32),
            rng.standard_normal((3, 70001)).astype(np.float32), rng.integers(-9, 9, (20001, 3)).astype(np.int32),
            rng.standard_normal((9000, 40)).astype(np.float64), rng.integers(0, 255, (5000, 24)).astype(np.uint8)]
    for mat in mats:
        dm = cuatomic.to_device(mat, backend="cuda")
        for m, _, _ in cuatomic.methods("segmented", "cuda"):
            for axis in (0, 1):
                got = cuatomic.max(dm, axis=axis, method=m, backend="cuda").copy_to_host()
                check(f"segmented max {m} {mat.dtype} axis={axis}", np.array_equal(got, np.max(mat, axis=axis)))
                got = cuatomic.sum(dm, axis=axis, keepdims=True, method=m, backend="cuda").copy_to_host()
                check(f"segmented sum {m} {mat.dtype} axis={axis}",
                      np.allclose(got, np.sum(mat.astype(np.float64), axis=axis, keepdims=True), rtol=1e-5))
    got = cuatomic.mean(cuatomic.to_device(mats[1], backend="cuda"), axis=1, backend="cuda").copy_to_host()
    check("segmented mean", np.allclose(got, np.mean(mats[1], axis=1)))
    # argmin/argmax along an axis: argkeys (packed words; 8-byte keys in two passes) under segmented rungs
    for mat in (mats[0], mats[1], mats[4]):
        dm = cuatomic.to_device(mat, backend="cuda")
        for m in ("atomic", "vector"):
            for axis in (0, 1):
                got = cuatomic.argmax(dm, axis=axis, method=m, backend="cuda").copy_to_host()
                check(f"argmax axis={axis} {m} {mat.dtype}", np.array_equal(got, np.argmax(mat, axis=axis)))
    # histogramdd: every rung on few cells, cells past one block (tiled's tiles, cluster), and the weighted cells
    pts = rng.random((3000, 2)).astype(np.float32)
    dp = cuatomic.to_device(pts, backend="cuda")
    for m, _, _ in cuatomic.methods("histogramdd", "cuda"):
        for bins in (8, 300):
            want = np.histogramdd(pts, bins, [(0, 1), (0, 1)])[0]
            try:
                got = cuatomic.histogramdd(dp, bins, [(0, 1), (0, 1)], method=m, backend="cuda")[0].copy_to_host()
            except ValueError as e:  # shared past its shared memory, cluster on cells one block holds
                check(f"histogramdd {m} {bins} refused", f"method '{m}'" in str(e))
                continue
            check(f"histogramdd {m} {bins}", np.array_equal(got, want))
    w = rng.random(3000)
    got = cuatomic.histogramdd(dp, 5, weights=w, backend="cuda")[0].copy_to_host()
    check("histogramdd weights", np.allclose(got, np.histogramdd(pts, 5, weights=w)[0]))
    # strided device input (gather kernel) on a stream of cuatomic's own
    m2 = rng.integers(0, 100, (64, 48)).astype(np.int32)
    dm = cuatomic.to_device(m2, backend="cuda")

    class Transposed:
        __cuda_array_interface__ = dict(dm.__cuda_array_interface__, shape=(48, 64), strides=(4, 48 * 4))

    s = cuatomic.Stream()
    check("gather + stream", cuatomic.sum(Transposed(), backend="cuda", stream=s) == m2.sum())
    s.close()
    # a host array streamed through the chunked pipeline (64 KiB chunks)
    import os
    os.environ["CUATOMIC_PIPELINE_CHUNK"] = str(1 << 16)
    big = rng.integers(0, 100, 300_001).astype(np.int32)
    check("pipeline sum", cuatomic.sum(big, backend="cuda") == big.sum())
    check("pipeline dot", cuatomic.dot(big, big, backend="cuda") == np.dot(big, big))
    check("pipeline histogram", np.array_equal(cuatomic.histogram(big, bins=10, backend="cuda")[0],
                                               np.histogram(big, bins=10)[0]))
    del os.environ["CUATOMIC_PIPELINE_CHUNK"]
    for m, _, _ in cuatomic.methods("add_one", "cuda"):
        got = cuatomic.add_one(10, 16, method=m, backend="cuda")
        check(f"add_one {m}", got == 160 or (m == "racy" and 1 <= got <= 160))
    for m, _, _ in cuatomic.methods("mutex_add_one", "cuda"):
        check(f"mutex_add_one {m}", cuatomic.mutex_add_one(10, 48, method=m, backend="cuda") == 480)
    # small host arrays go through a page-locked call slot, read in place by the kernel
    small = rng.integers(0, 100, 1000).astype(np.int32)
    check("slot sum", cuatomic.sum(small, backend="cuda") == small.sum())
    check("slot dot", cuatomic.dot(small, small, backend="cuda") == np.dot(small, small))
    # CUB, the benchmark's yardstick
    d = cuatomic.to_device(small, backend="cuda")
    check("cub sum", _C.cub_sum(d.ptr, small.size, _common.dtype_id(small.dtype), None) == small.sum())
    check("cub histogram", np.array_equal(_C.cub_histogram(d.ptr, small.size, _common.dtype_id(small.dtype), 10, 0, 100, None),
                                          np.histogram(small, 10, (0, 100))[0]))
    out = cuatomic.DeviceArray.empty((small.size,), np.int32)
    c = _C.cub_select(d.ptr, small.size, _common.dtype_id(small.dtype), 2.0, out.ptr, None)
    check("cub select", np.array_equal(out.copy_to_host()[:c], small[small >= 2]))
    unique_calls(check, rng)
    with cuatomic.Timer(backend="cuda") as t:
        cuatomic.sum(np.ones(1000), backend="cuda")
    check("Timer", t.elapsed is not None and t.elapsed >= 0)
    print(f"sanitize_driver: {calls} calls, {len(failures)} mismatches {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["unique"]:
        found = []
        unique_calls(lambda label, ok: found.append(label) if not ok else None, np.random.default_rng(0))
        print(f"sanitize_driver unique: {len(found)} mismatches {found}")
        sys.exit(1 if found else 0)
    sys.exit(main())
