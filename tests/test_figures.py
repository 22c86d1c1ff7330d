"""python -m cuatomic.figures writes into ./cuatomic-figures, and never over
figures committed to git unless --out names them."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cuatomic import figures


@pytest.fixture
def run_json(tmp_path):
    """A figures.json as a run writes it, from the experiments at tiny sizes."""
    text = np.frombuffer(b"the quick brown fox jumps over the lazy dog " * 64, dtype=np.uint8)
    results = {"environment": figures._environment("cpu"), "text_source": "test", "text_nbytes": int(text.nbytes),
               "histogram": figures.histogram_comparison(text, backend="cpu", repeat=1),
               "histogram_sweep": figures.histogram_sweep(text, backend="cpu", blocks=[1, 2], repeat=1)}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(results))
    return path


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A git checkout with figures committed in the default output directory."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / figures.DEFAULT_OUT).mkdir(parents=True)
    (repo / figures.DEFAULT_OUT / "figures.json").write_text("recorded on an H200\n")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    subprocess.run(git + ["add", "."], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "figures"], cwd=repo, check=True)
    monkeypatch.chdir(repo)
    return repo


def test_default_out_is_in_the_working_directory(run_json, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    assert figures.main(["--replot", str(run_json)]) == 0
    assert sorted(p.name for p in (tmp_path / "cuatomic-figures").iterdir()) == [
        "letters.png", "speedup_global.png", "speedup_shared.png", "sweep.png"]


def test_committed_figures_are_not_overwritten_by_default(checkout, run_json, capsys):
    with pytest.raises(SystemExit) as exit_info:
        figures.main(["--replot", str(run_json)])
    assert exit_info.value.code == 2
    assert "--out cuatomic-figures" in capsys.readouterr().err
    assert sorted(p.name for p in (checkout / figures.DEFAULT_OUT).iterdir()) == ["figures.json"]


def test_committed_figures_are_overwritten_when_named(checkout, run_json):
    pytest.importorskip("matplotlib")
    assert figures.main(["--replot", str(run_json), "--out", figures.DEFAULT_OUT]) == 0
    assert (checkout / figures.DEFAULT_OUT / "sweep.png").exists()


def test_without_matplotlib_it_says_so_before_running_anything(tmp_path):
    """The experiments take a while at full size: a missing matplotlib is reported first."""
    code = ("import sys, runpy; sys.modules['matplotlib'] = None; sys.argv = ['figures', '--small']; "
            "runpy.run_module('cuatomic.figures', run_name='__main__')")
    env = {**os.environ, "CUATOMIC_BACKEND": "cpu"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=120)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "needs matplotlib" in run.stderr and "cuatomic[plot]" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "figures: backend" not in run.stdout, (run.stdout, run.stderr)
    assert not (tmp_path / figures.DEFAULT_OUT).exists()
