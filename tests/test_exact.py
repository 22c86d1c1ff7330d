"""The exact rungs of sum and dot (F_EXACT): the exact sum of the values
(of the exact products), rounded once to the result type -- equal bit for
bit to math.fsum for float64 sums and to the correctly rounded Fraction sum
otherwise, whatever the order, blocks, threads, backend or chunking."""
import fractions
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from conftest import BACKENDS, make, placed, requires_cuda

import cuatomic
from cuatomic import _C, _backend
from cuatomic._exactsum import ExactSum
from cuatomic._xacc import _round


def exact_rungs(op):
    """(backend, method, where) for every exact rung of every usable backend."""
    out = []
    for be in BACKENDS:
        for row in _backend.table(op, be):
            if row.has(_C.F_EXACT):
                for where in (["host", "device"] if be == "cuda" else ["host"]):
                    out.append(pytest.param(be, row.name, where, id=f"{be}-{row.name}-{where}"))
    return out


def rounded(q, dtype):
    """The Fraction q rounded to nearest (ties to even) in dtype, found
    without cuatomic's rounding: the candidates around float(q) compared
    exactly."""
    dt = np.dtype(dtype)
    info = np.finfo(dt)
    top = Fraction(float(info.max))
    big = top + (top - Fraction(float(np.nextafter(info.max, dt.type(0))))) / 2  # halfway past the largest
    if abs(q) >= big:
        return dt.type(math.inf if q > 0 else -math.inf)
    guess = dt.type(float(q)) if abs(q) < Fraction(float(info.max)) else dt.type(math.copysign(info.max, q))
    cands = {guess, np.nextafter(guess, dt.type(math.inf)), np.nextafter(guess, dt.type(-math.inf))}
    cands = [c for c in cands if np.isfinite(c)]

    def key(c):
        even = int(np.asarray(c).view(np.uint32 if dt.itemsize == 4 else np.uint64)) & 1
        return (abs(Fraction(float(c)) - q), even)
    return min(cands, key=key)


def exact_of(a, b=None):
    """The exact sum (of products) as a Fraction."""
    xs = [Fraction(float(v)) for v in np.asarray(a).ravel()]
    if b is None:
        return sum(xs, Fraction(0))
    return sum((x * Fraction(float(w)) for x, w in zip(xs, np.asarray(b).ravel())), Fraction(0))


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.tobytes() == want.tobytes() or (np.isnan(got) and np.isnan(want)), (got, want)


def adversarial(dtype, n, seed):
    """Data where a float sum goes wrong: huge dynamic range, cancellation,
    subnormals."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    info = np.finfo(dt)
    pools = [
        rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n),
        np.concatenate([rng.standard_normal(n // 2) * 1e15, -rng.standard_normal(n - n // 2) * 1e15]),
        np.full(n, float(info.smallest_subnormal)) * rng.integers(1, 1000, n),
        rng.choice([float(info.max) / 4, -float(info.max) / 4, 1.0, float(info.tiny)], n),
    ]
    if dt == np.float64:
        pools.append(rng.choice([1e300, -1e300, 1e-300, -1e-300, 3.0], n))
    x = np.concatenate(pools).astype(dt)
    x = x[np.isfinite(x)]
    big = x[np.abs(x) > float(info.max) / 8]
    return np.concatenate([x, -big])  # the huge values cancel, so the sum is finite


# ------------------------------------------------------------------- sums

@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
@pytest.mark.parametrize("n", [0, 1, 2, 31, 33, 257, 4099, 100_003])
def test_float64_sum_is_fsum_bit_for_bit(backend, method, where, n):
    x = np.random.default_rng(n).standard_normal(n) * 1e3
    got = cuatomic.sum(placed(x, backend, where), method=method, backend=backend)
    same_bits(got, np.float64(math.fsum(x)))


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [0, 1])
def test_adversarial_sum_is_correctly_rounded(backend, method, where, dtype, seed):
    x = adversarial(dtype, 3000, seed)
    np.random.default_rng(seed).shuffle(x)
    got = cuatomic.sum(placed(x, backend, where), method=method, backend=backend)
    same_bits(got, rounded(exact_of(x), dtype))  # (math.fsum overflows on this data)


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
def test_float32_sum_rounds_once_from_the_exact_sum(backend, method, where):
    # 2^24 + 1 + 2^-30: rounding to float64 first then to float32 would
    # round 2^24 + 1 + tiny to the tie 2^24 + 1 and then to even, 2^24;
    # rounded once it is 2^24 + 2.
    x = np.array([2.0 ** 24, 1.0, 2.0 ** -30], np.float32)
    got = cuatomic.sum(placed(x, backend, where), method=method, backend=backend)
    same_bits(got, np.float32(2.0 ** 24 + 2))
    same_bits(got, rounded(exact_of(x), np.float32))


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
def test_the_same_bits_for_any_order_and_launch(backend, method, where):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(200_001) * 10.0 ** rng.integers(-8, 8, 200_001)
    want = np.float64(math.fsum(x))
    for blocks, threads in [(None, None), (1, 1), (3, 37), (64, 1024)]:
        y = rng.permutation(x)
        got = cuatomic.sum(placed(y, backend, where), method=method, backend=backend, blocks=blocks, threads=threads)
        same_bits(got, want)


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_values_follow_numpy(backend, method, where, dtype):
    def run(values):
        x = np.array(values, dtype)
        return cuatomic.sum(placed(x, backend, where), method=method, backend=backend), np.sum(x)
    for values in ([1.0, np.inf, 2.0], [-np.inf, 1.0], [np.inf, -np.inf], [1.0, np.nan], [np.nan, np.inf],
                   [-0.0, -0.0], [-0.0], [0.0, -0.0], [1.0, -1.0]):
        got, ref = run(values)
        same_bits(got, ref)  # NumPy's answer: here no rounding can differ


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
def test_overflowing_exact_sum_is_inf(backend, method, where):
    x = np.array([1e308, 1e308, 1e308, -1e308], np.float64)  # exact 2e308: beyond float64
    got = cuatomic.sum(placed(x, backend, where), method=method, backend=backend)
    assert got == np.inf
    y = np.array([1e308, 1e308, -1e308], np.float64)  # NumPy's running sum overflows; the exact one does not
    assert cuatomic.sum(placed(y, backend, where), method=method, backend=backend) == 1e308


def test_exact_rungs_are_the_same_on_every_backend():
    x = adversarial(np.float64, 5000, 3)
    results = {(be, row.name): cuatomic.sum(x, method=row.name, backend=be)
               for be in BACKENDS for row in _backend.table("sum", be) if row.has(_C.F_EXACT)}
    bits = {v.tobytes() for v in results.values()}
    assert len(bits) == 1, results


# ------------------------------------------------------------------- dots

@pytest.mark.parametrize("backend,method,where", exact_rungs("dot"))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000, 50_001])
def test_dot_is_the_exact_dot_rounded_once(backend, method, where, dtype, n):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    got = cuatomic.dot(placed(a, backend, where), placed(b, backend, where), method=method, backend=backend)
    same_bits(got, rounded(exact_of(a, b), dtype))


@pytest.mark.parametrize("backend,method,where", exact_rungs("dot"))
def test_dot_of_products_beyond_float64(backend, method, where):
    # 1e-300 * 1e-300 underflows to 0 and 1e200 * 1e200 overflows to inf in
    # float64, but the exact products are kept: the huge ones cancel, and
    # the tiny ones add up to the answer.
    a = np.array([1e200, 1e200, 1e-300, 3e-300, 1e-170, 5e-324, 1.5], np.float64)
    b = np.array([1e200, -1e200, 1e-300, 1e-300, 1e-170, 0.5, 2.0 ** -1074], np.float64)
    got = cuatomic.dot(placed(a, backend, where), placed(b, backend, where), method=method, backend=backend)
    same_bits(got, rounded(exact_of(a, b), np.float64))
    tiny = np.full(4096, 1e-160)  # each product 1e-320, subnormal: NumPy rounds each to the subnormal grid
    got = cuatomic.dot(placed(tiny, backend, where), placed(tiny, backend, where), method=method, backend=backend)
    same_bits(got, rounded(exact_of(tiny, tiny), np.float64))
    assert got != np.dot(tiny, tiny)  # NumPy's products round (flush) first


@pytest.mark.parametrize("backend,method,where", exact_rungs("dot"))
def test_dot_special_values_follow_numpy(backend, method, where):
    for a, b in [([np.inf, 1.0], [0.0, 1.0]), ([np.inf, 1.0], [2.0, 1.0]), ([np.inf, -np.inf], [1.0, 1.0]),
                 ([np.nan, 1.0], [1.0, 1.0]), ([-0.0, 0.0], [1.0, 1.0]), ([-0.0], [1.0])]:
        a, b = np.array(a), np.array(b)
        got = cuatomic.dot(placed(a, backend, where), placed(b, backend, where), method=method, backend=backend)
        with np.errstate(invalid="ignore"):
            same_bits(got, np.sum(a * b))


# ------------------------------------------------------- state and errors

@pytest.mark.parametrize("backend", BACKENDS)
def test_chunk_states_combine_exactly(backend):
    x = adversarial(np.float64, 20_000, 5)
    y = np.random.default_rng(5).standard_normal(x.size)
    whole = ExactSum().add(x, backend=backend)
    parts = [ExactSum().add(c, backend=backend) for c in np.array_split(x, 7)]
    assert sum(parts, ExactSum()) == whole
    same_bits(whole.result(), rounded(exact_of(x), np.float64))
    same_bits(whole.result(np.float32), rounded(exact_of(x), np.float32))
    assert pickle.loads(pickle.dumps(whole)) == whole
    dots = ExactSum()
    for i in range(0, x.size, 3000):
        dots.add_dot(x[i:i + 3000], y[i:i + 3000], backend=backend, method="exact_shared")
    same_bits(dots.result(), rounded(exact_of(x, y), np.float64))


def test_rounding_matches_fractions():
    rng = np.random.default_rng(11)
    scale = Fraction(2) ** _C.XACC_E0
    for _ in range(3000):
        bits = int(rng.integers(1, 1200))
        n = int(rng.integers(0, 2**62)) << max(0, bits - 62) | int(rng.integers(0, 2**62))
        n = n >> int(rng.integers(0, 64))
        if rng.random() < 0.5:
            n = -n
        for dt in (np.float64, np.float32):
            same_bits(np.dtype(dt).type(_round(n, np.dtype(dt))), rounded(n * scale, dt))
    # ties go to even
    half_ulp = 1 << (-_C.XACC_E0 - 53)  # 2^-53 at 1.0
    assert _round((1 << -_C.XACC_E0) + half_ulp, np.dtype(np.float64)) == 1.0
    assert _round((1 << -_C.XACC_E0) + 3 * half_ulp, np.dtype(np.float64)) == 1.0 + 2 * 2.0 ** -52


@pytest.mark.parametrize("backend", BACKENDS)
def test_integers_are_summed_exactly_and_wrap_as_numpy(backend):
    for dt in (np.int8, np.uint16, np.int32, np.int64, np.uint64):
        x = make(dt, 10_007)
        for method in [r.name for r in _backend.table("sum", backend) if r.has(_C.F_EXACT)]:
            got = cuatomic.sum(x, method=method, backend=backend)
            assert type(got) is type(np.sum(x)) and got == np.sum(x), (dt, method)
        for method in [r.name for r in _backend.table("dot", backend) if r.has(_C.F_EXACT)]:
            got = cuatomic.dot(x, x[::-1], method=method, backend=backend)
            assert type(got) is type(np.dot(x, x[::-1])) and got == np.dot(x, x[::-1]), (dt, method)
    flags = np.random.default_rng(1).random(999) < 0.3
    assert cuatomic.sum(flags, method="exact", backend=backend) == np.sum(flags)


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
@pytest.mark.parametrize("blocks,threads", [(1, 1), (3, 37), (5, 100), (2, 1024)])
def test_integer_sums_for_any_launch(backend, method, where, blocks, threads):
    """Integers summed exactly whatever the launch: blocks that end in a
    partial warp, one thread, a block of 1024 (each warp's digit sums added
    across its lanes before the block's accumulator takes them) -- every
    bit of the state (the high halves of every digit sum, the products'
    bits past 2^64, signed and unsigned), and the wrapped results."""
    rng = np.random.default_rng(blocks * 1031 + threads)
    i64 = np.iinfo(np.int64)
    scale = 2 ** -_C.XACC_E0  # value * 2**XACC_E0 is the sum
    for x in (make(np.int32, 20_011), rng.integers(-(2**31), 2**31, 20_011).astype(np.int32),
              rng.choice(np.array([i64.min, i64.max, -1, 1], np.int64), 20_011),
              rng.integers(0, 2**64, 20_011, dtype=np.uint64, endpoint=False)):
        y = x[::-1].copy()
        d, dy = placed(x, backend, where), placed(y, backend, where)
        kw = dict(method=method, backend=backend, blocks=blocks, threads=threads)
        same_bits(cuatomic.sum(d, **kw), np.sum(x))
        same_bits(cuatomic.dot(d, dy, **kw), np.dot(x, y))
        ints = [int(v) for v in x]
        assert ExactSum().add(d, **kw).value == sum(ints) * scale, x.dtype
        assert ExactSum().add_dot(d, dy, **kw).value == sum(a * b for a, b in zip(ints, ints[::-1])) * scale, x.dtype


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
def test_repeated_exact_calls_go_through_their_plans(backend, method, where, monkeypatch):
    """A repeated exact sum or dot is served by the plan its first call
    left (the result type kept with it): each call's own data, integers
    wrapped as NumPy wraps them (int64 past 2**63), floats rounded once."""
    from cuatomic import _reduce
    monkeypatch.setenv("CUATOMIC_BACKEND", backend)  # (a plan serves calls that name no backend)
    rng = np.random.default_rng(11)
    _reduce._PLANS.clear()
    _reduce._DOT_PLANS.clear()
    for dt in (np.int64, np.uint64, np.int32, np.int8, np.float64, np.float32):
        for rep in range(3):
            if np.dtype(dt).kind == "f":
                a = adversarial(dt, 300, rep)[:1000]
            else:
                info = np.iinfo(dt)
                a = rng.integers(info.min, info.max, 1000, dtype=dt, endpoint=True)
                if rep == 1:
                    a[:] = info.max  # the sum wraps (and for int64, its dot wraps too)
            b = a[::-1].copy()
            x, y = placed(a, backend, where), placed(b, backend, where)
            got, got_dot = cuatomic.sum(x, method=method), cuatomic.dot(x, y, method=method)
            if np.dtype(dt).kind == "f":
                same_bits(got, rounded(exact_of(a), dt))
                same_bits(got_dot, rounded(exact_of(a, b), dt))
            else:
                same_bits(got, np.sum(a))
                same_bits(got_dot, np.dot(a, b))
    planned = [p for p in (*_reduce._PLANS.values(), *_reduce._DOT_PLANS.values()) if p[-1] is not None]
    if backend == "cpu" or where == "device":  # the calls that leave plans (the GPU's host inputs are copied)
        assert len(planned) >= 12, planned


@pytest.mark.parametrize("backend,method,where", exact_rungs("sum"))
def test_integer_states_keep_every_bit(backend, method, where):
    """The exact state of integers is their sum as a Python int, bits past
    2^64 included (which a result wrapped to the dtype cannot show): sums of
    int64/uint64 extremes and dots whose products reach 2^126 and 2^128, on
    every exact rung, every input placement, odd lengths (a head, a body
    of 16-byte vectors, a tail)."""
    rng = np.random.default_rng(3)
    i64, u64 = np.iinfo(np.int64), np.iinfo(np.uint64)
    cases = [
        np.full(10_003, i64.min, np.int64),
        np.full(9_001, i64.max, np.int64),
        rng.choice(np.array([i64.min, i64.max, -1, 1], np.int64), 10_005),
        np.full(8_193, u64.max, np.uint64),
        rng.integers(-(2**31), 2**31, 7_777).astype(np.int32),
        np.full(5_001, np.iinfo(np.uint32).max, np.uint32),
    ]
    scale = 2 ** -_C.XACC_E0  # value * 2**XACC_E0 is the sum
    for x in cases:
        ints = [int(v) for v in x]
        got = ExactSum().add(placed(x, backend, where), method=method, backend=backend)
        assert got.value == sum(ints) * scale, (x.dtype, method)
        y = x[::-1].copy()  # (the exact rungs of dot have the sum's names)
        got = ExactSum().add_dot(placed(x, backend, where), placed(y, backend, where), method=method,
                                 backend=backend)
        assert got.value == sum(a * b for a, b in zip(ints, ints[::-1])) * scale, (x.dtype, method)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_state_errors(backend):
    with pytest.raises(ValueError, match="exact rung"):
        ExactSum().add(np.ones(3), method="vector", backend=backend)
    with pytest.raises(TypeError, match="float32 or float64"):
        ExactSum().result(np.int64)


@pytest.mark.parametrize("call,kind,says", [
    # the arguments were converted with int(): 1.5 and '12' were taken (as 1 and 12), None and NaN
    # ended in int()'s own messages, merge(5) in an AttributeError
    (lambda: ExactSum(1.5), TypeError, r"^value must be an integer \(got float\)$"),
    (lambda: ExactSum("12"), TypeError, r"^value must be an integer \(got str\)$"),
    (lambda: ExactSum(None), TypeError, r"^value must be an integer \(got NoneType\)$"),
    (lambda: ExactSum(float("nan")), TypeError, r"^value must be an integer \(got float\)$"),
    (lambda: ExactSum(True), TypeError, r"^value must be an integer, not bool$"),
    (lambda: ExactSum(0, 1.5), TypeError, r"^special must be an integer \(got float\)$"),
    (lambda: ExactSum(0, -1), ValueError, r"^special must be at least 0 \(got -1\)$"),
    (lambda: ExactSum().merge(5), TypeError, r"^other must be an ExactSum \(got int\)"),
    (lambda: ExactSum().merge(1.0), TypeError, r"^other must be an ExactSum \(got float\)"),
    (lambda: ExactSum().result("nonsense"), TypeError, r"^dtype='nonsense': .*float32 or float64"),
    (lambda: ExactSum().result(np.int32), TypeError, r"float32 or float64, not dtype int32$"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_exact_state_arguments_are_checked_and_named(call, kind, says):
    with pytest.raises(kind, match=says) as found:
        call()
    assert type(found.value) is kind


def test_exact_states_of_every_valid_argument():
    assert ExactSum(np.int64(12)).value == 12 and ExactSum(-(2**200)).value == -(2**200)
    for bits in (0, _C.XACC_NAN, _C.XACC_PINF | _C.XACC_NINF):
        assert ExactSum(0, bits).special == bits
    assert ExactSum(3).merge(ExactSum(4)) == ExactSum(7) and ExactSum().result(None) == 0.0


def test_auto_never_picks_an_exact_rung():
    for be in BACKENDS:
        for op in ("sum", "dot"):
            choice = cuatomic.explain(op, np.ones(1 << 20), backend=be)
            assert not choice.rung.has(_C.F_EXACT), choice


@requires_cuda
def test_streamed_host_chunks_merge_exactly(monkeypatch):
    monkeypatch.setenv("CUATOMIC_PIPELINE_CHUNK", str(1 << 16))
    x = adversarial(np.float64, 40_000, 9)
    got = cuatomic.sum(x, method="exact", backend="cuda")
    exact = sum(map(fractions.Fraction, x.tolist()), fractions.Fraction(0))  # fsum may overflow midway
    same_bits(got, np.float64(float(exact)))
    assert cuatomic.last_launch()["chunks"] > 1

