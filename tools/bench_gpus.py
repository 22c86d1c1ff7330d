"""One thread per GPU: does a process use every GPU it sees?

Chunks of data live on every GPU as CuPy arrays (made there, never on the
host): English-like text (uint8) for sum, histogram (128 bins), bincount and
filter, and float64 normals for the exact sum. Each op is timed two ways over
the same number of calls:

- one GPU: one thread makes every call on GPU 0's chunks (each chunk
  `gpus` times, so the call count matches);
- all GPUs: one thread per GPU, each calling on its own GPU's chunks, all
  released together by a barrier. The threads are a pool made once for
  the run, as a program that keeps a thread per GPU has them.

Each row is the wall clock from the barrier to the last GPU finished (every
thread synchronizes its GPU), median of --repeat after a warm-up; the
scaling is one GPU's time over all GPUs'. Before timing, each chunk's result
is checked against CuPy on its GPU (the exact sum: the same bits on every
GPU, and the cpu backend's correctly rounded sum of GPU 0's first chunk).

The same rows for CuPy's own reductions (`--peers`) show what the hardware
and the driver allow; `--timeline` keeps every call's start and end per
thread (seconds since the barrier) for the first timed repeat, to see where
threads wait.

    python tools/bench_gpus.py --gib-per-gpu 16 --chunk-mib 1024 --out gpus.json

Needs CuPy and at least one GPU (with one, the rows are one GPU against
itself).
"""
import argparse
import concurrent.futures
import json
import statistics
import threading
import time
from unittest import mock

import numpy as np


def make_text(i, nbytes, base):
    import cupy as cp
    b = cp.roll(cp.asarray(base), (i * 7919) % base.size)
    return cp.tile(b, -(-nbytes // base.size))[:nbytes]


def make_normals(i, nbytes):
    import cupy as cp
    return cp.random.default_rng(1000 + i).standard_normal(nbytes // 8, dtype=cp.float64)


def ops():
    """name -> (data kind, cuatomic call, CuPy call, check(ours, CuPy's) or None for the exact sum)."""
    import cupy as cp

    import cuatomic

    def same(a, b):
        return np.array_equal(np.asarray(cp.asnumpy(cp.asarray(a))), np.asarray(cp.asnumpy(cp.asarray(b))))

    rows = {
        "sum": ("text", lambda c: cuatomic.sum(c), lambda c: c.sum(dtype=cp.uint64), lambda a, b: int(a) == int(b)),
        "histogram": ("text", lambda c: cuatomic.histogram(c, 128, (0, 128))[0],
                      lambda c: cp.histogram(c, 128, (0, 128))[0], same),
        "bincount": ("text", lambda c: cuatomic.bincount(c), lambda c: cp.bincount(c), same),
        "filter": ("text", lambda c: cuatomic.filter(c, ">", 96), lambda c: c[c > 96],
                   lambda a, b: same(cp.bincount(cp.asarray(a), minlength=256), cp.bincount(b, minlength=256))),
        "exact_sum": ("normals", lambda c: cuatomic.sum(c, method="exact"), lambda c: c.sum(), None),
    }
    return rows


POOL = None  # the worker threads, made once: as a program that keeps a thread per GPU


def run_threads(gpus, chunks, call, rounds, timeline):
    """Wall seconds for `call` over chunks[g] (rounds passes) in one thread
    per GPU g of `gpus` (threads of a pool kept for the whole run); the
    call's results are dropped as they come."""
    import cupy as cp
    barrier = threading.Barrier(len(gpus))
    starts, ends, marks, errors = {}, {}, {g: [] for g in gpus}, []

    def work(g, data):
        try:
            with cp.cuda.Device(g):
                barrier.wait()
                starts[g] = t0 = time.perf_counter()
                for _ in range(rounds):
                    for c in data:
                        a = time.perf_counter()
                        call(c)
                        if timeline:
                            marks[g].append((a - t0, time.perf_counter() - t0))
                cp.cuda.Device(g).synchronize()
                ends[g] = time.perf_counter()
        except threading.BrokenBarrierError:
            pass  # another worker failed: its error is the one raised
        except BaseException as e:  # reported by the caller
            errors.append(e)
            barrier.abort()

    # The clock starts in the workers (the first one past the barrier), not
    # in a waiting main thread that would first have to take the GIL back.
    futures = [POOL.submit(work, g, chunks[g]) for g in gpus]
    for f in futures:
        f.result()
    if errors:
        raise errors[0]
    return max(ends.values()) - min(starts.values()), marks


def _median_s(fn, repeat):
    """Median seconds of fn() over `repeat` calls, after one."""
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _timed(f, marks, t0):
    """f, recording each call's thread, chunk GPU, start and end (µs since t0[0])."""
    def timed(c, *args):
        a = time.perf_counter()
        r = f(c, *args)
        b = time.perf_counter()
        marks.append([threading.current_thread().name, int(getattr(c.device, "id", -1)),
                      round((a - t0[0]) * 1e6, 1), round((b - t0[0]) * 1e6, 1)])
        return r
    return timed


def dask_rows(args, gpus, data, per_gpu, out):
    """cuatomic.dask with dask's threaded scheduler (no worker processes)
    over the chunks as they lie: all GPUs' chunks, against GPU 0's taken
    `gpus` times (the same number of chunks and bytes). Beside each:

    - floor: the same graph with chunk tasks that do nothing (return an
      empty result), so dask's own cost per compute (graph optimization,
      ordering, scheduling);
    - pool: the same chunk calls and combine without dask, mapped over a
      thread pool of the same size, to separate cuatomic's cost from
      dask's.

    One row per thread count of --dask-workers (0: dask's default, a
    thread per core), appended to out["dask_threads"] (and `out` saved) as
    it is measured;
    with --timeline, each chunk task's thread, GPU, start and end in one
    more compute, and that compute's total."""

    import dask
    import dask.array as da

    import cuatomic
    import cuatomic.dask as cd

    def array(chunks):
        # from_delayed, not from_array: from_array copies every chunk, and
        # a named delayed skips hashing 1 GiB of data for its key.
        return da.concatenate([da.from_delayed(dask.delayed(c, name=f"gpu-chunk-{id(c)}"), shape=c.shape,
                                               dtype=c.dtype, meta=c[:0]) for c in chunks])

    one_chunks = {k: v[0] * len(gpus) for k, v in data.items()}
    order = [i for i in range(per_gpu) for _ in gpus]
    every_chunks = {k: [v[g][i] for i, g in zip(order, gpus * per_gpu)] for k, v in data.items()}
    one = {k: array(v) for k, v in one_chunks.items()}
    every = {k: array(v) for k, v in every_chunks.items()}
    works = {  # name -> data, the dask call, its chunk function's name, an empty chunk result, the combine
        "histogram": ("text", lambda x: cd.histogram(x, 128, (0, 128))[0], "_chunk_histogram",
                      lambda c, *a: np.zeros(128, np.int64),
                      lambda parts: cd._combine_counts(parts, np.int64, False, None),
                      (None, 128, (0, 128), "auto", None)),
        "exact_sum": ("normals", lambda x: cd.sum(x, method="exact"), "_chunk_exact_sum",
                      lambda c, *a: cuatomic.ExactSum(),
                      lambda parts: cd._combine_exact(parts, np.float64), (np.float64, "exact", None)),
    }
    rows = out.setdefault("dask_threads", [])
    with dask.config.set(scheduler="threads"):
        for name, (kind, make, chunk_fn, empty, combine, chunk_args) in works.items():
            if kind not in data:
                continue
            first = {}
            for label, x in (("one", one[kind]), ("all", every[kind])):
                got = make(x).compute()
                first[label] = np.asarray(got)
            if name == "histogram":
                same = np.array_equal(first["all"], sum(
                    np.asarray(cd.histogram(array(data[kind][g]), 128, (0, 128))[0].compute()) for g in gpus))
            else:  # each GPU's first chunk where it lies, and all of them copied to GPU 0: the same bits
                import cupy as cp
                firsts = [data[kind][g][0] for g in gpus]
                spread = np.asarray(make(array(firsts)).compute())
                with cp.cuda.Device(0):
                    moved = []
                    for g, c in zip(gpus, firsts):
                        c0 = cp.empty_like(c) if g else c
                        if g:
                            c0.data.copy_from_device(c.data, c.nbytes)
                        moved.append(c0)
                    cp.cuda.Device(0).synchronize()
                    on_one = np.asarray(make(array(moved)).compute())
                    del moved
                same = on_one.tobytes() == spread.tobytes()
            real = getattr(cd, chunk_fn)
            for workers in args.dask_workers:
                config = {"num_workers": workers} if workers else {}
                pool = concurrent.futures.ThreadPoolExecutor(workers or None)
                times, marks = {}, {}
                with dask.config.set(config):
                    for label, x, chunks in (("one", one[kind], one_chunks[kind]),
                                             ("all", every[kind], every_chunks[kind])):
                        with mock.patch.object(cd, chunk_fn, empty):
                            floor = make(x)  # built here: its chunk tasks call `empty`
                        times[label] = {
                            "dask": _median_s(make(x).compute, args.repeat),
                            "floor": _median_s(floor.compute, args.repeat),
                            "pool": _median_s(lambda: combine(list(pool.map(lambda c: real(c, *chunk_args), chunks))),
                                              args.repeat)}
                        if args.timeline:
                            m, t0 = [], [0.0]
                            with mock.patch.object(cd, chunk_fn, _timed(real, m, t0)):
                                timed = make(x)
                            t0[0] = time.perf_counter()
                            timed.compute()
                            marks[label] = {"total_us": round((time.perf_counter() - t0[0]) * 1e6, 1), "tasks": m}
                pool.shutdown()
                row = {"op": name, "scheduler": "threads", "num_workers": workers or "default",
                       "one_gpu_ms": times["one"]["dask"] * 1e3, "all_gpus_ms": times["all"]["dask"] * 1e3,
                       "scaling": times["one"]["dask"] / times["all"]["dask"],
                       "floor_one_ms": times["one"]["floor"] * 1e3, "floor_all_ms": times["all"]["floor"] * 1e3,
                       "pool_one_ms": times["one"]["pool"] * 1e3, "pool_all_ms": times["all"]["pool"] * 1e3,
                       "checked": bool(same)}
                if marks:
                    row["timeline"] = marks
                rows.append(row)
                save(args.out, out)  # after every row: a run cut short keeps what it measured
                print(f"dask threads {name:10s} workers {workers or 'default':>7} one GPU {row['one_gpu_ms']:7.2f} ms"
                      f"  {len(gpus)} GPUs {row['all_gpus_ms']:7.2f} ms  {row['scaling']:5.2f}x  "
                      f"floor {row['floor_one_ms']:.2f} / {row['floor_all_ms']:.2f} ms  "
                      f"pool {row['pool_one_ms']:.2f} / {row['pool_all_ms']:.2f} ms  checked {same}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib-per-gpu", type=float, default=16)
    ap.add_argument("--chunk-mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ops", default="sum,histogram,bincount,filter,exact_sum")
    ap.add_argument("--peers", action="store_true", help="also CuPy's own call, one thread per GPU")
    ap.add_argument("--timeline", action="store_true")
    ap.add_argument("--dask", action="store_true",
                    help="also cuatomic.dask (threaded scheduler) over the same chunks: one GPU's against all")
    ap.add_argument("--dask-workers", default="0",
                    help="comma-separated thread counts for the dask rows (0: dask's default)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.dask_workers = [int(w) for w in args.dask_workers.split(",")]

    import cupy as cp

    import cuatomic
    from cuatomic import datasets

    ngpu = cp.cuda.runtime.getDeviceCount()
    global POOL
    POOL = concurrent.futures.ThreadPoolExecutor(max_workers=ngpu)
    gpus = list(range(ngpu))
    nbytes = args.chunk_mib << 20
    per_gpu = max(1, int(args.gib_per_gpu * 1024 // args.chunk_mib))
    base = datasets.text_to_array(datasets.english_like_text(1 << 20))
    wanted = args.ops.split(",")
    table = ops()
    kinds = {table[o][0] for o in wanted}
    data = {k: {} for k in kinds}
    for g in gpus:
        with cp.cuda.Device(g):
            for k in kinds:
                data[k][g] = [make_text(g * per_gpu + i, nbytes, base) if k == "text" else
                              make_normals(g * per_gpu + i, nbytes) for i in range(per_gpu)]
            cp.cuda.Device(g).synchronize()
    props = cp.cuda.runtime.getDeviceProperties(0)
    out = {"gpus": ngpu, "device": props["name"].decode(), "chunk_mib": args.chunk_mib, "chunks_per_gpu": per_gpu,
           "cuatomic": cuatomic.__version__, "rows": []}
    print(f"{ngpu} x {out['device']}: {per_gpu} chunks of {args.chunk_mib} MiB per GPU", flush=True)

    for name in wanted:
        kind, ours, peer, check = table[name]
        chunks = data[kind]
        # Validate before timing: every chunk on every GPU.
        if check is None:  # the exact sum: GPU 0's first chunk, the same bits on every GPU and the cpu backend
            host = cp.asnumpy(chunks[0][0])
            ref = float(cuatomic.sum(host, method="exact", backend="cpu"))
            for g in gpus:
                with cp.cuda.Device(g):
                    got = float(ours(cp.asarray(host)))
                if got != ref:
                    raise SystemExit(f"exact_sum on GPU {g}: {got!r} != the cpu backend's exact {ref!r}")
        else:
            for g in gpus:
                with cp.cuda.Device(g):
                    for i, c in enumerate(chunks[g]):
                        if not check(ours(c), peer(c)):
                            raise SystemExit(f"{name}: wrong on GPU {g}, chunk {i}")
        one_chunks = {0: chunks[0]}
        for who, call in [("cuatomic", ours)] + ([("cupy", peer)] if args.peers else []):
            # Each timed run follows a warm-up pass on the GPUs it times, with
            # no idle gap: a GPU left idle while the other runs alone drops
            # to idle clocks, and its first call then takes up to 10x longer
            # (stop 24's first run: 1.8 ms instead of 0.38 ms).
            one, many, marks = [], [], None
            for r in range(args.repeat):
                run_threads([0], one_chunks, call, 1, False)
                one.append(run_threads([0], one_chunks, call, ngpu, False)[0])
                run_threads(gpus, chunks, call, 1, False)
                t, m = run_threads(gpus, chunks, call, 1, args.timeline and r == 0)
                many.append(t)
                marks = marks or m
            t1, tn = statistics.median(one), statistics.median(many)
            row = {"op": name, "who": who, "one_gpu_ms": t1 * 1e3, "all_gpus_ms": tn * 1e3,
                   "scaling": t1 / tn, "calls": per_gpu * ngpu, "one_gpu_all_ms": [x * 1e3 for x in one],
                   "all_gpus_all_ms": [x * 1e3 for x in many]}
            if args.timeline and marks:
                row["timeline"] = {str(g): [[round(a * 1e6, 1), round(b * 1e6, 1)] for a, b in v]
                                   for g, v in marks.items()}
            out["rows"].append(row)
            save(args.out, out)  # after every row: a run cut short keeps what it measured
            print(f"{name:10s} {who:9s} one GPU {t1 * 1e3:8.2f} ms   {ngpu} GPUs {tn * 1e3:8.2f} ms   "
                  f"{t1 / tn:5.2f}x", flush=True)
    if args.dask:
        dask_rows(args, gpus, data, per_gpu, out)


def save(path, out):
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
