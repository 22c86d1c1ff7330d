"""cuatomic.dask on GPUs: a dask-cuda LocalCUDACluster, one worker per GPU.

The data are made on the workers as CuPy chunks (never on the host):
English-like text for a 128-bin histogram, then float64 normals of the same
number of bytes for an exact sum. Each is persisted on the GPUs, checked
against dask.array's own reduction on the same array and cluster, and timed
(wall clock of ``.compute()``, median of `--repeat`). The per-chunk time of
the dask run is compared with the in-memory call on one chunk, timed on a
worker, two ways: the run's wall time * workers / chunks (what a chunk costs
with dask's scheduling), and the median time the workers spent computing
one chunk's task (dask's task stream: what cuatomic.dask adds to the call).

    python tools/bench_dask_gpu.py --gib 64 --chunk-mib 1024 --workers 1 --out dask_gpu.json

Needs dask, distributed, dask-cuda and CuPy. Run it once with --workers 1
and once with all GPUs to get the scaling. ``scheduling_floor_s`` is the
same graph with chunk tasks that do nothing: what dask costs by itself.
"""
import argparse
import json
import math
import statistics
import time

import numpy as np


def make_text(i, nbytes, base):
    import cupy as cp
    b = cp.roll(cp.asarray(base), (i * 7919) % base.size)  # every chunk a different phase of the text
    return cp.tile(b, -(-nbytes // base.size))[:nbytes]


def make_normals(i, nbytes):
    import cupy as cp
    return cp.random.default_rng(1000 + i).standard_normal(nbytes // 8, dtype=cp.float64)


def in_memory(chunk, what, repeat):
    """One chunk's in-memory call, timed where the chunk lives (median)."""
    import cupy as cp

    import cuatomic
    call = (lambda: cuatomic.histogram(chunk, 128, (0, 128))) if what == "histogram" else \
        (lambda: cuatomic.sum(chunk, method="exact"))
    for _ in range(3):
        call()
    ts = []
    for _ in range(repeat):
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        call()
        cp.cuda.runtime.deviceSynchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def chunk_task_s(client, fn, name):
    """Median seconds the workers spent computing the tasks of function
    `name` (one per chunk) during one fn()."""
    from dask.distributed import get_task_stream
    from dask.utils import key_split
    with get_task_stream(client) as ts:
        fn()
    spans = [s["stop"] - s["start"] for task in ts.data if key_split(task["key"]).lstrip("_") == name.lstrip("_")
             for s in task["startstops"] if s["action"] == "compute"]
    return statistics.median(spans) if spans else None


def _nothing(chunk):
    """A chunk task that does no work: what dask alone costs per chunk."""
    return np.zeros(128, np.int64)


def _add(parts):
    return np.sum(parts, axis=0)


def floor_s(x, repeat):
    """The scheduling floor: one empty task per chunk of x and one combine
    (the graph cuatomic.dask.histogram makes), median seconds of compute()."""
    import dask
    return timed(lambda: dask.delayed(_add)([dask.delayed(_nothing)(c) for c in x.to_delayed().ravel()]).compute(),
                 repeat)[1]


def timed(fn, repeat):
    out = fn()  # warm-up (and the value checked)
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return out, statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=64)
    ap.add_argument("--chunk-mib", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=None, help="default: every visible GPU")
    ap.add_argument("--threads", type=int, default=1, help="threads per worker (tasks in flight per GPU)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="dask_gpu.json")
    args = ap.parse_args()

    import cupy as cp
    import dask
    import dask.array as da
    from dask.distributed import Client, wait
    from dask_cuda import LocalCUDACluster

    import cuatomic
    import cuatomic.dask as cd
    from cuatomic.datasets import english_like_text, text_to_array

    ngpu = cp.cuda.runtime.getDeviceCount()
    workers = args.workers or ngpu
    visible = ",".join(str(i) for i in range(workers))
    chunk = args.chunk_mib << 20
    nchunks = max(1, int(args.gib * (1 << 30)) // chunk)
    report = {"gpus": [cp.cuda.runtime.getDeviceProperties(i)["name"].decode() for i in range(workers)],
              "workers": workers, "threads_per_worker": args.threads, "chunks": nchunks, "chunk_bytes": chunk, "total_bytes": nchunks * chunk,
              "repeat": args.repeat, "per_chunk_s": "wall time x workers / chunks", "cuatomic": cuatomic.__version__, "dask": dask.__version__}
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, n_workers=workers, threads_per_worker=args.threads,
                          dashboard_address=None, protocol="tcp") as cluster, Client(cluster) as client:
        base = text_to_array(english_like_text(5_700_000))
        base_f = client.scatter(base, broadcast=True)
        parts = [da.from_delayed(dask.delayed(make_text)(i, chunk, base_f), shape=(chunk,), dtype=np.uint8,
                                 meta=cp.empty(0, np.uint8)) for i in range(nchunks)]
        x = da.concatenate(parts).persist()
        wait(x)
        ours, t_ours = timed(lambda: cd.histogram(x, 128, (0, 128))[0].compute(), args.repeat)
        theirs, t_theirs = timed(lambda: da.histogram(x, bins=128, range=(0, 128))[0].compute(), args.repeat)
        theirs = cp.asnumpy(theirs) if hasattr(theirs, "get") else np.asarray(theirs)
        assert np.array_equal(np.asarray(ours), theirs), "cuatomic.dask.histogram != dask.array.histogram"
        one = client.submit(in_memory, client.compute(x.blocks[0]), "histogram", 20, pure=False).result()
        task = chunk_task_s(client, lambda: cd.histogram(x, 128, (0, 128))[0].compute(), "_chunk_histogram")
        report["scheduling_floor_s"] = floor_s(x, args.repeat)
        report["histogram"] = {"cuatomic_s": t_ours, "dask_array_s": t_theirs, "vs_dask_array": t_theirs / t_ours,
                               "GB_per_s": nchunks * chunk / t_ours / 1e9, "in_memory_chunk_s": one,
                               "per_chunk_s": t_ours * workers / nchunks,
                               "per_chunk_over_in_memory": t_ours * workers / nchunks / one,
                               "chunk_task_s": task, "chunk_task_over_in_memory": task and task / one}
        print("histogram", json.dumps(report["histogram"]), "floor", report["scheduling_floor_s"], flush=True)
        x = parts = None  # drop the text before the floats are made
        client.run(lambda: __import__("cupy").get_default_memory_pool().free_all_blocks())

        parts = [da.from_delayed(dask.delayed(make_normals)(i, chunk), shape=(chunk // 8,), dtype=np.float64,
                                 meta=cp.empty(0, np.float64)) for i in range(nchunks)]
        y = da.concatenate(parts).persist()
        wait(y)
        exact, t_exact = timed(lambda: cd.sum(y, method="exact").compute(), args.repeat)
        plain, t_plain = timed(lambda: y.sum().compute(), args.repeat)
        plain = float(plain)
        # The exact sum is the same bits for another chunking (of the first four chunks: 1.5 chunks each).
        head = y[: min(4, nchunks) * (chunk // 8)]
        rechunked = float(cd.sum(head.rechunk(3 * chunk // 16), method="exact").compute()) == \
            float(cd.sum(head, method="exact").compute())
        one = client.submit(in_memory, client.compute(y.blocks[0]), "sum", 20, pure=False).result()
        task = chunk_task_s(client, lambda: cd.sum(y, method="exact").compute(), "_chunk_exact_sum")
        report["exact_sum"] = {"cuatomic_s": t_exact, "dask_array_sum_s": t_plain, "vs_dask_array": t_plain / t_exact,
                               "GB_per_s": nchunks * chunk / t_exact / 1e9, "value": float(exact),
                               "dask_array_value": plain, "same_bits_rechunked": rechunked,
                               "in_memory_chunk_s": one, "per_chunk_s": t_exact * workers / nchunks,
                               "per_chunk_over_in_memory": t_exact * workers / nchunks / one,
                               "chunk_task_s": task, "chunk_task_over_in_memory": task and task / one}
        assert math.isclose(float(exact), plain, rel_tol=1e-9, abs_tol=1e-6 * math.sqrt(nchunks * chunk / 8))
        print("exact_sum", json.dumps(report["exact_sum"]), flush=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
