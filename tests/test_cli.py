"""The command line a new user meets: python -m cuatomic (the demo), its
--help, and bench's; the demo streams a row for every method of every op."""
import os
import re
import subprocess
import sys

import cuatomic
from cuatomic import _backend


def cli(*args, timeout=300):
    env = dict(os.environ, CUATOMIC_BACKEND="cpu", PYTHONUNBUFFERED="1", COLUMNS="200")  # argparse's width
    return subprocess.run([sys.executable, "-m", "cuatomic", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_help_names_every_command_flag_and_example():
    out = cli("--help").stdout
    for word in ("--backend", "--size", "--repeat", "bench", "bench auto", "cuatomic.figures", "examples:",
                 "(default: 4194304)"):
        assert word in out, word
    bench = cli("bench", "--help").stdout
    for flag in ("--quick", "--backend", "--ops", "--out", "--repeat", "--no-plots", "--entropies", "--sizes",
                 "--targets", "--toolkit", "--small", "--only", "examples:", "what it writes"):
        assert flag in bench, flag
    # every flag has help text: after the flag on its line, or on the next (argparse moves a long flag's help)
    lines = [line for line in bench.split("options:")[1].split("what it writes")[0].splitlines() if line.strip()]
    entries = []
    for line in lines:
        if line.startswith("  -"):
            entries.append([line.strip()])
        else:
            entries[-1].append(line.strip())
    assert len(entries) == 13, entries  # -h and the twelve flags
    assert all(len("  ".join(e).split("  ", 1)) == 2 for e in entries), entries
    assert "default: bench_results" in bench and "writes it to --out." in bench
    auto = cli("bench", "auto", "--help").stdout
    assert "CUATOMIC_AUTO_RULES" in auto and "examples:" in auto and "--update FILE" in auto


def test_demo_prints_every_method_of_every_op_as_it_goes():
    run = cli("--size", "20000", "--repeat", "1")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"cuatomic {cuatomic.__version__} | backend cpu")
    header = next(i for i, line in enumerate(lines) if line.startswith("operation"))
    rows = lines[header + 1:-1]
    assert lines[-1] == "all results match NumPy or the exact count"
    # aligned: the result column at one offset in every row; NumPy has no counters, so their rows
    # say what they were checked against (the exact count; the racy rung may lose increments)
    col = lines[header].index("result")
    checks = {r: r[col:col + 8].strip() for r in rows}
    counters = [r for r in rows if r.startswith(("add_one", "mutex_add_one"))]
    assert counters and all(checks[r] == "= count" or (checks[r] == "< count" and " racy " in r) for r in counters), \
        counters
    assert all(checks[r] == "= NumPy" for r in rows if r not in counters), rows
    # (op, method) pairs: the operation column starts with the op's name (histograms with weights
    # are the weighted ladder's rows)
    shown = set()
    for r in rows:
        words = r[:col].split()
        op = "weighted_histogram" if "weights" in r[:col] else words[0]
        shown.add((op, words[-1]))
    for op in _backend.OPS:
        for name, _, _ in cuatomic.methods(op, "cpu"):
            assert (op, name) in shown, (op, name)
    # the race lesson's row says what the race lost (issue 25: it showed 160 of 160 and no loss)
    racy = [re.match(r"add_one 10x16 -> (\d+) \((\d+) of 160 lost\)", r) for r in rows if r.split()[:1] == ["add_one"]]
    found = [m for m in racy if m]
    assert len(found) == 1, rows
    got, lost = map(int, found[0].groups())
    assert got + lost == 160 and 0 <= lost < 160, found[0].group(0)  # that calls lose some: tests/test_mutex.py


def test_version_says_what_the_build_contains():
    run = cli("--version")
    assert run.returncode == 0, run.stderr
    build = cuatomic.backend_info()["build"]
    line = run.stdout.strip()
    assert line.startswith(f"cuatomic {cuatomic.__version__} from "), line
    if not build["cuda"]:
        assert "built without CUDA" in line, line
    elif build["archs"]:
        assert f"built with CUDA for sm_{', sm_'.join(build['archs'])} (+PTX compute_{build['ptx']})" in line, line
    else:
        assert f"built with CUDA as PTX for compute_{build['ptx']} only" in line, line
