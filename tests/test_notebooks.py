"""The notebooks are committed without outputs, and every one executes
(on the cpu backend, at CI's small sizes) without an error."""
import json
import os
import pathlib
import re

import pytest

import cuatomic

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SHARED_TEXT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"


def test_there_are_seven_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["1_", "2_", "3_", "4_", "5_", "6_", "7_"]


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
    # dask warns about task graphs over 10 MB: at CI's sizes a graph that carries its data stays under
    # that, so the bar is lowered to 1 MB to catch one (notebook 6 sends its data to the cluster once)
    monkeypatch.setenv("DASK_DISTRIBUTED__ADMIN__LARGE_GRAPH_WARNING_THRESHOLD", "1MB")
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
    large = [o["text"] for o in outputs if o.get("output_type") == "stream" and "large graph" in o.get("text", "")]
    assert not large, large


def cells(name, kind):
    """The sources of a notebook's cells of one kind (nbformat stores a source as a list of lines)."""
    path = next(p for p in NOTEBOOKS if p.name == name)
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == kind]


def first_markdown(name):
    return cells(name, "markdown")[0]


def code(name):
    return "\n".join(cells(name, "code"))


def test_notebooks_say_how_much_text_they_load():
    """The sizes in the notebooks' opening paragraphs are what their code loads: the text
    shakespeare() gives (downloaded, or the stand-in of the same size), and notebook 6's copies of it."""
    from cuatomic.datasets import SHAKESPEARE_NBYTES
    text_mb = SHAKESPEARE_NBYTES / 1e6
    assert f"about {text_mb:.1f} MB" in first_markdown("2_histogram.ipynb")
    reps = int(re.search(r"reps = 4 if SMALL else (\d+)", code("6_scaling_out.ipynb")).group(1))
    assert f"tiled {reps} times (about {reps * text_mb:.0f} MB" in first_markdown("6_scaling_out.ipynb")
    assert "shakespeare(with_source=True)" in code("2_histogram.ipynb") and "title=source" in code("2_histogram.ipynb")
