"""Notebooks are committed clean and take their parameters from one papermill cell."""

import ast
import io
import json
import re
import tokenize

import pytest
from edgebench.paths import PROJECT_ROOT

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
REQUIRED_PARAMETERS = {"target", "runtimes", "profile", "run_id"}  # apps only where the experiment runs apps

each_notebook = pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def load(path):
    return json.loads(path.read_text())


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def parameter_cells(nb):
    return [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]


def test_the_glob_finds_the_notebooks():
    first = NOTEBOOKS_DIR / "01_static_footprint.ipynb"
    assert first.exists() and first in NOTEBOOKS


@each_notebook
def test_is_a_notebook(path):
    nb = load(path)
    assert nb["nbformat"] == 4 and isinstance(nb["cells"], list) and nb["cells"]


@each_notebook
def test_code_cells_are_committed_without_outputs(path):
    for i, cell in enumerate(load(path)["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"cell {i} has outputs; clear them before committing"
            assert cell.get("execution_count") is None, f"cell {i} has an execution_count"


@each_notebook
def test_one_parameters_cell_of_typed_commented_literals(path):
    cells = parameter_cells(load(path))
    assert len(cells) == 1, f"{len(cells)} cells tagged 'parameters'; papermill needs exactly one"
    text = source(cells[0])
    commented = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(text).readline)
                 if t.type == tokenize.COMMENT}
    names = set()
    for stmt in ast.parse(text).body:
        line = text.splitlines()[stmt.lineno - 1]
        assert isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value, \
            f"not `name: type = value  # comment`: {line!r}"
        ast.literal_eval(stmt.value)  # raises if not a literal
        assert stmt.end_lineno == stmt.lineno, f"one line per parameter: {line!r}"
        assert stmt.lineno in commented, f"no trailing comment saying what it means: {line!r}"
        names.add(stmt.target.id)
    assert REQUIRED_PARAMETERS <= names, f"missing parameters: {REQUIRED_PARAMETERS - names}"


@each_notebook
def test_papermill_infers_every_parameter(path):
    """papermill's --help-notebook parser drops a line it cannot read (an '=' in the comment,
    for one): every name in the cell must reach it, or `-p name value` is silently ignored."""
    from papermill.inspection import inspect_notebook

    (cell,) = parameter_cells(load(path))
    names = {node.target.id for node in ast.parse(source(cell)).body if isinstance(node, ast.AnnAssign)}
    assert names and set(inspect_notebook(str(path))) == names


@each_notebook
def test_names_the_projects_kernel(path):
    """JupyterLab (and papermill in `make figures`) start the kernel the notebook names: the
    project's venv, registered by `make lab` / `make figures` as "edgebench"."""
    from edgebench.drivers.lab import KERNEL_NAME
    assert load(path)["metadata"]["kernelspec"]["name"] == KERNEL_NAME


@each_notebook
def test_ends_with_try_this_naming_its_own_parameters(path):
    """Coursework: the last cell says which parameters to change; each one named (as `name = ...`)
    must be in the parameters cell, or a student edits a name the notebook ignores."""
    nb = load(path)
    last = nb["cells"][-1]
    text = source(last)
    assert last["cell_type"] == "markdown" and text.startswith("## Try this"), "no closing 'Try this' section"
    (cell,) = parameter_cells(nb)
    declared = {node.target.id for node in ast.parse(source(cell)).body}
    named = set(re.findall(r"`(\w+) = ", text))
    assert named, "the 'Try this' section names no parameter as `name = value`"
    assert named <= declared, f"not parameters of this notebook: {named - declared}"
