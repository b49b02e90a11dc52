"""Minimum memory (paper 002, Unikraft's Fig. 4): the least memory each runtime can serve an app in.

Per app, runtime and repetition, a bisection on the memory limit (one CPU, no swap beyond the
limit, as the fair protocol of the other experiments): a trial passes when the app becomes ready
through the same probe as time to ready AND, `hold_s` later, is still alive and passes that check
again. "Boots" or "answers ping" are not enough: an app that is OOM-killed on its
first request does not run in that much memory. Every trial is a row (`ready_at_memory`, 1 or 0,
with the reason it failed), the result one `min_memory` row per bisection.

The search starts at `start_mb`, doubles until a trial passes (up to `ceiling_mb`), then bisects
down to `resolution_mb`, never below what the runtime can be asked for (its floor: dockerd refuses
--memory below 6 MiB; a VM needs room for its kernel). An app that passes at the floor is reported
at the floor with bound "runtime floor", meaning "at most this". The search assumes that more
memory never hurts and never tries below a size that failed, so a flaky boundary (an app that
sometimes fits) shows as minima that differ between repetitions, every trial kept as a row.

A start the ready timeout cuts off while it is still going says nothing about memory: on a slow
device (a VM inside an emulated one boots for minutes) every trial would time out and the search
would report "not ready even with the ceiling". Until a trial has passed, a timed-out trial is
tried again with four times the wait, up to 16 times `trial_timeout_s`; once one has passed, the
wait is four times the slowest start seen (at least `trial_timeout_s`) and a timeout counts as a
failure at that memory. The ceiling is clipped to the device's memory.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar
from urllib.parse import urlsplit

from edgebench.apps import HTTP_APPS, place_probe
from edgebench.errors import ConfigError, NotMeasurable
from edgebench.experiments import estimate
from edgebench.experiments.common import check_apps, check_repetitions, opening, resolve_limits
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.protocols import limits_for, memory_not_applicable, with_instance
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.runtimes import RUNTIMES, Limits, Runtime, StartFailed

EXPERIMENT = "min_memory"
EXTRA_COLUMNS = ["trial", "bound", "build", "network", "accelerator", "cpus_applied", "memory_mb_applied",
                 "cpuset_applied", "limits_note", "note"]
PORT_BASE = 18600
# Paper 000's HTTP apps, and the off-the-shelf services the Unikraft page's Fig. 4 measured
# (nginx, Redis), which Unikraft runs from its own builds and the others as Debian's binaries.
MEASURED_APPS = (*HTTP_APPS, "nginx", "redis")
# The bound of a minimum found at the least a runtime accepts: "at most this" (claims read it so).
AT_THE_FLOOR = "runtime floor"


@dataclass(frozen=True)
class Settings:
    repetitions: int
    resolution_mb: float   # bisection stops when the pass/fail interval is this narrow
    trial_timeout_s: float  # a trial that is not ready by then fails (a thrashing VM can take forever)


PROFILE_SETTINGS = {
    "smoke": Settings(repetitions=1, resolution_mb=32, trial_timeout_s=30),
    "quick": Settings(repetitions=1, resolution_mb=4, trial_timeout_s=30),
    "standard": Settings(repetitions=3, resolution_mb=1, trial_timeout_s=60),
}


@dataclass(frozen=True)
class Params(Limited):
    EXPERIMENT: ClassVar[str] = EXPERIMENT

    apps: str = "all"
    repetitions: int = 0          # searches per app and runtime; 0 takes the profile's
    cpus: str = "1"
    start_mb: float = 256
    ceiling_mb: float = 2048
    resolution_mb: float = 0      # 0 takes the profile's
    hold_s: float = 1.0
    trial_timeout_s: float = 0    # seconds a trial waits for ready at first; 0 takes the profile's
    docker_build: str = "offline"
    require_kvm: bool = False
    progress: bool = library(True)
    nanos_accel: str | None = library()
    # parsed when made
    app_names: list[str] = parsed()
    reps: int = parsed()           # searches per app and runtime, as every experiment's record names them
    settings: Settings = parsed()  # the profile's, with repetitions and resolution_mb over it

    def check(self):
        s = PROFILE_SETTINGS[self.profile]
        reps = check_repetitions(self.repetitions or s.repetitions)
        resolution = self.resolution_mb or s.resolution_mb
        if resolution <= 0:
            raise ConfigError(f"resolution_mb={self.resolution_mb!r}: give a positive number of MiB")
        app_names = check_apps(self.apps, MEASURED_APPS)
        if not 0 < self.start_mb <= self.ceiling_mb:
            raise ConfigError(f"start_mb={self.start_mb:g} and ceiling_mb={self.ceiling_mb:g}: "
                              "need 0 < start <= ceiling (MiB)")
        if not self.hold_s > 0:  # a trial that holds for no time checks nothing after ready
            raise ConfigError(f"hold_s={self.hold_s!r}: give the seconds a started app must stay up, such as 1")
        if self.trial_timeout_s < 0:
            raise ConfigError(f"trial_timeout_s={self.trial_timeout_s!r}: give seconds, or 0 for the profile's")
        self.limits()  # parsed once; refused here, before connecting
        settings = Settings(reps, resolution, self.trial_timeout_s or s.trial_timeout_s)
        self.set(app_names=app_names, reps=reps, settings=settings)


@dataclass
class Bisection:
    """The outcome of one search: `minimum_mb` None when no trial passed."""
    minimum_mb: float | None
    bound: str                                     # "bisected", "runtime floor" or "" (none passed)
    trials: list[tuple[float, bool, str]] = field(default_factory=list)  # (memory, passed, why not)
    note: str = ""


def bisect_minimum(passes: Callable[[float], tuple[bool, str]], *, floor_mb: float, start_mb: float,
                   ceiling_mb: float, resolution_mb: float) -> Bisection:
    """Smallest memory on the `resolution_mb` grid above `floor_mb` at which `passes` holds."""
    if not (0 < floor_mb <= start_mb <= ceiling_mb) or resolution_mb <= 0:
        raise ConfigError(f"memory search needs 0 < floor ({floor_mb:g}) <= start ({start_mb:g}) <= ceiling "
                          f"({ceiling_mb:g}) MiB and a positive resolution ({resolution_mb:g})")
    result = Bisection(None, "")

    def trial(mb: float) -> bool:
        ok, why = passes(mb)
        result.trials.append((mb, ok, why))
        return ok

    hi = start_mb
    while not trial(hi):
        if hi >= ceiling_mb:
            result.note = f"not ready even with {ceiling_mb:g} MiB"
            return result
        hi = min(hi * 2, ceiling_mb)
    if hi > floor_mb and trial(floor_mb):
        hi = floor_mb
    if hi == floor_mb:
        result.minimum_mb, result.bound = floor_mb, AT_THE_FLOOR
        return result
    lo = floor_mb  # failed (or, if hi came from doubling, everything below start is unknown)
    lo = max(lo, max((mb for mb, ok, _ in result.trials if not ok and mb < hi), default=lo))
    while hi - lo > resolution_mb:
        steps = max(1, int((hi - lo) / resolution_mb) // 2)
        mid = lo + steps * resolution_mb
        if trial(mid):
            hi = mid
        else:
            lo = mid
    result.minimum_mb, result.bound = hi, "bisected"
    return result


class Patience:
    """How long a bisection's trials wait for ready (see the module's note): `wait_s` grows while
    no trial has passed and a start is cut off still going; then it follows the starts seen."""
    GROWTH = 4
    MOST = 16  # times the first wait

    def __init__(self, first_s: float):
        self.first_s, self.wait_s, self.slowest_s, self.raised = first_s, first_s, None, []

    def timed_out(self, mb: float) -> bool:
        """A trial at `mb` was cut off while starting: True to try it again with a longer wait."""
        if self.slowest_s is not None or self.wait_s >= self.first_s * self.MOST:
            return False
        longer = min(self.wait_s * self.GROWTH, self.first_s * self.MOST)
        self.raised.append(f"not ready within {self.wait_s:g} s at {mb:g} MiB while still starting: "
                           f"waited {longer:g} s from then on")
        self.wait_s = longer
        return True

    def passed(self, ready_s: float | None) -> None:
        if ready_s is None:
            return
        self.slowest_s = max(self.slowest_s or 0.0, ready_s)
        self.wait_s = max(self.first_s, self.GROWTH * self.slowest_s)

    def why_failed(self, why: str) -> str:
        """A timeout that ends the waiting, said as what it may be."""
        if self.slowest_s is None:
            return (f"{why}; still starting after {self.wait_s:g} s: too slow here to tell a memory limit from "
                    "a slow start (raise trial_timeout_s)")
        return f"{why}; not ready within {self.wait_s:g} s, four times the slowest start that passed"


def serves(rt: Runtime, instance, readiness, hold_s: float) -> str | None:
    """None when the instance is alive `hold_s` after ready and passes its readiness check again
    (the same probe: HTTP 200 on the app's path, or a service's own exchange); else why not."""
    target = rt.target
    target.run(["sleep", f"{hold_s:g}"], check=False)
    gone = rt.died(instance.plan)
    if gone:
        return f"died after becoming ready: {gone}"
    host = urlsplit(instance.url).hostname or "127.0.0.1"
    # `true` as the launch: the app already runs, so the probe only checks it (5 s to answer).
    r = target.run([place_probe(target), *readiness.probe_args(instance.port, host), "-interval", "1ms",
                    "-timeout", "5s", "-after-launcher", "--", "true"], timeout=30, check=False)
    if r.exit_code != 0:
        detail = (r.stdout.strip() or r.stderr.strip())[-300:]
        return f"ready, then no longer answering its readiness check {hold_s:g} s later: {detail}"
    return None


def run(params: Params) -> Path:
    """Bisect every (app, runtime) `repetitions` times, runtimes interleaved; writes
    data/min_memory/<run_id>/ and returns that directory."""
    settings, app_names, hold_s, start_mb = params.settings, params.app_names, params.hold_s, params.start_mb
    # Its memory is what it searches: no limit to check, the ceiling clipped to the target.
    with opening(params, app_names, EXTRA_COLUMNS, check_limits=False) as o:
        run, tgt = o.run, o.target
        _, ceiling_mb, ceiling_clip = resolve_limits(tgt, None, params.ceiling_mb)
        clip_note = "; ".join(x for x in (o.clip, ceiling_clip) if x)

        def limits_at(mb: float) -> Limits:
            return limits_for("fair", o.cpus, mb, o.cores)

        place_probe(tgt)
        artifacts = o.package(app_names, params.docker_build)
        ports = itertools.count()

        def row_for(p: Point) -> dict:
            return dict(app=p.inner, runtime=p.runtime.name, protocol="fair", rep=p.rep, cpus=o.cpus,
                        limits_note=clip_note, build=o.build_of(p.inner, p.runtime))

        def measure(p: Point, row: dict) -> None:
            rt, artifact = p.runtime, artifact_for(artifacts, p.inner, p.runtime)
            why = memory_not_applicable(rt, rt.min_memory_mb, tgt.facts())  # what it searches, below the device's
            if why:
                raise NotMeasurable(why)
            trial_no = itertools.count(1)
            seen = {}  # what the trials read back that the result row carries (the VM's accelerator)
            patience = Patience(settings.trial_timeout_s)

            def start(mb: float, limits: Limits):
                while True:
                    try:
                        return rt.start(artifact, limits, PORT_BASE + next(ports) % 200,
                                        timeout_s=patience.wait_s)
                    except StartFailed as e:
                        if not (e.timed_out and patience.timed_out(mb)):
                            raise

            def passes(mb: float) -> tuple[bool, str]:
                n, limits = next(trial_no), limits_at(mb)
                trial_row = dict(row, memory_mb=mb, trial=n)
                try:
                    instance, probe = start(mb, limits)
                except StartFailed as e:
                    why = patience.why_failed(str(e)) if e.timed_out else str(e)
                    run.add(metric="ready_at_memory", value=0, unit="bool", note=why[:400], **trial_row)
                    return False, why
                try:
                    why = serves(rt, instance, artifact.built.app.readiness, hold_s)
                    run.save_raw(f"trial-{p.inner}-{rt.name}-rep{p.rep}-{n}", command=f"{mb:g} MiB",
                                 stdout=rt.app_output(instance)[-4000:], exit_code=None)
                finally:
                    rt.stop(instance)
                if instance.accelerator:
                    seen["accelerator"] = instance.accelerator
                if not why:
                    patience.passed(probe.ready_after_ns / 1e9 if probe.ready_after_ns else None)
                run.add(metric="ready_at_memory", value=0 if why else 1, unit="bool", note=why or "",
                        **with_instance(trial_row, limits, instance))
                return why is None, why or ""

            ceiling = max(ceiling_mb, rt.min_memory_mb)
            found = bisect_minimum(passes, floor_mb=rt.min_memory_mb,
                                   start_mb=min(max(start_mb, rt.min_memory_mb), ceiling), ceiling_mb=ceiling,
                                   resolution_mb=settings.resolution_mb)
            # The minimum is the row's value, not a point it was measured at: memory_mb stays
            # blank so runtimes meet at the same coordinates (make compare).
            result = dict(row, memory_mb=None, bound=found.bound, trial=len(found.trials),
                          note="; ".join(x for x in (found.note, *patience.raised) if x), **seen)
            if found.minimum_mb is None:
                why = f"{found.note}; last: {found.trials[-1][2]}"
                run.failed(metric="min_memory", unit="MiB", error=why[:400], **result)
            else:
                run.add(metric="min_memory", value=found.minimum_mb, unit="MiB", **result)

        sweep(run, o.runtimes, reps=params.reps, inner=app_names, row_for=row_for,
              measure=measure, failed=("min_memory", "MiB"), desc="minimum memory",
              progress=params.progress)
        return run.dir


def plan(params: Params, runtimes: list[str], facts: dict | None = None) -> estimate.Work:
    """One bisection per (runtime, app, repetition): about log2(start / resolution) trials, each a
    start, the hold and a second readiness check (a trial that fails to start ends sooner); on a
    device with `facts`, none for a runtime whose floor it cannot apply (estimate.not_run)."""
    s, apps = params.settings, params.app_names
    # A runtime's floor often ends the bisection early: about half the halvings are run.
    trials = 1 + math.ceil(math.log2(max(2.0, params.start_mb / s.resolution_mb)) / 2)
    bisections = len(apps) * s.repetitions
    hold = params.hold_s + 0.3
    searched = [n for n in runtimes if not estimate.not_run(n, getattr(RUNTIMES.get(n), "min_memory_mb", None), facts)]
    skipped = [n for n in runtimes if n not in searched]  # packaged all the same, before the search
    return estimate.Work(points=s.repetitions * estimate.pairs(runtimes, apps),
                         not_run=s.repetitions * estimate.pairs(skipped, apps),
                         seconds=estimate.model_seconds(searched, len(apps), bisections * trials,
                                                        bisections * trials * hold, apps)
                         + estimate.model_seconds(skipped, len(apps), 0, 0, apps) - estimate.SESSION_S,
                         window_s=estimate.window_seconds(searched, bisections * trials * params.hold_s, apps),
                         apps=apps, levels=f"bisection to {s.resolution_mb:g} MiB (~{trials} trials)",
                         repetitions=s.repetitions)
