"""The README's examples run as written (```python blocks; ```py blocks need a GPU
with CuPy and PyTorch and are run by tests/test_interop.py's equivalents)."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if README.exists() else []


def test_readme_has_python_examples():
    if not README.exists():
        pytest.skip("README.md not next to the tests")
    assert BLOCKS, "the README has a Python example"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i + 1}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code):
    if re.search(r"cuatomic\.plots|from cuatomic import plots", code):
        # The README installs without extras first: a block that plots says which extra it needs.
        assert '".[plot]"' in code, "a README block using cuatomic.plots names the plot extra"
        pytest.importorskip("matplotlib")
    exec(compile(code, str(README), "exec"), {})
