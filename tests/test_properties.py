"""Property-based tests: random inputs and arguments at every public
function, every rung of the cpu backend, against NumPy.

Inputs: 0-d to 3-d and empty arrays of every supported dtype, in native and
swapped byte order, C, Fortran, strided and reversed layouts, floats with
NaN and infinities; histogram bins as counts, explicit edges and ranges;
filter ops and values of every kind. Integers must equal NumPy's exactly.
Float sums and dots are compared with the exact answer (``math.fsum``, or
``fractions.Fraction`` for float64 products):

* ``method="auto"`` must be as accurate as NumPy on the same data:
  ``|got - exact| <= max(2 * |numpy - exact|, 2 ulp of exact)``.
* rungs that add per-thread shares and combine them in a tree or in block
  order (the rows flagged neither F_EXACT nor F_ARRIVAL: "tree") are held
  to ``4 * log2(n + 2) * eps * sum|x|``, which grows with log n, not n.
* the exact rungs (F_EXACT: "exact") round the exact total once: a
  float64 total equals ``math.fsum``'s, a float32 one is within half its ulp.
* rungs that add elements or thread partials one at a time in the order
  threads arrive (F_ARRIVAL: "arrival") have no tighter guarantee than any
  summation order: only Higham's order-free bound
  ``gamma(n - 1) * sum|x|`` is checked, a sanity check (dropped or doubled
  elements), not an accuracy claim.

NaN and infinity propagation is checked for every rung. Bad arguments of
every parameter of every public function and helper (the operations,
explain, methods, to_device, benchmark, sweep, Timer, ExactSum, datasets
and cuatomic.dask) must raise exactly the exception type the argument's
check -- or NumPy, where NumPy refuses the same call -- raises, with a
message that names the argument, and where NumPy answers cuatomic answers
the same; huge launch configurations, bin counts and sizes past memory run
in subprocesses with a deadline and an address-space limit, so a crash or
hang fails the test instead of pytest.

Hypothesis settings keep CI short and reproducible (derandomize=True).
"""
import fractions
import json
import math
import operator
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import cuatomic  # noqa: E402
from cuatomic import _C  # noqa: E402
from conftest import REFUSED, filter_refusal, hist_call, hist_refusal  # noqa: E402

BACKEND = "cpu"
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FEW = settings(PROPERTY, max_examples=40)

INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOATS = [np.float32, np.float64]
DTYPES = [np.bool_] + INTS + FLOATS
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}
BIG = 2.0**50  # finite float data stays within this: no sum or product of two reaches float32's overflow

def rungs(op):
    return [name for name, _, _ in cuatomic.methods(op, BACKEND)]


def flags(op, name):
    return cuatomic._backend.rung(op, BACKEND, name).flags


def float_order(op, name):
    """How a sum or dot rung orders its float additions, read from its
    row's flags: "exact" (F_EXACT), "arrival" (F_ARRIVAL), else "tree".
    A rung that adds in arrival order but lacks the flag is held to the
    tree's bound, and fails it, rather than passing a looser one."""
    f = flags(op, name)
    if f & _C.F_EXACT:
        return "exact"
    return "arrival" if f & _C.F_ARRIVAL else "tree"


# ------------------------------------------------------------ strategies

def elements(dt, special, near_one=False):
    """Values of dtype dt: the whole range for integers; bounded finite
    floats (near 1 for products), plus NaN, infinities and signed zeros
    when `special`."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        return hnp.from_dtype(dt)
    width = dt.itemsize * 8
    if near_one:
        finite = st.one_of(st.floats(0.875, 1.125, width=width), st.floats(-1.125, -0.875, width=width))
    else:
        finite = st.floats(-BIG, BIG, width=width)
    if not special:
        return finite
    return st.one_of(finite, st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0]))


def layout(x, how):
    """x as a view of the given layout (the values may be reordered: the
    reference is always computed from the view itself)."""
    if how == "F":
        return np.asfortranarray(x)
    if x.ndim == 0:
        return x
    if how == "strided":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    if how == "reversed":
        return x[::-1, ..., ::-1] if x.ndim > 1 else x[::-1]
    return x


@st.composite
def arrays(draw, dtypes=DTYPES, ndim=(0, 3), max_side=12, long_1d=1100, near_one=False, specials=None):
    """An array of any supported dtype, shape, byte order and layout."""
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    if draw(st.integers(0, 3)) == 0 and ndim[1] >= 1:  # long 1-D: past the block and share edges
        shape = (draw(st.integers(0, long_1d)),)
    else:
        shape = draw(hnp.array_shapes(min_dims=ndim[0], max_dims=ndim[1], min_side=0, max_side=max_side))
    special = draw(st.booleans()) if specials is None else specials
    x = draw(hnp.arrays(dt, shape, elements=elements(dt, special, near_one)))
    if dt.itemsize > 1 and draw(st.booleans()):
        x = x.astype(dt.newbyteorder())  # non-native byte order
    return layout(x, draw(st.sampled_from(["C", "F", "strided", "reversed"])))


def typical(dtypes=FLOATS, max_size=5000):
    """Measured-looking data: normal values of one scale, seeded (what a
    user sums; hypothesis's own floats span every exponent at once)."""
    return st.builds(lambda seed, n, dt, scale: (np.random.default_rng(seed).standard_normal(n) * scale).astype(dt),
                     st.integers(0, 2**32 - 1), st.integers(0, max_size), st.sampled_from(dtypes),
                     st.sampled_from([1e-3, 1.0, 100.0, 1e6]))


def vectors(dtypes=DTYPES):
    return arrays(dtypes=dtypes, ndim=(1, 1), max_side=1100, long_1d=1100)


# ------------------------------------------------------------ float checks

def gamma(k, eps):
    return k * eps / (1 - k * eps) if k * eps < 1 else math.inf


def check_special(got, values, what):
    """NaN and infinity as IEEE addition of `values` gives them; True when
    the result is finite and the accuracy check applies."""
    nan = any(math.isnan(v) for v in values)
    pos = any(v == math.inf for v in values)
    neg = any(v == -math.inf for v in values)
    if nan or (pos and neg):
        assert math.isnan(got), f"{what}: {got}, expected nan"
        return False
    if pos or neg:
        assert got == (math.inf if pos else -math.inf), f"{what}: {got}, expected {'' if pos else '-'}inf"
        return False
    return True


def check_float_total(got, reference, terms, exact, dt, rule, what):
    """got, a sum of `terms` (whose exact total is `exact`), against a
    rule of the module docstring: "auto" (NumPy's own error on the same
    data), "tree", "arrival" or "exact" (rounded once: float64 equal to the
    correctly rounded `exact`, float32 within half its ulp of it)."""
    got = float(got)
    if not check_special(got, terms, what):
        return
    eps = float(np.finfo(dt).eps)
    n = len(terms)
    magnitude = math.fsum(abs(t) for t in terms)
    error = abs(got - exact)
    if rule == "auto":
        numpy_error = abs(float(reference) - exact)
        ulp = float(np.spacing(dt.type(abs(exact))))
        bound = max(2 * numpy_error, 2 * ulp)
        said = f"max(2 * numpy's error {numpy_error:.3g}, 2 ulp {2 * ulp:.3g})"
    elif rule == "exact":
        if dt == np.float64:
            assert got == exact, f"{what}: {got!r} != the correctly rounded {exact!r}"
            return
        bound = float(np.spacing(dt.type(abs(got)))) / 2 + float(np.spacing(abs(exact))) / 2
        said = "half an ulp"
    elif rule == "tree":
        bound = 4 * math.log2(n + 2) * eps * magnitude
        said = "4 log2(n+2) eps sum|x|"
    else:
        bound = gamma(max(n - 1, 0), eps) * magnitude
        said = "gamma(n-1) sum|x| (order-free)"
    assert error <= bound, f"{what}: {got!r} vs exact {exact!r}: error {error:.3g} > {said} = {bound:.3g} (n={n})"


def check_rung(op, got, reference, terms, exact, method, what):
    """One rung's sum or dot against NumPy's: the same result type;
    integers exactly; floats with NaN and infinities as IEEE addition of
    `terms` gives them, and within the bound of the rung's float_order (auto's
    accuracy has tests of its own)."""
    assert type(got) is type(reference), f"{what}: {type(got)} vs NumPy's {type(reference)}"
    if terms is None:
        assert got == reference, f"{what}: {got!r} != {reference!r}"
    elif method == "auto":
        check_special(float(got), terms, what)
    else:
        check_float_total(got, reference, terms, exact, np.asarray(reference).dtype, float_order(op, method), what)


def sum_case(x, dtype):
    """NumPy's sum, and the terms and exact total of a float sum."""
    with np.errstate(all="ignore"):
        reference = np.sum(x, dtype=dtype)
    if reference.dtype.kind != "f":
        return reference, None, None
    terms = [float(v) for v in np.asarray(x, dtype=reference.dtype).reshape(-1)]  # as the op rounds them
    exact = math.fsum(terms) if all(math.isfinite(t) for t in terms) else math.nan
    return reference, terms, exact


def dot_case(a, b):
    """np.dot, and the exact products and total of a float dot."""
    with np.errstate(all="ignore"):
        reference = np.dot(a, b)
    dt = np.asarray(reference).dtype
    if dt.kind != "f":
        return reference, None, None
    av, bv = np.asarray(a, dtype=dt), np.asarray(b, dtype=dt)
    with np.errstate(all="ignore"):
        products = [float(p) for p in av.astype(np.float64) * bv.astype(np.float64)]
    if not all(math.isfinite(p) for p in products):
        return reference, products, math.nan
    if dt == np.float32:  # products of float32s are exact in float64
        return reference, products, math.fsum(products)
    exact = sum((fractions.Fraction(float(u)) * fractions.Fraction(float(v)) for u, v in zip(av, bv)),
                fractions.Fraction(0))
    return reference, products, float(exact)


SUM_DTYPES = {"f": [None, None, np.float32, np.float64],
              "other": [None, None, np.int8, np.uint64, np.int64, np.float32, np.float64, np.bool_]}


def b_for(data, a):
    """A second dot operand of a's length: any dtype, layout, specials."""
    dt = data.draw(st.sampled_from(DTYPES), label="b dtype")
    b = data.draw(hnp.arrays(dt, a.shape, elements=elements(dt, data.draw(st.booleans()))), label="b")
    return layout(b, data.draw(st.sampled_from(["C", "strided", "reversed"]), label="b layout"))


# ------------------------------------------------------------ outcomes

def outcome(call):
    """('ok', value) or ('raises', the kind of error: TypeError, ValueError,
    or OverflowError, which NumPy raises for a range past int64); other
    exceptions propagate and fail the test."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return "ok", call()
    except (TypeError, ValueError, OverflowError) as e:
        return "raises", next(k for k in (TypeError, ValueError, OverflowError) if isinstance(e, k))


def agree(got, expected, what):
    """Assert that cuatomic raised the kind of error NumPy raised, or
    returned where NumPy returned; True when there are values to compare."""
    if expected[0] == "raises":
        assert got == expected, f"{what}: NumPy raises {expected[1].__name__}, cuatomic gives {got}"
        return False
    assert got[0] == "ok", f"{what}: cuatomic raises {got[1].__name__}, NumPy does not"
    return True


def same_array(got, ref, ordered=True):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:  # NumPy's dtype, byte order included
        return False
    if not ordered:
        got, ref = np.sort(got, axis=None), np.sort(ref, axis=None)
    return bool(np.array_equal(got, ref, equal_nan=got.dtype.kind == "f"))


# ------------------------------------------------------------ sum and prod

def test_float_order_flags_are_consistent():
    """F_ARRIVAL marks sum and dot rungs only (the ones float_order reads),
    never an exact rung, and never a deterministic one: additions in the
    order threads arrive cannot give the same bits every call."""
    for op in cuatomic._backend.OPS:
        for name in rungs(op):
            f = flags(op, name)
            if f & _C.F_ARRIVAL:
                assert op in ("sum", "dot"), (op, name)
                assert not f & (_C.F_EXACT | _C.F_DETERMINISTIC), (op, name)


@PROPERTY
@given(data=st.data(), x=st.one_of(arrays(), typical(max_size=2000)))
def test_sum_matches_numpy(data, x):
    """Every rung and auto: NumPy's result type, integers exactly, NaN and
    infinities as IEEE addition gives them; floats within the rung's bound
    (auto's accuracy is test_sum_auto_is_as_accurate_as_numpy's)."""
    dtype = data.draw(st.sampled_from(SUM_DTYPES["f" if x.dtype.kind == "f" else "other"]), label="dtype")
    reference, terms, exact = sum_case(x, dtype)
    for method in ["auto"] + rungs("sum"):
        got = cuatomic.sum(x, dtype=dtype, method=method, backend=BACKEND)
        check_rung("sum", got, reference, terms, exact, method,
                   f"sum({x.dtype}{x.shape}, dtype={dtype}, method={method!r})")


@PROPERTY
@given(data=st.data(), x=st.one_of(typical(), arrays(dtypes=FLOATS + INTS, specials=False)))
def test_sum_auto_is_as_accurate_as_numpy(data, x):
    """method="auto" on float results: within max(2 * NumPy's error, 2 ulp)
    of the exact sum."""
    dtype = data.draw(st.sampled_from([np.float32, np.float64] + ([None] * 2 if x.dtype.kind == "f" else [])),
                      label="dtype")
    reference, terms, exact = sum_case(x, dtype)
    got = cuatomic.sum(x, dtype=dtype, backend=BACKEND)
    check_float_total(got, reference, terms, exact, reference.dtype, "auto",
                      f"sum({x.dtype}{x.shape}, dtype={dtype}, method='auto')")


@PROPERTY
@given(x=st.one_of(arrays(dtypes=[np.bool_] + INTS), arrays(dtypes=FLOATS, max_side=4, long_1d=100,
                                                           near_one=True)))
def test_prod_matches_numpy(x):
    """Integers wrap exactly as np.prod's; floats (near 1, so nothing over-
    or underflows) within gamma(n) of the exact product, relative; NaN,
    infinities and zeros as IEEE multiplication gives them."""
    with np.errstate(all="ignore"):
        reference = np.prod(x)
    for method in ["auto"] + rungs("prod"):
        got = cuatomic.prod(x, method=method, backend=BACKEND)
        what = f"prod({x.dtype}{x.shape}, method={method!r})"
        assert type(got) is type(reference), what
        if reference.dtype.kind != "f":
            assert got == reference, f"{what}: {got!r} != {reference!r}"
            continue
        values = [float(v) for v in x.reshape(-1)]
        got = float(got)
        if any(math.isnan(v) for v in values) or (any(math.isinf(v) for v in values) and 0.0 in values):
            assert math.isnan(got), what
        elif any(math.isinf(v) for v in values) or 0.0 in values:
            negative = sum(math.copysign(1.0, v) < 0 for v in values) % 2
            magnitude = math.inf if any(math.isinf(v) for v in values) else 0.0
            assert got == (-magnitude if negative else magnitude), f"{what}: {got}"
        else:  # one rounding per multiplication: relative gamma(n), below the answer itself
            exact = math.prod(fractions.Fraction(v) for v in values)
            bound = gamma(len(values), float(np.finfo(reference.dtype).eps)) * abs(exact)
            assert abs(fractions.Fraction(got) - exact) <= bound, f"{what}: {got} vs {float(exact)}"


# ------------------------------------------------------------ dot

@PROPERTY
@given(data=st.data(), a=vectors())
def test_dot_matches_numpy(data, a):
    """As test_sum_matches_numpy, for np.dot of any two dtypes."""
    b = b_for(data, a)
    reference, products, exact = dot_case(a, b)
    for method in ["auto"] + rungs("dot"):
        got = cuatomic.dot(a, b, method=method, backend=BACKEND)
        check_rung("dot", got, reference, products, exact, method,
                   f"dot({a.dtype}, {b.dtype}, n={a.size}, method={method!r})")


@FEW  # exact float64 dots are Fractions: fewer examples
@given(data=st.data(), a=st.one_of(typical(max_size=2000),
                                   arrays(dtypes=FLOATS, ndim=(1, 1), max_side=1100, specials=False)))
def test_dot_auto_is_as_accurate_as_numpy(data, a):
    """method="auto" on float results: within max(2 * NumPy's error, 2 ulp)
    of the exact dot."""
    dt = data.draw(st.sampled_from(FLOATS + INTS), label="b dtype")
    b = data.draw(st.one_of(typical([dt], a.size).map(lambda v: np.resize(v, a.shape)) if dt in FLOATS else
                            st.nothing(), hnp.arrays(dt, a.shape, elements=elements(dt, False))), label="b")
    reference, products, exact = dot_case(a, b)
    got = cuatomic.dot(a, b, backend=BACKEND)
    check_float_total(got, reference, products, exact, np.asarray(reference).dtype, "auto",
                      f"dot({a.dtype}, {b.dtype}, n={a.size}, method='auto')")


# ------------------------------------------------------------ histogram

@st.composite
def bins_and_range(draw, x):
    """Bins as NumPy takes them: a count (with or without a range), or
    explicit edges (monotonic or not), in the data's kind of numbers."""
    if x.dtype.kind in "iu" and draw(st.booleans()):
        info = np.iinfo(x.dtype)
        number = st.integers(int(info.min), int(info.max))
    else:
        number = st.floats(-1e3, 1e3)
    bounds = st.one_of(st.none(), st.tuples(number, number))
    choice = draw(st.sampled_from(["count", "count", "edges", "unsorted"]))
    if choice == "count":
        return draw(st.integers(1, 40)), draw(bounds)
    edges = draw(st.lists(number, min_size=1, max_size=12, unique=True))
    return (sorted(edges) if choice == "edges" else edges), draw(bounds)


@PROPERTY
@given(data=st.data(), x=arrays())
def test_histogram_matches_numpy(data, x):
    """np.histogram's counts (or densities) and edges, of NumPy's dtypes,
    for every rung; NumPy's kind of error where NumPy raises one."""
    bins, bounds = data.draw(bins_and_range(x), label="bins, range")
    density = data.draw(st.booleans(), label="density")
    expected = outcome(lambda: np.histogram(x, bins, bounds, density=density))
    for method in ["auto"] + rungs("histogram"):
        got = outcome(lambda: cuatomic.histogram(x, bins, bounds, density=density, method=method, backend=BACKEND))
        what = f"histogram({x.dtype}{x.shape}, bins={bins}, range={bounds}, density={density}, method={method!r})"
        if expected[0] == "ok" and outcome(lambda: hist_refusal(x, bins, bounds, method=method, backend=BACKEND))[1]:
            assert got == ("raises", ValueError), f"{what}: the rung's limits refuse it, yet it ran"
            continue  # the rung's limits (bytes: bytes in bins of width one), said as a ValueError
        if not agree(got, expected, what):
            continue
        (counts, edges), (ref_counts, ref_edges) = got[1], expected[1]
        assert same_array(edges, ref_edges), f"{what}: edges {edges} vs {ref_edges}"
        assert same_array(counts, ref_counts), f"{what}: {counts} vs NumPy's {ref_counts}"


# ------------------------------------------------------------ filter

def values_for(x):
    """Filter values: ints inside and far outside every dtype, fractions,
    NaN and infinities, bools, NumPy scalars, and elements of x itself."""
    plain = st.one_of(
        st.integers(-(2**65), 2**65),
        st.sampled_from([0, 1, -1, 127, 128, -129, 255, 256, 2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 0.5, -0.5,
                         1e300, -1e300, math.nan, math.inf, -math.inf, True, False]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(width=32).map(np.float32),
        st.integers(-(2**63), 2**63 - 1).map(np.int64),
        st.integers(0, 255).map(np.uint8),
    )
    if x.size == 0:
        return plain
    flat = x.reshape(-1)
    return st.one_of(plain, st.integers(0, x.size - 1).map(lambda i: flat[i]),
                     st.integers(0, x.size - 1).map(lambda i: flat[i].item()))


@PROPERTY
@given(data=st.data(), x=arrays())
def test_filter_matches_numpy(data, x):
    """``x.ravel()[x.ravel() <op> value]`` under NumPy's comparison rules,
    in order for the rungs that keep it and as a multiset for the others."""
    op = data.draw(st.sampled_from(sorted(COMPARE)), label="op")
    value = data.draw(values_for(x), label="value")
    flat = x.reshape(-1)
    expected = outcome(lambda: flat[COMPARE[op](flat, value)])
    for method in ["auto"] + rungs("filter"):
        ordered = method == "auto" or bool(flags("filter", method) & _C.F_ORDERED)
        got = outcome(lambda: cuatomic.filter(x, op, value, ordered=ordered, method=method, backend=BACKEND))
        what = f"filter({x.dtype}{x.shape}, {op!r}, {value!r}, method={method!r})"
        if agree(got, expected, what):
            assert same_array(got[1], expected[1], ordered), f"{what}: {got[1]} vs NumPy's {expected[1]}"


# ------------------------------------------------------------ to_device, explain

@FEW
@given(x=arrays())
def test_to_device_and_explain_take_any_input(x):
    """to_device on the cpu: the same values, C-contiguous, native byte
    order; explain: the size and dtype it reports are the input's."""
    d = cuatomic.to_device(x, backend=BACKEND)
    assert d.flags.c_contiguous and d.dtype.isnative and d.shape == x.shape
    assert same_array(d, x.astype(x.dtype.newbyteorder("=")))
    for op in ("sum", "prod", "filter"):
        facts = cuatomic.explain(op, x, backend=BACKEND).facts
        assert (facts["n"], facts["dtype"]) == (x.size, str(x.dtype.newbyteorder("=")))
    if x.dtype.kind != "b":
        choice = cuatomic.explain("histogram", x, bins=7, range=(0, 10), backend=BACKEND)
        assert choice.facts["n"] == x.size and choice.facts["bins"] == 7 and choice.method in rungs("histogram")


# ------------------------------------------------------------ launch configurations

GRIDS = st.one_of(st.none(), st.integers(1, 70), st.sampled_from([255, 256, 257, 1000]))
THREADS = st.one_of(st.none(), st.integers(1, 70), st.sampled_from([31, 32, 33, 255, 256, 257, 1024]))


@pytest.mark.filterwarnings("ignore:Converting input from bool")  # NumPy's own warning, repeated
@FEW
@given(data=st.data(), x=vectors(dtypes=[np.bool_] + INTS), blocks=GRIDS, threads=THREADS)
def test_every_launch_configuration_is_exact_on_integers(data, x, blocks, threads):
    """Any grid, on integers, gives NumPy's exact answer with every rung of
    every op; the counters count every thread (racy: at most that)."""
    grid = {"blocks": blocks, "threads": threads, "backend": BACKEND}
    value = data.draw(values_for(x), label="value")
    for method in rungs("sum"):
        assert cuatomic.sum(x, method=method, **grid) == np.sum(x), method
    for method in rungs("prod"):
        assert cuatomic.prod(x, method=method, **grid) == np.prod(x), method
    for method in rungs("dot"):
        assert cuatomic.dot(x, x[::-1], method=method, **grid) == np.dot(x, x[::-1]), method
    # the dtype's whole range, as floats (NumPy overflows on int bounds past int64)
    bounds = (0.0, 256.0) if x.dtype.kind == "b" else (float(np.iinfo(x.dtype).min), float(np.iinfo(x.dtype).max))
    for method in rungs("histogram"):
        got = hist_call(x, 17, bounds, method=method, **grid)
        assert got is REFUSED or np.array_equal(got[0], np.histogram(x, 17, bounds)[0]), method
    flat = x.reshape(-1)
    for method in rungs("filter"):
        ordered = bool(flags("filter", method) & _C.F_ORDERED)
        with np.errstate(all="ignore"):
            try:
                expected = flat[flat >= value]
            except OverflowError:  # NumPy cannot compare (bool with 2**63): neither can cuatomic
                with pytest.raises(OverflowError):
                    cuatomic.filter(x, ">=", value, ordered=ordered, method=method, **grid)
                continue
        if filter_refusal(x, method=method, backend=BACKEND, blocks=blocks, threads=threads):
            with pytest.raises(ValueError, match=f"method '{method}'"):  # its limits (pipelined's block), said
                cuatomic.filter(x, ">=", value, ordered=ordered, method=method, **grid)
            continue
        got = cuatomic.filter(x, ">=", value, ordered=ordered, method=method, **grid)
        assert same_array(got, expected, ordered), method
    b, t = blocks or 10, threads or 16  # the counters' own defaults are the tutorial's 10 x 16
    for method in rungs("add_one"):
        got = cuatomic.add_one(b, t, method=method, backend=BACKEND)
        racy = bool(flags("add_one", method) & _C.F_RACY)
        assert (1 <= got <= b * t) if racy else got == b * t, (method, got)
    for method in rungs("mutex_add_one"):
        assert cuatomic.mutex_add_one(b, t, method=method, backend=BACKEND) == b * t, method


# ------------------------------------------------------------ every argument answered
#
# Every public function and helper, each parameter given values it cannot
# take: the call must raise exactly the exception type the argument's check
# (or NumPy, where NumPy answers the same call) raises, with a message that
# names the argument -- never an AttributeError, a KeyError or an internal
# message. Where NumPy answers, cuatomic answers the same. Values that could
# hang or crash the process (sizes past memory) run in subprocesses below.

ESTIMATORS = {"auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"}
METHOD_NAMES = {"auto"} | {n for op in cuatomic._backend.OPS for n in rungs(op)}
KINDS = (TypeError, ValueError, OverflowError, IndexError, RuntimeError)


def names(param, message):
    """Whether `message` names the argument `param`: the word itself, or
    for a one-letter name, the name used as one ("a has", "b=", "x must")."""
    if len(param) > 1:
        return re.search(rf"(?<![\w]){re.escape(param)}(?![\w])", message) is not None
    return re.search(rf"(?<![\w.'-]){param}(?:=|,| has\b| is\b| must\b| should\b| of\b| and\b|:)", message) is not None


def test_names_can_fail():
    assert names("bins", "`bins` must be positive") and not names("bins", "bin edges must be numbers")
    assert names("a", "a has unsupported dtype <U1") and not names("a", "a pair of numbers is needed")
    assert names("x", "the largest value of x, 5, asks") and not names("x", "index out of bounds")


def refusal(call):
    """('answers', value) or (the exception's type, its message); an
    exception of any other kind (AttributeError, KeyError, ...) propagates
    and fails the test."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return "answers", call()
    except KINDS as e:
        return type(e), str(e)


def kind(exception_type):
    """The kind of a NumPy exception cuatomic raises as its base type
    (NumPy's UFuncTypeError is a TypeError)."""
    return next(k for k in KINDS if issubclass(exception_type, k))


def int_check(v, low=None, high=None, none_ok=False):
    """The exception an integer argument's check raises for v, or None when
    v is valid."""
    if v is None:
        return None if none_ok else TypeError
    if isinstance(v, (bool, np.bool_)):
        return TypeError
    try:
        i = operator.index(v)
    except TypeError:
        return TypeError
    return ValueError if (low is not None and i < low) or (high is not None and i > high) else None


NOT_INTEGERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3), st.binary(max_size=2),
                         st.none(), st.lists(st.integers(), max_size=2), st.builds(object), st.booleans(),
                         st.complex_numbers(max_magnitude=5), st.sampled_from([np.float64(2.0), np.array([1, 2]),
                                                                               np.array(3.5), {}]))
SMALL_INTEGERS = st.one_of(st.integers(-(2**20), 2**20), st.sampled_from([0, -1, 1, 1024, 1025]),
                           st.integers(-3, 3).map(np.int64))
ANY_INTEGERS = st.one_of(SMALL_INTEGERS, st.integers(-(2**70), 2**70),
                         st.sampled_from([2**31 - 1, 2**31, 2**63, -(2**63), 2**64]))
NOT_NAMES = st.one_of(st.text(max_size=8), st.integers(), st.none(), st.floats(), st.binary(max_size=3),
                      st.lists(st.text(max_size=3), min_size=1, max_size=2), st.builds(object), st.just(np.array(["sum"])))
NOT_DTYPES = st.sampled_from([object, "nonsense", np.complex128, np.float16, str, "M8[s]", "m8[s]", "V4", [1], 2.5,
                              "float128" if hasattr(np, "float128") else "U3", b"i9", {}, np.array([1])])
NOT_STREAMS = st.one_of(st.integers(max_value=-1), st.integers(min_value=2**64), st.floats(), st.booleans(),
                        st.text(max_size=3), st.lists(st.integers(), max_size=1), st.builds(object))


def other_than(*valid):
    """A filter keeping values that are none of `valid` (compared only with
    what can be equal to them: arrays and lists are never valid names)."""
    return lambda v: not (v is None and None in valid or isinstance(v, str) and v in valid)


def stream_check(v):
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        return TypeError
    return None if 0 <= v < 2**64 else ValueError


NOT_ARRAYS = st.sampled_from([None, "x", np.array(["a", "b"]), np.array([1 + 2j]), np.ones(3, np.float16),
                              np.array([object()]), np.ma.array([1.0, 2.0], mask=[0, 1]),
                              np.array(["2020-01-01"], "M8[D]"), np.zeros(2, [("f", "i4")]), b"ab", {"a": 1}])
X = np.arange(1, 41, dtype=np.float64)
COUNTED = np.arange(10)  # bincount's good x
SUPPORTED_KINDS = {np.dtype(t) for t in DTYPES}


def _array_check(v):
    """TypeError for what no call takes as an array (a masked array, a dtype
    cuatomic does not compute in), else None."""
    if isinstance(v, np.ma.MaskedArray):
        return TypeError
    return None if np.asarray(v).dtype.newbyteorder("=") in SUPPORTED_KINDS else TypeError


def _vector_check(v, kinds):
    """A 1-D argument of bincount, checked in NumPy's order: 1-D
    (ValueError), then of the kinds of numbers it takes (TypeError)."""
    a = np.asarray(v)
    if a.ndim != 1:
        return ValueError
    return None if a.dtype.kind in kinds else TypeError


def _bincount_x_check(v):
    found = _array_check(v) or _vector_check(v, "biu")
    return found or (ValueError if (np.asarray(v) < 0).any() else None)


def _bincount_weights_check(v):
    if v is None:
        return None
    if isinstance(v, np.ma.MaskedArray):
        return TypeError
    return _vector_check(v, "biuf") or (None if np.size(v) == COUNTED.size else ValueError)


def _in_text_env(call):
    """shakespeare() reading a local text: never the network."""
    def run():
        old = os.environ.get("CUATOMIC_TEXT")
        os.environ["CUATOMIC_TEXT"] = __file__
        try:
            return call()
        finally:
            if old is None:
                del os.environ["CUATOMIC_TEXT"]
            else:
                os.environ["CUATOMIC_TEXT"] = old
    return run


def numpy_kind(reference):
    """("numpy", reference): expected what NumPy does with the value."""
    return ("numpy", reference)


def _histogram_bins_check(v):
    if isinstance(v, str):
        return ("numpy", lambda: np.histogram(X, v))
    if np.ndim(v) == 1 and len(v) > 0:
        dt = np.asarray(v).dtype
        if dt.kind not in "biuf":
            return TypeError  # strings and objects are not edges cuatomic compares
        if dt.kind == "f" and np.isnan(np.asarray(v)).any():
            return ValueError  # NaN edges: NumPy counts nonsense
    return ("numpy", lambda: np.histogram(X, v))


def _histogram_range_check(v):
    bounds = v if isinstance(v, tuple) else None
    if bounds is not None and len(bounds) == 2 and not all(type(b) in (int, float) or np.asarray(b).dtype.kind in "biuf"
                                                            for b in bounds):
        return TypeError  # not numbers (NumPy's type for these, from deep inside)
    return ("numpy", lambda: np.histogram(X, 8, v))


def _filter_value_check(v):
    if v is np.ma.masked:
        return TypeError
    if np.ndim(v) != 0:
        return ValueError  # NumPy would broadcast; filter takes a scalar
    return ("numpy", lambda: X[X < v])


def _seed_check(v):
    return ("numpy", lambda: np.random.default_rng(v))


def _weights_check(v, shape):
    """histogram's weights: the shape first, then real numbers (NumPy's order)."""
    if v is None:
        return None
    if isinstance(v, np.ma.MaskedArray):
        return TypeError
    a = np.asarray(v)
    if a.shape != shape:
        return ValueError
    return None if a.dtype.kind in "biuf" else TypeError


def _at_indices_check(v):
    """cuatomic.at's indices into 8 elements: NumPy's IndexError for
    non-integers and out of range; booleans and slices (which NumPy takes
    as a mask and a slice) a TypeError; NumPy's own error for a ragged list."""
    if v is None or isinstance(v, (slice, type(Ellipsis))):
        return TypeError
    if isinstance(v, tuple):
        return IndexError  # a tuple of two index arrays into a 1-D array: too many indices
    try:
        a = np.asarray(v)
    except ValueError:
        return ValueError
    if a.size == 0:
        return None  # no updates (an empty list reads as float64: NumPy takes it too)
    if a.dtype.kind == "b":
        return TypeError
    if a.dtype.kind not in "iu":
        return IndexError
    return None if ((a >= -8) & (a < 8)).all() else IndexError


def _dask_at_indices_check(v):
    """cuatomic.dask.at's indices into 8 elements: the in-memory call's
    refusals, and a tuple (TypeError) or indices that are not 1-D
    (ValueError: a scalar, a 2-D list) refused once their type passed."""
    da = pytest.importorskip("dask.array")
    if isinstance(v, tuple):
        return TypeError
    if isinstance(v, da.Array):
        return _at_indices_check(v.compute())
    expected = _at_indices_check(v)
    if expected in (None, IndexError) and np.asarray(v).dtype.kind in "iu" and np.ndim(v) != 1:
        return ValueError
    return expected


def _dask_at_b_check(v):
    """cuatomic.dask.at's values: NumPy decides, on a dask array's data."""
    return _at_b_check(v.compute() if hasattr(v, "compute") else v)


def _at_b_check(v):
    """cuatomic.at's values: NumPy decides (np.add.at on the same call)."""
    return ("numpy", lambda: np.add.at(np.zeros(8), [1, 2, 2], v))


def _reduceat_indices_check(v):
    try:
        a = np.asarray(v)
    except ValueError:
        return ValueError
    if a.dtype.kind == "b":
        return TypeError
    if a.dtype.kind not in "iu":
        return IndexError
    return None if ((a >= 0) & (a < 40)).all() else IndexError


def _timeout_check(v):
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return TypeError
    return None if math.isfinite(v) and v > 0 else ValueError


class Arg:
    """One parameter of one public function: how to call the function with
    a value for it, the values to try, and what each must raise."""

    def __init__(self, where, param, call, values, check):
        self.where, self.param, self.call, self.values, self.check = where, param, call, values, check

    def __repr__(self):
        return f"{self.where}({self.param}=...)"


def _launch_args(where, fn):
    """method, backend, blocks, threads and stream of a call `fn(**kw)`."""
    return [
        Arg(where, "method", lambda v: fn(method=v), NOT_NAMES.filter(other_than(*METHOD_NAMES)),
            lambda v: TypeError if not isinstance(v, str) else ValueError),
        Arg(where, "backend", lambda v: fn(backend=v), NOT_NAMES.filter(other_than("cpu", "cuda", None)),
            lambda v: ValueError),
        Arg(where, "blocks", lambda v: fn(blocks=v), st.one_of(NOT_INTEGERS, ANY_INTEGERS),
            lambda v: int_check(v, 1, 2**31 - 1, none_ok=True)),
        Arg(where, "threads", lambda v: fn(threads=v), st.one_of(NOT_INTEGERS, ANY_INTEGERS),
            lambda v: int_check(v, 1, 1024, none_ok=True)),
        Arg(where, "stream", lambda v: fn(stream=v), NOT_STREAMS, stream_check),
    ]


def _surface():
    import cuatomic.dask as cdask
    da = pytest.importorskip("dask.array")
    be = {"backend": BACKEND}
    D = da.from_array(np.arange(12.0), chunks=5)
    DI = da.from_array(np.arange(12), chunks=5)
    DI8 = da.from_array(np.array([1, 2, 2, 7]), chunks=3)
    calls = {
        "sum": lambda **k: cuatomic.sum(X, **{**be, **k}),
        "prod": lambda **k: cuatomic.prod(X[:5], **{**be, **k}),
        "dot": lambda **k: cuatomic.dot(X, X, **{**be, **k}),
        "histogram": lambda **k: cuatomic.histogram(X, 8, (0, 50), **{**be, **k}),
        "bincount": lambda **k: cuatomic.bincount(COUNTED, **{**be, **k}),
        "filter": lambda **k: cuatomic.filter(X, "<", 3, **{**be, **k}),
        "reduce": lambda **k: cuatomic.reduce(X, "maximum", **{**be, **k}),
        "min": lambda **k: cuatomic.min(X, **{**be, **k}),
        "argmin": lambda **k: cuatomic.argmin(X, **{**be, **k}),
        "argmax": lambda **k: cuatomic.argmax(X, **{**be, **k}),
        "add_one": lambda **k: cuatomic.add_one(**{**be, **k}),
        "mutex_add_one": lambda **k: cuatomic.mutex_add_one(**{**be, **k}),
        "at": lambda **k: cuatomic.at(np.zeros(8), [1, 2, 2], 1.0, **{**be, **k}),
        "add_at": lambda **k: cuatomic.add_at(np.zeros(8), [1, 2, 2], 1.0, **{**be, **k}),
        "reduceat": lambda **k: cuatomic.reduceat(X, [0, 3], **{**be, **k}),
        "nonzero": lambda **k: cuatomic.nonzero(X - 3, **{**be, **k}),
        "flatnonzero": lambda **k: cuatomic.flatnonzero(X - 3, **{**be, **k}),
        "argwhere": lambda **k: cuatomic.argwhere(X - 3, **{**be, **k}),
        "compress": lambda **k: cuatomic.compress(X > 3, X, **{**be, **k}),
        "histogramdd": lambda **k: cuatomic.histogramdd(X.reshape(20, 2), 4, **{**be, **k}),
        "histogram2d": lambda **k: cuatomic.histogram2d(X, X, 4, **{**be, **k}),
        "mean": lambda **k: cuatomic.mean(X.reshape(8, 5), 0, **{**be, **k}),
        "unique": lambda **k: cuatomic.unique(X, True, True, True, **{**be, **k}),
        "unique_values": lambda **k: cuatomic.unique_values(X, **{**be, **k}),
        "unique_counts": lambda **k: cuatomic.unique_counts(X, **{**be, **k}),
        "unique_inverse": lambda **k: cuatomic.unique_inverse(X, **{**be, **k}),
        "unique_all": lambda **k: cuatomic.unique_all(X, **{**be, **k}),
    }
    args = [a for where, fn in calls.items() for a in _launch_args(where, fn)]
    is_dtype = lambda v: TypeError  # noqa: E731 - every NOT_DTYPES value is refused
    args += [
        # arrays of what no call takes, in every array position
        *[Arg(where, "a", call, NOT_ARRAYS, lambda v: TypeError) for where, call in [
            ("sum", lambda v: cuatomic.sum(v, **be)), ("prod", lambda v: cuatomic.prod(v, **be)),
            ("histogram", lambda v: cuatomic.histogram(v, 4, (0, 1), **be)),
            ("filter", lambda v: cuatomic.filter(v, "<", 1, **be)),
            ("reduce", lambda v: cuatomic.reduce(v, "add", **be)), ("max", lambda v: cuatomic.max(v, **be)),
            ("argmin", lambda v: cuatomic.argmin(v, **be)), ("argmax", lambda v: cuatomic.argmax(v, **be)),
            ("flatnonzero", lambda v: cuatomic.flatnonzero(v, **be)), ("argwhere", lambda v: cuatomic.argwhere(v, **be)),
            ("unique", lambda v: cuatomic.unique(v, **be)), ("unique_all", lambda v: cuatomic.unique_all(v, **be)),
            ("to_device", lambda v: cuatomic.to_device(v, **be)),
            ("ExactSum.add", lambda v: cuatomic.ExactSum().add(v, **be)),
            ("explain", lambda v: cuatomic.explain("sum", v, **be)),
            ("dask.sum", lambda v: cdask.sum(v, **be))]],
        Arg("histogramdd", "sample", lambda v: cuatomic.histogramdd(v, 4, **be), NOT_ARRAYS, lambda v: TypeError),
        Arg("dot", "a", lambda v: cuatomic.dot(v, X, **be),
            st.one_of(NOT_ARRAYS, st.sampled_from([np.ones((40, 1)), np.ones(3), 2.0, [[1.0]]])),
            lambda v: _array_check(v) or ValueError),
        Arg("dot", "b", lambda v: cuatomic.dot(X, v, **be),
            st.one_of(NOT_ARRAYS, st.sampled_from([np.ones((40, 1)), np.ones(3), 2.0, [[1.0]]])),
            lambda v: _array_check(v) or ValueError),
        Arg("dask.dot", "b", lambda v: cdask.dot(D, v, **be),
            st.sampled_from([np.ones((12, 1)), np.ones(3), 2.0, np.array(["a"] * 12), da.ones(12, chunks=4)]),
            lambda v: TypeError if np.asarray(v).dtype.kind == "U" else ValueError),
        Arg("bincount", "x", lambda v: cuatomic.bincount(v, **be),
            st.one_of(NOT_ARRAYS, st.sampled_from([np.ones(3), np.ones((2, 2), int), np.array([1, -1]), 5, [[1]]])),
            _bincount_x_check),
        Arg("dask.bincount", "x", lambda v: cdask.bincount(v, **be),
            st.sampled_from([D, da.ones((2, 2), chunks=1, dtype=int), np.array(["a"])]),
            lambda v: ValueError if np.ndim(v) == 2 else TypeError),
        # dtypes
        *[Arg(where, "dtype", call, NOT_DTYPES, is_dtype) for where, call in [
            ("sum", lambda v: cuatomic.sum(X, dtype=v, **be)), ("prod", lambda v: cuatomic.prod(X, dtype=v, **be)),
            ("reduce", lambda v: cuatomic.reduce(X, "add", dtype=v, **be)),
            ("explain", lambda v: cuatomic.explain("sum", X, dtype=v, **be)),
            ("ExactSum.result", lambda v: cuatomic.ExactSum().result(v)),
            ("dask.sum", lambda v: cdask.sum(D, dtype=v, **be)),
            ("dask.reduce", lambda v: cdask.reduce(D, "maximum", dtype=v, **be))]],
        # histogram
        Arg("histogram", "bins", lambda v: cuatomic.histogram(X, v, **be), st.one_of(
            st.floats(allow_nan=True).filter(lambda f: not float(f).is_integer()), st.integers(-(2**20), 0),
            st.text(max_size=6).filter(lambda s: s not in ESTIMATORS),
            st.lists(st.text(min_size=1, max_size=2), min_size=2, max_size=3),
            st.lists(st.floats(-10, 10), min_size=3, max_size=5, unique=True).filter(lambda e: e != sorted(e)),
            st.lists(st.sampled_from([0.0, 1.0, math.nan, 2.0]), min_size=2, max_size=4),
            st.just([[0.0, 1.0], [2.0, 3.0]]), st.none(), st.builds(object), st.just(np.ma.array([0.0, 1.0]))),
            lambda v: TypeError if isinstance(v, np.ma.MaskedArray) else _histogram_bins_check(v)),
        Arg("histogram", "range", lambda v: cuatomic.histogram(X, 8, v, **be), st.one_of(
            st.tuples(not_a_number(), st.floats(0, 1)), st.tuples(st.floats(0, 1), not_a_number()),
            st.lists(st.floats(0, 1), min_size=3, max_size=4).map(tuple),
            st.tuples(st.floats(1, 2), st.floats(-2, 0.99)),
            st.tuples(st.sampled_from([math.nan, math.inf, -math.inf]), st.floats(0, 1)),
            st.tuples(st.integers(-(2**65), 2**65), st.integers(-(2**65), 2**65)), st.integers()),
            _histogram_range_check),
        Arg("histogram", "weights", lambda v: cuatomic.histogram(X, 8, (0, 50), weights=v, **be),
            st.one_of(NOT_ARRAYS, st.sampled_from([np.ones(3), np.ones((40, 1)), 1.0, np.ones(41)])),
            lambda v: _weights_check(v, X.shape)),
        Arg("histogram", "density", lambda v: cuatomic.histogram(X, 8, (0, 50), density=v, **be),
            st.sampled_from([np.arange(3), np.ones((2, 2))]), lambda v: ValueError),
        Arg("bincount", "weights", lambda v: cuatomic.bincount(COUNTED, v, **be),
            st.one_of(NOT_ARRAYS, st.sampled_from([np.ones(3), np.ones((10, 1)), 1.0])), _bincount_weights_check),
        Arg("bincount", "minlength", lambda v: cuatomic.bincount(COUNTED, minlength=v, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS), lambda v: int_check(v, 0)),
        # filter and reduce
        Arg("filter", "op", lambda v: cuatomic.filter(X, v, 3, **be), NOT_NAMES.filter(other_than(*COMPARE)),
            lambda v: TypeError if not isinstance(v, str) else ValueError),
        Arg("filter", "value", lambda v: cuatomic.filter(X, "<", v, **be), st.one_of(
            st.lists(st.integers(), min_size=1, max_size=3), st.text(max_size=3), st.none(), st.builds(object),
            st.binary(max_size=2), st.just(np.arange(3)), st.just(np.ma.masked), st.just({}),
            st.complex_numbers(max_magnitude=3)), _filter_value_check),
        Arg("filter", "ordered", lambda v: cuatomic.filter(X, "<", 3, ordered=v, **be),
            st.sampled_from([np.arange(3), np.ones((2, 2))]), lambda v: ValueError),
        Arg("reduce", "op", lambda v: cuatomic.reduce(X, v, **be), NOT_NAMES.filter(other_than(*cuatomic._reduce_op.OPS)), lambda v: ValueError),
        # scatter
        *[Arg(where, "a", call, NOT_ARRAYS, lambda v: TypeError) for where, call in [
            ("at", lambda v: cuatomic.at(v, [0], 1.0, **be)), ("add_at", lambda v: cuatomic.add_at(v, [0], 1, **be)),
            ("reduceat", lambda v: cuatomic.reduceat(v, [0], **be)),
            ("dask.at", lambda v: cdask.at(v, [0], 1.0, **be))]],
        *[Arg(where, "indices", lambda v, at=at: at(np.zeros(8), v, 1.0, **be), st.one_of(
            st.sampled_from([None, slice(None), Ellipsis, [0.5], np.array([True, False]), ["a"], [[0, 1], [2]],
                             2**70, [8], [-9], np.array([2**64 - 1], np.uint64), ([0], [1])] + more),
            st.integers(-(2**40), 2**40), st.lists(st.integers(-20, 20), max_size=4)), check)
          for where, at, more, check in [
            ("at", cuatomic.at, [], _at_indices_check),
            ("dask.at", cdask.at, [[[0, 1]], da.from_array(np.array([0, 9]), chunks=1),
                                   da.from_array(np.array([0.0]), chunks=1)], _dask_at_indices_check)]],
        *[Arg(where, "b", lambda v, at=at: at(np.zeros(8), [1, 2, 2], v, **be), st.one_of(
            st.sampled_from([None, "ab", [1.0, 2.0], 1 + 2j, np.ones((2, 2)), np.array(["a"]), [[1.0], [2.0, 3.0]],
                             np.ones(3, np.complex64), np.arange(3.0), 2**70] + more),
            st.floats(), st.integers(-(2**70), 2**70)), check)
          for where, at, more, check in [
            ("at", cuatomic.at, [], _at_b_check),
            ("dask.at", cdask.at, [da.ones(2, chunks=1), da.ones(3, chunks=1, dtype=np.int64)], _dask_at_b_check)]],
        *[Arg(where, "op", call, NOT_NAMES.filter(other_than(*cuatomic._scatter.OPS)),
              lambda v: TypeError if not isinstance(v, str) else ValueError) for where, call in [
            ("at", lambda v: cuatomic.at(np.zeros(8), [0], 1.0, v, **be)),
            ("reduceat", lambda v: cuatomic.reduceat(X, [0], v, **be)),
            ("dask.at", lambda v: cdask.at(np.zeros(8), [0], 1.0, v, **be))]],
        Arg("reduceat", "indices", lambda v: cuatomic.reduceat(X, v, **be),
            st.one_of(st.sampled_from([[40], [-1], [0.5], np.array([True]), ["a"], [[0, 1], [2]]]),
                      st.lists(st.integers(-50, 50), min_size=1, max_size=4)), _reduceat_indices_check),
        # what cuatomic tells about itself
        Arg("methods", "op", lambda v: cuatomic.methods(v), NOT_NAMES.filter(other_than(*cuatomic._backend.OPS)),
            lambda v: ValueError),
        Arg("methods", "backend", lambda v: cuatomic.methods("sum", v),
            NOT_NAMES.filter(other_than("cpu", "cuda", None)), lambda v: ValueError),
        Arg("explain", "op", lambda v: cuatomic.explain(v, **be),
            NOT_NAMES.filter(other_than(*cuatomic._backend.OPS + ("bincount",))), lambda v: ValueError),
        Arg("to_device", "device", lambda v: cuatomic.to_device(X, device=v, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS),
            lambda v: None if v is None else (TypeError if int_check(v) else ValueError)),
        Arg("to_device", "backend", lambda v: cuatomic.to_device(X, backend=v),
            NOT_NAMES.filter(other_than("cpu", "cuda", None)), lambda v: ValueError),
        # timing
        Arg("benchmark", "fn", lambda v: cuatomic.benchmark(v, X, repeat=1, warmup=0, **be),
            st.one_of(NOT_INTEGERS, st.integers()), lambda v: TypeError),
        Arg("benchmark", "repeat", lambda v: cuatomic.benchmark(cuatomic.sum, X, repeat=v, warmup=0, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS), lambda v: int_check(v, 1)),
        Arg("benchmark", "warmup", lambda v: cuatomic.benchmark(cuatomic.sum, X, repeat=1, warmup=v, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS), lambda v: int_check(v, 0)),
        Arg("benchmark", "stream", lambda v: cuatomic.benchmark(cuatomic.sum, X, repeat=1, warmup=0, stream=v, **be),
            NOT_STREAMS, stream_check),
        Arg("sweep", "op", lambda v: cuatomic.sweep(v, X, blocks=[1], repeat=1, warmup=0, **be),
            NOT_NAMES.filter(other_than(*("sum", "prod", "dot", "histogram", "filter"))), lambda v: ValueError),
        Arg("sweep", "blocks", lambda v: cuatomic.sweep("sum", X, blocks=v, methods=["block_tree"], repeat=1, warmup=0,
                                                        **be),
            st.one_of(NOT_INTEGERS.filter(lambda v: v is not None and not isinstance(v, (list, np.ndarray, str, bytes, dict))),
                      st.integers(-(2**40), 0), st.integers(2**31, 2**40), st.lists(st.integers(-5, 0), min_size=1,
                                                                                        max_size=3)),
            lambda v: int_check(v[-1] if isinstance(v, list) else v, 1, 2**31 - 1)),
        Arg("sweep", "threads", lambda v: cuatomic.sweep("sum", X, blocks=[1], threads=v, methods=["block_tree"],
                                                         repeat=1, warmup=0, **be),
            st.one_of(st.integers(-(2**40), 0), st.integers(1025, 2**40), st.lists(st.integers(-5, 0), min_size=1,
                                                                                     max_size=3), st.floats()),
            lambda v: int_check(v[-1] if isinstance(v, list) else v, 1, 1024)),
        Arg("sweep", "methods", lambda v: cuatomic.sweep("sum", X, blocks=[1], methods=v, repeat=1, warmup=0, **be),
            st.one_of(st.text(min_size=1, max_size=6).filter(lambda s: s not in METHOD_NAMES),
                      st.lists(st.one_of(st.integers(), st.none()), min_size=1, max_size=2), st.integers()),
            lambda v: ValueError if isinstance(v, str) else TypeError),
        Arg("sweep", "repeat", lambda v: cuatomic.sweep("sum", X, blocks=[1], repeat=v, warmup=0, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS), lambda v: int_check(v, 1)),
        Arg("sweep", "warmup", lambda v: cuatomic.sweep("sum", X, blocks=[1], repeat=1, warmup=v, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS), lambda v: int_check(v, 0)),
        Arg("sweep", "backend", lambda v: cuatomic.sweep("sum", X, blocks=[1], repeat=1, warmup=0, backend=v),
            NOT_NAMES.filter(other_than("cpu", "cuda", None)), lambda v: ValueError),
        Arg("Timer", "stream", lambda v: cuatomic.Timer(stream=v, **be), NOT_STREAMS, stream_check),
        Arg("Timer", "backend", lambda v: cuatomic.Timer(backend=v),
            NOT_NAMES.filter(other_than("cpu", "cuda", None)), lambda v: ValueError),
        # ExactSum
        Arg("ExactSum", "value", lambda v: cuatomic.ExactSum(v), NOT_INTEGERS, lambda v: int_check(v)),
        Arg("ExactSum", "special", lambda v: cuatomic.ExactSum(0, v), st.one_of(NOT_INTEGERS, SMALL_INTEGERS),
            lambda v: int_check(v, 0)),
        Arg("ExactSum.merge", "other", lambda v: cuatomic.ExactSum().merge(v), st.one_of(NOT_INTEGERS, ANY_INTEGERS),
            lambda v: TypeError),
        # datasets
        Arg("english_like_text", "nbytes", lambda v: cuatomic.datasets.english_like_text(v),  # (inf and huge
            st.one_of(NOT_INTEGERS.filter(lambda v: not isinstance(v, float) or abs(v) < 1e6 or v != v),  # sizes:
                      st.integers(-(2**20), -1)), lambda v: int_check(v, 0)),  # RISKY, in subprocesses)
        Arg("english_like_text", "seed", lambda v: cuatomic.datasets.english_like_text(5, v),
            st.one_of(NOT_INTEGERS, st.integers(-5, -1)), _seed_check),
        Arg("text_to_array", "s", lambda v: cuatomic.datasets.text_to_array(v),
            st.one_of(NOT_INTEGERS.filter(lambda v: not isinstance(v, str)), st.integers()), lambda v: TypeError),
        Arg("shakespeare", "timeout", _in_text_env_call("timeout"), st.one_of(NOT_INTEGERS, SMALL_INTEGERS),
            _timeout_check),
        Arg("shakespeare", "url", _in_text_env_call("url"), st.one_of(
            NOT_INTEGERS.filter(lambda v: v is not None and not isinstance(v, str)), st.integers()),
            lambda v: TypeError),
        # cuatomic.dask, when the graph is built
        *[a for where, fn in [("dask.sum", lambda **k: cdask.sum(D, **{**be, **k})),
                              ("dask.histogram", lambda **k: cdask.histogram(D, 4, (0, 12), **{**be, **k})),
                              ("dask.filter", lambda **k: cdask.filter(D, "<", 3, **{**be, **k}))]
          for a in _launch_args(where, fn)[:2]],
        Arg("dask.histogram", "bins", lambda v: cdask.histogram(D, v, (0, 12), **be), st.one_of(
            st.floats(allow_nan=True).filter(lambda f: not float(f).is_integer()), st.integers(-(2**20), 0),
            st.sampled_from(sorted(ESTIMATORS)), st.lists(st.sampled_from([0.0, math.nan, 2.0]), min_size=2,
                                                          max_size=3).filter(lambda e: any(map(math.isnan, e)))),
            lambda v: ValueError if isinstance(v, str) or np.ndim(v) == 1 else _histogram_bins_check(v)),
        Arg("dask.histogram", "range", lambda v: cdask.histogram(D, 8, v, **be), st.one_of(
            st.tuples(not_a_number(), st.floats(0, 1)), st.tuples(st.floats(1, 2), st.floats(-2, 0.99)),
            st.tuples(st.integers(2**62, 2**63), st.integers(2**63, 2**64 - 1))), _histogram_range_check),
        Arg("dask.bincount", "minlength", lambda v: cdask.bincount(DI, minlength=v, **be),
            st.one_of(NOT_INTEGERS, SMALL_INTEGERS), lambda v: int_check(v, 0)),
        Arg("dask.filter", "op", lambda v: cdask.filter(D, v, 3, **be), NOT_NAMES.filter(other_than(*COMPARE)),
            lambda v: TypeError if not isinstance(v, str) else ValueError),
        Arg("dask.filter", "value", lambda v: cdask.filter(D, "<", v, **be), st.one_of(
            st.lists(st.integers(), min_size=1, max_size=3), st.text(max_size=3), st.none(), st.builds(object)),
            lambda v: ValueError if np.ndim(v) != 0 else TypeError),
        Arg("dask.reduce", "op", lambda v: cdask.reduce(D, v, **be), NOT_NAMES.filter(other_than(*cuatomic._reduce_op.OPS)), lambda v: ValueError),
        # cuatomic.dask.at: the in-memory call's refusals, before anything is written
        *_launch_args("dask.at", lambda **k: cdask.at(np.zeros(8), DI8, 1.0, **{**be, **k}))[:2],
        # GPU memory: a GPU ordinal or None
        *[Arg(where, "device", call, st.one_of(NOT_INTEGERS, ANY_INTEGERS), _device_check) for where, call in [
            ("memory_info", lambda v: cuatomic.memory_info(v)), ("free_memory", lambda v: cuatomic.free_memory(v))]],
    ]
    return args


def _device_check(v):
    """memory_info's and free_memory's device: None, or a GPU the process sees."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        return TypeError
    gpus = cuatomic._C.devices()[0] if "cuda" in cuatomic.backends() else 0
    return None if 0 <= v < gpus else ValueError


def _in_text_env_call(param):
    return lambda v: _in_text_env(lambda: cuatomic.datasets.shakespeare(**{param: v}))()


def not_a_number():
    return st.one_of(st.text(max_size=4), st.binary(max_size=3), st.none(), st.lists(st.integers(), max_size=2),
                     st.builds(object), st.complex_numbers(allow_nan=False, max_magnitude=10).filter(lambda c: c.imag))


SURFACE = _surface()


def test_every_public_name_is_covered():
    """Each public function and helper that takes arguments has its
    parameters here (a new one must join the table). Left out: classes of
    results, functions without arguments, and what needs a GPU."""
    covered = {a.where.split(".")[0] for a in SURFACE}
    exempt = {"BenchmarkResult", "Choice", "CudaError", "SweepRow", "backend_info", "backends", "last_launch",
              "DeviceArray", "Stream", "pinned_array", "pinned_empty", "datasets",
              "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult"}
    assert set(cuatomic.__all__) - exempt <= covered, set(cuatomic.__all__) - exempt - covered
    assert {"english_like_text", "text_to_array", "shakespeare", "dask"} <= covered


def test_the_good_calls_are_good():
    """Every entry's function answers for a good value of the parameter:
    the refusals below come from the bad value, not a broken base call."""
    good = {"method": "auto", "backend": BACKEND, "blocks": None, "threads": None, "stream": None, "dtype": None,
            "a": np.arange(1.0, 6.0), "sample": np.ones((5, 2)), "b": X, "x": COUNTED, "bins": 4, "range": (0, 50), "weights": None,
            "density": True, "minlength": 3, "op": None, "value": 3, "ordered": False, "device": None,
            "fn": cuatomic.sum,
            "repeat": 1, "warmup": 0, "methods": ["block_tree"], "other": cuatomic.ExactSum(3), "special": 0,
            "nbytes": 12, "indices": [1, 2, 2], "seed": 1, "s": "abc", "timeout": 5.0, "url": "http://127.0.0.1:9/x"}
    ops = {"filter": "<", "reduce": "add", "methods": "sum", "explain": "sum", "sweep": "sum",
           "dask.filter": "<", "dask.reduce": "add", "at": "add", "dask.at": "add", "reduceat": "add"}
    for arg in SURFACE:
        value = ops.get(arg.where) if arg.param == "op" else good[arg.param]
        if arg.where == "dot" and arg.param == "a":
            value = X
        if arg.where.startswith("dask") and arg.param in ("b", "x"):
            continue  # dask arrays of their own
        if arg.where == "benchmark" and arg.param == "stream":
            value = None
        if arg.where == "bincount" and arg.param == "x":
            value = COUNTED
        if arg.where in ("sweep",) and arg.param == "blocks":
            value = [2]
        if arg.where == "dask.histogram" and arg.param == "bins":
            value = 4
        if arg.where == "ExactSum" and arg.param == "value":
            value = 7
        if arg.where in ("at", "add_at") and arg.param == "b":
            value = 1.0
        if arg.param == "indices":
            value = [1, 2, 2]
        got = refusal(lambda: arg.call(value))
        assert got[0] == "answers", f"{arg!r} with {value!r}: {got}"


@pytest.mark.parametrize("arg", SURFACE, ids=repr)
@settings(PROPERTY, max_examples=60, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_bad_argument_is_refused_by_name(arg, data):
    """The exact exception type (the argument's check's, or NumPy's where
    NumPy raises), a message naming the argument; NumPy's answer where NumPy
    answers."""
    value = data.draw(arg.values, label=arg.param)
    expected = arg.check(value)
    hypothesis.assume(expected is not None)  # a value the call takes: nothing to refuse
    what = f"{arg.where}({arg.param}={value!r})"
    if isinstance(expected, tuple):  # NumPy decides
        numpy_says = refusal(expected[1])
        if numpy_says[0] == "answers":
            got = refusal(lambda: arg.call(value))
            assert got[0] == "answers", f"{what}: NumPy answers, cuatomic raises {got}"
            ref = numpy_says[1]
            if not arg.where.startswith("dask") and isinstance(ref, (tuple, np.ndarray)):  # the same answer
                pairs = zip(got[1], ref) if isinstance(ref, tuple) else [(got[1], ref)]
                assert all(same_array(g, r) for g, r in pairs), f"{what}: {got[1]} vs NumPy's {ref}"
            return
        expected = kind(numpy_says[0])
    got = refusal(lambda: arg.call(value))
    assert got[0] is expected, f"{what}: expected {expected.__name__}, got {got}"
    assert names(arg.param, got[1]), f"{what}: {got[0].__name__} does not name {arg.param}: {got[1]!r}"


# ------------------------------------------------------------ huge arguments, in subprocesses

CHILD = r"""
import json, sys, warnings
import numpy as np
import cuatomic
case = json.loads(sys.argv[1])
op, kwargs = case["op"], case["kwargs"]
x = np.arange(100, dtype=np.float64)


def scattered(update):
    a = np.zeros(7)
    update(a)
    return a


calls = {
    "sum": (lambda: cuatomic.sum(x, **kwargs), lambda: np.sum(x)),
    "prod": (lambda: cuatomic.prod(x[1:20], **kwargs), lambda: np.prod(x[1:20])),
    "dot": (lambda: cuatomic.dot(x, x, **kwargs), lambda: np.dot(x, x)),
    "histogram": (lambda: cuatomic.histogram(x, **kwargs)[0],
                  lambda: np.histogram(x, kwargs.get("bins", 10))[0]),
    "filter": (lambda: cuatomic.filter(x, "<", 7, ordered=False, **kwargs), lambda: x[x < 7]),
    "at": (lambda: scattered(lambda a: cuatomic.at(a, np.arange(100) % 7, x, **kwargs)),
           lambda: scattered(lambda a: np.add.at(a, np.arange(100) % 7, x))),
    "argmin": (lambda: cuatomic.argmin((x[::-1] % 37).astype(np.float32), **kwargs),
               lambda: np.argmin((x[::-1] % 37).astype(np.float32))),
}
ours, numpys = calls[op]
try:
    got = ours()
except (TypeError, ValueError) as e:
    print(json.dumps({"result": "refused", "error": type(e).__name__, "message": str(e)}))
except MemoryError as e:
    print(json.dumps({"result": "memory", "message": str(e)}))
else:
    as_found = (lambda r: np.sort(np.atleast_1d(np.asarray(r)))) if op == "filter" else np.asarray  # unordered
    right = np.array_equal(as_found(got), as_found(numpys()))
    print(json.dumps({"result": "right" if right else "wrong"}))
"""

def children(code, argvs, seconds, at_once=None):
    """Run ``python -c code argv`` for each argv, `at_once` at a time (None:
    all together), each group within `seconds`: for each, ("done", the JSON
    its last line printed), or what went wrong instead (a hang, killed at
    the deadline; an exit status and the end of stderr)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    results, pending = [], list(argvs)
    while pending:
        group, pending = pending[:at_once or len(pending)], pending[at_once or len(pending):]
        deadline = time.monotonic() + seconds
        running = [subprocess.Popen([sys.executable, "-c", code, argv], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=env) for argv in group]
        for child in running:
            try:
                out, err = child.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                results.append((f"still running after {seconds} s (killed)", None))
                continue
            if child.returncode != 0:
                results.append((f"exit status {child.returncode}: {err.strip()[-300:]}", None))
                continue
            results.append(("done", json.loads(out.strip().splitlines()[-1])))
    return results


HUGE_BLOCKS, HUGE_THREADS = 2**31 - 1, 1024


def huge_cases():
    cases = [{"op": op, "kwargs": {"method": m, "blocks": HUGE_BLOCKS, "threads": HUGE_THREADS, "backend": BACKEND}}
             for op in ("sum", "prod", "dot", "histogram", "filter", "at", "argmin") for m in rungs(op)]
    cases += [{"op": "histogram", "kwargs": {"bins": b, "backend": BACKEND}} for b in (2**24, 2**40)]
    return cases


def test_huge_launch_configurations_and_bins_finish_or_refuse():
    """Every rung with the largest grid it accepts (2**31-1 blocks of 1024
    threads) over 100 elements, and 2**24 and 2**40 bins: each must give
    NumPy's answer, or refuse with TypeError or ValueError (or, as NumPy
    does for 2**40 bins, a MemoryError that says what it tried), within
    the deadline and without crashing. All cases run at once, each in its
    own process."""
    cases, failures = huge_cases(), []
    for case, (status, found) in zip(cases, children(CHILD, [json.dumps(c) for c in cases], 20)):
        if status != "done":
            failures.append(f"{case}: {status}")
        elif found["result"] == "wrong":
            failures.append(f"{case}: a wrong answer")
        elif found["result"] == "memory" and not found["message"]:
            failures.append(f"{case}: MemoryError without a message")
        elif found["result"] == "refused" and not found["message"]:
            failures.append(f"{case}: {found['error']} without a message")
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures)


# ------------------------------------------------------------ risky bad arguments, in subprocesses

RISKY_CHILD = r"""
import json, resource, sys, warnings
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a broken check fails here, not the machine
warnings.simplefilter("ignore")
import numpy as np
import cuatomic, cuatomic.dask, cuatomic.datasets
import dask.array as da
X = np.arange(1, 41, dtype=np.float64)
D = da.from_array(np.arange(12.0), chunks=5)
DI = da.from_array(np.arange(12), chunks=5)
try:
    eval(sys.argv[1])
    print(json.dumps({"result": "answers"}))
except (TypeError, ValueError, OverflowError, IndexError, RuntimeError, MemoryError) as e:
    print(json.dumps({"result": type(e).__name__, "message": str(e)}))
"""

# (call, its exception, the argument its message names): sizes past any
# machine's memory, and sizes a broken check would spend forever on.
RISKY = [
    ("cuatomic.datasets.english_like_text(float('inf'))", TypeError, "nbytes"),
    ("cuatomic.datasets.english_like_text(1e30)", TypeError, "nbytes"),
    ("cuatomic.datasets.english_like_text(2**40)", ValueError, "nbytes"),
    ("cuatomic.datasets.english_like_text(np.int64(2**62))", ValueError, "nbytes"),
    ("cuatomic.histogram(X, bins=2**40, backend='cpu')", ValueError, "bins"),
    ("cuatomic.histogram(X, bins=2**62, range=(0, 1), backend='cpu')", ValueError, "bins"),
    ("cuatomic.histogram(X, bins=np.int64(2**40), weights=X, backend='cpu')", ValueError, "bins"),
    ("cuatomic.explain('histogram', X, 2**40, backend='cpu')", ValueError, "bins"),
    ("cuatomic.bincount(np.array([2**40]), backend='cpu')", ValueError, "x"),
    ("cuatomic.bincount(np.array([2**40]), weights=[1.0], backend='cpu')", ValueError, "x"),
    ("cuatomic.bincount(np.array([1]), minlength=2**40, backend='cpu')", ValueError, "minlength"),
    ("cuatomic.explain('bincount', np.array([2**40]), backend='cpu')", ValueError, "x"),
    ("cuatomic.benchmark(cuatomic.sum, X, repeat=2**62, backend='cpu')", ValueError, "repeat"),
    ("cuatomic.sweep('sum', X, blocks=[1], repeat=2**62, backend='cpu')", ValueError, "repeat"),
    ("cuatomic.dask.histogram(D, 2**40, (0, 1), backend='cpu')", ValueError, "bins"),
    ("cuatomic.dask.bincount(DI, minlength=2**40, backend='cpu').compute()", ValueError, "minlength"),
]


def test_risky_bad_arguments_are_refused_in_a_child_process():
    """Each call above in its own process, under a 6 GiB address-space
    limit and a deadline: the exact exception, at once, naming the
    argument; a hang, a crash or a MemoryError fails the case."""
    failures, outcomes = [], children(RISKY_CHILD, [call for call, _, _ in RISKY], 120, at_once=4)
    for (call, expected, param), (status, found) in zip(RISKY, outcomes):
        if status != "done":
            failures.append(f"{call}: {status}")
        elif found["result"] != expected.__name__:
            failures.append(f"{call}: expected {expected.__name__}, got {found}")
        elif not names(param, found["message"]):
            failures.append(f"{call}: the message does not name {param}: {found['message']!r}")
    assert not failures, f"{len(failures)} of {len(RISKY)} cases:\n" + "\n".join(failures)

