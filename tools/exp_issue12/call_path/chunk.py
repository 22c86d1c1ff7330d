"""What a dask chunk task of cuatomic.dask adds to the in-memory call (1 GiB CuPy chunk)."""
import statistics, time
import numpy as np, cupy as cp, dask
import cuatomic, cuatomic.dask as cd
from cuatomic.datasets import english_like_text, text_to_array

def med(f, n=30):
    for _ in range(3):
        f()
    ts = []
    for _ in range(n):
        cp.cuda.runtime.deviceSynchronize(); t0 = time.perf_counter(); f(); cp.cuda.runtime.deviceSynchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3

base = cp.asarray(text_to_array(english_like_text(5_700_000)))
chunk = cp.tile(base, -(-(1 << 30) // base.size))[: 1 << 30]
print("CAI stream", chunk.__cuda_array_interface__.get("stream"))
rows = [("in-memory cuatomic.histogram (DeviceArray counts)", lambda: cuatomic.histogram(chunk, 128, (0, 128))),
        ("... + copy_to_host", lambda: cuatomic.histogram(chunk, 128, (0, 128))[0].copy_to_host()),
        ("_chunk_histogram, range tuple", lambda: cd._chunk_histogram(chunk, None, 128, (0, 128), "auto", None)),
        ("_chunk_histogram, range list", lambda: cd._chunk_histogram(chunk, None, 128, [0, 128], "auto", None)),
        ("dask sync scheduler, one chunk task", lambda: dask.compute(dask.delayed(cd._chunk_histogram)(chunk, None, 128, (0, 128), "auto", None), scheduler="sync")),
        ("cuatomic.sum exact", lambda: cuatomic.sum(chunk.view(cp.float64), method="exact")),
        ("_chunk_exact_sum", lambda: cd._chunk_exact_sum(chunk.view(cp.float64), np.dtype(np.float64), "exact", None))]
for name, f in rows:
    print(f"{name:55s} {med(f):.4f} ms", flush=True)
import cProfile, pstats, io
pr = cProfile.Profile(); pr.enable()
for _ in range(20):
    cd._chunk_histogram(chunk, None, 128, [0, 128], "auto", None)
pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumtime").print_stats(14); print(s.getvalue()[:3500])
