"""The experiments, as records: what each is called, its notebook, the function that measures it,
the apps it can run and the papers' numbers it is compared with.

Adding an experiment: its module here, named after it (a `Params` record of its parameters, a
`run(params)` that opens with `common.opening` and measures through `sweep`, a `plan(params,
runtimes)`, with a `facts` keyword where its points ask memory levels of their own), its plotting
module in edgebench.plotting, its notebook, its reference CSV in data/reference/, and one record
below. `make figures` reads these records; tests check each against its notebook's parameters cell.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from edgebench.apps import HTTP_APPS
from edgebench.errors import ConfigError
from edgebench.experiments import (boot_time, container_overhead, cpu_bound, face_recognition, home_automation,
                                   io_bound, iomt, lxd_appendix, microbenchmarks, min_memory, page_faults, services,
                                   static_footprint, time_to_ready)
from edgebench.experiments.estimate import SESSION_S, Work, not_run
from edgebench.experiments.parameters import Parameters
from edgebench.experiments.reading import READING, Headline, PaperRule, Printed
from edgebench.paths import PROJECT_ROOT, REFERENCE_DIR
from edgebench.results import find_run

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"


@dataclass(frozen=True)
class Experiment:
    name: str                          # data/<name>/ and figures/<name>/
    notebook: str                      # under notebooks/
    parameters: type[Parameters]       # its typed parameters: the notebook's cell, checked once
    run: Callable[[Parameters], Path]  # measures now, returns the run directory
    plan: Callable[..., Work]          # its model of a run: points and seconds (plan_work calls it)
    references: tuple[str, ...] = ()   # data/reference/ files with its published numbers
    apps: tuple[str, ...] = ()         # the apps it can run; () = its own program
    # How its rows are read once measured (edgebench.experiments.reading says more of each):
    headline_metrics: Mapping[str, Headline] = field(default_factory=dict)  # what make compare shows by default
    key_columns: tuple[str, ...] = ()  # the coordinates a value is compared on, in the order a label reads them
    # metric -> key columns that on its rows hold its result, not a point (left out of its key there)
    results_in_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    paper_rules: tuple[PaperRule, ...] = ()  # the papers' rows that give a ratio to native
    main_figure: str = ""              # the figure its page saves (plotting show()), which make verdicts links
    metric_figures: Mapping[str, str] = field(default_factory=dict)  # metric -> its own figure, where it has one
    printed: Mapping[str, Printed] = field(default_factory=dict)  # metric -> the coarse steps its tool prints it in

    @property
    def notebook_path(self) -> Path:
        return NOTEBOOKS_DIR / self.notebook

    def params(self, values: Mapping[str, Any] | Parameters) -> Parameters:
        """Its record from some of its parameters (the rest default), checked."""
        return values if isinstance(values, Parameters) else self.parameters.from_values(values)

    def plan_work(self, values: Mapping[str, Any] | Parameters, runtimes: list[str],
                  facts: Mapping[str, Any] | None = None) -> Work:
        """The experiment's model of a run with these parameters (edgebench.drivers.plan), on a
        device with `facts` when given: the points it cannot run (estimate.not_run) take no time.
        A plan whose points ask memory levels of their own reads the facts itself; for the others
        every point asks the record's one limit, so a runtime is run at it or not at all."""
        params = self.params(values)
        if "facts" in inspect.signature(self.plan).parameters:
            return self.plan(params, runtimes, facts=facts)
        work = self.plan(params, runtimes)
        limit = getattr(params, "memory_limit_mb", None)
        ran = [n for n in runtimes if not not_run(n, limit, facts)]
        if ran == runtimes:
            return work
        # What runs, as the model of the runtimes that run it (the others are packaged, in seconds)
        runs = self.plan(params, ran) if ran else Work(points=0, seconds=SESSION_S)
        return replace(work, seconds=runs.seconds, window_s=runs.window_s, not_run=work.points - runs.points)

    def check_apps(self, apps: str | None) -> None:
        """Refuse, before anything runs, apps this experiment cannot run."""
        if not apps or apps in ("all", "auto") or not self.apps:
            return
        wrong = [a.strip() for a in apps.split(",") if a.strip() and a.strip() not in self.apps]
        if wrong:
            raise ConfigError(f"{self.name} runs {', '.join(self.apps)}, not {', '.join(wrong)}; "
                              "change APPS (or leave it at all)")


def _record(module, notebook: str, references: tuple[str, ...], apps: tuple[str, ...] = ()) -> Experiment:
    """The experiment of `module` (named after it): its Params, run and plan, and how its rows are
    read (edgebench.experiments.reading)."""
    name = module.Params.EXPERIMENT
    return Experiment(name, notebook, module.Params, module.run, module.plan, references, apps, **READING.get(name, {}))


_EXPERIMENTS = [
    _record(static_footprint, "01_static_footprint.ipynb", ("paper000_image_size.csv",), HTTP_APPS),
    _record(time_to_ready, "02_time_to_ready.ipynb", ("paper000_time_to_ready.csv",), HTTP_APPS),
    _record(io_bound, "03_io_bound.ipynb", ("paper000_http_load.csv",), HTTP_APPS),
    _record(cpu_bound, "04_cpu_bound.ipynb", ("paper000_http_load.csv",), HTTP_APPS),
    _record(iomt, "05_iomt.ipynb", ("paper001_table4_iomt_latency.csv",)),
    _record(page_faults, "06_page_faults.ipynb", ("paper001_table5_page_faults.csv",)),
    _record(lxd_appendix, "07_lxd_appendix.ipynb", ("paper001_lxd_appendix.csv",)),
    _record(microbenchmarks, "08_microbenchmarks.ipynb", ("paper001_table2_sysbench.csv", "paper001_network.csv")),
    _record(container_overhead, "09_container_overhead.ipynb", ("paper003_container_overhead.csv",), HTTP_APPS),
    _record(min_memory, "10_min_memory.ipynb", ("paper002_min_memory.csv",), HTTP_APPS),
    _record(boot_time, "11_boot_time.ipynb", ("paper002_boot_time.csv",), HTTP_APPS),
    _record(services, "12_services.ipynb", ("paper002_services.csv",)),  # its services are its own parameter
    _record(home_automation, "13_home_automation.ipynb", ("paper001_table3_apps.csv",)),  # its one app is its own
    _record(face_recognition, "14_face_recognition.ipynb", ("paper001_table3_apps.csv",)),  # its one app is its own
]
EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in _EXPERIMENTS}


def experiment_of(notebook: Path) -> str:
    """notebooks/02_time_to_ready.ipynb -> time_to_ready (the data/ and figures/ folder name)."""
    return re.sub(r"^\d+_", "", Path(notebook).stem)


def for_notebook(path: Path | str) -> Experiment:
    name = Path(path).name
    for e in EXPERIMENTS.values():
        if e.notebook == name:
            return e
    raise ConfigError(f"no experiment record for notebook {name}; add one in edgebench/experiments/__init__.py")


def collect(params: Parameters) -> Path:
    """What a notebook calls with its record: replot the run `params.run_id` names ('latest' or
    an id) when it names one, else measure now, or go on with the run `params.resume` names
    (nothing to measure when it completed). Returns the run directory."""
    if params.run_id:
        return find_run(params.EXPERIMENT, params.run_id)
    if params.resumption is not None and params.resumption.completed:
        print(f"[edgebench] {params.EXPERIMENT} run {params.resumption.run_id} completed: nothing left to measure")
        return params.resumption.run_dir
    return EXPERIMENTS[params.EXPERIMENT].run(params)


def reference_path(name: str) -> Path:
    return REFERENCE_DIR / name
