"""Write notebooks/*.ipynb (without outputs) from the cells below.

The notebooks narrate; the experiments live in cuatomic.figures, so a cell
is a call and a print or a plot. Run: python tools/make_notebooks.py
"""
import pathlib
import re

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = pathlib.Path(__file__).resolve().parents[1]
HERE = ROOT / "notebooks"
# The checkout's text size, read from datasets.py without importing cuatomic (which needs the built
# extension, and datasets.py imports the package).
SHAKESPEARE_NBYTES = int(re.search(r"^SHAKESPEARE_NBYTES = ([\d_]+)", (ROOT / "cuatomic" / "datasets.py").read_text(),
                                   re.M).group(1).replace("_", ""))
#: Copies of the text notebook 6 histograms (its text and its code say the same number).
TILES = 64
TEXT_MB = SHAKESPEARE_NBYTES / 1e6

SETUP = """\
import os
import numpy as np
import matplotlib.pyplot as plt
import cuatomic
from cuatomic import figures, plots
from cuatomic.datasets import shakespeare, text_to_array

SMALL = os.environ.get("CI") == "true"  # CI runs every notebook at small sizes on the cpu backend
info = cuatomic.backend_info()
print("backend:", info["default_backend"], "| device:", info["cuda"]["name"] or f"{info['cpu_threads']} CPU threads")"""

# What each notebook needs, opening its first cell. The times: top to bottom
# in a Jupyter kernel (nbclient) on the 2-core development machine without a
# GPU, at these sizes (nbclient, each notebook once, 2026-11-23).
OPTIONAL_GPU = ("a GPU is optional: without one every cell runs on the cpu backend (the first code cell "
                "prints which backend and device ran)")
NEEDS = {
    "1_races_and_atomics.ipynb": ("matplotlib", "the race on 64 x 256 threads, the sum ladder on 2^24 int32", 36),
    "2_histogram.ipynb": ("matplotlib", f"the complete works of Shakespeare (about {TEXT_MB:.1f} MB: downloaded "
                          "once, or the file `CUATOMIC_TEXT` names; offline, a generated stand-in of that size, "
                          "titled as one), the block sweep over 2 to 256 blocks on a CPU, 320 to 31,840 on a GPU",
                          7),
    "3_mutex_and_dot.ipynb": ("matplotlib", "mutex_add_one on 10 x 16 and 40 x 128 threads, the dot ladder on 2^24 float32", 28),
    "4_custom_atomics_and_barriers.ipynb": ("matplotlib", "CAS atomics on 2^20 elements, the barriers on 2^24",
                                            20),
    "5_atomics_beyond_add.ipynb": ("matplotlib", "the atomic family and a 1,000-bin weighted histogram on 2^24 "
                                   "elements, float32 errors up to 2^24, exact sums of 2^22", 35),
    "7_scatter.ipynb": ("matplotlib (PyTorch and CuPy are measured beside it on a GPU where installed)",
                        "2^20 updates into 1 to 2^20 outputs (uniform and Zipf), float32 sums of 2^16 updates", 20),
    "6_scaling_out.ipynb": ("dask[array] and distributed (`pip install \"cuatomic[dask]\"`)",
                            f"a local cluster of two worker processes, the text of notebook 2 tiled {TILES} times "
                            f"(about {TILES * TEXT_MB:.0f} MB from the {TEXT_MB:.1f} MB text), 2^24 float64", 30),
}


def needs(name):
    """The paragraph a notebook opens with: what it needs, its sizes, its time."""
    extra, sizes, seconds = NEEDS[name]
    return (f"**Needs:** cuatomic and {extra}; {OPTIONAL_GPU}. **Sizes:** {sizes}; `CI=true` shrinks them. "
            f"On a 2-core machine without a GPU it runs top to bottom in about {seconds} s.")


NOTEBOOKS = {
    "1_races_and_atomics.ipynb": [
        ("md", "# 1. Races and atomics\n\nEvery thread of a grid adds one to the same counter. Without "
               "protection, threads read the same old value and overwrite each other's increment: updates are "
               "lost. `atomicAdd` makes the read-modify-write indivisible; a CAS spin lock makes any critical "
               "section safe, one thread at a time."),
        ("code", SETUP),
        ("code", 'for name, step, summary in cuatomic.methods("add_one"):\n    print(step, name, "-", summary)'),
        ("code", "r = figures.race(blocks=64, threads=256)\n"
                 "print(f\"{r['blocks']} x {r['threads']} threads should count {r['expected']}\")\n"
                 "for method, count in r['counts'].items():\n"
                 "    print(f\"  {method:7s} -> {count}\")\n"
                 "print(f\"  mutex_add_one -> {r['mutex_add_one']}\")\n"
                 "print(f\"  racy, {len(r['racy_runs'])} more runs -> {r['racy_runs']}\")"),
        ("md", "What the racy rung loses varies from run to run. On a GPU thousands of threads run the load "
               "and the store at once, and most increments are lost. On the cpu backend a handful of OpenMP "
               "threads do, a few nanoseconds apart, so they would rarely interleave: there the whole team runs "
               "the grid, however small, the threads start together, and the window between the load and the "
               "store is widened on purpose -- timed so that each thread's increments take 8 ms in all, longer "
               "than the OS lets one thread run while another waits for its core -- so the loss shows even on "
               "a busy machine, where the threads share a core and the OS preempts one between its load and "
               "its store. Measured for `add_one(64, 256)` (16,384 increments) on a loaded 2-core machine (load "
               "average 6), 20 runs: 8,192 to 13,553 counted (2,831 to 8,192 lost: two threads overwriting "
               "each other); with one more process spinning on a core, 8,192 to 11,896; `add_one(10, 16)` "
               "counted 80 to 131 of 160. On an NVIDIA H200 the counter held 1 or 2 in 20 runs (whole warps "
               "read the same value and write the same value + 1)."),
        ("md", "## The sum ladder\n\nFrom one atomic per element to one per block, and then to no atomics at "
               "all: block partials combined after an inter-block barrier, or by the last block to finish. "
               "Each rung is timed against `np.sum` on the same data."),
        ("code", 'for name, step, summary in cuatomic.methods("sum"):\n    print(step, name, "-", summary)'),
        ("code", "ladder = figures.sum_ladder(1 << (14 if SMALL else 24))\n"
                 "print(f\"n = {ladder['n']:,}\")\n"
                 "for row in ladder['rows']:\n"
                 "    print(f\"{row['dtype']:8s} {row['method']:13s} {row['ms']:9.3f} ms   matches NumPy: "
                 "{row['matches']}\")"),
    ],
    "2_histogram.ipynb": [
        ("md", "# 2. Histograms: global atomics, then shared memory\n\nCount the characters of a text. The first "
               "kernel adds one to a global counter per character; skewed text (spaces, 'e') makes threads queue "
               "on the same few counters. The second counts into a block-private histogram in shared memory and "
               "adds each bin to the global counts once per block."),
        ("code", SETUP),
        ("code", 'text = text_to_array("Hello world! This is the tutorial\'s first string.")\n'
                 "hist, edges = cuatomic.histogram(text, bins=128, range=(0, 128))\n"
                 "assert np.array_equal(hist, np.histogram(text, bins=128, range=(0, 128))[0])\n"
                 "plots.letter_histogram(hist, kind=\"count\", title=\"The tutorial's string\");"),
        ("code", "works, source = shakespeare(with_source=True)  # source: what the text is, for the title\n"
                 "if SMALL:\n    works = works[: 1 << 18]\n"
                 "print(f\"{works.nbytes:,} bytes of {source}\")\n"
                 "hist, _ = cuatomic.histogram(works, bins=128, range=(0, 128))\n"
                 "plots.letter_histogram(hist, kind=\"percent\", title=source);"),
        ("md", "## NumPy, a naive CPU loop, and the two kernels"),
        ("code", "cmp = figures.histogram_comparison(works, repeat=3 if SMALL else 10)\n"
                 "for name, ms in cmp['times_ms'].items():\n"
                 "    print(f\"{name:22s} {ms:10.3f} ms   matches NumPy: {cmp['matches'].get(name, True)}\")"),
        ("code", "times = cmp['times_ms']\n"
                 "label = 'GPU' if cmp['backend'] == 'cuda' else 'cuatomic cpu'\n"
                 "first = {k: times[k] for k in ('np.histogram', 'CPU loop', f'{label} global')}\n"
                 "plots.speedup_chart(first, f'{label} global');\n"
                 "plots.speedup_chart(times, f'{label} shared');"),
        ("md", "## How many blocks?\n\nThe tutorial sweeps the grid size (32·i blocks for i in range(10, 1000, "
               "5) on a GPU) and marks the fastest count of each kernel."),
        ("code", "rows = figures.histogram_sweep(works, blocks=[8, 16, 32, 64] if SMALL else None, "
                 "repeat=3)\n"
                 "from cuatomic import SweepRow\n"
                 "plots.sweep_plot([SweepRow(**r) for r in rows]);"),
        ("md", "What the sweep shows depends on the backend. On a GPU, too few blocks leave streaming "
               "multiprocessors idle, so both kernels get faster as blocks are added until every SM is busy; "
               "past that `shared` pays one merge of its private histogram per block, and `global` keeps "
               "queueing on the hot counters, so the curves flatten or rise and the dashed lines mark the best "
               "counts. On the cpu backend a block is a share of the text counted by one of the OpenMP threads: "
               "two blocks already keep both cores of a 2-core machine busy, and more blocks only split the same "
               "work finer. Its curves are flat within a few percent (on the development machine 11.2 to 11.9 "
               "ms for `global`, 2.45 to 2.58 ms for `shared`), and the marked minimum is noise: the CPU's "
               "lesson is the gap between the two curves, not the block count."),
    ],
    "3_mutex_and_dot.ipynb": [
        ("md", "# 3. A mutex, and a dot product finished under it\n\nThe lock: `atomicCAS(mutex, 0, 1)` until it "
               "returns 0, then `__threadfence()`. The unlock: `__threadfence()`, then `atomicExch(mutex, 0)`.\n\n"
               "**Why the fences.** Memory operations of one thread may become visible to other blocks in a "
               "different order than they were issued, and loads may be served from a per-SM L1 cache. The fence "
               "after acquiring keeps the critical section's reads from seeing data older than the lock; the fence "
               "before releasing makes its writes visible device-wide before the next owner can enter. Without "
               "them the counter can be read stale and increments lost even though the lock itself is atomic."),
        ("code", SETUP),
        ("code", "for blocks, threads in [(10, 16), (40, 128)]:\n"
                 "    got = cuatomic.mutex_add_one(blocks, threads)\n"
                 "    print(f\"mutex_add_one({blocks}, {threads}) = {got} (expected {blocks * threads})\")"),
        ("md", "## The dot ladder\n\nEach block reduces its products in a shared-memory tree; the rungs differ in "
               "how block results meet: on the host, under the mutex, with `atomicAdd`, or with an add built from "
               "`atomicCAS`."),
        ("code", 'for name, step, summary in cuatomic.methods("dot"):\n    print(step, name, "-", summary)'),
        ("code", "ladder = figures.dot_ladder(1 << (14 if SMALL else 24))\n"
                 "for row in ladder['rows']:\n"
                 "    print(f\"{row['method']:8s} {row['ms']:9.3f} ms   matches NumPy: {row['matches']}\")"),
    ],
    "4_custom_atomics_and_barriers.ipynb": [
        ("md", "# 4. Atomics from atomicCAS, and barriers between blocks\n\nNo GPU has an atomic multiply, and "
               "older ones had no float or double `atomicAdd`. All of them are a compare-and-swap loop: read the "
               "word, compute the new value, swap it in only if nobody changed the word meanwhile, else retry. The "
               "loop compares integer bit patterns, so a NaN cannot make it spin forever."),
        ("code", SETUP),
        ("code", "for row in figures.cas_atomics(1 << (14 if SMALL else 20)):\n"
                 "    print(f\"{row['what']:42s} cuatomic {row['cuatomic']!r:>24}  NumPy {row['numpy']!r:>24}  \"\n"
                 "          f\"ok: {row['matches']}\")"),
        ("md", "## Three inter-block barriers\n\nBlocks write partial sums, wait for each other, and block 0 adds "
               "the partials. `grid_lock` waits on one atomic counter, `grid_flags` on per-block flags (no "
               "contended counter), `cooperative` on `grid.sync()`. A block that waits for blocks that are not "
               "running yet waits forever, so these rungs only run grids that fit on the device at once: the table "
               "ends at the co-resident limit. `last_block` needs no barrier and is shown for comparison."),
        ("code", "table = figures.barrier_table(1 << (14 if SMALL else 24), repeat=3 if SMALL else 10)\n"
                 "if SMALL:\n    table['rows'] = table['rows'][:4]\n"
                 "print(f\"{'blocks':>7s} \" + ' '.join(f'{m:>12s}' for m in ('grid_lock', 'grid_flags', "
                 "'cooperative', 'last_block')))\n"
                 "for row in table['rows']:\n"
                 "    cells = ['-' if row[m] is None else f'{row[m]:.3f} ms' for m in ('grid_lock', 'grid_flags', "
                 "'cooperative', 'last_block')]\n"
                 "    print(f\"{row['blocks']:7d} \" + ' '.join(f'{c:>12s}' for c in cells))"),
    ],
    "5_atomics_beyond_add.ipynb": [
        ("md", '# 5. Atomics beyond add\n\n`atomicAdd` is one member of a family: the GPU also has `atomicMin`, `atomicMax`, `atomicAnd`, `atomicOr`, `atomicXor` and `atomicExch`, and anything it lacks -- a multiply, a float minimum that respects NaN, a double add on old GPUs -- is a compare-and-swap loop. This notebook folds arrays with each of them (`cuatomic.reduce`), builds a float maximum from `atomicCAS`, sums weights into histogram bins with float atomics, and measures what the order of float atomics costs in accuracy: the error of float32 sums as n grows, up to the `exact` rung, which sums with integer atomics and rounds once.'),
        ("code", SETUP),
        ("md", "## The atomic family: `reduce`\n\n`cuatomic.reduce(a, op)` returns what `getattr(np, op).reduce(a.ravel())` returns. Its ladder: `atomic` uses the hardware's atomic for the op (a CAS loop where there is none), `cas` builds every op from `atomicCAS`, `block_tree` leaves one atomic per block, `vector` reads at the memory's speed."),
        ("code", 'for name, step, summary in cuatomic.methods("reduce"):\n    print(step, name, "-", summary)'),
        ("code", 'fam = figures.atomic_family(1 << (14 if SMALL else 24), repeat=2 if SMALL else 5)\nprint(f"n = {fam[\'n\']:,}")\nprint(f"{\'dtype\':8s} {\'op\':12s} {\'method\':22s} {\'value\':>14s} {\'ms\':>9s}  matches NumPy")\nfor r in fam["rows"]:\n    print(f"{r[\'dtype\']:8s} {r[\'op\']:12s} {r[\'method\']:22s} {r[\'value\']!r:>14} {r[\'ms\']:9.3f}  {r[\'matches\']}")\nassert all(r["matches"] for r in fam["rows"])'),
        ("md", "## A float maximum built from atomicCAS\n\nThere is no `atomicMax` for floats. The `cas` rung reads the word, computes `max(old, x)` with NaN winning and -0.0 below +0.0 (IEEE 754-2019's maximum), and swaps it in only if the word still holds `old` -- comparing bits, so that a NaN, which is not equal to itself, cannot make the loop spin forever."),
        ("code", 'for r in figures.cas_float_max():\n    print(f"{r[\'case\']:22s} {r[\'op\']:8s} cuatomic {r[\'cuatomic\']:>8s}  NumPy {r[\'numpy\']:>8s}  same value: {r[\'matches\']}")'),
        ("md", "NumPy's sign of a zero maximum depends on where the zeros are; cuatomic's follows IEEE 754-2019 (+0.0 is the larger), whatever the order -- which an atomic fold needs, since it has no order."),
        ("md", "## A weighted histogram: float atomics into bins\n\n`histogram(x, bins, weights=w)` adds each element's weight to its bin. The weighted ladder: `global` (atomicAdd on double in global memory), `cas` (that add built from atomicCAS on the sum's bits), `shared` (sums privatized per block), `warp_private` (a copy per warp, lanes that hit one bin combined by shuffles first). Float sums in arrival order are not NumPy's bits: the table shows the largest difference relative to the bin's sum of |w|."),
        ("code", 'wh = figures.weighted_histogram_comparison(1 << (16 if SMALL else 24), bins=1000, repeat=2 if SMALL else 5)\nbase = wh["rows"][0]["ms"]\nprint(f"n = {wh[\'n\']:,}, {wh[\'bins\']} bins, float64 weights")\nfor r in wh["rows"]:\n    print(f"{r[\'method\']:14s} {r[\'ms\']:9.3f} ms  {base / r[\'ms\']:6.2f}x np.histogram   max |diff| / sum|w| = {r[\'rel_diff\']:.2e}")\nassert all(r["rel_diff"] < 1e-12 for r in wh["rows"])'),
        ("md", '## The error of float32 sums as n grows\n\nAtomics add in the order threads arrive: the naive `atomic` rung adds every element to one float32 total, whose error grows with n. `np.sum` adds pairwise; `vector` (what `method="auto"` runs) accumulates in float64 with compensation; `exact` keeps every bit in a superaccumulator of integers (64-bit integer atomics are associative) and rounds once -- its error is the float32 rounding of the exact sum, at most half an ulp.'),
        ("code", 'ns = [1 << k for k in (range(8, 17, 2) if SMALL else range(8, 25, 2))]\nerr = figures.float32_error(ns)\nfig, ax = plt.subplots(figsize=(7, 4))\nfor key, style in (("atomic", "o-"), ("np.sum", "s-"), ("vector", "^-"), ("exact", "x--")):\n    ax.loglog([r["n"] for r in err["rows"]], [max(r[key], 1e-12) for r in err["rows"]], style, label=key)\nax.axhline(err["eps32"] / 2, color="gray", lw=0.8, ls=":", label="half an ulp (eps32 / 2)")\nax.set_xlabel("n (uniform [0, 1) float32 values)")\nax.set_ylabel("relative error vs the exact sum")\nax.set_title("float32 sums: error as n grows")\nax.legend()\nplt.show()\nfor r in err["rows"]:\n    print(f"n = {r[\'n\']:>9,}  atomic {r[\'atomic\']:.1e}  np.sum {r[\'np.sum\']:.1e}  vector {r[\'vector\']:.1e}  exact {r[\'exact\']:.1e}")\nassert all(r["exact"] <= err["eps32"] / 2 for r in err["rows"])'),
        ("md", '## Exact and order-free\n\nThe exact rungs give the same bits for any grid, any order and any split into chunks: partial states combine exactly (`cuatomic.ExactSum`).'),
        ("code", 'x = np.random.default_rng(1).standard_normal(1 << (14 if SMALL else 22)) * 10.0 ** np.random.default_rng(2).integers(-20, 20, 1 << (14 if SMALL else 22))\nimport math\nwhole = cuatomic.sum(x, method="exact")\nparts = cuatomic.ExactSum()\nfor chunk in np.array_split(x, 7):\n    parts = parts.add(chunk)\nprint("exact:", whole, "| fsum:", math.fsum(x), "| chunks:", parts.result(), "| np.sum:", np.sum(x))\nassert whole == math.fsum(x) == parts.result()'),
    ],
    "6_scaling_out.ipynb": [
        ("md", "# 6. Scaling out with dask\n\nWhen the data outgrow one call, `cuatomic.dask` runs each chunk of a "
               "`dask.array` through the in-memory cuatomic call where the chunk lives, and combines the chunks' "
               "results: counts add, integer totals wrap as NumPy's, and exact float sums merge their integer "
               "superaccumulators, so the answer is the same bits for any chunking and any number of workers. "
               "This notebook starts a local cluster of worker processes (`dask.distributed`), histograms text "
               "and sums floats exactly over it, and times one worker against two. It needs "
               "`pip install \"cuatomic[dask]\"`; on a GPU machine, dask-cuda's `LocalCUDACluster` gives one "
               "worker per GPU."),
        ("code", "import math, os, time\n"
                 "import numpy as np\n"
                 "import dask.array as da\n"
                 "from dask.distributed import Client, LocalCluster, wait\n"
                 "import cuatomic\n"
                 "import cuatomic.dask as cd\n"
                 "from cuatomic.datasets import shakespeare\n\n"
                 "SMALL = os.environ.get(\"CI\") == \"true\"  # CI runs every notebook at small sizes on the cpu backend\n"
                 "info = cuatomic.backend_info()\n"
                 "print(\"backend:\", info[\"default_backend\"], \"| device:\", info[\"cuda\"][\"name\"] or "
                 "f\"{info['cpu_threads']} CPU threads\")"),
        ("md", "## A local cluster\n\nTwo worker processes of one thread each. The dashboard link shows the "
               "task stream while the cells below run."),
        ("code", "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host=\"127.0.0.1\",\n"
                 "                       dashboard_address=None if SMALL else \":0\", silence_logs=40)\n"
                 "client = Client(cluster)\n"
                 "print(\"workers:\", len(client.scheduler_info()[\"workers\"]), \"| dashboard:\", client.dashboard_link)"),
        ("md", "## A histogram of text\n\nThe text of notebook 2, tiled into a chunked array of bytes. The text "
               "goes to the cluster once (`client.scatter`) and every chunk refers to it: `da.from_array` of an "
               "array in this process would carry the data inside each task graph it is part of, which dask warns "
               "about (\"Sending large graph\") and sends again with every computation. `cd.histogram` needs the "
               "bins before reading the data, as `dask.array.histogram` does: a count and a range."),
        ("code", "base, source = shakespeare(with_source=True)\n"
                 f"reps = 4 if SMALL else {TILES}\n"
                 "one = da.from_delayed(client.scatter(base), shape=base.shape, dtype=base.dtype)  # on a worker, once\n"
                 "text = da.concatenate([one] * reps)  # reps chunks, each that one copy\n"
                 "hist, edges = cd.histogram(text, bins=128, range=(0, 128))\n"
                 "counts = hist.compute()\n"
                 "want = np.histogram(base, 128, (0, 128))[0] * reps\n"
                 "print(f\"{text.nbytes / 1e6:.0f} MB ({reps} x {base.nbytes / 1e6:.1f} MB of {source}) in \"\n"
                 "      f\"{text.npartitions} chunks; matches NumPy: {np.array_equal(counts, want)}; \"\n"
                 "      f\"most common: {[chr(c) for c in np.argsort(counts)[::-1][:5]]}\")"),
        ("md", "## An exact sum, for any chunking\n\nValues over sixty decades with cancellation. dask's own sum "
               "depends on the chunking; `method=\"exact\"` gives `math.fsum`'s answer for every one."),
        ("code", "rng = np.random.default_rng(0)\n"
                 "n = 1 << (18 if SMALL else 24)\n"
                 "v = rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)\n"
                 "exact = math.fsum(v)\n"
                 "whole = da.from_delayed(client.scatter(v), shape=v.shape, dtype=v.dtype)  # sent once, as the text\n"
                 "for chunks in (n // 4, n // 7, 100_000):\n"
                 "    x = whole.rechunk(chunks)\n"
                 "    ours = cd.sum(x, method=\"exact\").compute()\n"
                 "    theirs = x.sum().compute()\n"
                 "    print(f\"{x.npartitions:4d} chunks: cuatomic exact {ours!r:>26}  dask {theirs!r:>26}  \"\n"
                 "          f\"exact == fsum: {ours == exact}\")"),
        ("md", "## One worker against two\n\nThe same exact sum and histogram on one worker of the cluster, "
               "then on both (median of 3): the data are persisted on the workers that compute, and the tasks are "
               "held to them (`workers=`), so nothing moves between workers while the clock runs. The cluster is "
               "never scaled down, which keeps its shutdown clean. On the 2-core CI machine the second worker has "
               "a core of its own; the gain is bounded by the cores."),
        ("code", "def timed(fn, repeat=3):\n"
                 "    ts = []\n"
                 "    for _ in range(repeat):\n"
                 "        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)\n"
                 "    return sorted(ts)[len(ts) // 2]\n\n"
                 "def on(workers):\n"
                 "    xs, ts = client.persist([whole.rechunk(n // 8), text], workers=workers)\n"
                 "    wait([xs, ts])\n"
                 "    run = lambda c: client.compute(c, workers=workers).result()\n"
                 "    return (timed(lambda: run(cd.sum(xs, method=\"exact\"))),\n"
                 "            timed(lambda: run(cd.histogram(ts, 128, (0, 128))[0])))\n\n"
                 "addresses = sorted(client.scheduler_info()[\"workers\"])\n"
                 "rows = {1: on(addresses[:1]), 2: on(addresses)}\n"
                 "for workers, (s, h) in rows.items():\n"
                 "    print(f\"{workers} worker(s): exact sum {s * 1e3:8.1f} ms   histogram {h * 1e3:8.1f} ms\")\n"
                 "print(f\"two vs one: exact sum {rows[1][0] / rows[2][0]:.2f}x, histogram {rows[1][1] / rows[2][1]:.2f}x\")"),
        ("code", "client.close()\ncluster.close()"),
    ],
}


NOTEBOOKS["7_scatter.ipynb"] = [
    ("md", "# 7. Scatter: many updates into a large output\n\nThe lessons so far reduced many values into one, "
           "or into a few bins. The atomics' everyday job is the other one: `np.add.at(a, indices, b)` -- PyTorch's "
           "`index_add_`, JAX's `.at[].add`, embedding gradients, graph messages -- where each of many updates "
           "names one element of a large output. This notebook shows the race on a shared output, the atomics that "
           "fix it, the contention cliff (time against the number of outputs and their skew, for each rung of "
           "`cuatomic.at`'s ladder), and determinism: float atomics add in the order the updates arrive, and the "
           "exact rungs do not depend on it."),
    ("code", SETUP),
    ("md", "## The race on a shared output\n\n`a[indices] += 1` reads every element once and writes it once: an "
           "index that appears twice is counted once -- the tutorial's lost update, made by NumPy's buffering "
           "instead of threads. `np.add.at` applies every update, one after another; `cuatomic.at` applies them "
           "from many threads at once, each with an atomic."),
    ("code", "rng = np.random.default_rng(0)\n"
             "indices = rng.integers(0, 10, 1000)\n"
             "a = np.zeros(10, np.int64)\n"
             "a[indices] += 1\n"
             "print(\"a[indices] += 1:  \", a, \"total\", a.sum())\n"
             "b = np.zeros(10, np.int64)\n"
             "np.add.at(b, indices, 1)\n"
             "print(\"np.add.at:        \", b, \"total\", b.sum())\n"
             "c = np.zeros(10, np.int64)\n"
             "cuatomic.add_at(c, indices, 1)\n"
             "print(\"cuatomic.add_at:  \", c, \"total\", c.sum(), \"| ran\", cuatomic.last_launch()[\"method\"])"),
    ("md", "## The ladder\n\nEach rung is one idea; `explain` says which one `auto` runs and why."),
    ("code", "for name, step, summary in cuatomic.methods(\"at\"):\n"
             "    print(f\"{step}. {name:16s} {summary}\")\n"
             "print()\n"
             "print(cuatomic.explain(\"at\", np.zeros(100, np.float32), indices % 100, np.ones(1000, np.float32)))"),
    ("md", "## The contention cliff\n\n2^20 float32 updates into m outputs, uniformly (each output gets n/m "
           "updates) and Zipf(1.2)-distributed (a few outputs get most of them). One atomic per update is fast "
           "while the updates spread out and serializes as they crowd onto a few elements; aggregating a warp's "
           "equal indices, privatizing the output in shared memory, and the exact rungs' integer accumulators "
           "change where the cliff is. On a GPU, PyTorch's `index_add_` and CuPy's `add.at` are measured beside "
           "them where installed."),
    ("code", "n = 1 << (16 if SMALL else 20)\n"
             "outputs = [1, 16, 256, 4096, 65536] + ([] if SMALL else [1 << 20])\n"
             "values = rng.standard_normal(n).astype(np.float32)\n"
             "rungs = [name for name, _, _ in cuatomic.methods(\"at\") if name != \"cas\"]\n"
             "on_gpu = info[\"default_backend\"] == \"cuda\"\n"
             "d_values = cuatomic.to_device(values)\n"
             "\n"
             "def peers(idx, m):\n"
             "    found = {}\n"
             "    if not on_gpu:\n"
             "        return found\n"
             "    try:\n"
             "        import torch\n"
             "        ti, tv = torch.as_tensor(idx, device=\"cuda\"), torch.as_tensor(values, device=\"cuda\")\n"
             "        out = torch.zeros(m, device=\"cuda\")\n"
             "        found[\"torch index_add_\"] = lambda: out.index_add_(0, ti, tv)\n"
             "    except ImportError:\n"
             "        pass\n"
             "    try:\n"
             "        import cupy as cp\n"
             "        ci, cv, co = cp.asarray(idx), cp.asarray(values), cp.zeros(m, cp.float32)\n"
             "        found[\"cupy add.at\"] = lambda: cp.add.at(co, ci, cv)\n"
             "    except ImportError:\n"
             "        pass\n"
             "    return found\n"
             "\n"
             "times = {}\n"
             "for kind in (\"uniform\", \"zipf\"):\n"
             "    for m in outputs:\n"
             "        idx = rng.integers(0, m, n) if kind == \"uniform\" else (rng.zipf(1.2, n) - 1) % m\n"
             "        d_idx = cuatomic.to_device(idx)\n"
             "        out = cuatomic.to_device(np.zeros(m, np.float32))\n"
             "        calls = {name: (lambda name=name: cuatomic.at(out, d_idx, d_values, method=name)) for name in rungs}\n"
             "        calls.update(peers(idx, m))\n"
             "        for name, call in calls.items():\n"
             "            try:\n"
             "                t = cuatomic.benchmark(call, repeat=3, warmup=1).median\n"
             "            except ValueError:  # the rung's limits (shared: the output must fit)\n"
             "                continue\n"
             "            times.setdefault((kind, name), []).append((m, t))\n"
             "\n"
             "fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)\n"
             "for ax, kind in zip(axes, (\"uniform\", \"zipf\")):\n"
             "    for (k, name), points in times.items():\n"
             "        if k == kind:\n"
             "            ax.plot(*zip(*points), marker=\"o\", label=name)\n"
             "    ax.set_xscale(\"log\"); ax.set_yscale(\"log\")\n"
             "    ax.set_xlabel(\"outputs m\"); ax.set_title(f\"{n:,} float32 updates, {kind}\")\n"
             "axes[0].set_ylabel(\"ms per call\"); axes[1].legend(fontsize=8)\n"
             "plt.tight_layout(); plt.show()"),
    ("md", "## Determinism\n\nThe same float32 scatter five times from the same start. Rungs that add floats "
           "atomically give a sum that depends on the order the updates arrive in, so the bits can change from "
           "run to run (more so on a GPU's thousands of threads than on a CPU's few); the exact rungs sum every "
           "element in a fixed-point integer and round once, which no order changes."),
    ("code", "m, k = 100, 1 << 16\n"
             "idx = rng.integers(0, m, k)\n"
             "vals = (rng.standard_normal(k) * 10.0 ** rng.integers(-4, 4, k)).astype(np.float32)\n"
             "d_idx, d_vals = cuatomic.to_device(idx), cuatomic.to_device(vals)\n"
             "for name in rungs:\n"
             "    results = set()\n"
             "    for _ in range(5):\n"
             "        out = cuatomic.to_device(np.zeros(m, np.float32))\n"
             "        cuatomic.at(out, d_idx, d_vals, method=name)\n"
             "        host = out.copy_to_host() if hasattr(out, \"copy_to_host\") else out\n"
             "        results.add(host.tobytes())\n"
             "    print(f\"{name:16s} {len(results)} distinct result(s) in 5 runs\")"),
    ("md", "## Accuracy\n\nAgainst the exact sum of each element's updates (`fractions.Fraction`): NumPy's "
           "sequential `np.add.at` rounds after every update; the exact rungs round once."),
    ("code", "from fractions import Fraction\n"
             "ref = np.zeros(m, np.float32)\n"
             "np.add.at(ref, idx, vals)\n"
             "ours = np.zeros(m, np.float32)\n"
             "cuatomic.at(ours, idx, vals)\n"
             "exact = [sum((Fraction(float(v)) for v in vals[idx == e]), Fraction(0)) for e in range(m)]\n"
             "err = lambda got: [abs(Fraction(float(g)) - x) for g, x in zip(got, exact)]\n"
             "e_np, e_ours = err(ref), err(ours)\n"
             "print(f\"elements where NumPy's loop is off the correctly rounded sum: {sum(a > b for a, b in zip(e_np, e_ours))} of {m}\")\n"
             "print(f\"largest error: np.add.at {float(max(e_np)):.3g}, cuatomic.at (auto) {float(max(e_ours)):.3g}\")\n"
             "print(\"never worse than NumPy:\", all(b <= a for a, b in zip(e_np, e_ours)))"),
]


def main():
    HERE.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        (kind, first), rest = cells[0], cells[1:]
        assert kind == "md", name
        cells = [(kind, f"{first}\n\n{needs(name)}"), *rest]
        nb = new_notebook(cells=[new_markdown_cell(src) if kind == "md" else new_code_cell(src)
                                 for kind, src in cells])
        for i, cell in enumerate(nb.cells):  # stable ids: regenerating changes only what changed
            cell.id = f"{name[:1]}-{i:02d}"
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
