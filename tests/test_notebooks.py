"""Notebooks are committed clean and take their parameters from one papermill cell."""

import ast
import importlib
import io
import json
import re
import tokenize
from pathlib import Path

import pandas as pd
import pytest
import test_container_overhead as co
import test_plotting as tp
from IPython.display import Markdown
from matplotlib.figure import Figure
from test_plotting_intervals_load import open_loop_results
from test_plotting_intervals_parts import _boot_df, _face_df, _home_df
from test_plotting_review import _redis_rows

from edgebench.experiments import EXPERIMENTS
from edgebench.paths import PROJECT_ROOT
from edgebench.plotting import page as page_module, style
from edgebench.plotting.page import Page
from edgebench.plotting.style import plt
from edgebench.results import CORE_COLUMNS, Run

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


# -- every experiment's page: its record, then one call to its plotting module's show() ----------

def page_statements(nb) -> list[ast.stmt]:
    """The code after the parameters cell, which must be one cell."""
    cells = nb["cells"]
    (at,) = [i for i, c in enumerate(cells) if c in parameter_cells(nb)]
    code = [source(c) for c in cells[at + 1:] if c["cell_type"] == "code"]
    assert len(code) == 1, f"{len(code)} code cells after the parameters cell; the page is one show() call"
    return ast.parse(code[0]).body


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_an_experiments_notebook_makes_its_record_and_shows_its_page_in_one_call(name):
    """Every notebook the same four lines: what differs between pages lives in
    edgebench.plotting.<name>.show, where a test can run it (below)."""
    nb = load(EXPERIMENTS[name].notebook_path)
    body = page_statements(nb)
    assert len(body) == 4, [ast.unparse(s) for s in body]
    first = body[0]
    assert isinstance(first, ast.ImportFrom) and first.module == "edgebench.experiments", ast.unparse(first)
    names = {a.name: a.asname or a.name for a in first.names}
    assert set(names) == {"collect", name} and names["collect"] == "collect", ast.unparse(first)
    # The experiment under its own name, unless a parameter has that name (12's `services`).
    module = names[name]
    (cell,) = parameter_cells(nb)
    assert module not in {node.target.id for node in ast.parse(source(cell)).body}, \
        f"`{module}` is a parameter of this notebook: import the experiment under another name"
    expected = (f"from edgebench.plotting import {name} as plots\n"
                f"params = {module}.Params.from_cell(globals())\n"
                "page = plots.show(collect(params), params)")
    assert [ast.unparse(s) for s in body[1:]] == expected.split("\n")


# A run's notes, as meta.json carries them: what a reader needs before any number.
EMULATED_DEVICE = "emulated Raspberry Pi 4 (QEMU without KVM)"
NOTES = {"skipped_runtimes": {"unikraft": "no Unikraft images: set EDGEBENCH_UNIKRAFT_IMAGES"},
         "health": {"throttle_unknown": "no throttling sensor on pi-emulated: thermal: none"}}
SAID = ["Measured on **pi-emulated**, an emulated Raspberry Pi 4", "its numbers measure QEMU's emulator",
        "**unikraft** not measured: no Unikraft images", "Throttling not checked: no throttling sensor on pi-emulated"]


# Two runtimes and one protocol where a builder takes them: the page's parts are the point, and a
# figure of every runtime in both protocols takes seconds to draw.
TWO = dict(runtimes=["native", "docker"], protocols=("fair",))


def _results(name: str) -> pd.DataFrame:
    """Fake but realistic rows of experiment `name`, from the plotting tests' builders."""
    def min_memory_rows() -> pd.DataFrame:  # as tests/test_min_memory.py's
        return pd.DataFrame([dict(app="go-http", runtime="native", metric="min_memory", value=v, bound="bisected",
                                  rep=i) for i, v in enumerate((10, 12, 14), 1)]
                            + [dict(app="go-http", runtime="linux-vm", metric="min_memory", value=96,
                                    bound="runtime floor", accelerator="tcg", rep=1)])

    return {
        "static_footprint": lambda: tp.footprint_results(runtimes=TWO["runtimes"]),
        "time_to_ready": lambda: tp.ttr_results(**TWO),
        "io_bound": lambda: pd.concat([tp.http_results(**TWO), open_loop_results()], ignore_index=True),
        "cpu_bound": lambda: tp.http_results(**TWO),
        "iomt": lambda: tp.iomt_results(**TWO),
        "page_faults": lambda: tp.iomt_results(experiment="page_faults", **TWO),
        "lxd_appendix": tp.appendix_results,
        "microbenchmarks": lambda: tp.microbench_results(**TWO),
        "container_overhead": lambda: pd.concat([
            co._rows(native=("disk", "read", "throughput", [100, 100, 90]),
                     docker=("disk", "read", "throughput", [90, 90])),
            co._rows(native=("hpc", "mg", "edp", [10.0, 10.0]), docker=("hpc", "mg", "edp", [9.0, 9.0]))]),
        "min_memory": min_memory_rows,
        "boot_time": lambda: _boot_df()[0],
        "services": lambda: pd.DataFrame(_redis_rows()),
        "home_automation": lambda: _home_df()[0],
        "face_recognition": lambda: _face_df()[0],
    }[name]()


# What each page saves, under the names make figures, the report and the verdicts know (from
# the rows above: io_bound's include open-loop rates, container_overhead's a power meter's EDP).
FIGURES = {"static_footprint": {"footprint"}, "time_to_ready": {"time_to_ready", "first_start"},
           "io_bound": {"io_bound", "io_bound_open_loop"}, "cpu_bound": {"cpu_bound"}, "iomt": {"iomt_latency"},
           "page_faults": {"page_faults", "cache_misses"}, "lxd_appendix": {"lxd_appendix"},
           "microbenchmarks": {"sysbench_table2", "network"}, "container_overhead": {"overhead", "edp"},
           "min_memory": {"min_memory"}, "boot_time": {"boot_phases", "vmm_guest_split"},
           "services": {"services_throughput"}, "home_automation": {"home_automation_latency"},
           "face_recognition": {"face_recognition_time"}}


def recorded_run(name: str, df: pd.DataFrame, data_dir) -> Path:
    """`df`'s rows written by the library's Run on an emulated device whose meta.json carries
    notes: a runtime skipped, throttling that could not be checked."""
    facts = {"target": "pi-emulated", "emulated_device": EMULATED_DEVICE}
    set_by_run = {"experiment", "run_id", "target", "platform", "point_id"}
    extra = [c for c in df.columns if c not in CORE_COLUMNS]
    with Run(name, {"target": "pi-emulated"}, facts, extra_columns=extra, data_dir=data_dir, run_id="noted") as run:
        for key, value in NOTES.items():
            run.note(key, value)
        for row in df.to_dict("records"):
            # NaN would be written as the text "nan": an empty cell, as a measuring run leaves it.
            row = {k: None if not isinstance(v, str) and pd.isna(v) else v
                   for k, v in row.items() if k not in set_by_run}
            run.add(**{"unit": "", "status": "ok", **row, "error": row.get("error") or ""})
    return run.dir


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_page_shows_the_runs_notes_first_and_saves_its_figures_under_their_names(name, tmp_path, monkeypatch,
                                                                                     capsys):
    """07 and 08 once drew their figures without the run's notes: an emulated device's numbers read
    as a device's. Each plotting module's show() on a run whose meta.json carries notes says them
    before any table or figure, prints the run (the report finds the run by it) and saves the
    figures make figures always saved, under the same names."""
    monkeypatch.setattr(style, "FIGURES_DIR", tmp_path / "figures")
    monkeypatch.setattr(style, "FIGURE_FORMATS", ("png",))  # the names are the point; PDF doubles the time
    shown, figure_names = [], []

    def display(obj, metadata=None):
        shown.append(obj)
        if isinstance(obj, Figure):
            figure_names.append((metadata or {}).get(style.FIGURE_NAME_KEY))

    monkeypatch.setattr(page_module, "display", display)
    run_dir = recorded_run(name, _results(name), tmp_path / "data")
    page = importlib.import_module(f"edgebench.plotting.{name}").show(run_dir, EXPERIMENTS[name].parameters())
    plt.close("all")
    assert isinstance(page, Page) and page.run_dir == run_dir and not page.df.empty and not page.table.empty
    assert str(run_dir) in capsys.readouterr().out
    first = shown[0]
    assert isinstance(first, Markdown), f"{type(first).__name__} shown before the run's notes"
    for said in SAID:
        assert said in first.data, f"{said!r} not in the notes: {first.data}"
    assert sum(isinstance(s, Markdown) and SAID[0] in s.data for s in shown) == 1  # said once, at the top
    assert any(isinstance(s, Figure) for s in shown) and any(isinstance(s, pd.DataFrame) for s in shown)
    saved = {p.stem for p in (tmp_path / "figures" / name).glob("*.png")}
    assert saved == FIGURES[name]
    assert {p.stem for p in (run_dir / "figures").glob("*.png")} == saved  # and beside the data
    assert set(figure_names) <= saved and None not in figure_names  # each shown figure says its file
