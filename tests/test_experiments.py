"""The experiment records against the notebooks, the measuring functions and data/reference/."""

from __future__ import annotations

import pandas as pd
import pytest

from edgebench.errors import ConfigError
from edgebench.experiments import EXPERIMENTS, NOTEBOOKS_DIR, for_notebook, reference_path
from edgebench.figures import declared_parameters, notebooks, parameters_for

RECORDS = list(EXPERIMENTS.values())
# In every notebook, not passed to the measuring function: it picks replotting or measuring.
NOTEBOOK_ONLY = {"run_id"}


def test_every_notebook_has_a_record_and_every_record_a_notebook():
    assert {nb.name for nb in NOTEBOOKS_DIR.glob("[0-9]*.ipynb")} == {e.notebook for e in RECORDS}
    assert [for_notebook(nb).name for nb in notebooks()] == [e.name for e in RECORDS]


@pytest.mark.parametrize("record", RECORDS, ids=lambda e: e.name)
def test_references_hold_the_experiments_numbers(record):
    for name in record.references:
        df = pd.read_csv(reference_path(name))
        assert record.name in set(df["experiment"]), f"{name} has no rows for {record.name}"


@pytest.mark.parametrize("record", RECORDS, ids=lambda e: e.name)
def test_notebook_parameters_are_what_the_experiment_takes(record):
    """A parameter the function does not take would be ignored, or passed as 'unused here'."""
    declared = declared_parameters(record.notebook_path) - NOTEBOOK_ONLY
    assert declared - record.parameters() == set()
    assert {"target", "runtimes", "profile"} <= declared


def test_figures_passes_only_declared_parameters_and_checks_apps_first():
    nb = next(nb for nb in notebooks() if for_notebook(nb).name == "lxd_appendix")
    passed = parameters_for(nb, {"target": "local", "apps": "go-http", "iterations": 5})
    assert passed == {"target": "local"}
    ttr = next(nb for nb in notebooks() if for_notebook(nb).name == "time_to_ready")
    with pytest.raises(ConfigError, match="runs go-http, node-http, not sysbench"):
        parameters_for(ttr, {"apps": "go-http,sysbench"})
