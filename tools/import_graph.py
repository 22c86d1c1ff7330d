"""The import graph of the cuatomic package, read from its source, and its cycles.

    python tools/import_graph.py            the graph and any cycle; exit 1 on a cycle
    python tools/import_graph.py PKG_DIR    the same for another package directory

Every import of a module of the package is collected, at module level and
inside functions alike: an import moved into a function still runs, it only
runs later, so a cycle it closes is still a cycle (the layers must point
down, docs/architecture.md). Nothing of the package is imported, so the
check needs no build and cannot be fooled by what an import does.

``from X import name`` is an edge to ``X.name`` when that is a module of the
package (a ``.py`` file, a subpackage, or a compiled extension: a built file
beside the sources or an ``Extension("pkg.name", ...)`` in the ``setup.py``
above the package), else to ``X``, whose ``__init__`` binds the name. An
import does not count as an import of the packages above the module it
names: inside the package they are already loading.

tests/test_import_graph.py runs it.
"""
import ast
import importlib.machinery
import pathlib
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "cuatomic"


def modules(package_dir):
    """{dotted module name: path} for every ``.py`` file under `package_dir`
    (a package's ``__init__.py`` is the package's own name)."""
    package_dir = pathlib.Path(package_dir)
    root = package_dir.name
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [root, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def extensions(package_dir):
    """Dotted names of the package's compiled extension modules: built files
    beside the sources, and the names ``setup.py`` gives to ``Extension``
    (so a checkout that was never built knows them too)."""
    package_dir = pathlib.Path(package_dir)
    root = package_dir.name
    found = set()
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".so", ".pyd")
    for path in package_dir.rglob("*"):
        if path.name.endswith(suffixes):
            stem = path.name.split(".", 1)[0]
            found.add(".".join([root, *path.parent.relative_to(package_dir).parts, stem]))
    setup = package_dir.parent / "setup.py"
    if setup.exists():
        for node in ast.walk(ast.parse(setup.read_text(), str(setup))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Extension"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith(root + ".")):
                found.add(node.args[0].value)
    return found


def _base(module, is_package, level, target):
    """The absolute name a relative import of `level` dots (and `target`,
    possibly None) in `module` starts from; None if it climbs out of the
    top-level package."""
    parts = module.split(".")
    if not is_package:
        parts.pop()  # a module's relative imports start from its package
    if level - 1 > len(parts) - 1:
        return None
    parts = parts[:len(parts) - (level - 1)]
    return ".".join(parts + ([target] if target else []))


def imports(package_dir):
    """The package's import edges: {module: {imported module: [(line, lazy)]}},
    where `lazy` is True for an import inside a function (or a class body
    run later), False for one that runs when the module is first imported."""
    package_dir = pathlib.Path(package_dir)
    root = package_dir.name
    found = modules(package_dir)
    known = set(found) | extensions(package_dir)
    graph = {name: {} for name in found}

    def add(source, target, line, lazy):
        if target == source:
            return
        graph[source].setdefault(target, []).append((line, lazy))

    for name, path in found.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        for node, lazy in _walk(tree, False):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == root or alias.name.startswith(root + "."):
                        add(name, _nearest(alias.name, known), node.lineno, lazy)
            elif isinstance(node, ast.ImportFrom):
                base = node.module if node.level == 0 else _base(name, is_package, node.level, node.module)
                if base is None or not (base == root or base.startswith(root + ".")):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    add(name, sub if sub in known else _nearest(base, known), node.lineno, lazy)
    return graph


def _nearest(dotted, known):
    """`dotted`, or the closest package above it that the graph knows (an
    import of a name that is not a module stands for its package)."""
    while dotted not in known and "." in dotted:
        dotted = dotted.rsplit(".", 1)[0]
    return dotted


def _walk(node, lazy):
    """Every node under `node` with whether it runs only when a function is
    called: anything inside a ``def`` or ``lambda``."""
    for child in ast.iter_child_nodes(node):
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield child, inner
        yield from _walk(child, inner)


def cycles(graph):
    """The import cycles: one list of modules per strongly connected group
    of two or more (Tarjan's algorithm), each list a path that closes on
    its first module, groups and paths in a stable order."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(_path(graph, group) for group in groups)


def _path(graph, group):
    """A cycle through the group's first module that stays inside the group
    (breadth first, so the shortest such cycle)."""
    inside, start = set(group), group[0]
    came_from = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                path = [v]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if w in inside and w not in came_from:
                came_from[w] = v
                queue.append(w)
    return list(group)  # unreachable for a strongly connected group


def report(graph, found):
    """The text :func:`main` prints: one line per module (what it imports,
    an import made only inside functions marked ``*``), then each cycle:
    its shortest path, then every import between its modules with its lines."""
    lines = []
    for source in sorted(graph):
        targets = ", ".join(t + ("*" if all(lazy for _, lazy in graph[source][t]) else "")
                            for t in sorted(graph[source]))
        lines.append(f"{source} -> {targets or '(nothing of the package)'}")
    lines.append("(* only inside functions)")
    lines.append(f"cycles: {len(found)}")
    for path in found:
        lines.append("  " + " -> ".join(path + path[:1]))
        group = set(path) | _group(graph, path[0])
        for a in sorted(group):
            for b in sorted(set(graph[a]) & group):
                where = ", ".join(f"{'lazy ' if lazy else ''}line {line}" for line, lazy in sorted(set(graph[a][b])))
                lines.append(f"    {a} -> {b} ({where})")
    return "\n".join(lines)


def _group(graph, start):
    """The modules on some cycle through `start`: reachable from it and
    reaching it back."""
    def reach(edges, v):
        seen, todo = {v}, [v]
        while todo:
            for w in edges.get(todo.pop(), ()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen
    back = {}
    for a, targets in graph.items():
        for b in targets:
            back.setdefault(b, set()).add(a)
    return reach(graph, start) & reach(back, start)


def main(argv=None):
    """Print the graph of the package (`argv`'s one argument, else cuatomic/)
    and its cycles; 1 if there is a cycle, else 0."""
    argv = sys.argv[1:] if argv is None else list(argv)
    package_dir = pathlib.Path(argv[0]) if argv else PACKAGE
    graph = imports(package_dir)
    found = cycles(graph)
    print(report(graph, found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
