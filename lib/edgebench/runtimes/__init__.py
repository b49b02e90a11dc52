"""Runtimes by name."""

from __future__ import annotations

from edgebench.errors import ConfigError
from edgebench.runtimes.base import Runtime
from edgebench.runtimes.contract import (Artifact, Availability, BatchResult, Instance, LaunchPlan, Limits,
                                         ProbeResult, StartFailed)
from edgebench.runtimes.docker import DockerRuntime
from edgebench.runtimes.linux_vm import LinuxVmRuntime
from edgebench.runtimes.lxd import LxdRuntime
from edgebench.runtimes.nanos import NanosRuntime
from edgebench.runtimes.native import NativeRuntime
from edgebench.targets import Target

RUNTIMES: dict[str, type[Runtime]] = {
    "native": NativeRuntime,
    "docker": DockerRuntime,
    "lxd": LxdRuntime,
    "nanos": NanosRuntime,
    "linux-vm": LinuxVmRuntime,
}


def runtime_order() -> list[str]:
    """The order runtimes appear in, in every table and figure: the registry's."""
    return list(RUNTIMES)


def runtime_colours() -> dict[str, str]:
    """One colour per runtime, the same in every figure."""
    return {name: cls.colour for name, cls in RUNTIMES.items()}


# Runtimes the papers use that are not implemented yet: named, so the error can say so.
PLANNED: dict[str, str] = {}


def check_runtime_names(names) -> list[str]:
    out = []
    for name in names:
        if name in RUNTIMES:
            out.append(name)
        elif name in PLANNED:
            raise ConfigError(f"runtime {name!r} ({PLANNED[name]}) is not available in this version of "
                              f"edgebench; choose from {', '.join(RUNTIMES)} or 'auto'")
        else:
            raise ConfigError(f"unknown runtime {name!r}; choose from {', '.join(RUNTIMES)} or 'auto'")
    return out


def get_runtime(name: str, target: Target, run_tag: str | None = None, **options) -> Runtime:
    check_runtime_names([name])
    return RUNTIMES[name](target, run_tag, **options)


__all__ = ["RUNTIMES", "runtime_order", "runtime_colours", "get_runtime", "check_runtime_names", "Runtime", "Limits", "Artifact", "Instance",
           "LaunchPlan", "BatchResult", "Availability", "ProbeResult", "StartFailed"]
