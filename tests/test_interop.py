"""Device arrays from and to CuPy, PyTorch and Numba (zero-copy), DLPack in
both versions, strided device input, and streams. The GPU tests skip where
CUDA or the library is missing."""
import numpy as np
import pytest
from conftest import CUDA, DLOnly, FakeCAI, make, requires_cuda

import cuatomic
from cuatomic._exact import float_result_ok
from cuatomic import _common, _interop


def test_stream_handles():
    assert _interop.stream_handle(None) == 0 and _interop.stream_handle(7) == 7

    class CupyLike:
        ptr = 1234

    class TorchLike:
        cuda_stream = 99

    assert _interop.stream_handle(CupyLike()) == 1234 and _interop.stream_handle(TorchLike()) == 99
    with pytest.raises(TypeError):
        _interop.stream_handle("default")
    with pytest.raises(TypeError):
        _interop.stream_handle(True)


def test_cpu_backend_refuses_device_arrays():
    class Fake:
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}
    with pytest.raises(TypeError, match="device array"):
        cuatomic.sum(Fake(), backend="cpu")
    if not CUDA:
        with pytest.raises(RuntimeError, match="not usable"):
            cuatomic.Stream()


def test_host_dlpack_input_is_read_as_numpy():
    a = make(np.int32, 1001)
    assert cuatomic.sum(DLOnly(a)) == np.sum(a)


@pytest.mark.parametrize("backend", cuatomic.backends())
@pytest.mark.parametrize("legacy", [False, True], ids=["versioned", "legacy"])
def test_to_device_reads_host_dlpack_as_the_calls_do(backend, legacy):
    # to_device of an object with only a host __dlpack__ used to give a 0-d
    # object array (np.asarray of the object) where sum read its elements.
    a = make(np.float32, 1001).reshape(7, 143)
    d = cuatomic.to_device(DLOnly(a, legacy=legacy), backend=backend)
    got = d.copy_to_host() if isinstance(d, cuatomic.DeviceArray) else d
    assert got.shape == a.shape and got.dtype == a.dtype and np.array_equal(got, a)
    assert cuatomic.sum(d, backend=backend) == cuatomic.sum(DLOnly(a), backend=backend) == cuatomic.sum(a,
                                                                                                   backend=backend)


def test_pinned_needs_cuda():
    if not CUDA:
        with pytest.raises(RuntimeError, match="not usable"):
            cuatomic.pinned_empty(10, np.float32)


# ---------------------------------------------------------------- cuda only

@requires_cuda
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32, np.float64])
def test_large_host_arrays_stream_in_chunks(monkeypatch, dtype):
    monkeypatch.setenv("CUATOMIC_PIPELINE_CHUNK", str(1 << 16))  # chunk 64 KiB: many chunks
    n = 1_000_003
    a, b = make(dtype, n, seed=11), make(dtype, n, seed=12)
    if np.dtype(dtype).kind == "f":
        # Chunk results combined on the host keep the accuracy rule.
        assert float_result_ok("sum", cuatomic.sum(a), a)
        assert float_result_ok("dot", cuatomic.dot(a, b), a, b)
        p = (1 + (a % 1) * 1e-6).astype(dtype)
        ref = np.prod(p.astype(np.float64))  # float32: exact to far below one float32 ulp
        tol = 2 * np.spacing(np.array(ref, dtype)) if dtype == np.float32 else 4 * np.sqrt(n) * 2**-52 * ref
        assert abs(float(cuatomic.prod(p)) - ref) <= tol
    else:
        assert cuatomic.sum(a) == np.sum(a) and cuatomic.prod(a | 1) == np.prod(a | 1)
        assert cuatomic.dot(a, b) == np.dot(a, b)
    for method in ("global", "shared"):
        hist, edges = cuatomic.histogram(a, bins=37, method=method)
        ref_hist, ref_edges = np.histogram(a, bins=37)
        np.testing.assert_array_equal(hist, ref_hist)
        np.testing.assert_array_equal(edges, ref_edges)


@requires_cuda
def test_pinned_arrays():
    from cuatomic import _C
    p = cuatomic.pinned_empty((100, 7), np.int32)
    assert isinstance(p, np.ndarray) and p.shape == (100, 7) and p.dtype == np.int32
    assert _C.pointer_info(p.ctypes.data)[0] == 1  # page-locked host memory
    p[...] = np.arange(700).reshape(100, 7)
    assert cuatomic.sum(p) == np.sum(p)
    q = cuatomic.pinned_array(np.arange(10, dtype=">f8"))
    assert q.dtype == np.float64 and cuatomic.sum(q) == 45.0
    assert cuatomic.pinned_empty(0).shape == (0,)


@requires_cuda
def test_cai_strided_masked_and_streams():
    a = make(np.float64, 30 * 40).reshape(30, 40)
    d = cuatomic.to_device(a, backend="cuda")
    # a transposed view through CAI strides: gathered on the device
    cai = dict(d.__cuda_array_interface__, shape=(40, 30), strides=(8, 40 * 8))
    t = FakeCAI(d, **cai)
    np.testing.assert_allclose(cuatomic.sum(t, backend="cuda"), a.T.sum())
    np.testing.assert_array_equal(cuatomic.filter(t, ">", 0, backend="cuda").copy_to_host(), a.T[a.T > 0])
    with pytest.raises(ValueError, match="mask"):
        cuatomic.sum(FakeCAI(d, mask=object()), backend="cuda")
    with pytest.raises(ValueError, match="stream 0"):
        cuatomic.sum(FakeCAI(d, stream=0), backend="cuda")
    s = cuatomic.Stream()
    np.testing.assert_allclose(cuatomic.sum(FakeCAI(d, stream=1), backend="cuda", stream=s), np.sum(a), rtol=1e-13)
    hist, _ = cuatomic.histogram(d, bins=5, backend="cuda", stream=s)
    np.testing.assert_array_equal(hist.copy_to_host(), np.histogram(a, bins=5)[0])
    with cuatomic.Timer(stream=s) as timer:
        cuatomic.dot(d.reshape(-1), d.reshape(-1), backend="cuda", stream=s)
    assert timer.elapsed >= 0
    s.synchronize()


@requires_cuda
def test_plain_cai_arrays_take_the_repeated_call_path(monkeypatch):
    """A plain __cuda_array_interface__ array (C-contiguous, no mask, no
    producer stream or the legacy one) is read by the plan caches' short
    path: repeated sum and histogram calls count each call's own data, and
    plans are kept for it. An array that is not plain takes the full path
    even once a plan exists: strided (gathered), masked or on stream 0
    (raised), on another stream (waited for)."""
    from cuatomic import _histogram, _reduce
    monkeypatch.setenv("CUATOMIC_BACKEND", "cuda")
    _histogram._PLANS.clear()
    _reduce._PLANS.clear()
    rng = np.random.default_rng(11)
    for n in (5000, 5000, 17, 0, 5000):
        a = rng.integers(0, 130, n, dtype=np.uint8)  # some past the range's top
        d = cuatomic.to_device(a)
        for producer in ({}, {"stream": 1}, {"stream": None}, {"version": 2}):
            t = FakeCAI(d, **producer)
            assert _interop.plain_cuda_array(t) == (d.ptr, n, "|u1", 1)
            hist, edges = cuatomic.histogram(t, 128, (0, 128))
            want = np.histogram(a, 128, (0, 128))
            np.testing.assert_array_equal(hist.copy_to_host(), want[0])
            np.testing.assert_array_equal(edges, want[1])
            assert cuatomic.sum(t) == np.sum(a)
    assert any(key[0] is FakeCAI for key in _histogram._PLANS._items)
    assert any(key[1] is FakeCAI for key in _reduce._PLANS)

    b = make(np.float64, 30 * 40).reshape(30, 40)
    d = cuatomic.to_device(b)
    for _ in range(2):  # the second call finds a plan for FakeCAI float64
        assert cuatomic.sum(FakeCAI(d)) == cuatomic.sum(FakeCAI(d), backend="cuda")  # short path == full path
        np.testing.assert_allclose(cuatomic.sum(FakeCAI(d)), b.sum(), rtol=1e-13)
        strided = FakeCAI(d, shape=(40, 30), strides=(8, 40 * 8))
        assert _interop.plain_cuda_array(strided) is None
        np.testing.assert_allclose(cuatomic.sum(strided), b.T.sum(), rtol=1e-13)
        hist, _ = cuatomic.histogram(strided, 7, (-3.0, 3.0))
        np.testing.assert_array_equal(hist.copy_to_host(), np.histogram(b.T, 7, (-3.0, 3.0))[0])
        with pytest.raises(ValueError, match="mask"):
            cuatomic.sum(FakeCAI(d, mask=object()))
        with pytest.raises(ValueError, match="stream 0"):
            cuatomic.histogram(FakeCAI(d, stream=0), 7, (-3.0, 3.0))
        s = cuatomic.Stream()
        on_stream = FakeCAI(d, stream=s.ptr)
        assert _interop.plain_cuda_array(on_stream) is None
        assert cuatomic.sum(on_stream) == cuatomic.sum(d)
    host = FakeCAI(d, data=(b.ctypes.data, False))  # a host pointer behind the interface
    with pytest.raises(TypeError, match="host memory"):
        cuatomic.sum(host)

@requires_cuda
def test_dlpack_roundtrip_own_arrays():
    a = make(np.int16, 5000)
    d = cuatomic.to_device(a, backend="cuda")
    for legacy in (False, True):
        assert cuatomic.sum(DLOnly(d, legacy=legacy), backend="cuda") == np.sum(a)
    np.testing.assert_array_equal(np.from_dlpack(d, device="cpu"), a)
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(1, 0), copy=False)


@requires_cuda
def test_cupy_zero_copy_both_ways():
    cp = pytest.importorskip("cupy")
    x = cp.arange(100_000, dtype=cp.int32) - 50_000
    assert _common.prepare(x, "cuda").x == x.data.ptr  # read in place
    assert cuatomic.sum(x) == int(x.sum())
    assert cuatomic.sum(x[::7]) == int(x[::7].sum())  # strided: gathered on the device
    hist, edges = cuatomic.histogram(x, bins=64)
    ref_hist, ref_edges = np.histogram(cp.asnumpy(x), bins=64)
    np.testing.assert_array_equal(cp.asarray(hist).get(), ref_hist)  # CuPy reads cuatomic's result
    np.testing.assert_array_equal(edges, ref_edges)
    kept = cuatomic.filter(x, ">=", 2)
    y = cp.asarray(kept)
    assert y.data.ptr == kept.ptr  # zero-copy
    np.testing.assert_array_equal(y.get(), cp.asnumpy(x)[cp.asnumpy(x) >= 2])
    z = cp.from_dlpack(kept)
    assert z.data.ptr == kept.ptr
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        w = x * 2
    assert cuatomic.sum(w, stream=s) == int(w.sum())
    assert cuatomic.dot(cp.ones(1000, cp.float32), cp.ones(1000, cp.float32), stream=s.ptr) == 1000


@requires_cuda
def test_torch_zero_copy_both_ways():
    torch = pytest.importorskip("torch")
    t = torch.arange(1, 10_001, device="cuda", dtype=torch.float64)
    assert cuatomic.sum(t) == float(t.sum())
    assert cuatomic.sum(DLOnly(t)) == float(t.sum())  # versioned DLPack when torch offers it
    assert cuatomic.sum(DLOnly(t, legacy=True)) == float(t.sum())
    assert cuatomic.sum(t[::3]) == float(t[::3].sum())
    kept = cuatomic.filter(t, "<", 100.5)
    u = torch.from_dlpack(kept)
    assert u.data_ptr() == kept.ptr and torch.equal(u, t[t < 100.5])
    v = torch.as_tensor(kept, device="cuda")
    assert v.data_ptr() == kept.ptr
    stream = torch.cuda.Stream()
    assert cuatomic.sum(t, stream=stream) == float(t.sum())


@requires_cuda
def test_numba_zero_copy_both_ways():
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack  # numba-cuda still looks it up under NumPy 2.5
    cuda = pytest.importorskip("numba.cuda")
    a = make(np.uint8, 10_000)
    nd = cuda.to_device(a)
    hist, _ = cuatomic.histogram(nd, bins=128, range=(0, 128))
    np.testing.assert_array_equal(hist.copy_to_host(), np.histogram(a, bins=128, range=(0, 128))[0])
    back = cuda.as_cuda_array(hist)
    assert back.__cuda_array_interface__["data"][0] == hist.ptr
    np.testing.assert_array_equal(back.copy_to_host(), hist.copy_to_host())
