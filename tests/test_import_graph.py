"""The package's imports point down: tools/import_graph.py finds no cycle in
cuatomic/ (an import inside a function counts), and it does find one where
there is one."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cuatomic_has_no_import_cycle(capsys):
    tool = _tool()
    found = tool.cycles(tool.imports(ROOT / "cuatomic"))
    assert found == [], tool.report(tool.imports(ROOT / "cuatomic"), found)
    assert tool.main([str(ROOT / "cuatomic")]) == 0
    assert "cycles: 0" in capsys.readouterr().out


def test_the_checker_finds_a_cycle_closed_inside_a_function(tmp_path, capsys):
    tool = _tool()
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import low\n")
    (package / "low.py").write_text("def f():\n    from .sub.high import g  # lazy, and still a cycle\n    return g\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "high.py").write_text("from ..low import f\n\ndef g():\n    return f\n")
    graph = tool.imports(package)
    assert graph["pkg.low"] == {"pkg.sub.high": [(2, True)]}
    assert graph["pkg.sub.high"] == {"pkg.low": [(1, False)]}
    assert tool.cycles(graph) == [["pkg.low", "pkg.sub.high"]]
    assert tool.main([str(package)]) == 1
    out = capsys.readouterr().out
    assert "cycles: 1" in out and "pkg.low -> pkg.sub.high (lazy line 2)" in out


def test_the_checker_resolves_imports_as_python_does(tmp_path):
    tool = _tool()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text("import os\nimport pkg.b\nfrom . import _ext, b\nfrom pkg import c\nA = 1\n")
    (package / "b.py").write_text("from . import A  # a name the package's __init__ binds\n")
    (package / "c.py").write_text("")
    (package / "_ext.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    graph = tool.imports(package)
    assert set(graph["pkg.a"]) == {"pkg.b", "pkg._ext", "pkg.c"}
    assert set(graph["pkg.b"]) == {"pkg"}
    assert tool.cycles(graph) == [["pkg", "pkg.a", "pkg.b"]]
