"""The library's imports, read from its source: no module imports edgebench inside a function
(a reader and a tool follow the imports at the top), no module takes names from the face (the
__init__) of a package it is in, and no import circle, counting that importing a module of a
package runs the package's __init__ first and that a name taken from a face depends on that face."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

LIB = Path(__file__).resolve().parents[1] / "lib"


def module_name(path: Path, lib: Path = LIB) -> str:
    parts = list(path.relative_to(lib).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Imports(NamedTuple):
    modules: set[str]           # the edgebench modules and packages (faces) importing it runs
    inside_function: list[str]  # "file:line imports module" of the imports inside a function
    own_face: list[str]         # "file:line ..." of the names taken from a face of its own package


def read_imports(path: Path, modules: set[str], lib: Path = LIB) -> Imports:
    """The edgebench modules `path` imports (each module and the packages holding it that
    `path` is not inside of, and a package it is inside of whose face it imports from), the lines
    of those imported inside a function, and the lines importing from its own package's face."""
    name = module_name(path, lib)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    imported: set[str] = set()
    inside_function: list[str] = []
    own_face: list[str] = []

    def holds_this_module(package_name: str) -> bool:
        return package_name != name and name.startswith(package_name + ".")

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
                        inside_function.append(f"{path.relative_to(lib)}:{child.lineno} imports {target}")
                    # A package it is in, not one of that package's modules: the names come from
                    # the package's __init__, which may be importing this very module just then.
                    if target in modules and holds_this_module(target):
                        imported.add(target)
                        own_face.append(f"{path.relative_to(lib)}:{child.lineno} imports from {target}, the "
                                        "face of its own package: import from the module that defines it")
                    # Importing a.b.c runs a/__init__ and a/b/__init__ first, unless we are in them.
                    parts = target.split(".")
                    for n in range(2, len(parts) + 1):
                        prefix = ".".join(parts[:n])
                        if prefix in modules and not (name == prefix or name.startswith(prefix + ".")):
                            imported.add(prefix)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return Imports(imported, inside_function, own_face)


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


def library_imports(lib: Path = LIB) -> tuple[dict[str, set[str]], list[str], list[str]]:
    """(module -> the modules and faces importing it runs, imports inside a function, imports
    from a face of the importer's own package) of every module under `lib`."""
    paths = sorted(lib.rglob("*.py"))
    modules = {module_name(p, lib) for p in paths}
    graph, inside, own_face = {}, [], []
    for p in paths:
        imports = read_imports(p, modules, lib)
        graph[module_name(p, lib)] = imports.modules
        inside += imports.inside_function
        own_face += imports.own_face
    return graph, inside, own_face


def test_no_module_imports_edgebench_inside_a_function():
    _, inside, _ = library_imports()
    assert not inside, "\n".join(inside)


def test_no_module_imports_from_its_own_packages_face():
    _, _, own_face = library_imports()
    assert not own_face, "\n".join(own_face)


def test_no_import_circle():
    graph, _, _ = library_imports()
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
    outside = read_imports(LIB / "edgebench" / "experiments" / "time_to_ready.py", modules).modules
    assert {"edgebench.runtimes", "edgebench.runtimes.image_registry"} <= outside
    inside = read_imports(LIB / "edgebench" / "runtimes" / "lxd.py", modules).modules
    assert "edgebench.runtimes.image_registry" in inside and "edgebench.runtimes" not in inside


def test_a_face_import_from_inside_is_named_and_closes_a_circle(tmp_path):
    # The shape runtimes/ had: the face imports a runtime, the runtime takes a name from the face.
    # Its own modules, named through the package (`from edgebench.pkg import tags`), are no face import.
    package = tmp_path / "edgebench" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "edgebench" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from edgebench.pkg.base import Limits\n"
                                         "from edgebench.pkg.docker import Docker\n")
    (package / "base.py").write_text("Limits = dict\n")
    (package / "tags.py").write_text("")
    (package / "docker.py").write_text("from edgebench.pkg import Limits, tags\n\nDocker = Limits\n")
    (package / "native.py").write_text("import edgebench.pkg\n")
    graph, _, own_face = library_imports(tmp_path)
    assert own_face == [f"edgebench/pkg/{module}.py:1 imports from edgebench.pkg, the face of its own package: "
                        "import from the module that defines it" for module in ("docker", "native")]
    assert graph["edgebench.pkg.docker"] == {"edgebench.pkg", "edgebench.pkg.tags"}
    assert circles(graph) == [["edgebench.pkg", "edgebench.pkg.docker"]]
