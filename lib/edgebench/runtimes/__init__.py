"""Runtimes by name."""

from __future__ import annotations

from edgebench.errors import ConfigError
import edgebench.runtimes.tags as tags
from edgebench.runtimes.base import Runtime
from edgebench.runtimes.contract import (Artifact, Availability, BatchResult, Instance, LaunchPlan, Limits, ProbeResult,
                                         StartFailed)
from edgebench.runtimes.docker import DockerCrunRuntime, DockerRuntime
from edgebench.runtimes.linux_vm import LinuxVmRuntime
from edgebench.runtimes.lxd import LxdRuntime
from edgebench.runtimes.nanos import NanosRuntime
from edgebench.runtimes.native import NativeRuntime
from edgebench.runtimes.unikraft import UnikraftRuntime
from edgebench.targets import Target
from edgebench.units import as_list

RUNTIMES: dict[str, type[Runtime]] = {
    "native": NativeRuntime,
    "docker": DockerRuntime,
    "docker-crun": DockerCrunRuntime,
    "lxd": LxdRuntime,
    "nanos": NanosRuntime,
    "unikraft": UnikraftRuntime,
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


def requested_runtimes(requested) -> tuple[list[str], set[str]]:
    """What `runtimes` asks for, in the registry's order: "auto" is every runtime that joins
    automatically, and names beside it ("auto,docker-crun") add to it. Returns (names, the ones
    named explicitly: those must be available, the others are skipped with the reason)."""
    names = as_list(requested if requested not in (None, "") else "auto", ["auto"])
    named = set(check_runtime_names([n for n in names if n != "auto"]))
    if "auto" not in names:
        return [n for n in names if n in named], named
    return [n for n, cls in RUNTIMES.items() if cls.in_auto or n in named], named


def leftovers_on(target: Target, tag_prefix: str = "") -> list[str]:
    """What edgebench runs whose tag starts with `tag_prefix` left running on the target, of every
    runtime: the run that made them could not stop them (a host that stopped answering, a
    controller killed with SIGKILL), or another run uses them now."""
    found = tags.leftovers(target, tag_prefix)
    for cls in RUNTIMES.values():
        found += [item for item in cls.leftovers(target, tag_prefix) if item not in found]
    return found


# How to remove each kind of leftover by hand, by the word(s) leftovers() names it with.
_REMOVE = (("lxd container ", "lxc delete --force {}"), ("counting slice ", "systemctl stop {}"),
           ("container ", "docker rm -f {}"), ("image ", "docker rmi {}"), ("process ", "kill {}"),
           ("cgroup ", "rmdir {} (once its processes are gone)"))


def removal_command(item: str) -> str:
    """The command that removes one item leftovers_on() lists, run on its target."""
    for kind, command in _REMOVE:
        if item.startswith(kind):
            return command.format(item[len(kind):].split()[0])
    return ""


__all__ = ["leftovers_on", "removal_command", "RUNTIMES", "requested_runtimes", "runtime_order", "runtime_colours",
           "check_runtime_names", "Runtime", "Limits", "Artifact", "Instance",
           "LaunchPlan", "BatchResult", "Availability", "ProbeResult", "StartFailed"]
