"""Write notebooks/*.ipynb (without outputs) from the cells below.

The notebooks narrate; the experiments live in cuatomic.figures, so a cell
is a call and a print or a plot. Run: python tools/make_notebooks.py
"""
import pathlib

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = pathlib.Path(__file__).resolve().parents[1] / "notebooks"

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
               "threads do, a few nanoseconds apart, so they would rarely interleave: there the window between "
               "the load and the store is widened on purpose (a few dozen pause instructions) and the threads "
               "start together, so the loss shows. Measured for `add_one(64, 256)` (16,384 increments): on a "
               "2-core machine 8,151 to 11,374 in 20 runs (about half lost: two threads overwriting each "
               "other); on an NVIDIA H200 1 or 2 in 20 runs (whole warps read the same value and write the same "
               "value + 1)."),
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
        ("code", "works = shakespeare()\n"
                 "if SMALL:\n    works = works[: 1 << 18]\n"
                 "print(f\"{works.nbytes:,} bytes\")\n"
                 "hist, _ = cuatomic.histogram(works, bins=128, range=(0, 128))\n"
                 "plots.letter_histogram(hist, kind=\"percent\", title=\"Shakespeare\");"),
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
}


def main():
    HERE.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(cells=[new_markdown_cell(src) if kind == "md" else new_code_cell(src)
                                 for kind, src in cells])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
