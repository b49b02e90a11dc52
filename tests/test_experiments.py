"""The experiment records against the notebooks, the measuring functions and data/reference/."""

from __future__ import annotations

import ast
import importlib
import inspect
import json

import pandas as pd
import papermill
import pytest
from edgebench.drivers.figures import notebooks, parameters_for, parse_settings
from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS, NOTEBOOKS_DIR, for_notebook, reference_path

RECORDS = list(EXPERIMENTS.values())


def test_every_notebook_has_a_record_and_every_record_a_notebook():
    measuring = {nb.name for nb in NOTEBOOKS_DIR.glob("[0-9]*.ipynb")} - {"00_verdicts.ipynb"}
    assert measuring == {e.notebook for e in RECORDS}
    assert [for_notebook(nb).name for nb in notebooks()] == [e.name for e in RECORDS]


@pytest.mark.parametrize("record", RECORDS, ids=lambda e: e.name)
def test_references_hold_the_experiments_numbers(record):
    for name in record.references:
        df = pd.read_csv(reference_path(name))
        assert record.name in set(df["experiment"]), f"{name} has no rows for {record.name}"


@pytest.mark.parametrize("record", RECORDS, ids=lambda e: e.name)
def test_the_notebooks_parameters_cell_is_its_record(record):
    """Names, types and defaults: what papermill reads from the cell is what the record declares,
    so a value given to the notebook (make figures, SET, papermill -p) is what the record checks."""
    cell = papermill.inspect_notebook(str(record.notebook_path))
    fields = record.parameters.cell_fields()
    assert set(cell) == set(fields), f"the cell and {record.parameters.__name__} name different parameters"
    types = record.parameters.cell_types()
    for name, described in cell.items():
        assert described["inferred_type_name"] == types[name].__name__, name
        assert ast.literal_eval(described["default"]) == fields[name].default, name
    assert {"target", "runtimes", "profile", "run_id"} <= set(fields)


@pytest.mark.parametrize("record", RECORDS, ids=lambda e: e.name)
def test_the_record_of_the_cells_defaults_is_made_and_planned(record):
    """Each notebook's defaults make a record (checked, parsed) that its plan can count."""
    params = record.params({})
    assert params.EXPERIMENT == record.name
    assert params == record.parameters.from_cell({**params.given(), "unrelated": 1})
    work = record.plan(params.replace(profile="quick"), ["native"])
    assert work.points > 0 and work.seconds > 0


def test_a_record_refuses_a_wrong_type_or_a_cell_that_lost_a_parameter():
    io = EXPERIMENTS["io_bound"].parameters
    with pytest.raises(ConfigError, match="iterations='5' is not an int"):
        io(iterations="5")
    with pytest.raises(ConfigError, match="the parameters cell does not set rich_cpus"):
        io.from_cell({k: v for k, v in io().given().items() if k != "rich_cpus"})
    with pytest.raises(ConfigError, match="takes no parameter memroy_levels"):
        io.from_values({"memroy_levels": "64m"})
    assert io(p99_bound_ms=50).p99_bound_ms == 50.0  # an int where the cell says float


def test_figures_passes_only_declared_parameters_and_checks_apps_first():
    nb = next(nb for nb in notebooks() if for_notebook(nb).name == "lxd_appendix")
    passed = parameters_for(nb, {"target": "local", "apps": "go-http", "iterations": 5})
    assert passed == {"target": "local"}
    ttr = next(nb for nb in notebooks() if for_notebook(nb).name == "time_to_ready")
    with pytest.raises(ConfigError, match="runs go-http, node-http, not sysbench"):
        parameters_for(ttr, {"apps": "go-http,sysbench"})


def test_set_reaches_each_notebook_that_declares_it_typed_as_its_default():
    io, ttr = notebooks("io_bound") + notebooks("time_to_ready")
    settings = parse_settings(["memory_levels=48m,32m", "iterations=5", "p99_bound_ms=50", "require_kvm=yes",
                               "protocols=fair"], [io, ttr])
    assert parameters_for(io, {"profile": "quick"}, settings) == {
        "profile": "quick", "memory_levels": "48m,32m", "iterations": 5, "p99_bound_ms": 50.0,
        "require_kvm": True, "protocols": "fair"}
    # time_to_ready has no memory_levels, iterations nor p99 bound
    assert parameters_for(ttr, {}, settings) == {"protocols": "fair", "require_kvm": True}


@pytest.mark.parametrize("items, message", [
    (["memory_levels"], "write name=value"),
    (["memroy_levels=64m"], "no selected notebook has a parameter memroy_levels; theirs are: .*memory_levels"),
    (["runtimes=native"], "use RUNTIMES="),
    (["repetitions=2"], "use REPS="),
    (["run_id=latest"], "make replot"),
])
def test_set_refuses_what_no_notebook_takes_before_anything_runs(items, message):
    with pytest.raises(ConfigError, match=message):
        parse_settings(items, notebooks("io_bound"))


@pytest.mark.parametrize("setting, message", [
    ("iterations=many", "declares iterations as int; give a number"),
    ("require_kvm=maybe", "declares require_kvm as bool; give true or false"),
])
def test_set_refuses_a_value_of_the_wrong_type(setting, message):
    (io,) = notebooks("io_bound")
    with pytest.raises(ConfigError, match=message):
        parameters_for(io, {}, parse_settings([setting], [io]))


@pytest.mark.parametrize("record", RECORDS, ids=lambda e: e.name)
def test_each_experiment_is_its_own_module_and_opens_its_run_one_way(record):
    """experiments.<name> holds its Params, run and plan; its run() opens with common.opening,
    never with its own session, open_run or copy of its parameters (one way to open a point's run)."""
    module = importlib.import_module(f"edgebench.experiments.{record.name}")
    assert module.Params is record.parameters and module.run is record.run and module.plan is record.plan
    source = inspect.getsource(record.run)
    assert "opening(" in source, f"{record.name}'s run() does not open with common.opening"
    for copied in ("session(", "open_run(", "recorded = dict("):
        assert copied not in source, f"{record.name}'s run() opens its own way: {copied}"


def test_a_runs_parameters_are_its_record_as_given_and_as_parsed():
    record = EXPERIMENTS["io_bound"].params({"profile": "quick", "memory_levels": "128m", "repetitions": 2})
    kept = json.loads(json.dumps(record.recorded()))  # what meta.json keeps, as it keeps it
    assert kept["memory_levels"] == "128m" and kept["repetitions"] == 2  # as given
    assert kept["reps"] == 2 and kept["levels"] == ["128m"]  # as parsed
    assert kept["load"]["duration_s"] == record.load.duration_s and kept["path"] == "/io"
    assert "resumption" not in kept


@pytest.mark.parametrize("record", [r for r in RECORDS if "repetitions" in r.parameters.cell_fields()],
                         ids=lambda e: e.name)
def test_every_record_with_repetitions_keeps_the_count_it_makes_as_reps(record):
    """One name for the report's caveat and the plan to read, whatever the profile's default."""
    made = record.params({"profile": "quick", "repetitions": 2})
    assert made.recorded()["reps"] == 2
    assert record.params({"profile": "quick"}).recorded()["reps"] >= 1  # 0 takes the profile's
