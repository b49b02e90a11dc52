"""An experiment's model of its own work: how many measurements a run with given parameters makes
and how long it takes on the project's reference machine. Each experiment's `plan(params,
runtimes)` returns a `Work`; `edgebench.drivers.plan` turns it into the line `make plan` prints (or
replaces the estimate with the device's own history)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from edgebench.apps import APPS
from edgebench.experiments.protocols import memory_not_applicable
from edgebench.experiments.windows import MAX_SCALE
from edgebench.runtimes import RUNTIMES
from edgebench.units import as_list


@dataclass
class Work:
    """An experiment's model of one notebook's work: what its plan function returns."""
    points: int                  # measurements (launches, load runs, benchmark runs)
    seconds: float               # the model's estimate, on this project's reference machine
    apps: list[str] = field(default_factory=list)
    levels: str = ""             # what it sweeps besides runtimes and apps, in words
    repetitions: int = 0
    # Where its protocols repeat a different number of times (io_bound: published 3, fair 1), each
    # one's; `repetitions` is then the most of them.
    protocol_reps: dict[str, int] = field(default_factory=dict)
    runtimes: list[str] | None = None  # those of the given it will use (None: all of them)
    # Of `seconds`, the fixed windows: load and benchmark runs of a set duration, holds. A slower
    # device does not stretch them (a 30 s wrk run lasts 30 s on a Pi); it stretches the rest.
    window_s: float = 0.0
    # Windows that follow the device's pace (quick's load windows: experiments/windows.py), which a
    # slower device does stretch, up to windows.MAX_SCALE.
    windows_follow_pace: bool = False
    # Of `points`, those the device cannot run (not_run below): written as rows saying why, in no time.
    not_run: int = 0

    def paced(self, pace: float) -> float:
        """The estimate on a device `pace` times slower than the model's machine at the work (the
        windows that follow the device taken as slower by the same factor, though the run times its
        pace on the CPU alone)."""
        stretch = min(MAX_SCALE, max(1.0, pace)) if self.windows_follow_pace else 1.0
        return (self.seconds - self.window_s) * pace + self.window_s * stretch


# What a runtime adds on the project's reference machine (2 cores, Debian 12, VMs under TCG), in
# seconds: packaging one app (built images are cached; LXD's base image and the tools are made
# when provisioning, outside the notebooks), and one start-limit-check-stop cycle of an instance.
# Calibrated from `make figures PROFILE=quick` there (raw files' times per runtime); a device's own
# history replaces them.
RUNTIME_COST_S = {"native": (0.1, 0.4), "docker": (0.8, 0.9), "docker-crun": (0.8, 0.9), "lxd": (0.5, 5.0),
                  "nanos": (3.0, 2.5), "linux-vm": (2.5, 5.0), "unikraft": (0.3, 0.8)}
UNKNOWN_RUNTIME_COST_S = (10.0, 5.0)
SESSION_S = 3.0   # the kernel, connecting, facts, the run's files, the figure
TOOL_RUNTIMES = ("native", "docker", "lxd")  # those that run Linux tool binaries (sysbench, fio, ...)


def runnable(runtime: str, apps: list[str]) -> list[str]:
    """Those of `apps` the runtime can run: the others (node-http on linux-vm) fail before any start."""
    if runtime not in RUNTIMES:
        return list(apps)
    return [a for a in apps if a not in APPS or RUNTIMES[runtime].runs(APPS[a])]


def not_run(runtime: str, memory_mb: float | None, facts: Mapping | None) -> bool:
    """Whether a point asking `runtime` for `memory_mb` is written as not run on a device with
    these facts, as the sweep does (protocols.memory_not_applicable: a limit below the device's
    memory, by a cgroup its kernel lacks the memory controller for). Without facts, none is."""
    if not facts or runtime not in RUNTIMES:
        return False
    return bool(memory_not_applicable(RUNTIMES[runtime], memory_mb, facts))


def pairs(runtimes: list[str], apps: list[str]) -> int:
    """The (runtime, app) pairs that can run: what a plan counts points over, as the sweep leaves
    the others out before it counts (node-http on linux-vm is no point)."""
    return sum(len(runnable(name, apps)) for name in runtimes)


def app_share(runtime: str, apps: list[str] | None) -> float:
    """The share of `apps` the runtime runs (all of them when none are named)."""
    return len(runnable(runtime, apps)) / len(apps) if apps else 1.0


def model_seconds(runtimes: list[str], packages: int, starts: int, busy_s: float,
                  apps: list[str] | None = None) -> float:
    """A notebook's time in the model: per runtime, `packages` artifacts, `starts` instance
    cycles and `busy_s` seconds of measuring (load, benchmark run, sleeps). Given the `apps`
    these are spread over, a runtime does only the share of its runnable apps."""
    total = SESSION_S
    for name in runtimes:
        pack, start = RUNTIME_COST_S.get(name, UNKNOWN_RUNTIME_COST_S)
        total += app_share(name, apps) * (pack * packages + start * starts + busy_s)
    return total


def window_seconds(runtimes: list[str], window_s: float, apps: list[str] | None = None) -> float:
    """Of model_seconds' `busy_s`, the part that is fixed windows (`window_s` per runtime),
    summed as model_seconds sums it."""
    return sum(window_s * app_share(name, apps) for name in runtimes)


def names(value, everything) -> list[str]:
    """The experiment's own reading of 'a,b' / ['a'] / 'all' (what its measuring function does)."""
    return as_list(value, everything)
