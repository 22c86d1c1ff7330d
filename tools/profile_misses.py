"""The systems of one issue-30 target, each called twice, for Nsight Compute;
and the table of ncu's CSV. On the GPU machine, for each case:

    ncu --csv --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,launch__registers_per_thread,\
launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum \
        python3 tools/profile_misses.py CASE > ncu_CASE.csv

then anywhere: ``python3 tools/profile_misses.py --table ncu_*.csv``.
CASE: f64sum axis0 axis1 addat argmin filter1 exactf32 (docs/results-h100.md), nonzero dottorch
maxf32 (docs/results-h200.md), small (issue 12's small calls: their kernels are microseconds, so
``python3 tools/profile_misses.py --wall small`` times the whole calls beside a launch-and-wait floor)."""
import collections
import csv
import sys

CASES = ("f64sum", "axis0", "axis1", "addat", "argmin", "filter1", "exactf32", "nonzero", "dottorch", "maxf32",
         "small")
SHORT = {"gpu__time_duration.sum": "us", "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
         "dram__bytes_read.sum": "rdMB", "dram__bytes_write.sum": "wrMB", "smsp__inst_executed.sum": "Minst",
         "launch__registers_per_thread": "regs", "launch__grid_size": "grid", "launch__block_size": "blk",
         "sm__warps_active.avg.pct_of_peak_sustained_active": "occ%",
         "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm%",
         "lts__t_sectors_op_atom.sum": "atomK", "lts__t_sectors_op_red.sum": "redK"}
SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}


def systems(case):
    """name -> call() of the case's cuatomic rung and its peers, inputs on the device."""
    import numpy as np

    import cuatomic
    from cuatomic import _C
    from cuatomic._dtypes import dtype_id
    rng = np.random.default_rng(0)
    if case == "f64sum":
        d = cuatomic.to_device(rng.standard_normal(1 << 28))
        return {"cuatomic auto": lambda: cuatomic.sum(d),
                "CUB": lambda: _C.cub_sum(d.ptr, d.size, dtype_id(d.dtype), None)}
    if case in ("axis0", "axis1"):
        from cuatomic.bench import axis
        x = rng.standard_normal((16384, 16384), dtype=np.float32)
        s = axis._systems(x, "cuda", "sum", int(case[-1]))
        return {k: v for k, v in s.items() if k in ("cuatomic auto", "torch", "raw CUB DeviceSegmentedReduce")}
    if case == "addat":
        from cuatomic.bench import scatter
        idx = scatter.make_indices(10**6, 1 << 26, "uniform", rng)
        b = rng.standard_normal(1 << 26).astype(np.float32)
        s = scatter._systems(np.zeros(10**6, np.float32), idx, b, 1)
        outs = {k: s[k][0]() for k in ("cuatomic auto", "cuatomic exact", "torch index_add_", "cupy add.at") if k in s}
        return {k: (lambda k=k: s[k][1](outs[k])) for k in outs}
    if case == "argmin":
        from cuatomic.bench import argmin
        s = argmin._systems(argmin.make("float32", 1 << 28), "cuda", False)
        return {k: v for k, v in s.items() if k in ("cuatomic auto", "torch.argmin")}
    if case == "filter1":
        d = cuatomic.to_device(rng.integers(-1000, 1000, 1 << 28, dtype=np.int32))
        out = cuatomic.DeviceArray.empty((1 << 28,), np.int32)
        return {"cuatomic auto": lambda: cuatomic.filter(d, ">=", 980),
                "CUB": lambda: _C.cub_select(d.ptr, d.size, dtype_id(d.dtype), 980, out.ptr, None)}
    if case == "exactf32":
        d = cuatomic.to_device(rng.standard_normal(1 << 28).astype(np.float32))
        return {"cuatomic exact": lambda: cuatomic.sum(d, method="exact"),
                "cuatomic vector": lambda: cuatomic.sum(d, method="vector")}
    if case == "nonzero":
        from cuatomic.bench import nonzero
        x = nonzero.make(1 << 26, 0.5)
        s = nonzero._systems(x, "cuda", x.shape)
        return {"cuatomic auto": s["cuatomic auto"], "CUB": s["raw CUB DeviceSelect::Flagged"][1]}
    if case == "dottorch":  # the same dot on cuatomic's arrays and on torch's, read in place
        import torch
        a = cuatomic.to_device(rng.standard_normal(1 << 28).astype(np.float32))
        b = cuatomic.to_device(rng.standard_normal(1 << 28).astype(np.float32))
        ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
        return {"cuatomic auto": lambda: cuatomic.dot(a, b), "cuatomic auto, torch inputs": lambda: cuatomic.dot(ta, tb),
                "torch": lambda: torch.dot(ta, tb).item()}
    if case == "maxf32":
        from cuatomic.bench import peers
        d = cuatomic.to_device(rng.standard_normal(1 << 28).astype(np.float32))
        return {"cuatomic auto": lambda: cuatomic.reduce(d, "maximum"), "CUB": lambda: peers.cub_reduce(d, "maximum")}
    if case == "small":  # the targets' small calls, to the host, and the peers' same calls
        import cupy as cp
        import torch

        from cuatomic.datasets import english_like_text, text_to_array
        small = cuatomic.to_device(rng.integers(-1000, 1000, 1024, dtype=np.int32))
        text = cuatomic.to_device(text_to_array(english_like_text(5_700_000)))
        cs, ts, ct = cp.asarray(small), torch.from_dlpack(small), cp.asarray(text)
        one = cp.zeros(1, np.int32)
        return {"cuatomic sum 1024": lambda: int(cuatomic.sum(small)),
                "cupy sum 1024": lambda: int(cs.sum().get()),
                "torch sum 1024": lambda: int(ts.sum().item()),
                "cuatomic histogram 5.7 MB": lambda: cuatomic.histogram(text, 128, (0, 128))[0],
                "cupy histogram 5.7 MB": lambda: cp.histogram(ct, 128, (0, 128))[0],
                "floor: cupy fill(0) of one int32 and a synchronize": lambda: (one.fill(0),
                                                                             cp.cuda.Device().synchronize())}
    raise SystemExit(f"unknown case {case!r}: one of {', '.join(CASES)}")


def run(case):
    from cuatomic import _C
    for name, call in systems(case).items():
        for _ in range(2):
            call()
            _C.synchronize()
        print(f"=== {case}: {name}", flush=True)


def wall(case, repeat=300):
    """Each system's whole call (and a device synchronize), median of `repeat` after 20 warm-ups, in us."""
    import statistics
    import time

    from cuatomic import _C
    for name, call in systems(case).items():
        times = []
        for i in range(20 + repeat):
            t0 = time.perf_counter()
            call()
            _C.synchronize()
            if i >= 20:
                times.append(time.perf_counter() - t0)
        print(f"{case}: {name}: {statistics.median(times) * 1e6:.1f} us", flush=True)


def table(paths, least=5.0):
    """Each kernel of each CSV (`least` us or more) with the metrics above, one line each."""
    for path in paths:
        kernels = collections.OrderedDict()
        with open(path) as f:
            for r in csv.DictReader(line for line in f if line.startswith('"')):
                value = r["Metric Value"].replace(",", "")
                try:
                    value = float(value) * SCALE.get(r["Metric Unit"], 1.0)
                except ValueError:
                    continue
                name = SHORT.get(r["Metric Name"])
                if name == "Minst":
                    value /= 1e6
                elif name in ("atomK", "redK"):
                    value /= 1e3
                if name:
                    kernels.setdefault((int(r["ID"]), r["Kernel Name"][:60]), {})[name] = value
        print("==", path)
        print("id  kernel".ljust(66), " ".join(c.rjust(7) for c in SHORT.values()))
        for (i, kernel), m in kernels.items():
            if m.get("us", 0) >= least:
                print(f"{i:<3} {kernel:62s}", " ".join(f"{m.get(c, float('nan')):7.1f}" for c in SHORT.values()))


if __name__ == "__main__":
    if len(sys.argv) < 2 or (sys.argv[1] == "--wall" and len(sys.argv) < 3):
        raise SystemExit(__doc__)
    if sys.argv[1:2] == ["--table"]:
        table(sys.argv[2:])
    elif sys.argv[1:2] == ["--table-all"]:  # every kernel, however short (the small calls')
        table(sys.argv[2:], 0.0)
    elif sys.argv[1:2] == ["--wall"]:
        wall(sys.argv[2])
    else:
        run(sys.argv[1])
