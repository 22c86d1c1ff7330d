"""The benchmark suite's harness: validation before timing, rows, ratios,
the written table and plots (on the cpu backend; GPU peers run on a GPU)."""
import json

import numpy as np
import pytest

import cuatomic
from cuatomic import bench


def test_agrees_catches_wrong_results():
    x = np.arange(1, 1001, dtype=np.float32)
    assert bench.agrees("sum", np.float32(500500), np.sum(x), x)
    assert not bench.agrees("sum", np.float32(500600), np.sum(x), x)
    assert bench.agrees("filter", x[::-1][x[::-1] >= 2], x[x >= 2], x, ordered=False)
    assert not bench.agrees("filter", x[::-1][x[::-1] >= 2], x[x >= 2], x, ordered=True)
    h = np.histogram(x, bins=128, range=(0, 128))[0]
    assert not bench.agrees("histogram", h + (np.arange(128) == 5), h, x)


def test_inputs_of_each_entropy():
    for entropy in bench.ENTROPIES:
        a = bench.make_input("histogram", np.uint8, 5000, entropy)
        assert a.dtype == np.uint8 and a.size == 5000
    assert np.unique(bench.make_input("sum", np.int32, 100, "one")).size == 1
    text = bench.make_input("sum", np.int32, 10_000, "text")
    assert np.bincount(text, minlength=128)[ord(" ")] > 1000


def test_run_validates_times_and_compares(tmp_path):
    results = bench.run(ops=["sum", "dot", "histogram", "filter"], sizes=[3000], dtypes=[np.int32, np.uint8],
                        entropies=["uniform", "one"], backend="cpu", repeat=2, quick=True, progress=None)
    rows = results["rows"]
    assert results["ceiling_gbps"] > 0 and results["environment"]["backend"] == "cpu"
    for op in ("sum", "dot", "histogram", "filter"):
        systems = {r["system"] for r in rows if r["op"] == op}
        assert "numpy" in systems
        assert {f"cuatomic {m}" for m, _, _ in cuatomic.methods(op, "cpu")} <= systems
    assert all(r["ok"] and r["median_ms"] > 0 and r["gbps"] > 0 and r["pct_of_ceiling"] > 0 for r in rows)
    assert all(r["ratio_to_best_peer"] == 1.0 for r in rows if r["system"] == "numpy")
    table = bench.markdown(results)
    assert table.count("\n") == len(rows) + 4 and "vs best peer" in table


def test_command_writes_json_table_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    code = bench.main(["--quick", "--backend", "cpu", "--ops", "sum", "histogram", "--repeat", "1",
                       "--out", str(tmp_path)])
    assert code == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["rows"] and (tmp_path / "bench.md").read_text().startswith("Device:")
    assert (tmp_path / "scaling_sum.png").stat().st_size > 0 and (tmp_path / "scaling_histogram.png").exists()


def test_auto_update_remeasures_only_the_named_ops(tmp_path):
    from cuatomic.bench import auto
    old_case = {"op": "sum", "dtype": "int32", "n": 4096, "ms": {"vector": 0.5, "atomic": 9.0}}
    old = {"backend": "cpu", "device": auto._device("cpu"), "produced_by": "python -m cuatomic bench auto --backend cpu",
           "date": "2026-01-01", "cases": [{"op": "add_one", "n": 1, "grid": [1, 1], "ms": {"x": 1.0}}, old_case]}
    src, out = tmp_path / "old.json", tmp_path / "new.json"
    src.write_text(json.dumps(old))
    assert auto.main(["--backend", "cpu", "--quick", "--repeat", "2", "--ops", "add_one", "--update", str(src),
                      "--out", str(out)]) == 0
    new = json.loads(out.read_text())
    assert [c["op"] for c in new["cases"]] == ["sum", "add_one"]  # in MEASURED_OPS order
    assert new["cases"][0] == old_case  # kept as it was
    assert new["cases"][1]["grid"] == [10, 16] and new["cases"][1]["ms"] != {"x": 1.0}  # measured again
    assert new["produced_by"].startswith(old["produced_by"]) and "--update, re-measuring add_one" in new["produced_by"]
    src.write_text(json.dumps(dict(old, device="another machine")))
    with pytest.raises(SystemExit):
        auto.main(["--backend", "cpu", "--quick", "--repeat", "2", "--ops", "add_one", "--update", str(src),
                   "--out", str(out)])


def test_targets_only_times_the_named_works(tmp_path):
    from cuatomic.bench import suite
    assert suite.main(["--targets", "--backend", "cpu", "--quick", "--repeat", "2", "--only", "sum float32",
                       "--out", str(tmp_path)]) == 0
    table = json.loads((tmp_path / "targets.json").read_text())
    assert table["only"] == "sum float32"
    assert not (tmp_path / "targets.partial.json").exists()  # the checkpoint file goes once the table is written
    assert {r["work"] for r in table["rows"]} == {"sum float32, 2^18"}
    # auto's row names the rung that ran, as last_launch reports it: the one explain() says auto picks
    ran = cuatomic.explain("sum", np.zeros(1 << 18, np.float32), backend="cpu").method
    assert {r["system"] for r in table["rows"]} == {f"cuatomic auto ({ran})", "numpy"}


def test_small_calls_time_every_rung_idle_and_with_a_core_busy():
    from cuatomic.bench.small import LOADS, small_calls, small_markdown
    results = small_calls(backend="cpu", repeat=2, progress=None, warm_s=0)
    rows = results["rows"]
    assert results["n"] == 1024 and {r["load"] for r in rows} == set(LOADS)
    for load in LOADS:
        for op in ("sum", "dot", "prod", "reduce", "histogram", "weighted_histogram", "filter", "add_one",
                   "mutex_add_one"):
            systems = {r["system"] for r in rows if r["op"] == op and r["load"] == load}
            assert {f"cuatomic {m}" for m, _, _ in cuatomic.methods(op, "cpu")} | {"cuatomic auto"} <= systems
    assert all(r["ok"] and 0 < r["median_ms"] <= r["max_ms"] for r in rows)
    table = small_markdown(results)
    assert table.count("\n") == len(rows) // len(LOADS) + 4 and "one core busy: median" in table


# The scatter table's JAX columns: a child process per mode, its rows merged into the parent's.
SCATTER_CASES = [("m = 100", 100, "uniform", 3000, 1), ("m = 1", 1, "one", 3000, 1), ("rows", 50, "uniform", 200, 8),
                 ("int64", 1000, "uniform", 3000, 1, np.int64, "add"),
                 ("maximum", 100, "uniform", 3000, 1, np.float32, "maximum")]


def _numpy_systems(a0, idx, b, *_):
    """The scatter table's systems on a machine without a GPU: np.add.at."""
    return {"numpy add.at": (a0.copy, lambda out: np.add.at(out, idx, b), lambda out: out)}


def test_scatter_jax_child_draws_the_parents_inputs():
    from cuatomic.bench import scatter
    sent = json.loads(json.dumps([scatter._whole(c, np.float32) for c in SCATTER_CASES]))  # as the child reads it
    for mine, its in zip(scatter._inputs(SCATTER_CASES, 3, np.float32), scatter._inputs(sent, 3, None), strict=True):
        assert mine[0] == its[0] and all(np.array_equal(x, y) for x, y in zip(mine[1:], its[1:]))


def test_scatter_table_merges_the_jax_rows(monkeypatch, tmp_path):
    import importlib.machinery
    import subprocess
    import sys
    import types
    from cuatomic.bench import scatter
    jax = types.ModuleType("jax")
    jax.__spec__ = importlib.machinery.ModuleSpec("jax", None)  # installed, as far as find_spec can tell
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setattr(scatter, "_systems", _numpy_systems)
    seen = []

    def child(cmd, env, **kwargs):  # the first mode prints its rows among other output, the second times out
        seen.append(env["XLA_FLAGS"])
        spec = json.loads(cmd[cmd.index("--jax-child") + 1])
        rows = [json.dumps({"case": c[0], "system": spec["system"], "ms": 1.5, "valid": True,
                            "distinct_results_in_3": 1 + (c[0] == "m = 1")}) for c in spec["cases"]]
        if len(seen) == 2:
            raise subprocess.TimeoutExpired(cmd, kwargs["timeout"], output=(rows[0] + "\n").encode())
        return subprocess.CompletedProcess(cmd, 0, "a warning\n" + "\n".join(rows) + "\n")

    monkeypatch.setattr(scatter.subprocess, "run", child)
    out = tmp_path / "scatter.json"
    rows = scatter.run(SCATTER_CASES[:3], repeat=2, path=str(out))
    assert seen == ["", "--xla_gpu_deterministic_ops=true"]
    saved = json.loads(out.read_text())
    assert saved["rows"] == rows and all(r["valid"] for r in rows if r["system"] == "numpy add.at")
    assert [r["system"] for r in rows].count("jax .at[].add") == 3
    assert [r["case"] for r in rows if r["system"] == "jax .at[].add deterministic"] == ["m = 100"]  # before it stopped
    assert saved["notes"] == ["jax .at[].add deterministic: its process ran past 600 s and was stopped"]
    table = scatter.markdown(rows)
    assert "| case | numpy add.at | jax .at[].add | jax .at[].add deterministic |" in table
    assert "| 1.500~ | - |" in table  # m = 1: the first mode's results differed, the second never got there


def test_scatter_table_without_jax_says_so(monkeypatch, tmp_path, capsys):
    import sys
    from cuatomic.bench import scatter
    monkeypatch.setitem(sys.modules, "jax", None)  # not importable
    monkeypatch.setattr(scatter, "_systems", _numpy_systems)
    rows = scatter.run(SCATTER_CASES[:1], repeat=2, path=str(tmp_path / "scatter.json"))
    assert [r["system"] for r in rows] == ["numpy add.at"] and rows[0]["valid"]
    notes = [f"{system}: jax is not installed" for system in scatter.JAX_MODES]
    assert json.loads((tmp_path / "scatter.json").read_text())["notes"] == notes
    printed = capsys.readouterr().out
    assert all(f"note: {note}\n" in printed for note in notes)


def test_scatter_jax_child_on_the_cpu():
    pytest.importorskip("jax")
    from cuatomic.bench import scatter
    for system, flags in scatter.JAX_MODES.items():
        rows, note = scatter._jax_rows(system, flags, SCATTER_CASES, 0, np.float32, 2, backend="cpu")
        assert note is None and [r["case"] for r in rows] == ["m = 100", "m = 1", "rows", "int64"]  # add only
        assert all(r["system"] == system and r["valid"] and r["ms"] > 0 for r in rows)
        assert [r["dtype"] for r in rows] == ["float32"] * 3 + ["int64"] and rows[2]["outputs"] == 400
    rows, note = scatter._jax_rows("jax .at[].add", "", SCATTER_CASES[:1], 0, np.float32, 2)
    assert rows or "jax .at[].add: jax has no gpu device" in note  # a note, not a crash, where it has none


def test_a_slow_row_is_timed_over_fewer_calls_and_every_row_is_checkpointed():
    import importlib
    import time
    targets = importlib.import_module("cuatomic.bench.targets")  # (cuatomic.bench.targets is the function)
    calls, saved = [], []

    def slow():
        calls.append(1)
        time.sleep(targets._Targets.SLOW_S + 0.01)
        return 1
    t = targets._Targets(None, checkpoint=lambda rows: saved.append([r["system"] for r in rows]))
    row = t.add("work", "slow system", slow, lambda v: v == 1, 8, repeat=20)
    # validated, the synchronized call that finds it slow, one warm-up, the timed calls
    assert len(calls) == 1 + 1 + 1 + targets._Targets.SLOW_REPEAT
    assert row["median_ms"] >= 1e3 * targets._Targets.SLOW_S
    t.add("work", "wrong system", lambda: 2, lambda v: v == 1, 8, repeat=2)
    t.add("work", "raising system", lambda: 1 / 0, lambda v: True, 8, repeat=2)
    assert saved[-1] == ["slow system", "wrong system", "raising system"] and len(saved) == 3
    assert "median_ms" not in t.rows[1] and t.rows[2]["error"].startswith("ZeroDivisionError")


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_auto_measure_leaves_a_wrong_rung_untimed(monkeypatch, dtype):
    # bench auto checks every rung against one exact answer computed per case (floats) or NumPy's (ints)
    from cuatomic.bench import auto
    real = cuatomic.sum

    def off_by_one(x, method="auto", **kw):
        got = real(x, method=method, **kw)
        return got + 1 if method == "vector" else got
    monkeypatch.setattr(cuatomic, "sum", off_by_one)
    row = auto.measure({"op": "sum", "dtype": dtype, "n": 4096}, "cpu", repeat=2, progress=lambda s: None)
    assert row["ms"]["vector"] is None and row["not_timed"] == {"vector": "wrong answer"}
    assert row["ms"]["block_tree"] is not None


def test_interleaved_times_take_turns():
    from cuatomic.bench import measure
    log = []
    times = measure.interleaved_times({"a": lambda: log.append("a"), "b": lambda: log.append("b")}, 5,
                                      warmup=2, warm_s=0)
    assert sorted(times) == ["a", "b"] and all(len(t) == 5 and min(t) >= 0 for t in times.values())
    assert log[:4] == ["a", "a", "b", "b"]  # each warmed up first
    assert log[4:] == ["a", "b"] * 5  # then one call of each a round


def test_unique_bench_quick_rows(monkeypatch):
    from cuatomic.bench import unique as ub
    monkeypatch.setattr(ub, "DTYPES", ("int32",))
    monkeypatch.setattr(ub, "DISTINCT", (1000,))
    rows = ub.run("cpu", quick=True)["rows"]
    by = {r["system"]: r for r in rows}
    assert {"cuatomic auto", "cuatomic vector", "numpy unique"} <= set(by)
    assert all(r["distinct"] == 1000 and r["median_ms"] > 0 for r in rows)
    assert by["cuatomic auto"]["timed"] == by["numpy unique"]["timed"] == "in turns"
    assert all(r["timed"] in ("in turns", "alone") for r in rows)


def test_unique_bench_validates_then_times_slow_rungs_alone(monkeypatch):
    """A lower rung whose calls take over 0.2 s is timed alone (3 calls); a
    compared row (NumPy's) stays in turns however slow; a row whose result
    is wrong stops the table before anything is timed."""
    import time
    from cuatomic.bench import unique as ub
    monkeypatch.setattr(ub, "DTYPES", ("int32",))
    monkeypatch.setattr(ub, "DISTINCT", (1000,))
    calls = []

    def slow_systems(x, backend):
        def slow(name):
            def call():
                calls.append(name)
                time.sleep(0.21)
                return np.unique(x, return_counts=True)
            return call
        return {"cuatomic sort": (slow("sort"), True), "numpy unique": (slow("numpy"), True),
                "cuatomic auto": (lambda: cuatomic.unique(x, return_counts=True, backend="cpu"), True)}
    monkeypatch.setattr(ub, "_systems", slow_systems)
    rows = {r["system"]: r for r in ub.run("cpu", quick=True)["rows"]}
    assert rows["cuatomic sort"]["timed"] == "alone" and rows["cuatomic sort"]["median_ms"] > 200
    assert rows["numpy unique"]["timed"] == rows["cuatomic auto"]["timed"] == "in turns"
    # each: checked, then a second call; alone, 3 warm-up calls and 3 timed; in turns, 3 and 20
    assert calls.count("sort") == 2 + 3 + 3 and calls.count("numpy") == 2 + 3 + 20

    def wrong_systems(x, backend):
        def wrong():
            calls.append("wrong")
            v, c = np.unique(x, return_counts=True)
            return v, c + (np.arange(c.size) == 0)
        return {"cuatomic sort": (wrong, True)}
    monkeypatch.setattr(ub, "_systems", wrong_systems)
    del calls[:]
    with pytest.raises(AssertionError, match="cuatomic sort"):
        ub.run("cpu", quick=True)
    assert calls == ["wrong"]
