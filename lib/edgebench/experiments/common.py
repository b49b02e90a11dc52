"""What every experiment shares: parameter checking, profiles, choosing runtimes, a session that
stops everything it started however the run ends, and `opening`, the steps every run() takes
before it measures (reach the target, choose runtimes, clip and check the limits, open the run)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from edgebench import resume
from edgebench.apps import APPS, HTTP_APPS, get_app
from edgebench.cgroups import NO_MEMORY_CONTROLLER
from edgebench.errors import ConfigError, TargetUnreachable
from edgebench.experiments.packaging import Artifacts, package_all
from edgebench.experiments.protocols import limits_for
from edgebench.provisioning.parts import tool_versions
from edgebench.results import Run, load_meta
from edgebench.runtimes import RUNTIMES, Limits, Runtime, requested_runtimes
from edgebench.signals import deferred_signals
from edgebench.targets import Target, connect
from edgebench.tools.health import HealthMonitor
from edgebench.units import as_list

# smoke: one point per runtime, the smallest sizes and shortest windows, every notebook in minutes:
# that every code path runs on this device, measuring nothing worth reading. quick: seconds per
# notebook, for tests and a first look. standard: the papers' settings.
PROFILES: dict[str, dict] = {
    "smoke": {"repetitions": 1},
    "quick": {"repetitions": 3},
    "standard": {"repetitions": 20},
}


def check_profile(profile: str) -> dict:
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    return dict(PROFILES[profile])


def check_apps(apps, allowed: Iterable[str] = HTTP_APPS) -> list[str]:
    allowed = list(allowed)
    names = as_list(apps, allowed)
    for name in names:
        get_app(name)
        if name not in allowed:
            raise ConfigError(f"app {name!r} does not fit this experiment; choose from {', '.join(allowed)}")
    if not names:
        raise ConfigError(f"no apps selected; choose from {', '.join(allowed)}")
    return names


def check_repetitions(value) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"repetitions={value!r} is not a whole number") from None
    if n < 1:
        raise ConfigError(f"repetitions={value!r} must be at least 1")
    return n


def check_protocols(value) -> list[str]:
    names = as_list(value, ["fair", "published"])
    for p in names:
        if p not in ("fair", "published"):
            raise ConfigError(f"unknown protocol {p!r}; use 'fair', 'published' or both")
    return names


@dataclass
class Selection:
    runtimes: list[Runtime]
    skipped: dict[str, str] = field(default_factory=dict)  # runtime -> why it is absent


def open_run(record, target: Target, **options) -> Run:
    """The Run of the experiment `record` (its Parameters) measures: meta.json holds the record's
    parameters as given and as parsed (`parameters`), its cell values and the experiment's code
    digest (`record`, what resuming compares), the target's facts and the versions of what the
    runtimes and tools run. While it is open the target's health (temperature, throttling,
    frequency, load from others) is sampled: health.csv beside results.csv, a `health` mark on
    every row. A record that resumes a run (edgebench.resume) opens that run again, on the same
    device only (unless resume_anyway)."""
    experiment, params, facts = record.EXPERIMENT, record.recorded(), target.facts()
    options.setdefault("run_id", record.measuring_run_id())
    if record.resumption is not None:
        run = _reopen(experiment, params, target, facts, record.resumption, record, **options)
    else:
        run = Run(experiment, params, facts, tool_versions=tool_versions(target), **options)
        run.meta.update(record=resume.plain_given(record.given()),
                        code_digest=resume.code_digest(type(record).__module__))
        run.note("resumable", "make figures RESUME=latest (or resume='latest') goes on from where it stops")
    run.health = HealthMonitor(target, run.dir)
    run.focus = tuple(record.focus)
    if facts.get("memory_controller") == "no":
        # Said before anything is measured: runtimes accept a memory limit here and do not apply it.
        warning = f"memory limits are not applied on {target.name}: {NO_MEMORY_CONTROLLER}"
        run.note("memory_limits", warning)
        print(f"[edgebench] {warning}. Points below the device's memory that need a cgroup's limit are "
              "not measurable here (their rows say so; they are not run).", file=sys.stderr)
    return run


@dataclass
class Opening:
    """A run() once its target is reached and its run opened: the runtimes chosen, the record's
    limits clipped to the target (`clip` says what was clipped), and the artifacts once packaged."""
    target: Target
    runtimes: list[Runtime]
    run_id: str
    cores: int
    cpus: float | None
    memory_mb: float | None
    clip: str
    run: Run | None = None
    artifacts: Artifacts = field(default_factory=Artifacts)

    def limits(self, protocol: str = "fair") -> Limits:
        """What `protocol` asks for at the record's (clipped) CPUs and memory."""
        return limits_for(protocol, self.cpus, self.memory_mb, self.cores)

    def package(self, apps, docker_build: str = "offline", prepare=None, runtimes=None) -> Artifacts:
        """Every app for every runtime (or those given), before any clock starts
        (edgebench.experiments.packaging)."""
        self.artifacts = package_all(self.run, self.target, self.runtimes if runtimes is None else runtimes, apps,
                                     docker_build, prepare)
        return self.artifacts

    def build_of(self, app: str, rt: Runtime) -> str:
        """The build of the app's artifact for the row ("" where packaging failed)."""
        artifact = self.artifacts.get((app, rt.name))
        return artifact.build if artifact else ""


@contextmanager
def opening(record, apps: Iterable[str], extra_columns: Iterable[str] = (), *, check_limits: bool = True,
            before: Callable[[Opening], None] | None = None) -> Iterator[Opening]:
    """The steps every run() takes before it measures, however it then goes on: reach the target
    and choose the runtimes (session: everything they start is stopped on the way out), clip the
    record's `cpus_limit` and `memory_limit_mb` to the target, check the fair limits against every
    runtime and app (`check_limits`; a limit below what a runtime can boot is refused here, before
    anything starts), `before(opening)` for the experiment's own checks, then open the run and note
    the runtimes skipped and the limits clipped."""
    apps, run_id = list(apps), record.measuring_run_id()
    with session(record.target, record.runtimes, run_id, apps,
                 runtime_options(getattr(record, "require_kvm", False),
                                 getattr(record, "nanos_accel", None))) as (target, selection):
        cpus, memory_mb, clip = resolve_limits(target, getattr(record, "cpus_limit", None),
                                               getattr(record, "memory_limit_mb", None))
        opened = Opening(target, selection.runtimes, run_id, target.facts()["cores"], cpus, memory_mb, clip)
        if check_limits:
            for rt in selection.runtimes:
                for app in apps:
                    rt.check_limits(app, opened.limits("fair"))
        if before is not None:
            before(opened)
        with open_run(record, target, extra_columns=list(extra_columns), run_id=run_id) as run:
            opened.run = run
            run.note("skipped_runtimes", selection.skipped)
            if clip:
                run.note("clipped", clip)
            yield opened


def _reopen(experiment: str, params: dict, target: Target, facts: dict, resumption, record, **options) -> Run:
    old = load_meta(resumption.run_dir).get("target") or {}
    found = list(resumption.differences) + resume.device_differences(old, facts)
    if found and not record.resume_anyway:
        raise ConfigError(f"cannot resume {experiment} run {resumption.run_id}: {'; '.join(found)}. Measure anew "
                          "(leave RESUME / resume empty) or go on anyway with RESUME_ANYWAY=yes "
                          "(resume_anyway=True), which the run records")
    options = {k: v for k, v in options.items() if k != "run_id"}
    kept, cut, outside = resume.keep_ended_rows(resumption.run_dir, Run.columns_for(options.get("extra_columns", ())))
    print(f"[edgebench] resuming {experiment} run {resumption.run_id}: {kept} rows of ended points kept"
          + resume.discarded_words(cut, outside), file=sys.stderr)
    sitting = {"resumed": True, "rows_kept": kept, "rows_discarded": cut + outside}
    if found:
        sitting["went_on_anyway_despite"] = found
    if resumption.more_repetitions:
        sitting["more_repetitions"] = {"repetitions": params.get("reps"), "focus": params.get("focus")}
    run = Run(experiment, params, facts, tool_versions=tool_versions(target), run_id=resumption.run_id,
              data_dir=resumption.run_dir.parent.parent, resume=True, sitting=sitting, **options)
    if resumption.more_repetitions:  # a later resume compares with the repetitions it has now
        run.meta["record"] = {**(run.meta.get("record") or {}), "repetitions": record.repetitions}
    return run


def select_runtimes(target: Target, requested, run_tag: str, apps: Iterable[str] = (),
                    options: dict | None = None) -> Selection:
    """'auto': every runtime the target can run (of those that join automatically; names beside
    it add variants such as docker-crun), the rest skipped with the reason.
    A runtime named explicitly must be available, or this fails before anything starts.
    `apps`: what will run; a runtime that runs none of them is left out with the reason, named or
    not (`make figures RUNTIMES=native,linux-vm` names runtimes for every notebook, and linux-vm
    runs no sysbench): that is the experiment's reach, not a failure. Refused only when no
    runtime is left.
    `options`: per-runtime settings, e.g. {"nanos": {"require_kvm": True}}."""
    names, named = requested_runtimes(requested)
    chosen, skipped = [], {}
    for name in names:
        rt = RUNTIMES[name](target, run_tag, **(options or {}).get(name, {}))
        unfit = [a for a in apps if not rt.runs(APPS[a])]
        if unfit and len(unfit) == len(list(apps)):  # asked first: no need to probe the target
            skipped[name] = f"{name} does not run {', '.join(unfit)} in edgebench (it runs {rt.runs_what()})"
            continue
        why = rt.availability()
        if why and why.named_only and name not in named:
            skipped[name] = why.reason
        elif why:
            chosen.append(rt)
        elif name not in named:
            skipped[name] = why.reason
        else:
            raise ConfigError(f"runtime {name!r} is not available on {target.name}: {why.reason}; "
                              "fix that or leave it out of `runtimes`")
    if not chosen:
        raise ConfigError(f"no runtime available on {target.name}: "
                          + "; ".join(f"{name}: {why}" for name, why in skipped.items())
                          + "; choose others in `runtimes`")
    for name, reason in skipped.items():
        print(f"[edgebench] {name} skipped: {reason}", file=sys.stderr)
    return Selection(chosen, skipped)


def runtime_options(require_kvm=False, nanos_accel=None) -> dict:
    """Settings for runtimes that have them. Nanos: `require_kvm` fails a VM that would run
    under software emulation instead of measuring it; `nanos_accel` is auto (ops' choice), kvm
    or tcg, defaulting to $EDGEBENCH_NANOS_ACCEL or auto. LXD: how traffic reaches a container,
    $EDGEBENCH_LXD_NETWORK, proxy (LXD's proxy device, the default) or forward (runtimes/lxd.py)."""
    accel = nanos_accel or os.environ.get("EDGEBENCH_NANOS_ACCEL") or "auto"
    return {"nanos": {"require_kvm": str(require_kvm).lower() in ("1", "true", "yes"), "accel": accel},
            "lxd": {"network": os.environ.get("EDGEBENCH_LXD_NETWORK") or "proxy"}}


def resolve_limits(target: Target, cpus_v: float | None, mem_v: float | None) -> tuple[float | None, float | None, str]:
    """The requested limits (parsed by the record: CPUs, MiB; None for none), clipped to what the
    target has; the note says what was clipped."""
    facts = target.facts()
    notes = []
    cores, mem_total = facts.get("cores"), facts.get("memory_mb")
    if cpus_v is not None and cores and cpus_v > cores:
        notes.append(f"cpus {cpus_v:g} clipped to the target's {cores}")
        cpus_v = float(cores)
    if mem_v is not None and mem_total and mem_v > mem_total:
        notes.append(f"memory {mem_v:g} MiB clipped to the target's {mem_total}")
        mem_v = float(mem_total)
    return cpus_v, mem_v, "; ".join(notes)


@contextmanager
def session(target_spec, runtimes, run_id: str, apps: Iterable[str] = (),
            options: dict | None = None) -> Iterator[tuple[Target, Selection]]:
    """Connect (failing fast when unreachable), choose runtimes, and on the way out, however it
    ends, stop everything the runtimes started and close the connection."""
    target = connect(target_spec)
    selection, silent = None, False
    try:
        selection = select_runtimes(target, runtimes, run_tag_for(run_id), apps, options)
        yield target, selection
    except TargetUnreachable:
        silent = not answers(target)
        raise
    finally:
        try:
            if silent:  # each clean-up command would wait its timeouts, with Ctrl-C deferred
                print(f"[edgebench] {target.name} does not answer: what this run started there is left as it "
                      "is; `make plan` lists it, with how to remove it, once the host answers", file=sys.stderr)
            elif selection:
                with deferred_signals():  # a second Ctrl-C must not leave half of it running
                    for rt in selection.runtimes:
                        rt.cleanup()
        finally:
            target.close()


def answers(target: Target) -> bool:
    """Whether the target answers a command now (once more, after one did not)."""
    try:
        return target.run(["true"], check=False, timeout=30).ok
    except TargetUnreachable:
        return False


def run_tag_for(run_id: str) -> str:
    """Short, name-safe tag for containers and cgroups (docker names allow [a-zA-Z0-9_.-])."""
    return run_id.replace("T", "").replace("Z", "")[:24]


__all__ = ["PROFILES", "as_list", "check_profile", "check_apps", "check_repetitions", "check_protocols",
           "select_runtimes", "resolve_limits", "session", "open_run", "opening", "Opening", "APPS"]

