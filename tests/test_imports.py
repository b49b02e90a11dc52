"""The library's imports, read from its source: no module imports edgebench inside a function
(a reader and a tool follow the imports at the top), and no import circle, counting that
importing a module of a package runs the package's __init__ first."""

from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_imports(path: Path, modules: set[str]) -> tuple[set[str], list[str]]:
    """The edgebench modules `path` imports (each module and the packages holding it that
    `path` is not inside of), and the lines of those imported inside a function."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    imported: set[str] = set()
    inside_function: list[str] = []

    def targets(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in targets(child):
                    if not target.startswith("edgebench"):
                        continue
                    if in_function:
                        inside_function.append(f"{path.relative_to(LIB)}:{child.lineno} imports {target}")
                    # Importing a.b.c runs a/__init__ and a/b/__init__ first, unless we are in them.
                    parts = target.split(".")
                    for n in range(2, len(parts) + 1):
                        prefix = ".".join(parts[:n])
                        if prefix in modules and not (name == prefix or name.startswith(prefix + ".")):
                            imported.add(prefix)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return imported, inside_function


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def library_imports() -> tuple[dict[str, set[str]], list[str]]:
    paths = sorted(LIB.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph, inside = {}, []
    for p in paths:
        graph[module_name(p)], lines = read_imports(p, modules)
        inside += lines
    return graph, inside


def test_no_module_imports_edgebench_inside_a_function():
    _, inside = library_imports()
    assert not inside, "\n".join(inside)


def test_no_import_circle():
    graph, _ = library_imports()
    assert circles(graph) == []


def test_the_walker_sees_a_circle_through_a_package():
    # registry -> runtimes (its __init__, run by importing runtimes.tags) -> runtimes.lxd -> registry:
    # the circle moving the image registry into runtimes/ removed.
    graph = {"edgebench.registry": {"edgebench.runtimes", "edgebench.runtimes.tags"},
             "edgebench.runtimes": {"edgebench.runtimes.lxd", "edgebench.runtimes.tags"},
             "edgebench.runtimes.lxd": {"edgebench.registry"}, "edgebench.runtimes.tags": set()}
    assert circles(graph) == [["edgebench.registry", "edgebench.runtimes", "edgebench.runtimes.lxd"]]


def test_importing_a_packages_module_counts_its_init_only_from_outside():
    modules = set(library_imports()[0])
    outside, _ = read_imports(LIB / "edgebench" / "experiments" / "time_to_ready.py", modules)
    assert {"edgebench.runtimes", "edgebench.runtimes.image_registry"} <= outside
    inside, _ = read_imports(LIB / "edgebench" / "runtimes" / "lxd.py", modules)
    assert "edgebench.runtimes.image_registry" in inside and "edgebench.runtimes" not in inside
