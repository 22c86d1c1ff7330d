"""The command line a new user meets: python -m cuatomic (the demo), its
--help, and bench's; the demo streams a row for every method of every op."""
import os
import subprocess
import sys

import cuatomic
from cuatomic import _backend


def cli(*args, timeout=300):
    env = dict(os.environ, CUATOMIC_BACKEND="cpu", PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "cuatomic", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_help_names_every_command_flag_and_example():
    out = cli("--help").stdout
    for word in ("--backend", "--size", "--repeat", "bench", "bench auto", "cuatomic.figures", "examples:",
                 "(default: 4194304)"):
        assert word in out, word
    bench = cli("bench", "--help").stdout
    for flag in ("--quick", "--backend", "--ops", "--out", "--repeat", "--no-plots", "--entropies", "--sizes",
                 "--targets", "--toolkit", "examples:", "what it writes"):
        assert flag in bench, flag
    # every flag has help text: no option line ends bare
    options = bench.split("options:")[1].split("what it writes")[0]
    assert "default: bench_results" in options and "writes it to --out." in bench
    assert "--ops OP [OP ...]     the ops" in options
    auto = cli("bench", "auto", "--help").stdout
    assert "CUATOMIC_AUTO_RULES" in auto and "examples:" in auto


def test_demo_prints_every_method_of_every_op_as_it_goes():
    run = cli("--size", "20000", "--repeat", "1")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"cuatomic {cuatomic.__version__} | backend cpu")
    header = next(i for i, line in enumerate(lines) if line.startswith("operation"))
    rows = lines[header + 1:-1]
    assert lines[-1] == "all results match NumPy"
    # aligned: the NumPy? column at one offset in every row
    col = lines[header].index("NumPy?")
    assert all(r[col:col + 6].strip() == "yes" for r in rows), rows
    shown = {r[:col].split()[-1] for r in rows}
    for op in _backend.OPS:
        for name, _, _ in cuatomic.methods(op, "cpu"):
            assert name in shown, (op, name)
