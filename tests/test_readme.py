"""The README's examples run as written (```python blocks; ```py blocks need a GPU
with CuPy and PyTorch and are run by tests/test_interop.py's equivalents)."""
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    if not README.exists():
        pytest.skip("README.md not next to the tests")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has a Python example"
    for code in blocks:
        exec(compile(code, str(README), "exec"), {})
