"""The two protocols every experiment runs (see METHODOLOGY): the limits each one asks for,
checking them against what the kernel holds, and building artifacts before any clock starts."""

from __future__ import annotations

from edgebench.apps import APPS, App, place_app
from edgebench.cgroups import NO_MEMORY_CONTROLLER, cpuset_for
from edgebench.errors import EdgebenchError
from edgebench.results import Run
from edgebench.runtimes import Instance, Limits
from edgebench.targets import Target


def fair_limits(cpus: float | None, memory_mb: float | None, cores: int) -> Limits:
    """Same cores for every runtime, GOMAXPROCS = granted CPUs, no swap beyond the limit."""
    pinned = cpuset_for(cpus, cores)
    gomaxprocs = max(1, int(-(-cpus // 1))) if cpus else None
    return Limits(cpus=cpus, memory_mb=memory_mb, cpuset=pinned, swap=False, gomaxprocs=gomaxprocs)


def published_limits(cpus: float | None, memory_mb: float | None) -> Limits:
    """As the artifacts did it: --cpus and --memory only."""
    return Limits(cpus=cpus, memory_mb=memory_mb)


def verify_limits(requested: Limits, applied) -> str:
    """Empty when the kernel holds what was asked; otherwise what differs."""
    if applied is None:
        return "limits not read back"
    diffs = []
    if requested.cpus is not None and (applied.cpus is None or abs(applied.cpus - requested.cpus) > 0.01):
        diffs.append(f"cpus asked {requested.cpus:g}, cgroup has {applied.cpus}")
    if requested.memory_mb is not None and getattr(applied, "memory_controller", None) is False:
        diffs.append(f"memory limit of {requested.memory_mb:g} MiB not applied: {NO_MEMORY_CONTROLLER}")
    elif requested.memory_mb is not None and (applied.memory_mb is None
                                              or abs(applied.memory_mb - requested.memory_mb) > 1):
        diffs.append(f"memory asked {requested.memory_mb:g} MiB, cgroup has {applied.memory_mb}")
    if requested.cpuset and applied.cpuset != requested.cpuset:
        diffs.append(f"cpuset asked {requested.cpuset}, cgroup has {applied.cpuset}")
    return "; ".join(diffs)


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


class Artifacts(dict):
    """(app, runtime) -> Artifact, and `failures`: (app, runtime) -> why it could not be packaged."""

    def __init__(self):
        super().__init__()
        self.failures: dict[tuple[str, str], str] = {}


def package_all(run: Run, target: Target, runtimes, apps, docker_build: str, prepare=None) -> Artifacts:
    """Build every artifact before any clock starts; a failure is kept under raw/ and its reason
    in `failures`. `apps`: names from the registry, or App records (one per NPB binary).
    `prepare(built)`: what goes with the app into every runtime (its input files), before packaging."""
    artifacts = Artifacts()
    for app in apps:
        record = app if isinstance(app, App) else APPS[app]
        app = record.name
        try:
            built = place_app(target, record)
            if prepare:
                prepare(built)
        except EdgebenchError as e:
            run.save_raw(f"build-{app}", command="place_app", stderr=str(e))
            artifacts.failures.update({(app, rt.name): str(e) for rt in runtimes})
            continue
        for rt in runtimes:
            if not rt.runs(record):  # left out of the sweep (experiments.sweep), not a failure
                continue
            try:
                artifacts[(app, rt.name)] = rt.package(built, rt.build_for(docker_build))
            except EdgebenchError as e:
                run.save_raw(f"package-{app}-{rt.name}", command="package", stderr=str(e))
                artifacts.failures[(app, rt.name)] = str(e)
    return artifacts


def batch_failure(result) -> str:
    """Why a batch run failed, for its failed row: OOM kill, timeout or exit code, and the last
    lines it wrote to stderr."""
    why = ("OOM-killed" if result.oom_killed else
           "timed out" if result.timed_out else f"exit code {result.exit_code}")
    tail = " | ".join(result.stderr.strip().splitlines()[-2:])
    return f"{why}: {tail}".strip(": ")
