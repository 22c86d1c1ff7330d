"""The README's examples run as written and say what they return.

Every ```python block is executed (```py blocks need a GPU with CuPy and
PyTorch and are run by tests/test_interop.py's equivalents). A comment that
opens with a value's repr (``# np.int64(499999500000), exact``) is compared
with what the line returns; the claims written in words (``# exactly
16384``) are checked by STATED below; a ```text block right after a python
block is the output it prints. The ladder table is checked against
``methods()``.
"""
import ast
import contextlib
import io
import pathlib
import re
import tokenize

import numpy as np
import pytest

import cuatomic

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
SHARED_TEXT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare.txt"

# Names a repr in a comment may use: NumPy's scalar constructors and dtypes.
REPR_NAMES = {"np": np, "array": np.array, "nan": np.nan, "inf": np.inf, "bool": np.bool_,  # np.bool: NumPy 2 only
              **{name: getattr(np, name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                                      "uint32", "uint64", "float32", "float64")}}


def _methods_in_order(rows):
    """[(name, step, summary), ...] in tutorial order, the tutorial's first rung first."""
    return (all(isinstance(n, str) and isinstance(s, int) and isinstance(t, str) and t for n, s, t in rows)
            and [s for _, s, _ in rows] == list(range(1, len(rows) + 1)) and rows[0][0] == "atomic")


# Claims the README makes in words, by the exact statement they annotate.
# Each must still be in the README (a check whose line is gone fails), and
# `x` is the README's own `x` (the block's namespace).
STATED = {
    'cuatomic.sum(x, method="atomic")': lambda v, ns: v == np.sum(ns["x"]) and v.dtype == np.int64,
    'cuatomic.dot(x, x, method="mutex")': lambda v, ns: v == np.dot(ns["x"], ns["x"]) and v.dtype == np.int32,
    # "fewer than 16384: increments lost to the race" (how many varies: tests/test_mutex.py asks for a loss
    # within 50 runs)
    'cuatomic.add_one(64, 256, method="racy")': lambda v, ns: 1 <= v <= 64 * 256,
    # "exactly 16384"
    "cuatomic.mutex_add_one(64, 256)": lambda v, ns: v == 16384,
    # "computes where the data is"
    "cuatomic.sum(d)": lambda v, ns: v == np.sum(ns["x"], dtype=np.int64),
    # "[(name, step, summary), ...] in tutorial order"
    'cuatomic.methods("sum")': lambda v, ns: _methods_in_order(v),
    # "milliseconds"
    "r.median, r.iqr": lambda v, ns: all(isinstance(t, float) and t >= 0 for t in v) and v[0] <= ns["r"].max,
}


def _blocks():
    """(source, line of its first line in the README, the ```text block
    that follows it or None) for every ```python block."""
    text = README.read_text()
    found = []
    for m in re.finditer(r"```python\n(.*?)```(?:\s*\n```text\n(.*?)```)?", text, re.S):
        found.append((m.group(1), text[:m.start(1)].count("\n") + 1, m.group(2)))
    return found


def _comments(source):
    """{line: comment text after '#'} of a block."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def _stated_repr(comment):
    """The value a comment opens with, as a repr NumPy would print
    (``np.int64(5)``, ``array([1, 2], dtype=int32)``), or None when the
    comment opens with words."""
    for end in range(len(comment), 0, -1):
        prefix = comment[:end]
        try:
            node = ast.parse(prefix, mode="eval").body
        except SyntaxError:
            continue
        is_repr = isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
             and node.func.value.id == "np") or (isinstance(node.func, ast.Name) and node.func.id == "array"))
        if is_repr or isinstance(node, ast.Constant):
            return prefix, eval(compile(ast.Expression(node), "<readme comment>", "eval"), dict(REPR_NAMES))
    return None


def _same(got, expected):
    if isinstance(expected, np.ndarray):
        return isinstance(got, np.ndarray) and got.dtype == expected.dtype and np.array_equal(got, expected)
    if isinstance(expected, np.generic):
        return type(got) is type(expected) and got == expected
    return got == expected


def _run(source, first_line):
    """Execute a block; returns (namespace, {line: (statement, value)} of
    its top-level expression statements, what it printed)."""
    tree = ast.parse(source)
    values = {}

    def record(line, value):
        values[line] = value
        return value

    for i, node in enumerate(tree.body):
        if isinstance(node, ast.Expr):
            call = ast.Call(ast.Name("__record__", ast.Load()), [ast.Constant(node.lineno), node.value], [])
            tree.body[i] = ast.copy_location(ast.Expr(call), node)
    ast.fix_missing_locations(tree)
    statements = {node.lineno: ast.get_source_segment(source, node) for node in ast.parse(source).body
                  if isinstance(node, ast.Expr)}
    ast.increment_lineno(tree, first_line - 1)  # tracebacks point at the README's lines
    namespace = {"__record__": record}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, str(README), "exec"), namespace)
    return namespace, {line: (statements[line], v) for line, v in values.items()}, printed.getvalue()


@pytest.fixture
def offline_text(monkeypatch, tmp_path):
    """shakespeare() reads the shared copy, or makes the generated stand-in: no download in a test."""
    if SHARED_TEXT.exists():
        monkeypatch.setenv("CUATOMIC_TEXT", str(SHARED_TEXT))
    else:  # outside the checkout (an unpacked sdist): a generated text, never a download
        from cuatomic.datasets import english_like_text
        path = tmp_path / "text.txt"
        path.write_text(english_like_text(200_000))
        monkeypatch.setenv("CUATOMIC_TEXT", str(path))
    monkeypatch.setenv("MPLBACKEND", "Agg")


@pytest.mark.filterwarnings("ignore::UserWarning")  # the offline stand-in warns
def test_readme_examples_run_and_return_what_they_say(offline_text):
    if not README.exists():
        pytest.skip("README.md not next to the tests")
    blocks = _blocks()
    assert blocks, "the README has a Python example"
    checked_repr, checked_words, outputs = [], set(), 0
    for source, first_line, expected_output in blocks:
        if re.search(r"cuatomic\.plots|from cuatomic import plots", source):
            # The README installs without extras first: a block that plots says which extra it needs.
            assert '".[plot]"' in source, "a README block using cuatomic.plots names the plot extra"
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                continue
        if re.search(r"^import dask|cuatomic\.dask", source, re.M):
            try:  # the dask extra (CI installs it with the test extra)
                import dask.array  # noqa: F401
            except ImportError:
                continue
        namespace, values, printed = _run(source, first_line)
        comments = _comments(source)
        for line, (statement, value) in values.items():
            where = f"README.md line {first_line + line - 1}: {statement}"
            stated = _stated_repr(comments[line]) if line in comments else None
            if stated is not None:
                text, expected = stated
                assert _same(value, expected), f"{where} returns {value!r}, the README says {text}"
                checked_repr.append(text)
            if statement in STATED:
                assert STATED[statement](value, namespace), f"{where} returns {value!r}: not what the README says"
                checked_words.add(statement)
        if expected_output is not None:
            assert printed.strip() == expected_output.strip(), "printed output differs from the README's"
            outputs += 1
    assert {"np.int64(499999500000)", "array([999998, 999999], dtype=int32)"} <= set(checked_repr)
    assert checked_words == set(STATED), f"README lines no longer there: {set(STATED) - checked_words}"
    assert outputs >= 1  # explain()'s sentence


def test_readme_ladder_table_is_the_variant_tables():
    if not README.exists():
        pytest.skip("README.md not next to the tests")
    rows = re.findall(r"^\| (\w+) \| (\d+) \| `(\w+)` \| (.+?) \|$", README.read_text(), re.M)
    table = {}
    for op, step, name, summary in rows:
        table.setdefault(op, []).append((int(step), name))
    from cuatomic import _backend
    assert sorted(table) == sorted(_backend.OPS)
    for op in _backend.OPS:
        assert table[op] == [(s, n) for n, s, _ in cuatomic.methods(op, "cpu")], \
            f"README ladder table of {op} differs from the tables: python tools/readme_ladders.py --write"
    if _backend.cuda_built():  # the summaries are the cuda tables' (a CUDA build has them without a GPU)
        summaries = {(op, name): summary for op, _, name, summary in rows}
        for op in _backend.OPS:
            for r in _backend.table(op, "cuda"):
                assert summaries[(op, r.name)] == r.summary, \
                    f"README's {op} {r.name!r} row drifted from cuda/*.cu (python tools/readme_ladders.py --write)"


def test_the_repr_reader_reads_reprs_and_not_words():
    assert _stated_repr("np.int64(499999500000), exact: no 32-bit overflow")[0] == "np.int64(499999500000)"
    text, value = _stated_repr("array([1, 2], dtype=int32), in order")
    assert text == "array([1, 2], dtype=int32)" and value.dtype == np.int32
    for words in ("exactly 16384", "at most 16384: lost", "[(name, step, summary), ...] in tutorial order",
                  "the tutorial's first rung", "sum of all", "milliseconds; warm-up calls are not counted"):
        assert _stated_repr(words) is None, words
    assert not _same(np.int32(5), np.int64(5)) and not _same(np.array([1], np.int64), np.array([1], np.int32))
