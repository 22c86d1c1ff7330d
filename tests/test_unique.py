"""unique and the array API's unique_* against NumPy: every backend x rung
(from the tables) x dtype, on data built so that a wrong table shows --
keys equal to the tables' empty mark (the types' largest values), the
other limits, NaNs of several payloads and both signs, -0.0 beside 0.0,
values repeated far apart (first indices), few and many distinct values
(tables that grow and are built again) -- with every return flag."""
import functools
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import BACKENDS, DTYPES, FakeCAI, host, placed, requires_cuda, where_params

import cuatomic
from cuatomic import _C, _backend
from cuatomic._dtypes import dtype_id

SIZES = [1, 2, 33, 257, 2000, 70_001]


def _spread(k):
    """Keys k (integers) spread over int32's range by a large odd multiplier,
    as int64: k * 2654435761 mod 2^31, less 2^30."""
    return np.asarray(k).astype(np.int64) * 2654435761 % (1 << 31) - (1 << 30)


@functools.lru_cache(maxsize=None)
def data(dtype, n, distinct, seed=0):
    """n elements of dtype with about `distinct` values, the dtype's limits
    planted (int64/uint64/int32/uint32 max are the tables' empty key), and
    for floats NaNs of other payloads and signs and -0.0 beside 0.0."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed + 7919 * n + 131 * dt.num + distinct)
    if dt.kind == "b":
        x = rng.random(n) < 0.3
    elif dt.kind == "f":
        x = (rng.integers(-distinct, distinct, n) / 8).astype(dt)
    else:
        info = np.iinfo(dt)
        lo, hi = max(info.min, -distinct), min(info.max, distinct)
        x = rng.integers(lo, hi, n, endpoint=True).astype(dt)
    if n >= 16 and dt.kind != "b":
        pos = rng.choice(n, 8, replace=False)
        if dt.kind == "f":
            bits = np.array([0x7FC00000, 0xFFC00001, 0x7F800001, 0xFFFFFFFF], np.uint32) if dt.itemsize == 4 else \
                np.array([0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF], np.uint64)
            x[pos[:4]] = bits.view(dt)
            x[pos[4]], x[pos[5]], x[pos[6]], x[pos[7]] = -0.0, 0.0, np.inf, -np.inf
        else:
            info = np.iinfo(dt)
            x[pos[:3]] = info.max
            x[pos[3:5]] = info.min
            x[pos[5]] = info.max - 1
    x.flags.writeable = False
    return x


def check_all(got, x, keep_shape=None):
    """got = unique(x, True, True, True) against NumPy's, value for value."""
    ev, ei, einv, ec = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    v, i, inv, c = (host(g) for g in got)
    assert v.dtype == x.dtype and i.dtype == np.intp and inv.dtype == np.intp and c.dtype == np.intp
    np.testing.assert_array_equal(v, ev)  # (NaN equal to NaN; -0.0 == 0.0)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(c, ec)
    assert inv.shape == einv.shape
    np.testing.assert_array_equal(inv, einv)


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("distinct", [3, 100_000])
def test_every_flag_against_numpy(backend, method, where, dtype, n, distinct):
    x = data(dtype, n, distinct)
    got = cuatomic.unique(placed(x, backend, where), return_index=True, return_inverse=True, return_counts=True,
                          method=method, backend=backend)
    assert cuatomic.last_launch()["method"] == method
    check_all(got, x)
    if where == "device":
        assert all(isinstance(g, cuatomic.DeviceArray) for g in got)


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint64, np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_unsorted_is_the_same_table(backend, method, where, dtype):
    """sorted=False: the values in any order, each with its own count and
    first index, and values[inverse] rebuilding the input."""
    x = data(dtype, 70_001, 5000)
    v, i, inv, c = (host(g) for g in cuatomic.unique(placed(x, backend, where), True, True, True, sorted=False,
                                                      method=method, backend=backend))
    ev, ei, ec = np.unique(x, return_index=True, return_counts=True)
    order = np.argsort(v, kind="stable")
    np.testing.assert_array_equal(v[order], ev)
    np.testing.assert_array_equal(i[order], ei)
    np.testing.assert_array_equal(c[order], ec)
    rebuilt = v[inv.reshape(-1)]
    np.testing.assert_array_equal(rebuilt, np.where(x == 0, np.zeros_like(x), x))  # (-0.0 comes back as 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nans_and_signed_zeros(backend, dtype):
    nan2 = np.array([0xFFC00001 if dtype == np.float32 else 0xFFF8000000000001], np.uint32 if dtype == np.float32
                    else np.uint64).view(dtype)[0]
    x = np.array([np.nan, 1.0, nan2, -0.0, 0.0, np.nan, -np.inf, 2.0, -0.0], dtype)
    for equal_nan in (True, False):
        got = cuatomic.unique(x, True, True, True, equal_nan=equal_nan, backend=backend)
        want = np.unique(x, True, True, True, equal_nan=equal_nan)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        assert not np.signbit(got[0][np.flatnonzero(got[0] == 0)]).any()  # one zero, +0.0
    assert cuatomic.unique(x, backend=backend).size == 5  # -inf, 0, 1, 2, nan


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
def test_edges(backend, method, where):
    run = functools.partial(cuatomic.unique, return_index=True, return_inverse=True, return_counts=True,
                            method=method, backend=backend)
    for x in (np.array([], np.int32), np.array([7], np.int64), np.full(5000, -3, np.int16),
              np.random.default_rng(1).permutation(300_000).astype(np.int64),  # all distinct: the tables grow
              np.full(1000, np.iinfo(np.int64).max), np.full(999, np.iinfo(np.uint32).max, np.uint32),
              np.array([np.iinfo(np.int32).max, 5, np.iinfo(np.int32).max], np.int32)):
        check_all(run(placed(x, backend, where)), x)


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
def test_tables_grow_and_rebuild(backend, method, where):
    """600,000 distinct keys: a one-table rung's first table (2^20 slots on
    a GPU, 2^14 on a CPU, half full at most) fills, is thrown away and built
    again larger -- and the counts are still exact."""
    k = 600_000
    x = np.repeat(np.arange(k, dtype=np.int32) * 7919, 2)
    np.random.default_rng(2).shuffle(x)
    rung = _backend.rung("unique", backend, method)
    src = cuatomic.to_device(x) if where == "device" else x
    values, index, counts, inverse, builds = _C.unique(
        backend=_backend.backend_id(backend), rung=rung.index, x=src.ptr if where == "device" else x, n=x.size,
        dtype=dtype_id(np.int32), want=_C.UNIQUE_SORTED | _C.UNIQUE_FIRST, blocks=-1, threads=-1,
        device_out=where == "device", stream=None)
    if method in ("global", "shared", "warp_aggregated"):
        assert builds > 1
    if where == "device":
        values = cuatomic.DeviceArray._vector(values, k, np.dtype(np.int32)).copy_to_host()
        counts = cuatomic.DeviceArray._vector(counts, k, np.dtype(np.intp)).copy_to_host()
    np.testing.assert_array_equal(values, np.unique(x))
    assert (counts == 2).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_array_api_functions(backend):
    x = data(np.float64, 2000, 40).reshape(40, 50)  # (four NaNs: each its own value here)
    for name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
        got = getattr(cuatomic, name)(x, backend=backend)
        if not hasattr(np, name):  # NumPy 1.26: the array API's definition
            want = {"unique_counts": ("values", "counts"), "unique_inverse": ("values", "inverse_indices"),
                    "unique_all": ("values", "indices", "inverse_indices", "counts")}.get(name)
            assert want is None or got._fields == want
            continue
        want = getattr(np, name)(x)
        if name == "unique_values":  # any order
            np.testing.assert_array_equal(np.sort(got), np.sort(want))
            continue
        assert type(got).__name__ == type(want).__name__ and got._fields == want._fields
        for field, g, w in zip(got._fields, got, want):
            if field != "inverse_indices":
                np.testing.assert_array_equal(g, w)
                continue
            # Which NaN gets which of the NaN values is NumPy's sort's (unstable without return_index):
            # the numbers' entries must agree, and the NaNs' be a permutation of the NaN values' ids.
            nan = np.isnan(x)
            np.testing.assert_array_equal(g[~nan], w[~nan])
            np.testing.assert_array_equal(np.sort(g[nan]), np.sort(w[nan]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_inverse_shape_is_numpys(backend):
    x = np.array([[3, 1], [1, 2]])
    assert cuatomic.unique(x, return_inverse=True, backend=backend)[1].shape == \
        np.unique(x, return_inverse=True)[1].shape
    assert cuatomic.unique_inverse(x, backend=backend).inverse_indices.shape == (2, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_refusals(backend):
    with pytest.raises(TypeError):
        cuatomic.unique(np.zeros(3, np.float16), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.unique(np.zeros(3, np.complex64), backend=backend)
    with pytest.raises(TypeError):
        cuatomic.unique(np.ma.masked_array([1, 2]), backend=backend)
    with pytest.raises(ValueError, match="method"):
        cuatomic.unique(np.zeros(3), method="nope", backend=backend)
    with pytest.raises(ValueError):
        cuatomic.unique(np.zeros(3), return_counts=np.zeros(2), backend=backend)
    with pytest.raises(ValueError):
        cuatomic.unique(np.zeros(3), threads=0, backend=backend)
    # strided, non-native byte order and 0-d input are read as NumPy reads them
    x = np.arange(20, dtype=">i4")[::3]
    np.testing.assert_array_equal(cuatomic.unique(x, backend=backend), np.unique(x))
    np.testing.assert_array_equal(cuatomic.unique(np.float32(2.5), backend=backend), np.unique(np.float32(2.5)))


def test_explain_and_methods():
    for be in BACKENDS:
        names = [m[0] for m in cuatomic.methods("unique", be)]
        assert names == ["sort", "global", "shared", "warp_aggregated", "vector"]
        choice = cuatomic.explain("unique", np.arange(10), backend=be)
        assert choice.op == "unique" and choice.method in names


def test_dask_unique_counts():
    da = pytest.importorskip("dask.array")
    import cuatomic.dask as cd
    x = data(np.float32, 70_001, 300).copy()
    x[::101] = np.nan
    got = cd.unique_counts(da.from_array(x, chunks=7_000), backend="cpu")
    want = np.unique(x, return_counts=True, equal_nan=False)
    np.testing.assert_array_equal(got.values.compute(), want[0])
    np.testing.assert_array_equal(got.counts.compute(), want[1])
    y = data(np.int64, 2000, 10)
    got = cd.unique_counts(da.from_array(y, chunks=333))
    np.testing.assert_array_equal(got.counts.compute(), np.unique(y, return_counts=True)[1])


@requires_cuda
def test_device_results_stay_on_the_device():
    x = cuatomic.to_device(data(np.int32, 70_001, 50))
    r = cuatomic.unique_all(x, backend="cuda")
    assert all(isinstance(g, cuatomic.DeviceArray) for g in r)
    assert r.inverse_indices.shape == x.shape


@pytest.mark.skipif(os.environ.get("CUATOMIC_SLOW") != "1", reason="slow: set CUATOMIC_SLOW=1 (2^31 + 7 int8 elements)")
@pytest.mark.parametrize("backend", BACKENDS)
def test_more_than_2_31_elements(backend):
    n = (1 << 31) + 7
    x = np.empty(n, np.int8)
    x[: n // 2] = 5
    x[n // 2:] = -3
    x[n - 1] = 127
    x[1000] = -128
    src = cuatomic.to_device(x) if backend == "cuda" else x
    v, i, c = (host(g) for g in cuatomic.unique(src, return_index=True, return_counts=True, backend=backend))
    np.testing.assert_array_equal(v, [-128, -3, 5, 127])
    np.testing.assert_array_equal(i, [1000, n // 2, 0, n - 1])
    np.testing.assert_array_equal(c, [1, n - n // 2 - 1, n // 2 - 1, 1])


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("return_index", [False, True])
def test_many_distinct_without_inverse(backend, method, where, dtype, return_index):
    """Many distinct values take the vector rungs' other path (a radix
    partition by hash into buckets counted in a block's shared memory or a
    thread's cache): values, counts and first indices as NumPy's, the tables' empty
    key included."""
    x = data(dtype, 200_003, 60_000)
    got = cuatomic.unique(placed(x, backend, where), return_index=return_index, return_counts=True, method=method,
                          backend=backend)
    want = np.unique(x, return_index=return_index, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("distinct", [1 << 21, 1 << 22])
@pytest.mark.parametrize("sort", [True, False])
def test_vector_many_buckets(backend, dtype, distinct, sort):
    """2^22 keys with 2^21 distinct values (each twice, far apart) or every
    key distinct: on a GPU the vector rung's partition into 2^10
    buckets (sized from its sketch of the distinct values), the empty key
    among them; counts, first indices and the order as NumPy's."""
    n = 1 << 22
    rng = np.random.default_rng(distinct)
    keys = _spread(rng.permutation(n)[:distinct])
    x = np.concatenate([keys, rng.permutation(keys)[:n - distinct]]).astype(dtype)
    if np.dtype(dtype).kind == "i":
        x[[5, n // 2, n - 3]] = np.iinfo(dtype).max
    v, i, c = (host(g) for g in cuatomic.unique(x, return_index=True, return_counts=True, sorted=sort,
                                                method="vector", backend=backend))
    ev, ei, ec = np.unique(x, return_index=True, return_counts=True)
    if not sort:
        assert np.unique(v).size == v.size
        order = np.argsort(v, kind="stable")
        v, i, c = v[order], i[order], c[order]
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(c, ec)


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float32,
                                   np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 2047, 2048, 2049, 3 * 4096 + 1, 100_003])
def test_counts_only_runs_across_tiles(backend, method, where, dtype, n):
    """Counts without first indices or the inverse (the GPU sort's runs,
    found in tiles of 512 vectors): runs of 1 to 5000 equal keys, so that
    runs start, end and cross tiles at every offset, the limits among
    them; values and counts as NumPy's, sorted."""
    rng = np.random.default_rng(n + 31 * np.dtype(dtype).num)
    base = data(dtype, max(n // 40, 16), 1000)
    x = np.repeat(base, rng.integers(1, 5000, base.size))[:n]
    x = rng.permutation(x) if n % 2 else x  # (sorted input too: the runs as given)
    v, c = cuatomic.unique(placed(x, backend, where), return_counts=True, method=method, backend=backend)
    ev, ec = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(c), ec)
    assert host(c).sum() == n


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("distinct,order", [(50_000, "shuffled"), (50_000, "sorted"), (5000, "shuffled")])
def test_vector_sample_then_table_or_partition(backend, distinct, order):
    """2^20 + 3 keys: the vector rung samples the input first (on a GPU).
    50,000 distinct values in random order show more than its first table
    takes (the partition at once); sorted, each sampled run of 64 keys shows
    a few values (the first table is built, overflows, and the partition
    follows); 5000 fit the first table. Every way, NumPy's values and
    counts, sorted and not. (Which way a call went is not observable here:
    the sample's effect is on time only.)"""
    n = (1 << 20) + 3
    rng = np.random.default_rng(distinct)
    x = _spread(rng.integers(0, distinct, n)).astype(np.int32)
    if order == "sorted":
        x.sort()
    ev, ec = np.unique(x, return_counts=True)
    for sort in (True, False):
        v, c = (host(g) for g in cuatomic.unique(x, return_counts=True, sorted=sort, method="vector",
                                                 backend=backend))
        if not sort:
            o = np.argsort(v)
            v, c = v[o], c[o]
        np.testing.assert_array_equal(v, ev)
        np.testing.assert_array_equal(c, ec)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_partition_strided_lists(backend):
    """More keys (9.5 M) than the GPU partition's lists hold where their
    buckets' keys start (1024 buckets of 9216 entries on Hopper): the lists
    are strided, each bucket's room what its largest table lists. 200,000
    distinct int32 values, with and without first indices, as NumPy's."""
    n = 9_500_000
    rng = np.random.default_rng(7)
    x = _spread(rng.integers(0, 200_000, n)).astype(np.int32)
    ev, ei, ec = np.unique(x, return_index=True, return_counts=True)
    v, c = (host(g) for g in cuatomic.unique(x, return_counts=True, method="vector", backend=backend))
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(c, ec)
    v, i, c = (host(g) for g in cuatomic.unique(x, return_index=True, return_counts=True, method="vector",
                                                backend=backend))
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(c, ec)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_vector_partition_hot_value(backend, dtype):
    """Three keys in four one value, the rest 40,000 others: 2^23 + 5 keys,
    one element into their buffer (on a GPU a device view off the 16-byte
    grid). The GPU partition's scatter gives each block about 32K keys on
    Hopper (264 blocks), so a block's first 16K-key tile (4-byte keys
    without first indices: two parts of 8K) is full and the hot value's
    bucket takes about 12K places in it, past one part's 8K. The key whose
    word marks an empty slot (int32's max; for float32 a NaN payload, one
    value with the other NaNs) and both zeros are among them. NumPy's
    values and counts."""
    n = (1 << 23) + 5
    rng = np.random.default_rng(11)
    pool = _spread(rng.integers(0, 40_000, n))
    x = np.where(rng.random(n) < 0.75, 12345, pool)
    if dtype == "float32":
        x = (x.astype(np.float64) / 7).astype(np.float32)
        x[::997] = -0.0
        x[::1009] = 0.0
        x[::1013] = np.uint32(0xFFFFFFFF).view(np.float32)  # (a NaN)
        x[::1019] = np.nan
    else:
        x = x.astype(np.int32)
        x[::1013] = np.iinfo(np.int32).max
    whole = np.concatenate([x[:1], x])
    if backend == "cuda":
        d = cuatomic.to_device(whole)
        cai = d.__cuda_array_interface__
        arg = FakeCAI(d, data=(cai["data"][0] + whole.itemsize, False), shape=(n,))
    else:
        arg = whole[1:]
    v, c = cuatomic.unique(arg, return_counts=True, method="vector", backend=backend)
    ev, ec = np.unique(x, return_counts=True, equal_nan=True)
    np.testing.assert_array_equal(host(v), ev)
    np.testing.assert_array_equal(host(c), ec)


def _digit_case(dtype, shape):
    """2^22 + 3 keys of about 300,000 distinct values (sorted output of the
    GPU partition: the distinct keys cut by digits of the sample's range
    into segments sorted each on its own, or the list sorted whole)."""
    n, d = (1 << 22) + 3, 300_000
    rng = np.random.default_rng(list(_DIGIT_SHAPES).index(shape) + 7 * np.dtype(dtype).num)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        lo, hi = (-1.0, 1.0) if shape == "outside" else (-1e6, 1e6)
        keys = rng.uniform(lo, hi, d).astype(dt)
        if shape == "clustered":  # (most keys in [0, 1): a few digits of the sample's wide range)
            keys = np.concatenate([rng.uniform(0, 1, d).astype(dt), rng.uniform(-1e30, 1e30, d // 100).astype(dt)])
        keys[:3] = [-0.0, 0.0, np.nan]
        x = keys[rng.integers(0, keys.size, n)]
        if shape == "outside":
            x[-3:] = [-np.inf, np.finfo(dt).max, np.nan]
        return x
    info = np.iinfo(dt)
    if shape == "uneven":  # digits of 1 to 2048 values, from the least word up (the sample holds both ends)
        u = np.dtype(f"u{dt.itemsize}")
        sizes = np.where(rng.random(4096) < 0.1, rng.integers(1500, 2049, 4096), rng.integers(1, 65, 4096))
        first = np.repeat(np.cumsum(sizes) - sizes, sizes)
        words = (np.repeat(np.arange(4096, dtype=u), sizes) << u.type(8 * dt.itemsize - 12)) \
            + (np.arange(sizes.sum()) - first).astype(u)
        keys = (words ^ u.type(1 << (8 * dt.itemsize - 1))).view(dt) if dt.kind == "i" else words
        x = keys[rng.integers(0, keys.size, n)]
        x[0], x[1] = keys[0], keys[-1]
        return x
    lo, hi = (int(info.min) // 2, int(info.max) // 2) if shape == "outside" else (int(info.min), int(info.max))
    keys = rng.integers(lo, hi, d, dtype=dt, endpoint=True)
    if shape == "clustered":
        keys = np.concatenate([rng.integers(0, d, d, dtype=dt), keys[: d // 100]])
    x = keys[rng.integers(0, keys.size, n)]
    if shape == "outside":  # (the last elements: past the sample's vectors)
        x[-3:] = [info.min, info.max - 1, info.max]
    return x


_DIGIT_SHAPES = ("uniform", "outside", "clustered", "uneven")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype,shape", [(d, s) for d in (np.int32, np.uint32, np.int64, np.uint64, np.float32,
                                                          np.float64)
                                         for s in _DIGIT_SHAPES if not (s == "uneven" and np.dtype(d).kind == "f")],
                         ids=lambda p: np.dtype(p).name if not isinstance(p, str) else p)
def test_vector_partition_sorted_digits(backend, dtype, shape):
    """Sorted output of many distinct values: on a GPU, digits linear in the
    value between the sample's least and greatest words cut the distinct
    keys into segments sorted each in one block. Keys spread evenly
    (short digits); the type's extremes, the empty word's key among them,
    in the last elements, which the sample does not read (the first and last
    digits take them); most values in a few digits of a wide range (too many
    for a segment: the list is sorted whole); integer digits of 1 to 2048
    values (a split of about 2048, segments up to a block's 4096 keys).
    Floats with both zeros, NaNs and the infinities (float64's samples hold
    a NaN: the range is the finite words'). Which way each case went was
    seen on the GPU with a profiler (the segments' kernel or CUB's sort),
    not here. On the CPU the same digits are the partition's buckets, each
    bucket's list sorted as it is made (clustered samples take the hash
    buckets and the finish's sort). Values, first indices, counts and the
    inverse as NumPy's."""
    x = _digit_case(dtype, shape)
    v, i, c = (host(g) for g in cuatomic.unique(x, return_index=True, return_counts=True, method="vector",
                                                backend=backend))
    ev, ei, ec = np.unique(x, return_index=True, return_counts=True)
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(c, ec)
    v, c = (host(g) for g in cuatomic.unique(x, return_counts=True, method="vector", backend=backend))
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(c, ec)
    v, inv = (host(g) for g in cuatomic.unique(x, return_inverse=True, method="vector", backend=backend))
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(v[inv.ravel()], x)


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("span", [2**32 - 2, 2**32 - 1, 2**33])
@pytest.mark.parametrize("at", ["least", "greatest", "middle"])
def test_vector_partition_narrowed_8_byte_keys(dtype, span, at):
    """The CPU partition holds 8-byte integers in 32 bits (their words above
    the least) where all lie within 2^32 - 1 of it: spans of 2^32 - 2 (the
    widest it narrows, the greatest key one below the 32-bit empty mark),
    2^32 - 1 and 2^33 (wide keys), placed at the type's least and greatest
    values (int64/uint64 max: the wide tables' empty key) and in the middle;
    the extremes planted past the sample's stride. Values, first indices,
    counts, the inverse and unsorted values as NumPy's."""
    info = np.iinfo(dtype)
    lo = {"least": int(info.min), "greatest": int(info.max) - span, "middle": int(info.min) // 2 + 12345}[at]
    rng = np.random.default_rng(span % 1000 + len(at))
    n = 300_001
    off = rng.integers(0, span, n, endpoint=True, dtype=np.uint64)
    x = (np.array(lo % 2**64, dtype=np.uint64) + off).view(dtype)
    x[-3:] = np.array([lo, lo + span, lo + span - 1], dtype=object).astype(dtype)
    ev, ei, einv, ec = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    v, i, inv, c = cuatomic.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                   method="vector", backend="cpu")
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(c, ec)
    np.testing.assert_array_equal(inv.ravel(), einv.ravel())
    v, c = cuatomic.unique(x, return_counts=True, method="vector", backend="cpu")
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(c, ec)
    v, c = cuatomic.unique(x, return_counts=True, sorted=False, method="vector", backend="cpu")
    order = np.argsort(v)
    np.testing.assert_array_equal(v[order], ev)
    np.testing.assert_array_equal(c[order], ec)


def _mix32(k):
    """murmur3's 32-bit finalizer on uint32 words (the GPU sample's hash)."""
    k = k.astype(np.uint64)
    k ^= k >> 16
    k = (k * 0x85EBCA6B) & 0xFFFFFFFF
    k ^= k >> 13
    k = (k * 0xC2B2AE35) & 0xFFFFFFFF
    return k ^ (k >> 16)


def _one_block_keys(count, seed):
    """`count` distinct int32 keys whose hashes all fall to the first of the
    GPU sample's blocks: the top 4 bits of the hash of each key's word (the
    int32 with its sign bit flipped) are 0."""
    rng = np.random.default_rng(seed)
    words = rng.choice(np.uint64(1) << np.uint64(32), 40 * count, replace=False).astype(np.uint32)
    words = words[_mix32(words) >> 28 == 0][:count]
    assert words.size == count
    return (words ^ np.uint32(0x80000000)).view(np.int32)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("distinct", [6000, 100_000])
def test_vector_sample_one_block_takes_all(backend, distinct):
    """2^20 + 3 keys whose hashes all fall to the first of the GPU sample's
    blocks: that block's table stops at half full (2048 entries and one more
    a thread at most), so its count comes short, never long, and the call
    neither hangs nor proves what is not so. 6000 values fit the rung's
    first table (2^14 slots, half full at most): the sample must not claim
    otherwise, and the first table is the one build (on the CPU too: its
    threads' tables hold them). 100,000 do not: the first table overflows
    and the partition takes them. NumPy's values and counts either way."""
    rng = np.random.default_rng(distinct)
    keys = _one_block_keys(distinct, 11)
    x = rng.permutation(np.concatenate([keys, rng.choice(keys, (1 << 20) + 3 - keys.size)]))
    rung = _backend.rung("unique", backend, "vector")
    values, _, counts, _, builds = _C.unique(
        backend=_backend.backend_id(backend), rung=rung.index, x=x, n=x.size, dtype=dtype_id(np.int32),
        want=_C.UNIQUE_SORTED, blocks=-1, threads=-1, device_out=False, stream=None)
    ev, ec = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(values, ev)
    np.testing.assert_array_equal(counts, ec)
    if distinct == 6000:
        assert builds == 1
    elif backend == "cuda":  # (the CPU's partition counts as its one build)
        assert builds > 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("first", [False, True])
def test_vector_sample_guesses_too_many(backend, first):
    """2^20 + 3 keys, all distinct: the GPU sample sees no value twice and
    guesses more values than the partition takes, so the call goes from the
    first table straight to the sort (with counts alone, the sort's runs:
    the launch record shows their 256-thread blocks, not the vector grid).
    A tiled input (copies of one order of 95,326 values, each value 10 or 11
    times) looks the same to the sample's runs and goes the same way. NumPy's values, first
    indices and counts, sorted and not, either way."""
    n = (1 << 20) + 3
    rng = np.random.default_rng(7)
    spread = _spread(rng.permutation(n)).astype(np.int32)
    tiled = np.tile(spread[: n // 11 + 1], 11)[:n]
    for x in (spread, tiled):
        ev, ei, ec = np.unique(x, return_index=True, return_counts=True)
        for sort in (True, False):
            got = cuatomic.unique(x, return_index=first, return_counts=True, sorted=sort, method="vector",
                                  backend=backend)
            v, c = host(got[0]), host(got[-1])
            if backend == "cuda" and not first and sort:
                assert cuatomic.last_launch()["threads"] == 256
            o = np.argsort(v)
            np.testing.assert_array_equal(v[o], ev)
            np.testing.assert_array_equal(c[o], ec)
            if first:
                np.testing.assert_array_equal(host(got[1])[o], ei)


@pytest.mark.parametrize("backend,method,where", where_params("unique"))
def test_bool_bytes_and_byte_order(backend, method, where):
    """Any nonzero byte of a bool is True (NumPy's reading); a big-endian
    array's values come back in its byte order, as NumPy's."""
    b = np.array([0, 2, 1, 2, 0, 255], np.uint8).view(np.bool_)
    got = cuatomic.unique(placed(b, backend, where), return_counts=True, method=method, backend=backend)
    np.testing.assert_array_equal(host(got[0]), [False, True])
    np.testing.assert_array_equal(host(got[1]), [2, 4])
    if where == "host":
        big = np.array([3, 1, 3, 70000], ">i4")
        v = cuatomic.unique(big, method=method, backend=backend)
        assert v.dtype == big.dtype
        np.testing.assert_array_equal(v, np.unique(big))


def _cpu_run_prints_ok(code, **env):
    """Run code in a fresh interpreter on the cpu backend with `env` (OpenMP's
    thread settings, read once at start-up); it must print 'ok'."""
    env = dict(os.environ, CUATOMIC_BACKEND="cpu", **env)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_cpu_vector_with_fewer_threads_than_asked():
    """OpenMP may start fewer threads than a region asks for (a thread
    limit, OMP_DYNAMIC): the shares are cut among those that run, so no
    part of the input is left out."""
    code = ("import numpy as np, cuatomic\n"
            "x = np.random.default_rng(3).integers(0, 10**6, 300_000)\n"
            "for m in ('vector', 'shared', 'global'):\n"
            "    v, i, inv, c = cuatomic.unique(x, True, True, True, method=m, backend='cpu')\n"
            "    w = np.unique(x, True, True, True)\n"
            "    assert all(np.array_equal(g, e) for g, e in zip((v, i, inv, c), w)), m\n"
            "print('ok')\n")
    _cpu_run_prints_ok(code, OMP_NUM_THREADS="2", OMP_THREAD_LIMIT="1")


def test_cpu_vector_partition_pages_of_many_threads():
    """The CPU partition writes each thread's keys of a bucket into a chain
    of its own pages: with 7 threads on this input every thread fills
    several pages of each bucket, in both of its write paths (keys alone,
    combined a block of 256 bytes at a time, each thread's last block of a
    bucket going out in the lines its keys reach; keys with their
    indices)."""
    code = ("import numpy as np, cuatomic\n"
            "rng = np.random.default_rng(7)\n"
            "for dt in (np.int32, np.uint64, np.float32):\n"
            "    x = (rng.integers(0, 150_000, 600_001) * 2654435761 % (1 << 31)).astype(dt)\n"
            "    if x.dtype.kind in 'iu':\n"
            "        x[::1001] = np.iinfo(dt).max\n"
            "    v, c = cuatomic.unique(x, return_counts=True, method='vector', backend='cpu')\n"
            "    w = np.unique(x, return_counts=True)\n"
            "    assert np.array_equal(v, w[0]) and np.array_equal(c, w[1]), dt\n"
            "    got = cuatomic.unique(x, True, False, True, method='vector', backend='cpu')\n"
            "    want = np.unique(x, True, False, True)\n"
            "    assert all(np.array_equal(g, e) for g, e in zip(got, want)), dt\n"
            "print('ok')\n")
    _cpu_run_prints_ok(code, OMP_NUM_THREADS="7")


def test_dask_unique_counts_of_any_shape():
    da = pytest.importorskip("dask.array")
    import cuatomic.dask as cd
    x = data(np.int16, 2000, 30).reshape(40, 50)
    got = cd.unique_counts(da.from_array(x, chunks=(7, 11)), backend="cpu")
    want = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(got.values.compute(), want[0])
    np.testing.assert_array_equal(got.counts.compute(), want[1])
    empty = cd.unique_counts(da.zeros((4, 0), chunks=2, dtype=np.int32), backend="cpu")
    assert empty.values.compute().size == 0 and empty.counts.compute().size == 0


def test_cpu_vector_private_tables_take_chunks_in_turn():
    """Phase A's threads (few distinct values: a table each) take chunks of
    2^16 elements in turn from a shared counter, so a thread's elements are
    not one run: a value first met late (in one thread's later chunk), the
    empty mark's key (int32's and uint32's largest) first met in a late
    chunk too, and every chunk's values the same 300 otherwise -- first
    indices, counts and the inverse as NumPy's, with 3 threads, several
    times over (the chunks go to whichever thread asks first)."""
    code = ("import numpy as np, cuatomic\n"
            "rng = np.random.default_rng(11)\n"
            "n = 9 * (1 << 16) + 5\n"
            "for dt in (np.int32, np.uint32, np.float32):\n"
            "    x = (rng.integers(0, 300, n) * 7919).astype(dt)\n"
            "    x[[6 * (1 << 16) + 9, 8 * (1 << 16) + 1, n - 1]] = 10**6 + 1\n"
            "    if x.dtype.kind in 'iu':\n"
            "        x[[5 * (1 << 16) + 3, 7 * (1 << 16)]] = np.iinfo(dt).max\n"
            "    want = np.unique(x, True, True, True)\n"
            "    for _ in range(5):\n"
            "        got = cuatomic.unique(x, True, True, True, method='vector', backend='cpu')\n"
            "        assert all(np.array_equal(g, e) for g, e in zip(got, want)), dt\n"
            "print('ok')\n")
    _cpu_run_prints_ok(code, OMP_NUM_THREADS="3")
