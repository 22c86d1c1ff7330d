"""Where a whole filter call's GPU time goes: every kernel, memset and copy of the call (CUPTI via torch.profiler)."""
import json, os, sys, time
import numpy as np, torch, cupy as cp
import cuatomic
from cuatomic.bench import peers
from torch.profiler import profile, ProfilerActivity

def wall(f, reps=20):
    for _ in range(5): f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return 1e3 * float(np.median(ts))

rng = np.random.default_rng(0)
x = rng.integers(-1000, 1000, 1 << 28, dtype=np.int32)
dx = cuatomic.to_device(x)
out = cuatomic.DeviceArray.empty((dx.size,), np.int32)
calls = {"cuatomic.filter": lambda v: cuatomic.filter(dx, ">=", v),
         "lookback threads=256": lambda v: cuatomic.filter(dx, ">=", v, method="lookback", threads=256),
         "cub_select": lambda v: peers.cub_select(dx, float(v), out)}
for v in (2, 980, -980):
    keep = x[x >= v]
    got = cuatomic.filter(dx, ">=", v)
    assert np.array_equal(got.copy_to_host(), keep), v
    for name, f in calls.items():
        w = wall(lambda: f(v))
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(6):
                r = f(v); torch.cuda.synchronize(); del r
        path = f"{os.environ.get('OUT', '/tmp')}/trace_{name.split()[0]}_{v}.json"
        prof.export_chrome_trace(path)
        ev = json.load(open(path))["traceEvents"]
        gpu = sorted([e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")], key=lambda e: e["ts"])
        cpu = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
        print(f"\n== >= {v} {name}: wall median {w:.4f} ms; GPU events of the last 2 calls:")
        # group by call: a gap > 50 us between GPU events starts a new call (calls are separated by syncs)
        groups, cur = [], []
        for e in gpu:
            if cur and e["ts"] - (cur[-1]["ts"] + cur[-1]["dur"]) > 30: groups.append(cur); cur = []
            cur.append(e)
        groups.append(cur)
        for g in groups[-2:]:
            t0 = g[0]["ts"]
            for e in g:
                print(f"   +{e['ts'] - t0:8.1f} us  {e['dur']:8.1f} us  {e['cat']:10s} {e['name'][:90]}")
            print(f"   span {g[-1]['ts'] + g[-1]['dur'] - t0:.1f} us")
        rt = {}
        for e in cpu:
            rt.setdefault(e["name"], []).append(e["dur"])
        print("   runtime calls over 6 calls (name: count, total us):",
              ", ".join(f"{k}: {len(d)}, {sum(d):.0f}" for k, d in sorted(rt.items(), key=lambda kv: -sum(kv[1]))[:8]))
