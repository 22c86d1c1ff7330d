"""No silent wrong answers: what cuatomic cannot honour is refused, with the
exception type NumPy uses and a message that says what to do instead."""

import json
import re

import numpy as np
import pytest
from conftest import BACKENDS, requires_cuda

import cuatomic

MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
PLAIN = np.array([1.0, 2.0, 3.0])


def _masked_calls(backend):
    """Every public entry point that takes an array, with the masked array
    in each array position."""
    return {
        "sum": lambda: cuatomic.sum(MASKED, backend=backend),
        "prod": lambda: cuatomic.prod(MASKED, backend=backend),
        "dot a": lambda: cuatomic.dot(MASKED, PLAIN, backend=backend),
        "dot b": lambda: cuatomic.dot(PLAIN, MASKED, backend=backend),
        "histogram": lambda: cuatomic.histogram(MASKED, backend=backend),
        "histogram bins": lambda: cuatomic.histogram(PLAIN, bins=np.ma.array([0.0, 1.0, 4.0], mask=[0, 1, 0]),
                                                     backend=backend),
        "histogram range": lambda: cuatomic.histogram(PLAIN, bins=2, range=np.ma.array([0.0, 4.0], mask=[0, 1]),
                                                      backend=backend),
        "filter": lambda: cuatomic.filter(MASKED, "<", 3, backend=backend),
        "filter value": lambda: cuatomic.filter(PLAIN, "<", np.ma.masked, backend=backend),
        "to_device": lambda: cuatomic.to_device(MASKED, backend=backend),
        "explain sum": lambda: cuatomic.explain("sum", MASKED, backend=backend),
        "explain histogram": lambda: cuatomic.explain("histogram", MASKED, bins=2, range=(0, 4), backend=backend),
        "sweep": lambda: cuatomic.sweep("sum", MASKED, blocks=[1], repeat=1, warmup=0, backend=backend),
        "benchmark of a cuatomic function": lambda: cuatomic.benchmark(cuatomic.sum, MASKED, repeat=1, warmup=0,
                                                                       backend=backend),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_arrays_are_refused_everywhere(backend):
    # np.asarray drops the mask: sum(MASKED) used to be 6 where NumPy says 4.
    assert np.sum(MASKED) == 4.0
    for where, call in _masked_calls(backend).items():
        with pytest.raises(TypeError, match=r"masked") as info:
            call()
        message = str(info.value)
        if where != "filter value":  # numpy.ma.masked is a missing scalar, not an array to fill
            assert ".filled(" in message and ".compressed()" in message, (where, message)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unmasked_input_of_the_same_values_still_works(backend):
    # The refusal is about the mask, not the data: .compressed() gives NumPy's answer.
    assert cuatomic.sum(MASKED.compressed(), backend=backend) == np.sum(MASKED)
    assert cuatomic.sum(MASKED.filled(0.0), backend=backend) == np.sum(MASKED)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bins", [["0", "1"], np.array(["0", "1", "2"]), [b"0", b"1"],
                                  np.array([0, 1], dtype=object), [0, 1, 2**70]],
                         ids=["str", "str-array", "bytes", "object", "python-int-past-int64"])
def test_histogram_refuses_edges_that_are_not_numbers(backend, bins):
    # NumPy compares string edges with the data as strings (arange(10.) in
    # ['0', '1'] counts 1, lexically) and object edges as Python objects;
    # cuatomic compares numbers, so it refuses rather than answer differently.
    with pytest.raises(TypeError, match="bin edges must be real numbers"):
        cuatomic.histogram(np.arange(10.0), bins=bins, backend=backend)
    with pytest.raises(TypeError, match="bin edges must be real numbers"):
        cuatomic.explain("histogram", np.arange(10.0), bins=bins, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bins", [[0, np.nan, 2], [np.nan, 1.0], [0.0, 1.0, np.nan], np.array([0, np.nan], np.float32)],
                         ids=["middle", "first", "last", "float32"])
def test_histogram_refuses_nan_edges(backend, bins):
    # NumPy takes them and counts nonsense ([5, -2] for [0, nan, 2]); cuatomic
    # used to answer [3, 0] in silence.
    x = np.arange(5.0)
    for call in (lambda: cuatomic.histogram(x, bins=bins, backend=backend),
                 lambda: cuatomic.histogram(x, bins=bins, weights=np.ones(5), backend=backend),
                 lambda: cuatomic.explain("histogram", x, bins, backend=backend)):
        with pytest.raises(ValueError, match=r"`bins` has a NaN edge"):
            call()


def test_dask_histogram_refuses_nan_edges_when_the_graph_is_built():
    da = pytest.importorskip("dask.array")
    import cuatomic.dask
    with pytest.raises(ValueError, match=r"`bins` has a NaN edge"):
        cuatomic.dask.histogram(da.arange(5.0, chunks=2), bins=[0, np.nan, 2], backend="cpu")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bins", [4, "auto"], ids=["count", "estimator"])
@pytest.mark.parametrize("bounds", [("0", "1"), (b"0", 1), (0, None), (0, 1j)], ids=["str", "bytes", "None", "complex"])
def test_histogram_refuses_a_range_that_is_not_numbers(backend, bins, bounds):
    with pytest.raises(TypeError):  # NumPy's type for these (from np.isfinite or a comparison)
        np.histogram(np.arange(10.0), bins=bins, range=bounds)
    with pytest.raises(TypeError, match=r"range must be a \(min, max\) pair of numbers"):
        cuatomic.histogram(np.arange(10.0), bins=bins, range=bounds, backend=backend)
    # With explicit edges NumPy ignores the range, whatever it holds; so does cuatomic.
    got, _ = cuatomic.histogram(np.arange(10.0), bins=[0.0, 1.0, 5.0], range=bounds, backend=backend)
    assert np.array_equal(got, np.histogram(np.arange(10.0), bins=[0.0, 1.0, 5.0], range=bounds)[0])


RANGES_NUMPY_SUBTRACTS = [(2**62, 2**63), (0, 2**63), (np.int64(0), 2**63), (np.int32(0), 2**40), (np.int8(0), 300),
                          (-1, np.uint64(2**63)), (False, True), (-(2**63), 0), (0.0, 2**63),
                          (2**63, 2**63), (-(2**63) - 1, 0)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bins,bounds", [(10, b) for b in RANGES_NUMPY_SUBTRACTS] +
                         [("auto", b) for b in [(2**62, 2**63), (0, 2**63), (np.int8(0), 300), (False, True)]],
                         ids=repr)
def test_histogram_range_numpy_cannot_subtract(backend, bins, bounds):
    # np.histogram subtracts the bounds of an equal-width range in the type
    # they promote to: (2**62, 2**63) is an OverflowError there, where
    # cuatomic used to count zeros. Whatever NumPy does, cuatomic does.
    x = np.arange(5)
    try:
        expected = np.histogram(x, bins=bins, range=bounds)
    except (TypeError, ValueError, OverflowError) as e:
        with pytest.raises(type(e)) as info:
            cuatomic.histogram(x, bins=bins, range=bounds, backend=backend)
        assert type(info.value) is type(e) and "range" in str(info.value), info.value
        if bins == 10:
            with pytest.raises(type(e)):
                cuatomic.histogram(x, bins=bins, range=bounds, weights=np.ones(5), backend=backend)
    else:
        got = cuatomic.histogram(x, bins=bins, range=bounds, backend=backend)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_histogram_range_shape_errors(backend):
    with pytest.raises(TypeError, match="pair"):
        cuatomic.histogram(np.arange(10.0), bins=2, range=5, backend=backend)
    with pytest.raises(ValueError, match="got 3 values"):
        cuatomic.histogram(np.arange(10.0), bins=2, range=(0, 1, 2), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_histogram_numeric_edges_of_every_real_kind_still_work(backend):
    x = np.arange(10, dtype=np.int32)
    for bins in ([0, 5, 10], [0.0, 2.5, 10.0], np.array([0, 5, 10], np.uint8), [False, True]):
        got, edges = cuatomic.histogram(x, bins=bins, backend=backend)
        ref, ref_edges = np.histogram(x, bins=bins)
        assert np.array_equal(got, ref) and np.array_equal(edges, ref_edges)


# ------------------------------------------------------------ clear messages

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_result_dtype_object_is_named(backend, op):
    # np.sum(..., dtype=object) returns a Python int: this used to end in an AttributeError.
    with pytest.raises(TypeError, match=r"result dtype object is not supported"):
        getattr(cuatomic, op)(np.arange(3.0), dtype=object, backend=backend)
    with pytest.raises(TypeError, match=r"data type 'nonsense' not understood"):
        getattr(cuatomic, op)(np.arange(3.0), dtype="nonsense", backend=backend)


def test_explain_histogram_without_the_array():
    with pytest.raises(TypeError, match=r"explain\('histogram'\) needs the array"):
        cuatomic.explain("histogram")
    with pytest.raises(TypeError, match=r"explain\('histogram'\) needs the array"):
        cuatomic.explain("histogram", bins=128, range=(0, 128))
    # the array by keyword is the array
    c = cuatomic.explain("histogram", a=np.arange(100, dtype=np.uint8), bins=8, range=(0, 128), backend="cpu")
    assert c.facts["n"] == 100 and c.facts["bins"] == 8


V = np.arange(1, 9, dtype=np.float64)
M = np.ones((2, 2))


def _outcome(call):
    try:
        return "answers", call()
    except (TypeError, ValueError, OverflowError, RuntimeError) as e:
        return type(e), str(e)


# (op, args, kwargs): calls whose arguments the call refuses, or answers without launching anything
EXPLAINED_AS_CALLED = [
    ("add_one", (-1, 16), {}), ("add_one", (2.5, 16), {}), ("add_one", (True, 16), {}), ("add_one", ("4", 16), {}),
    ("add_one", (2**40, 16), {}), ("add_one", (10, 0), {}), ("mutex_add_one", (), {"threads": 2000}),
    ("mutex_add_one", (), {"blocks": None, "threads": 1.5}),
    ("dot", (M, M), {}), ("dot", (V, V[:3]), {}), ("dot", (V, np.array(["a"] * 8)), {}), ("dot", (V, 3.0), {}),
    ("sum", (V,), {"dtype": "nonsense"}), ("sum", (V,), {"dtype": object}), ("prod", (V,), {"dtype": np.complex64}),
    ("sum", (np.array(["x"]),), {}), ("sum", (V,), {"blocks": 0}), ("prod", (V,), {"threads": "8"}),
    ("filter", (V, "=~", 3), {}), ("filter", (V, ["<"], 3), {}), ("filter", (V, "<", "three"), {}),
    ("filter", (V, "<", [1, 2]), {}), ("filter", (V, "<", 3), {"ordered": np.arange(3)}),
    ("histogram", (V, []), {}), ("histogram", (V, [3.0]), {}), ("histogram", (V, 2.5), {}), ("histogram", (V, -1), {}),
    ("histogram", (V, [0, np.nan, 2]), {}), ("histogram", (V, 4, (2**62, 2**63)), {}), ("histogram", (V, "nope"), {}),
    ("histogram", (V, [], None), {"weights": np.ones(8)}), ("histogram", (V, 4, (0, 1)), {"weights": np.ones(3)}),
    ("bincount", (np.array([-1, 2]),), {}), ("bincount", (np.array([2**40]),), {}), ("bincount", ([],), {}),
    ("bincount", (np.arange(3),), {"minlength": None}), ("reduce", (V, "subtract"), {}),
    ("reduce", (V, "bitwise_and"), {}),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,args,kwargs", EXPLAINED_AS_CALLED, ids=lambda v: repr(v)[:40])
def test_explain_checks_the_arguments_as_the_call_does(backend, op, args, kwargs):
    # explain('add_one', -1, 16) answered though add_one(-1, 16) raises (so
    # did 2.5, True, '4', 2**40), explain('dot', 2-D, 2-D) answered though dot
    # refuses, explain('histogram', a, []) ended in an AttributeError where
    # the call answers: each op's own checks are now the ones explain runs.
    call = _outcome(lambda: getattr(cuatomic, op)(*args, backend=backend, **kwargs))
    said = _outcome(lambda: cuatomic.explain(op, *args, backend=backend, **kwargs))
    if call[0] == "answers":
        assert said[0] == "answers", (call, said)
        last = cuatomic.last_launch()
        cuatomic.sum(np.ones(3), method="atomic", backend="cpu")  # a known launch, to see whether the call launches
        before = cuatomic.last_launch()
        getattr(cuatomic, op)(*args, backend=backend, **kwargs)
        launched = cuatomic.last_launch() != before
        choice = said[1]
        if not launched:  # nothing ran: explain says so rather than name a rung
            assert choice.method is None and "launches no rung" in choice.reason, choice
        else:
            assert choice.method == cuatomic.last_launch()["method"], (choice, last)
    else:
        assert said == call, f"the call raises {call}, explain {said}"


def test_methods_refuses_what_is_no_op_or_backend_by_name():
    # methods(['sum']) ended in "unhashable type: 'list'"
    for bad in (["sum"], {"op": "sum"}, np.array(["sum"]), None, "product"):
        with pytest.raises(ValueError, match=r"^unknown op "):
            cuatomic.methods(bad)
    for bad in (["cpu"], {}, "CPU", 0):
        with pytest.raises(ValueError, match=r"^unknown backend "):
            cuatomic.methods("sum", bad)


@pytest.fixture
def fresh_rules():
    """auto's cached rules forgotten before and after the test."""
    from cuatomic import _auto

    def forget():
        _auto.forget()
    forget()
    yield
    forget()


GOOD_CASE = {"op": "sum", "dtype": "float64", "n": 4096, "ms": {"vector": 0.1}}
BAD_RULES = {
    "missing file": None,
    "not JSON": "{'backend': 'cpu'",
    "a JSON list": "[1, 2]",
    "no backend": json.dumps({"cases": []}),
    "cases not a list": json.dumps({"backend": "cpu", "cases": {}}),
    "a case without n": json.dumps({"backend": "cpu", "cases": [{"op": "sum", "ms": {}}]}),
    "n of a string": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, n="4096")]}),
    "no op": json.dumps({"backend": "cpu", "cases": [{"n": 1, "ms": {}}]}),
    "ms a list": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, ms=[0.1])]}),
    "a negative time": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, ms={"vector": -1})]}),
    "bins of 0": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, op="histogram", bins=0)]}),
    "a dtype NumPy does not read": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, dtype="nonsense")]}),
    # _distance reads an at case's row length and data kind: a bad one was a TypeError on every auto call
    "row of a string": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, op="at", bins=100, row="128")]}),
    "row of 0": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, op="at", bins=100, row=0)]}),
    "data not a name": json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, op="at", bins=100, data=[1])]}),
}


@pytest.mark.parametrize("what", list(BAD_RULES))
def test_a_bad_auto_rules_file_is_named_with_its_variable(monkeypatch, tmp_path, fresh_rules, what):
    # A bad CUATOMIC_AUTO_RULES file ended every auto call in a
    # JSONDecodeError or KeyError 'n' that named neither the variable nor the file.
    path = tmp_path / "rules.json"
    if BAD_RULES[what] is not None:
        path.write_text(BAD_RULES[what])
    monkeypatch.setenv("CUATOMIC_AUTO_RULES", str(path))
    start = rf"^CUATOMIC_AUTO_RULES={re.escape(repr(str(path)))}: "
    for call in (lambda: cuatomic.sum(np.ones(10), backend="cpu"), lambda: cuatomic.explain("sum", backend="cpu"),
                 lambda: cuatomic.histogram(np.ones(10), 4, (0, 2), backend="cpu")):
        with pytest.raises(ValueError, match=start) as found:
            call()
        assert "python -m cuatomic bench auto" in str(found.value)
    # a named method reads no rules
    assert cuatomic.sum(np.ones(10), method="vector", backend="cpu") == 10.0


def test_a_good_auto_rules_file_is_read(monkeypatch, tmp_path, fresh_rules):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"backend": "cpu", "cases": [dict(GOOD_CASE, ms={"block_tree": 0.1, "vector": None,
                                                                                  "atomic": 0.01})]}))
    monkeypatch.setenv("CUATOMIC_AUTO_RULES", str(path))
    choice = cuatomic.explain("sum", np.ones(4096, np.int64), backend="cpu")
    assert choice.method == "atomic"  # the measured fastest (integers: no accuracy flag required)
    assert cuatomic._auto.rules("cpu")["source"] == str(path)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [None, "x", np.array(["a", "b"]), object(), np.ones(3, np.float16), 1j],
                         ids=["None", "str", "str-array", "object", "float16", "complex"])
def test_to_device_refuses_what_no_call_takes(backend, value):
    # to_device(None) gave a 0-d object array on the cpu (and on the cuda
    # backend would have copied object pointers to the GPU)
    with pytest.raises(TypeError, match=r"^a has unsupported dtype ") as found:
        cuatomic.to_device(value, backend=backend)
    with pytest.raises(TypeError, match=re.escape(str(found.value))):
        cuatomic.sum(value, backend=backend)  # the same refusal as a call's


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unsupported_dtype_names_the_argument(backend):
    bad = np.array(["a", "b"])
    for call, name in ((lambda: cuatomic.sum(bad, backend=backend), "a"),
                       (lambda: cuatomic.dot(np.ones(2), bad, backend=backend), "b"),
                       (lambda: cuatomic.bincount(bad, backend=backend), "x"),
                       (lambda: cuatomic.histogram(bad, backend=backend), "a"),
                       (lambda: cuatomic.reduce(bad, "add", backend=backend), "a")):
        with pytest.raises(TypeError, match=rf"^{name} has unsupported dtype <U1"):
            call()


def test_explain_sum_reads_the_array_by_keyword_too():
    c = cuatomic.explain("sum", a=np.ones(7, np.float32), backend="cpu")
    assert (c.facts["n"], c.facts["dtype"]) == (7, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_filter_op_of_the_wrong_type_is_named(backend):
    with pytest.raises(TypeError, match=r"op must be a string, one of <, <=.*got list \['<'\]"):
        cuatomic.filter(np.arange(5), ["<"], 2, backend=backend)
    with pytest.raises(ValueError, match=r"unknown op '=<'"):
        cuatomic.filter(np.arange(5), "=<", 2, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_method_and_op_of_the_wrong_type_are_named(backend):
    with pytest.raises(TypeError, match=r"method must be a string, one of auto, atomic.*got list"):
        cuatomic.sum(np.arange(5), method=["atomic"], backend=backend)
    with pytest.raises(TypeError, match=r"method must be a string.*got dict"):
        cuatomic.histogram(np.arange(5), method={}, backend=backend)
    with pytest.raises(ValueError, match=r"unknown op \['sum'\]"):
        cuatomic.explain(["sum"])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stream", [2**70, 2**64, -1])
def test_stream_handle_outside_a_pointer_is_refused(backend, stream):
    # It used to reach C and come back as an OverflowError (or be ignored on the cpu).
    for call in (lambda: cuatomic.sum(np.arange(3), stream=stream, backend=backend),
                 lambda: cuatomic.histogram(np.arange(3), stream=stream, backend=backend),
                 lambda: cuatomic.add_one(stream=stream, backend=backend)):
        with pytest.raises(ValueError, match=rf"stream={stream} is not a valid stream handle.*pointer"):
            call()


def test_stream_objects_are_checked_like_ints():
    from cuatomic._interop import stream_handle

    class CupyLike:
        ptr = 2**64

    class TorchLike:
        cuda_stream = 1.5

    with pytest.raises(ValueError, match=r"CupyLike.ptr=18446744073709551616 is not a valid stream handle"):
        stream_handle(CupyLike())
    with pytest.raises(TypeError, match=r"TorchLike.cuda_stream is not an int stream handle"):
        stream_handle(TorchLike())
    assert stream_handle(2**64 - 1) == 2**64 - 1 and stream_handle(np.uint64(7)) == 7


@pytest.mark.parametrize("method", ["warp_private", "thread_counters"])
def test_cpu_private_histograms_cost_one_per_os_thread(method):
    # One private histogram per OpenMP thread, whatever the logical grid:
    # 2**31-1 blocks x 1024 bins used to ask for 16 TiB up front and fail in
    # C with an empty MemoryError.
    x = np.arange(10.0)
    got, _ = cuatomic.histogram(x, bins=1024, method=method, blocks=2**31 - 1, backend="cpu")
    assert np.array_equal(got, np.histogram(x, bins=1024)[0])
    got, _ = cuatomic.histogram(x, bins=4, method=method, blocks=3, backend="cpu")
    assert np.array_equal(got, np.histogram(x, bins=4)[0])


H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0], "sm_count": 132, "memory_gbps": 3352.3,
        "l2_bytes": 52428800}
H200 = {"name": "NVIDIA H200", "compute_capability": [9, 0], "sm_count": 132, "memory_gbps": 4800.0,
        "l2_bytes": 62914560}
A100 = {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": [8, 0], "sm_count": 108, "memory_gbps": 2039.0,
        "l2_bytes": 41943040}


def _gpu_rules(tmp_path, monkeypatch, *gpus):
    """A rules folder with one cuda file per GPU (each a sum case whose
    fastest rung is named after the GPU), and auto reading it."""
    from cuatomic import _auto
    for facts, fastest in gpus:
        name = _auto.rules_file_name("cuda", facts["name"])
        (tmp_path / name).write_text(json.dumps({"backend": "cuda", "device": facts["name"], "device_facts": facts,
                                                 "cases": [dict(GOOD_CASE, ms={fastest: 0.1})]}))
    monkeypatch.setattr(_auto, "RULES_DIR", tmp_path)
    monkeypatch.delenv("CUATOMIC_AUTO_RULES", raising=False)
    return _auto


def test_rules_file_names_follow_the_gpu():
    from cuatomic import _auto
    assert _auto.rules_file_name("cuda", "NVIDIA H100 80GB HBM3") == "cuda-nvidia-h100-80gb-hbm3.json"
    assert _auto.rules_file_name("cuda", "NVIDIA A100-SXM4-80GB") == "cuda-nvidia-a100-sxm4-80gb.json"
    assert _auto.rules_file_name("cpu", "x86_64, 2 OpenMP threads") == "cpu.json"


def test_each_gpu_reads_its_own_rules_else_the_nearest_gpus(tmp_path, monkeypatch, fresh_rules):
    _auto = _gpu_rules(tmp_path, monkeypatch, (H100, "vector"), (H200, "block_tree"))
    h100 = _auto.nearest_gpu_rules(H100)
    assert (h100["device"], h100["source"], "nearest_to" in h100) == (
        H100["name"], "cuatomic/rules/cuda-nvidia-h100-80gb-hbm3.json", False)
    assert _auto.nearest_gpu_rules(H200)["cases"][0]["ms"] == {"block_tree": 0.1}
    # another Hopper with an H200's memory reads the H200's; an A100 the H100's (bandwidth nearer)
    h200_nvl = dict(H200, name="NVIDIA H200 NVL", sm_count=132, memory_gbps=4800.0)
    assert _auto.nearest_gpu_rules(h200_nvl)["device"] == H200["name"]
    assert _auto.nearest_gpu_rules(h200_nvl)["nearest_to"] == "NVIDIA H200 NVL"
    assert _auto.nearest_gpu_rules(A100)["device"] == H100["name"]
    # the same name is the same GPU, whatever its numbers say
    assert _auto.gpu_distance(H100, dict(H100, memory_gbps=1.0)) == 0.0
    assert 0 < _auto.gpu_distance(H100, H200) < _auto.gpu_distance(H100, A100)
    # no cuda file at all: nothing measured (auto takes the top rung)
    for path in tmp_path.glob("cuda-*.json"):
        path.unlink()
    assert _auto.nearest_gpu_rules(H100) == {"backend": "cuda", "cases": [], "source": None}


def test_a_gpu_file_without_facts_stands_in_only_where_no_file_has_them(tmp_path, monkeypatch, fresh_rules):
    _auto = _gpu_rules(tmp_path, monkeypatch)
    (tmp_path / "cuda-x.json").write_text(json.dumps({"backend": "cuda", "device": "x", "cases": []}))
    assert _auto.nearest_gpu_rules(dict(H100, name="x"))["source"] == "cuatomic/rules/cuda-x.json"
    assert _auto.nearest_gpu_rules(H100)["nearest_to"] == H100["name"]  # the only file there is
    _gpu_rules(tmp_path, monkeypatch, (H200, "block_tree"))
    assert _auto.nearest_gpu_rules(H100)["device"] == H200["name"]  # a file with facts comes first


def test_the_shipped_gpu_rules_are_measurements_named_after_their_gpu():
    from cuatomic import _auto
    from cuatomic.bench.auto import FACTS
    shipped = sorted(_auto.RULES_DIR.glob("cuda-*.json"))
    assert {"cuda-nvidia-h200.json", "cuda-nvidia-h100-80gb-hbm3.json"} <= {p.name for p in shipped}
    for path in shipped:
        data = _auto._read_rules(path, str(path))
        assert data["backend"] == "cuda" and len(data["cases"]) > 50
        assert path.name == _auto.rules_file_name("cuda", data["device"])
        assert set(data["device_facts"]) == set(FACTS) and data["device_facts"]["name"] == data["device"]
        assert _auto.nearest_gpu_rules(data["device_facts"])["source"] == f"cuatomic/rules/{path.name}"


@requires_cuda
def test_the_gpu_a_call_runs_on_reads_the_rules_of_its_kind(fresh_rules):
    from cuatomic import _C, _auto, _backend
    facts = _C.device_facts(_C.devices()[1])
    probe = _backend.cuda_probe()
    for key in ("name", "compute_capability", "sm_count", "l2_bytes", "memory_gbps"):
        assert facts[key] == probe[key]
    assert facts["memory_gbps"] > 100 and facts["l2_bytes"] > 0
    read = _auto.rules("cuda")
    shipped = {p.name for p in _auto.RULES_DIR.glob("cuda-*.json")}
    if _auto.rules_file_name("cuda", facts["name"]) in shipped:
        assert read["device"] == facts["name"] and "nearest_to" not in read
    else:
        assert read["nearest_to"] == facts["name"]
    assert read["device"] in cuatomic.explain("sum", np.ones(1 << 20, np.float32), backend="cuda").reason
    with pytest.raises(cuatomic.CudaError, match="cudaErrorInvalidDevice"):
        _C.device_facts(_C.devices()[0] + 7)


def test_a_rules_file_with_bad_gpu_facts_is_named(tmp_path, monkeypatch, fresh_rules):
    from cuatomic import _auto
    for bad in ({"name": "x"}, dict(H100, compute_capability=[9]), dict(H100, memory_gbps=0), "H100"):
        path = tmp_path / "cuda-x.json"
        path.write_text(json.dumps({"backend": "cuda", "device": "x", "device_facts": bad, "cases": []}))
        with pytest.raises(ValueError, match=r"cuda-x\.json: not a measurement file .*device_facts needs"):
            _auto._read_rules(path, str(path))


@pytest.mark.skipif(cuatomic.backend_info()["cuda"]["usable"], reason="a process with a usable GPU matches it")
def test_cuda_rules_without_a_gpu_are_the_shipped_files(fresh_rules):
    from cuatomic import _auto
    read = _auto.rules("cuda")
    first = sorted(_auto.RULES_DIR.glob("cuda-*.json"))[0].name  # (no GPU to match: the first file by name)
    assert read["source"] == f"cuatomic/rules/{first}" and "nearest_to" not in read and read["cases"]


def test_device_facts_refuses_a_bad_ordinal():
    from cuatomic import _C
    for bad in (-1, 2**40):
        with pytest.raises((ValueError, OverflowError)):
            _C.device_facts(bad)
