"""One call of each top rung (and CUB) on benchmark-sized data, for Nsight
Compute: `ncu --section ... python tools/profile_kernels.py [what ...]`.
what: hist_text hist_uniform hist_small filter sum (default: all but hist_small)."""
import sys

import numpy as np

import cuatomic
from cuatomic import _C, _common, datasets

what = sys.argv[1:] or ["hist_text", "hist_uniform", "filter", "sum"]
if "hist_small" in what:  # the tutorial's size: kernel times only, which is what ncu reports
    d = cuatomic.to_device(datasets.text_to_array(datasets.english_like_text(5_700_000)))
    for m in ("warp_private", "thread_counters", "shared"):
        cuatomic.histogram(d, 128, (0, 128), method=m)
    _C.cub_histogram(d.ptr, d.size, _common.dtype_id(np.uint8), 128, 0, 128, None)
rng = np.random.default_rng(0)
if "hist_text" in what:
    text = np.resize(datasets.text_to_array(datasets.english_like_text(5_700_000)), 1 << 28)
    d = cuatomic.to_device(text)
    for m in ("warp_private", "thread_counters"):
        cuatomic.histogram(d, 128, (0, 128), method=m)
    _C.cub_histogram(d.ptr, d.size, _common.dtype_id(np.uint8), 128, 0, 128, None)
if "hist_uniform" in what:
    d = cuatomic.to_device(rng.integers(0, 256, 1 << 28, dtype=np.uint8))
    cuatomic.histogram(d, 128, (0, 128), method="warp_private")
if "filter" in what:
    x = cuatomic.to_device(rng.integers(-1000, 1000, 1 << 26, dtype=np.int32))
    cuatomic.filter(x, ">=", 2, method="lookback")
    out = cuatomic.DeviceArray.empty((1 << 26,), np.int32)
    _C.cub_select(x.ptr, 1 << 26, _common.dtype_id(np.int32), 2.0, out.ptr, None)
if "sum" in what:
    x = cuatomic.to_device(rng.integers(-1000, 1000, 1 << 28, dtype=np.int32))
    cuatomic.sum(x, method="vector")
print("profiled:", what)
