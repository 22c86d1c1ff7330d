import subprocess
import sys
import time

import pytest
from conftest import BACKENDS

import cuatomic


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("blocks,threads", [(10, 16), (1, 1), (3, 1024), (257, 33), (64, 256)])
def test_add_one(backend, blocks, threads):
    total = blocks * threads
    assert cuatomic.add_one(blocks, threads, method="atomic", backend=backend) == total
    assert cuatomic.add_one(blocks, threads, method="mutex", backend=backend) == total
    racy = cuatomic.add_one(blocks, threads, method="racy", backend=backend)
    assert 1 <= racy <= total
    assert cuatomic.add_one(blocks, threads, backend=backend) == total  # auto is atomic


@pytest.mark.parametrize("backend", BACKENDS)
# Every thread passes the lock one at a time: on a GPU that costs microseconds per thread
# (the tutorial's 264 x 256 took seconds), so the grids stay moderate.
@pytest.mark.parametrize("blocks,threads", [(10, 16), (1, 1), (40, 128), (64, 256)])
def test_mutex_add_one(backend, blocks, threads):
    assert cuatomic.mutex_add_one(blocks, threads, backend=backend) == blocks * threads
    assert cuatomic.mutex_add_one(blocks, threads, method="auto", backend=backend) == blocks * threads


def test_tutorial_defaults():
    assert cuatomic.mutex_add_one() == 160
    assert cuatomic.add_one(method="mutex") == 160


@pytest.mark.parametrize("backend", BACKENDS)
def test_racy_loses_updates_at_the_tutorial_size(backend):
    """The lesson: at the README's 64 x 256 the unprotected increment loses
    updates observably, on both backends. On a GPU a call may by chance
    lose none, so it is called until it loses one, at most 50 times; atomic
    and mutex never lose one."""
    if backend == "cpu" and cuatomic.backend_info()["cpu_threads"] < 2:
        pytest.skip("one OpenMP thread cannot race")
    total = 64 * 256
    got = []
    while len(got) < 50 and (not got or got[-1] == total):  # stop at the first loss
        got.append(cuatomic.add_one(64, 256, method="racy", backend=backend))
    assert all(1 <= g <= total for g in got), got
    assert got[-1] < total, f"no update lost in {len(got)} calls of add_one(64, 256, method='racy')"
    assert cuatomic.add_one(64, 256, method="mutex", backend=backend) == total
    assert cuatomic.add_one(64, 256, method="atomic", backend=backend) == total


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "one core busy"])
def test_cpu_racy_loses_updates_in_every_call_even_on_a_busy_machine(busy):
    """Issue 25: on a 2-core machine with one core taken, the cpu's racy rung
    lost no update in most calls (the two threads took turns on the free
    core instead of overlapping). Calls must lose some, at the
    tutorial's 10 x 16 and the README's 64 x 256, with or without another
    process spinning on one core -- by a real race: the whole team runs
    the grid, and each thread's plain load/store windows span long enough
    that the OS interleaves the threads."""
    if cuatomic.backend_info()["cpu_threads"] < 2:
        pytest.skip("one OpenMP thread cannot race")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        if spinner:
            time.sleep(0.3)  # spinning before the first call
        for blocks, threads in [(10, 16), (64, 256)]:
            # Nearly every call loses some; one that lost none was seen once (CI, 64 x 256, a core
            # busy: the OS ran the two threads one after the other), so a loss within 5 calls.
            got = []
            while len(got) < 5 and (not got or got[-1] == blocks * threads):
                got.append(cuatomic.add_one(blocks, threads, method="racy", backend="cpu"))
                assert cuatomic.last_launch()["cpu_threads"] >= 2
            assert all(1 <= g <= blocks * threads for g in got), (blocks, threads, got)
            assert got[-1] < blocks * threads, (blocks, threads, got)
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
