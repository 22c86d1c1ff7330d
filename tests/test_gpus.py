"""Arrays on any visible GPU are computed on that GPU.

Every call runs where its device input lives, leaves the caller's current
GPU as it found it, and returns device results on the input's GPU. The
tests that need two GPUs skip on machines with fewer; the argument checks
run everywhere."""
import math
import threading

import numpy as np
import pytest

import cuatomic
from cuatomic import _C
from cuatomic._interop import current_gpu
from conftest import CUDA, DLOnly, requires_cuda

GPUS = _C.devices()[0] if CUDA else 0
two_gpus = pytest.mark.skipif(GPUS < 2, reason=f"needs two GPUs (this process sees {GPUS})")


def current():
    return _C.devices()[1]


def test_to_device_checks_its_device_argument():
    with pytest.raises(TypeError, match="device must be an int"):
        cuatomic.to_device(np.arange(3), device=True)
    with pytest.raises(TypeError, match="device must be an int"):
        cuatomic.to_device(np.arange(3), device="0")
    with pytest.raises(ValueError, match="names a GPU, but the backend is 'cpu'"):
        cuatomic.to_device(np.arange(3), backend="cpu", device=0)


@requires_cuda
def test_device_arrays_say_where_they_are():
    here = current()
    x = cuatomic.to_device(np.arange(10, dtype=np.int32), device=here)
    assert x.device == here
    assert x.__dlpack_device__() == (2, here)
    assert cuatomic.histogram(x, 4, (0, 10))[0].device == here
    with pytest.raises(ValueError, match="no GPU -1"):
        cuatomic.to_device(np.arange(3), device=-1)
    with pytest.raises(cuatomic.CudaError, match="cudaErrorInvalidDevice"):
        cuatomic.to_device(np.arange(3), device=GPUS)
    assert current() == here  # a refused device changed nothing


def _numpy_answers(x, w, k):
    """Answers with one right value each: integers, and a correctly rounded float sum."""
    return {
        "sum": np.sum(x, dtype=np.int64),
        "dot": np.dot(k, k),
        "histogram": np.histogram(x, 16, (0, 1000))[0],
        "weighted": np.histogram(x, 16, (0, 1000), weights=k)[0],
        "bincount": np.bincount(x),
        "filter": x[x >= 500],
        "max": x.max(),
        "exact": np.float64(math.fsum(w)),
    }


def _cuatomic_answers(x, w, k):
    """The same calls on device arrays (x int32, w float64, k int64)."""
    return {
        "sum": cuatomic.sum(x),
        "dot": cuatomic.dot(k, k),
        "histogram": cuatomic.histogram(x, 16, (0, 1000))[0],
        "weighted": cuatomic.histogram(x, 16, (0, 1000), weights=k)[0],
        "bincount": cuatomic.bincount(x),
        "filter": cuatomic.filter(x, ">=", 500),
        "max": cuatomic.max(x),
        "exact": cuatomic.sum(w, method="exact"),
    }


def _host(v):
    return v.copy_to_host() if isinstance(v, cuatomic.DeviceArray) else v


def _data(seed=0, n=100_003):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, n, dtype=np.int32)
    w = rng.standard_normal(n)
    return x, w


@two_gpus
@pytest.mark.parametrize("gpu", [0, 1])
@pytest.mark.parametrize("caller", [0, 1])
def test_every_call_runs_on_its_inputs_gpu(gpu, caller):
    x, w = _data(gpu)
    k = (x % 7 - 3).astype(np.int64)
    dx, dw, dk = (cuatomic.to_device(v, device=gpu) for v in (x, w, k))
    expected = _numpy_answers(x, w, k)
    with current_gpu(caller):
        for _ in range(2):  # the second call takes the plans the first left
            got = _cuatomic_answers(dx, dw, dk)
            assert current() == caller, "a call changed the caller's current GPU"
            assert cuatomic.explain("sum", dx).facts["n"] == x.size
            for name, value in got.items():
                if isinstance(value, cuatomic.DeviceArray):
                    assert value.device == gpu, f"{name}'s result is on GPU {value.device}, its input on {gpu}"
                np.testing.assert_array_equal(_host(value), expected[name], err_msg=name)
        # host input runs on the current GPU
        assert cuatomic.sum(x) == expected["sum"]
        assert cuatomic.histogram(x, 16, (0, 1000))[0].tolist() == expected["histogram"].tolist()


@two_gpus
def test_inputs_on_two_gpus_are_refused():
    a = cuatomic.to_device(np.ones(10), device=0)
    b = cuatomic.to_device(np.ones(10), device=1)
    with current_gpu(0):
        with pytest.raises(ValueError, match="lives on GPU 1 and the call's other input on GPU 0"):
            cuatomic.dot(a, b)
        assert current() == 0
    with current_gpu(1):
        with pytest.raises(ValueError, match="GPU 0 and the call's other input on GPU 1|lives on GPU 1 and"):
            cuatomic.histogram(b, 4, (0, 2), weights=a)
        assert current() == 1


@two_gpus
def test_device_array_methods_work_from_any_gpu():
    x = np.arange(1000, dtype=np.float32)
    with current_gpu(0):
        d = cuatomic.to_device(x, device=1)
        assert d.device == 1 and current() == 0
        np.testing.assert_array_equal(d.copy_to_host(), x)
        moved = cuatomic.to_device(d, device=0)
        assert moved.device == 0
        np.testing.assert_array_equal(moved.copy_to_host(), x)
        assert cuatomic.to_device(d, device=1) is d
        del d, moved  # freed on their own GPUs
        assert current() == 0


@two_gpus
def test_the_mutex_and_large_host_inputs_on_each_gpu():
    big = np.arange(3 * (64 << 20) // 4 + 5, dtype=np.int32)  # past two pipeline chunks
    for gpu in (0, 1, 0):
        with current_gpu(gpu):
            assert cuatomic.mutex_add_one(264, 256) == 264 * 256
            assert cuatomic.sum(big) == np.sum(big, dtype=np.int64)


@two_gpus
def test_two_threads_on_two_gpus():
    x, w = _data(3, 1 << 22)
    expected = np.histogram(x, 16, (0, 1000))[0]
    results, errors = {}, []

    def work(gpu):
        try:
            d = cuatomic.to_device(x, device=gpu)
            results[gpu] = [_host(cuatomic.histogram(d, 16, (0, 1000))[0]) for _ in range(20)]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(g,)) for g in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for gpu in (0, 1):
        for counts in results[gpu]:
            np.testing.assert_array_equal(counts, expected)


@two_gpus
def test_cupy_and_torch_arrays_on_another_gpu():
    x, w = _data(5)
    cp = pytest.importorskip("cupy")
    with cp.cuda.Device(1):
        cx = cp.asarray(x)
        strided = cp.asarray(np.repeat(x, 2))[::2]
    with current_gpu(0):
        for _ in range(2):
            assert cuatomic.sum(cx) == np.sum(x, dtype=np.int64)
            counts = cuatomic.histogram(cx, 16, (0, 1000))[0]
            assert counts.device == 1
            np.testing.assert_array_equal(counts.copy_to_host(), np.histogram(x, 16, (0, 1000))[0])
        assert cuatomic.sum(strided) == np.sum(x, dtype=np.int64)  # gathered on GPU 1
        assert current() == 0
    torch = pytest.importorskip("torch")
    t = torch.as_tensor(w, device="cuda:1")
    with current_gpu(0):
        assert cuatomic.sum(t, method="exact") == math.fsum(w)  # __cuda_array_interface__
        assert cuatomic.sum(DLOnly(t), method="exact") == math.fsum(w)
        assert current() == 0


@two_gpus
def test_dask_chunks_on_two_gpus_in_one_process():
    cp = pytest.importorskip("cupy")
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    import cuatomic.dask as cd
    x, w = _data(7, 400_000)
    w32 = w.astype(np.float32)
    parts, wparts, w32parts = [], [], []
    for i in range(8):  # chunks alternate between the GPUs
        piece = slice(i * 50_000, (i + 1) * 50_000)
        with cp.cuda.Device(i % 2):
            parts.append(da.from_array(cp.asarray(x[piece]), chunks=50_000, asarray=False))
            wparts.append(da.from_array(cp.asarray(w[piece]), chunks=50_000, asarray=False))
            w32parts.append(da.from_array(cp.asarray(w32[piece]), chunks=50_000, asarray=False))
    dx, dw, dw32 = da.concatenate(parts), da.concatenate(wparts), da.concatenate(w32parts)
    with dask.config.set(scheduler="threads"), current_gpu(0):
        np.testing.assert_array_equal(cd.histogram(dx, 16, (0, 1000))[0].compute(), np.histogram(x, 16, (0, 1000))[0])
        assert cd.sum(dx).compute() == np.sum(x, dtype=np.int64)
        assert cd.sum(dw, method="exact").compute() == math.fsum(w)
        # float32 chunks summed as float64: each converted on its own GPU first
        assert cd.sum(dw32, dtype=np.float64, method="exact").compute() == math.fsum(w32.astype(np.float64))
        assert current() == 0
