"""GPU memory: cuatomic's own pool, what it reports, and what it gives back.

The tests that take most of a GPU's memory (`big`) run only where
CUATOMIC_MEMORY_TESTS=1 says the GPU is this process's alone (the device
check runs them by themselves, after the suite): beside other test workers
their "free before" would be a guess.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cuatomic
from conftest import CUDA, requires_cuda

big = pytest.mark.skipif(os.environ.get("CUATOMIC_MEMORY_TESTS") != "1",
                         reason="takes most of the GPU's memory: set CUATOMIC_MEMORY_TESTS=1 on a GPU of its own")
GPU_KEYS = {"in_use", "cached", "cache_limit", "pinned_host"}
KEYS = GPU_KEYS | {"host_cached", "host_cache_limit"}


def test_memory_info_has_its_keys_and_free_memory_answers():
    info = cuatomic.memory_info()
    assert set(info) == KEYS
    assert all(isinstance(v, int) and v >= 0 for v in info.values())
    assert cuatomic.free_memory() is None
    if not CUDA:
        assert {k: info[k] for k in GPU_KEYS} == dict.fromkeys(GPU_KEYS, 0)


def _host_cache_child(env, code):
    """`code` run in a fresh interpreter (the cache's limit is read once a
    process) with `env` added; its stdout."""
    out = subprocess.run([sys.executable, "-c", "import numpy as np, cuatomic\n" + code], capture_output=True,
                         text=True, timeout=300, env={**os.environ, **env},
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(cuatomic.__file__))))
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_host_scratch_is_kept_bounded_and_given_back():
    """A cpu unique large enough to partition (2^20 int32 keys, 200,000
    distinct) keeps its scratch for the next call, within the limit; the
    next call's answer is still NumPy's; free_memory() gives it all back;
    a limit of 0 keeps nothing, and a limit below the scratch keeps at most
    the limit."""
    code = ("x = (np.random.default_rng(1).integers(0, 200_000, 1 << 20) * 2654435761 % (1 << 31)).astype(np.int32)\n"
            "want = np.unique(x, return_counts=True)\n"
            "for _ in range(2):\n"
            "    got = cuatomic.unique(x, return_counts=True, method='vector', backend='cpu')\n"
            "    assert all(np.array_equal(g, w) for g, w in zip(got, want))\n"
            "    i = cuatomic.memory_info()\n"
            "    print(i['host_cached'], i['host_cache_limit'])\n"
            "cuatomic.free_memory()\n"
            "print(cuatomic.memory_info()['host_cached'])\n")
    lines = _host_cache_child({}, code).split()
    kept, limit, kept2, limit2, after = (int(v) for v in lines)
    assert 4 << 20 <= kept <= limit and kept2 <= limit2 == limit  # the 4 MiB of keys' pages at least
    assert after == 0
    lines = _host_cache_child({"CUATOMIC_HOST_CACHE_BYTES": "0"}, code).split()
    assert [int(v) for v in lines] == [0, 0, 0, 0, 0]
    lines = _host_cache_child({"CUATOMIC_HOST_CACHE_BYTES": str(3 << 20)}, code).split()
    kept, limit = int(lines[0]), int(lines[1])
    assert limit == 3 << 20 and kept <= limit


@pytest.mark.parametrize("value", ["1GiB", "-1", "1e9", " 5", "1" * 19])
def test_a_bad_host_cache_size_is_named(monkeypatch, value):
    monkeypatch.setenv("CUATOMIC_HOST_CACHE_BYTES", value)
    with pytest.raises(ValueError, match="CUATOMIC_HOST_CACHE_BYTES="):
        cuatomic.memory_info()
    with pytest.raises(ValueError, match="CUATOMIC_HOST_CACHE_BYTES="):
        cuatomic.unique(np.arange(10), backend="cpu")


@pytest.mark.parametrize("fn", [cuatomic.memory_info, cuatomic.free_memory])
@pytest.mark.parametrize("device, error", [(1.0, TypeError), ("0", TypeError), (True, TypeError),
                                           (-1, ValueError), (10**6, ValueError)])
def test_a_bad_device_is_refused(fn, device, error):
    with pytest.raises(error, match="device"):
        fn(device)


def _gpu():
    import cupy as cp
    return cp


def _free_bytes():
    free, _ = _gpu().cuda.runtime.memGetInfo()
    return free


_DEFAULT_POOL = """
import json, numpy as np, cupy as cp
rt = cp.cuda.runtime
pool = rt.deviceGetDefaultMemPool(0)
def read():
    return (rt.memPoolGetAttribute(pool, rt.cudaMemPoolAttrReleaseThreshold),
            rt.memPoolGetAttribute(pool, rt.cudaMemPoolAttrReservedMemCurrent))
before = read()                      # before cuatomic is imported, probed or used
import cuatomic
assert cuatomic.backends()[0] == "cuda"
x = np.arange(1 << 22, dtype=np.int32)
d = cuatomic.to_device(x)
assert int(cuatomic.sum(d)) == int(x.sum())
assert cuatomic.filter(x, ">", 5).size == x.size - 6
during = read()                      # a DeviceArray alive: not in the default pool
del d
print(json.dumps({"before": before, "during": during, "after": read()}))
"""


@requires_cuda
def test_the_default_pool_is_left_as_it_was():
    pytest.importorskip("cupy")
    out = subprocess.run([sys.executable, "-c", _DEFAULT_POOL], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(cuatomic.__file__))))
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["before"][0] == seen["during"][0] == seen["after"][0]  # the release threshold
    assert seen["during"][1] == seen["before"][1]  # nothing of cuatomic's reserved there


@requires_cuda
def test_memory_info_follows_a_device_array():
    cuatomic.free_memory()
    base = cuatomic.memory_info(0)
    nbytes = 64 << 20
    d = cuatomic.to_device(np.ones(nbytes // 4, np.int32), device=0)
    held = cuatomic.memory_info(0)
    assert held["in_use"] >= base["in_use"] + nbytes
    del d
    after = cuatomic.memory_info(0)
    assert after["in_use"] == base["in_use"]
    assert after["cached"] <= after["cache_limit"]
    cuatomic.free_memory(0)
    assert cuatomic.memory_info(0)["cached"] < (32 << 20)  # at most the slack of a chunk still in use


@requires_cuda
def test_the_cache_is_kept_while_more_than_the_limit_is_in_use():
    small = cuatomic.to_device(np.zeros(1), device=0)
    limit = cuatomic.memory_info(0)["cache_limit"]
    live = cuatomic.to_device(np.ones((limit + (64 << 20)) // 4, np.int32), device=0)  # in use: past the limit
    x = np.ones(64 << 18, np.int32)  # 64 MiB of host input, staged on the GPU and freed by each call
    for _ in range(3):
        assert int(cuatomic.sum(x, backend="cuda")) == x.size
    info = cuatomic.memory_info(0)
    assert info["in_use"] >= limit
    assert info["cached"] >= x.nbytes  # the staging copy stays cached for the next call
    del live, small


@requires_cuda
def test_a_result_larger_than_the_cache_goes_back_when_freed():
    small = cuatomic.to_device(np.zeros(1), device=0)  # the pool exists: its limit is known
    limit = cuatomic.memory_info(0)["cache_limit"]
    assert limit > 0
    del small
    n = (limit + (32 << 20)) // 4
    d = cuatomic.to_device(np.ones(n, np.int32), device=0)
    assert cuatomic.memory_info(0)["in_use"] >= 4 * n
    del d
    info = cuatomic.memory_info(0)
    assert info["cached"] <= info["cache_limit"]


def _big_result(cp, fraction, free_before):
    """A DeviceArray of `fraction` of the free bytes, made by cuatomic on the
    GPU (a filter that keeps every byte of a CuPy array, which is then
    given back to the driver)."""
    x = cp.ones(int(free_before * fraction), dtype=cp.uint8)
    d = cuatomic.filter(x, ">", 0)
    assert d.size == x.size
    del x
    cp.get_default_memory_pool().free_all_blocks()
    return d


@requires_cuda
@big
def test_after_del_peers_can_take_what_was_free():
    cp = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    cuatomic.free_memory()
    free_before = _free_bytes()
    d = _big_result(cp, 0.45, free_before)
    assert _free_bytes() < free_before * 0.6
    del d
    want = int(free_before * 0.8)
    x = cp.empty(want, dtype=cp.uint8)  # CuPy's own pool, from the driver
    del x
    cp.get_default_memory_pool().free_all_blocks()
    t = torch.empty(want, dtype=torch.uint8, device="cuda")
    del t
    torch.cuda.empty_cache()


@requires_cuda
@big
def test_a_large_host_filter_gives_its_memory_back():
    cuatomic.free_memory()
    free_before = _free_bytes()
    x = np.arange(3 << 28, dtype=np.int32) % 100  # 3 GiB
    kept = cuatomic.filter(x, ">", 49, backend="cuda")
    assert kept.size == np.count_nonzero(x > 49) and kept.dtype == x.dtype
    info = cuatomic.memory_info(0)
    assert info["cached"] <= info["cache_limit"]
    assert _free_bytes() >= free_before - info["cache_limit"] - (64 << 20)


@requires_cuda
@big
def test_a_second_process_starts_after_del():
    cp = pytest.importorskip("cupy")
    cuatomic.free_memory()
    free_before = _free_bytes()
    d = _big_result(cp, 0.45, free_before)
    del d
    code = ("import numpy as np, cupy as cp, cuatomic\n"
            f"x = cp.empty({int(free_before * 0.8)}, dtype=cp.uint8)\n"
            "print(int(cuatomic.sum(np.arange(1000, dtype=np.int32), backend='cuda')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                     cwd=os.path.dirname(os.path.dirname(os.path.abspath(cuatomic.__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "499500"


@requires_cuda
@pytest.mark.parametrize("value", ["1GiB", "-1", "1e9", " 5", "1" * 19])
def test_a_bad_cache_size_is_named(monkeypatch, value):
    monkeypatch.setenv("CUATOMIC_CACHE_BYTES", value)
    with pytest.raises(ValueError, match="CUATOMIC_CACHE_BYTES="):
        cuatomic.to_device(np.arange(10), backend="cuda")
    assert cuatomic.sum(np.arange(10), backend="cpu") == 45  # the cpu backend has no pool to size
