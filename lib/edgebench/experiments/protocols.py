"""The two protocols every experiment runs (docs/manual.md, "The experiments"): the limits each one
asks for, and checking them against what the kernel holds once applied."""

from __future__ import annotations

from edgebench.cgroups import NO_MEMORY_CONTROLLER, cpuset_for
from edgebench.runtimes import Instance, Limits


def fair_limits(cpus: float | None, memory_mb: float | None, cores: int) -> Limits:
    """Same cores for every runtime, GOMAXPROCS = granted CPUs, no swap beyond the limit."""
    pinned = cpuset_for(cpus, cores)
    gomaxprocs = max(1, int(-(-cpus // 1))) if cpus else None
    return Limits(cpus=cpus, memory_mb=memory_mb, cpuset=pinned, swap=False, gomaxprocs=gomaxprocs)


def published_limits(cpus: float | None, memory_mb: float | None) -> Limits:
    """As the artifacts did it: --cpus and --memory only."""
    return Limits(cpus=cpus, memory_mb=memory_mb)


def limits_for(protocol: str, cpus: float | None, memory_mb: float | None, cores: int) -> Limits:
    """The limits `protocol` asks for at these CPUs and MiB: fair's or published's."""
    return fair_limits(cpus, memory_mb, cores) if protocol == "fair" else published_limits(cpus, memory_mb)


def verify_limits(requested: Limits, applied) -> str:
    """Empty when the kernel holds what was asked; otherwise what differs."""
    if applied is None:
        return "limits not read back"
    diffs, has = [], getattr(applied, "holder", "cgroup has")
    if requested.cpus is not None and (applied.cpus is None or abs(applied.cpus - requested.cpus) > 0.01):
        diffs.append(f"cpus asked {requested.cpus:g}, {has} {applied.cpus}")
    if requested.memory_mb is not None and getattr(applied, "memory_controller", None) is False:
        diffs.append(f"memory limit of {requested.memory_mb:g} MiB not applied: {NO_MEMORY_CONTROLLER}")
    elif requested.memory_mb is not None and (applied.memory_mb is None
                                              or abs(applied.memory_mb - requested.memory_mb) > 1):
        diffs.append(f"memory asked {requested.memory_mb:g} MiB, {has} {applied.memory_mb}")
    if requested.cpuset and applied.cpuset != requested.cpuset:
        diffs.append(f"cpuset asked {requested.cpuset}, {has} {applied.cpuset}")
    return "; ".join(diffs)


# What memory_not_applicable's reason says, which the figures' notes look for in the rows.
LIMIT_NOT_APPLIED = f"cannot be applied: {NO_MEMORY_CONTROLLER}"


def memory_not_applicable(runtime, memory_mb: float | None, facts: dict) -> str:
    """Why a point asking `runtime` for `memory_mb` cannot be measured on this device ('' if it
    can): the kernel has no memory controller and the runtime limits memory with a cgroup, which
    would run the app unlimited under a row that names the limit. A level clipped to the device's
    own memory asks nothing the device lacks, and is measured."""
    if memory_mb in (None, "") or facts.get("memory_controller") != "no" or not runtime.memory_by_cgroup:
        return ""
    if facts.get("memory_mb") and float(memory_mb) >= float(facts["memory_mb"]):
        return ""
    return (f"a memory limit of {float(memory_mb):g} MiB {LIMIT_NOT_APPLIED} "
            "(this runtime limits memory with a cgroup; not run)")  # the row names the runtime


def with_limits_note(row: dict, note: str) -> dict:
    """The row with `note` added after what its limits_note already says (clipping, pinning, ...)."""
    return dict(row, limits_note="; ".join(x for x in (row.get("limits_note"), note) if x))


def with_applied(row: dict, limits: Limits, applied) -> dict:
    """The row's columns once the limits were read back, and a note that adds any mismatch to
    what the row already noted (clipping, pinning). Without limits there is nothing to check."""
    mismatch = verify_limits(limits, applied) if limits.any else ""
    return dict(with_limits_note(row, mismatch), cpus_applied=applied.cpus if applied else None,
                memory_mb_applied=applied.memory_mb if applied else None,
                cpuset_applied=applied.cpuset if applied else None)


def with_instance(row: dict, limits: Limits, instance: Instance) -> dict:
    """with_applied for a running app, plus its network path and, for a VM, the accelerator
    it ran with (kvm or tcg: software emulation is a different machine)."""
    row = dict(row, network=instance.network_path)
    if instance.accelerator:
        row["accelerator"] = instance.accelerator
    if instance.pinned_to:
        row = with_limits_note(row, f"QEMU (all its threads) pinned to cores {instance.pinned_to}")
    return with_applied(row, limits, instance.limits_applied)
