"""The notebooks are committed without outputs, and every one executes
(on the cpu backend, at CI's small sizes) without an error."""
import json
import os
import pathlib

import pytest

import cuatomic

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SHARED_TEXT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"


def test_there_are_six_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["1_", "2_", "3_", "4_", "5_", "6_"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_no_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    dirty = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and (c.get("outputs") or c.get(
        "execution_count"))]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CUATOMIC_BACKEND", "cpu")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # The kernel imports the same cuatomic as these tests: a checkout's, or an installed one.
    where = str(pathlib.Path(cuatomic.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (where, os.environ.get("PYTHONPATH")) if p))
    if SHARED_TEXT.exists():
        monkeypatch.setenv("CUATOMIC_TEXT", str(SHARED_TEXT))
    else:  # offline and nothing cached: the generated stand-in (and its warning)
        monkeypatch.setenv("CUATOMIC_DATA", str(tmp_path))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError on any error
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
