"""The experiments, as records: what each is called, its notebook, the function that measures it,
the apps it can run and the papers' numbers it is compared with.

Adding an experiment: its module here (a measuring function that calls `sweep`), its plotting
module in edgebench.plotting, its notebook, its reference CSV in data/reference/, and one record
below. `make figures` reads these records; tests check each against its notebook.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgebench.apps import HTTP_APPS
from edgebench.errors import ConfigError
from edgebench.paths import PROJECT_ROOT, REFERENCE_DIR

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"


@dataclass(frozen=True)
class Experiment:
    name: str                          # data/<name>/ and figures/<name>/
    notebook: str                      # under notebooks/
    measure: str                       # "module:function", imported when asked for
    references: tuple[str, ...] = ()   # data/reference/ files with its published numbers
    apps: tuple[str, ...] = ()         # the apps it can run; () = its own program
    fixed: dict = field(default_factory=dict)  # what the notebook passes the function as a constant
    plan: str = ""                     # "module:function": (parameters, runtimes) -> plan.Work

    @property
    def notebook_path(self) -> Path:
        return NOTEBOOKS_DIR / self.notebook

    def function(self) -> Callable:
        module, _, attr = self.measure.partition(":")
        return getattr(importlib.import_module(module), attr)

    def plan_work(self, params: dict, runtimes: list[str]):
        """The experiment's model of a run with these parameters (edgebench.plan)."""
        if not self.plan:
            raise ConfigError(f"{self.name} has no plan function")
        module, _, attr = self.plan.partition(":")
        return getattr(importlib.import_module(module), attr)({**params, **self.fixed}, runtimes)

    def parameters(self) -> set[str]:
        """What the measuring function takes, beyond what the notebook fixes."""
        return set(inspect.signature(self.function()).parameters) - set(self.fixed)

    def check_apps(self, apps: str | None) -> None:
        """Refuse, before anything runs, apps this experiment cannot run."""
        if not apps or apps in ("all", "auto") or not self.apps:
            return
        wrong = [a.strip() for a in apps.split(",") if a.strip() and a.strip() not in self.apps]
        if wrong:
            raise ConfigError(f"{self.name} runs {', '.join(self.apps)}, not {', '.join(wrong)}; "
                              "change APPS (or leave it at all)")


_EXPERIMENTS = [
    Experiment("static_footprint", "01_static_footprint.ipynb", "edgebench.experiments.footprint:run_footprint",
               ("paper000_image_size.csv",), HTTP_APPS,
               plan="edgebench.experiments.footprint:plan_footprint"),
    Experiment("time_to_ready", "02_time_to_ready.ipynb", "edgebench.experiments.time_to_ready:run_time_to_ready",
               ("paper000_time_to_ready.csv",), HTTP_APPS,
               plan="edgebench.experiments.time_to_ready:plan_time_to_ready"),
    Experiment("io_bound", "03_io_bound.ipynb", "edgebench.experiments.http_load:run_http_load",
               ("paper000_http_load.csv",), HTTP_APPS, {"experiment": "io_bound"},
               plan="edgebench.experiments.http_load:plan_http_load"),
    Experiment("cpu_bound", "04_cpu_bound.ipynb", "edgebench.experiments.http_load:run_http_load",
               ("paper000_http_load.csv",), HTTP_APPS, {"experiment": "cpu_bound"},
               plan="edgebench.experiments.http_load:plan_http_load"),
    Experiment("iomt", "05_iomt.ipynb", "edgebench.experiments.iomt:run_iomt",
               ("paper001_table4_iomt_latency.csv",), (), {"experiment": "iomt"},
               plan="edgebench.experiments.iomt:plan_iomt"),
    Experiment("page_faults", "06_page_faults.ipynb", "edgebench.experiments.iomt:run_iomt",
               ("paper001_table5_page_faults.csv",), (), {"experiment": "page_faults"},
               plan="edgebench.experiments.iomt:plan_iomt"),
    Experiment("lxd_appendix", "07_lxd_appendix.ipynb", "edgebench.experiments.microbench:run_lxd_appendix",
               ("paper001_lxd_appendix.csv",),
               plan="edgebench.experiments.microbench:plan_lxd_appendix"),
    Experiment("microbenchmarks", "08_microbenchmarks.ipynb",
               "edgebench.experiments.microbench:run_microbenchmarks",
               ("paper001_table2_sysbench.csv", "paper001_network.csv"),
               plan="edgebench.experiments.microbench:plan_microbenchmarks"),
    Experiment("container_overhead", "09_container_overhead.ipynb",
               "edgebench.experiments.container_overhead:run_container_overhead",
               ("paper003_container_overhead.csv",), HTTP_APPS,
               plan="edgebench.experiments.container_overhead:plan_container_overhead"),
    Experiment("min_memory", "10_min_memory.ipynb", "edgebench.experiments.min_memory:run_min_memory",
               ("paper002_min_memory.csv",), HTTP_APPS,
               plan="edgebench.experiments.min_memory:plan_min_memory"),
    Experiment("boot_time", "11_boot_time.ipynb", "edgebench.experiments.boot_time:run_boot_time",
               ("paper002_boot_time.csv",), HTTP_APPS,
               plan="edgebench.experiments.boot_time:plan_boot_time"),
    Experiment("services", "12_services.ipynb", "edgebench.experiments.services:run_services",
               ("paper002_services.csv",), (),  # its services are its own parameter, not APPS
               plan="edgebench.experiments.services:plan_services"),
    Experiment("home_automation", "13_home_automation.ipynb",
               "edgebench.experiments.home_automation:run_home_automation",
               ("paper001_table3_apps.csv",), (),  # its one app is its own
               plan="edgebench.experiments.home_automation:plan_home_automation"),
    Experiment("face_recognition", "14_face_recognition.ipynb",
               "edgebench.experiments.face_recognition:run_face_recognition",
               ("paper001_table3_apps.csv",), (),  # its one app is its own
               plan="edgebench.experiments.face_recognition:plan_face_recognition"),
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


def reference_path(name: str) -> Path:
    return REFERENCE_DIR / name
