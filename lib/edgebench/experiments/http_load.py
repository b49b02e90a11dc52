"""HTTP load (paper 000, Figs. 4-13), the measurement of two experiments, io_bound and cpu_bound
(their modules name the endpoint): throughput, latency and jitter of `/io` (I/O-bound) and
`/compute` (CPU-bound), in a rich scenario (the paper's 8 CPUs / 2048 MB, clipped to the target)
and a constrained sweep (1 CPU at 512/256/128/64 MB by default).

Protocols, in the `protocol` column:
- `published`: as the artifact did it: `--cpus`/`--memory` only, Go's default GOMAXPROCS,
  closed-loop wrk; the paper kept mean and standard deviation (the rows keep everything).
- `fair`: the same pinned cores for every runtime, GOMAXPROCS = granted CPUs, memory+swap =
  memory, and the load generator pinned to cores the app does not use when both share a machine.

A runtime that fails at a memory level (OOM-killed, never ready, every request failing) gives
`failed` rows with the reason, and the sweep goes on.

Every row of a load run carries `duration_s`, the seconds asked of the load tool, and `window_s`,
the seconds it measured over by its own clock.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, ClassVar, Iterator

from edgebench.apps import HTTP_APPS
from edgebench.cgroups import cores_in
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import (Opening, as_list, check_apps, check_protocols, check_repetitions,
                                          opening, resolve_limits)
from edgebench.experiments.parameters import Parameters, library, parsed
from edgebench.experiments.protocols import limits_for, with_instance
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.experiments.windows import SCALED_PROFILES, WindowScale, given_scale, window_scale
from edgebench.results import Run
from edgebench.runtimes import Limits, StartFailed
from edgebench.runtimes.tags import is_alive
from edgebench.targets import LOCAL_NAMES, connect
from edgebench.tools.load import LOAD_PROFILES, LoadGenerator, LoadSettings, load_generator
from edgebench.tools.open_loop import (OPEN_LOOP_CHOICES, OPEN_LOOP_PROFILES, OpenLoopGenerator, OpenLoopSettings,
                                       offered_rates, open_loop_generator, parse_rates)
from edgebench.units import parse_cpus, parse_memory_mb

EXTRA_COLUMNS = ["scenario", "endpoint", "iter", "build", "network", "threads", "connections",
                 "duration_s", "littles_law", "accelerator", "cpus_applied", "memory_mb_applied", "cpuset_applied",
                 "loadgen_cpuset", "limits_note", "load_tool", "offered_rps", "offered_share", "window_s"]
PORT_BASE = 18300
# The paper's constrained sweep; quick keeps one level the apps live at and one near the edge.
MEMORY_LEVELS = {"standard": "512m,256m,128m,64m", "quick": "256m,64m", "smoke": "128m"}
READY_TIMEOUT_S = 60
# One connection for this long after every closed-loop run: the service still answers (answers_after).
AFTER_RUN_S = 1
# wrk runs per (scenario, app, runtime) and protocol, per profile; `repetitions`, when given, sets
# every protocol's. The claims (data/reference/claims.csv) read the published protocol's rows at
# every scenario and memory level: three runs give each an interval (claims.MIN_N). No claim reads
# fair, whose cell is a closed-loop run and five open-loop rates (135 s in standard): one run each.
REPETITIONS = {"smoke": {"fair": 1, "published": 1}, "quick": {"fair": 1, "published": 1},
               "standard": {"fair": 1, "published": 3}}
# (metric, key in the report, unit, scale from microseconds)
LATENCY_METRICS = [("latency_mean", "mean", "ms"), ("latency_stdev", "stdev", "ms"),
                   ("latency_p50", "p50", "ms"), ("latency_p90", "p90", "ms"), ("latency_p99", "p99", "ms"),
                   ("latency_p99_9", "p99_9", "ms"), ("latency_max", "max", "ms")]
# Open loop (fair only): latency at fixed offered rates, from each request's due time.
OPEN_LOOP_METRICS = [("ol_latency_p50", "p50"), ("ol_latency_p90", "p90"), ("ol_latency_p99", "p99"),
                     ("ol_latency_p99_9", "p99_9"), ("ol_latency_max", "max")]


def scenarios(target, asked: list[tuple[str, float | None, float | None]]) -> list[tuple[str, float, float, str]]:
    """[(scenario, cpus, memory_mb, clipping note)] of the record's (scenario, cpus, MiB), in its
    order (rich first, then the memory levels as given), clipped to the target."""
    return [(scenario, *resolve_limits(target, cpus, mem)) for scenario, cpus, mem in asked]


def loadgen_cpuset(target_is_loadgen: bool, app_cpuset: str | None, cores: int) -> tuple[str | None, str]:
    """Cores for wrk that the app does not use, when both share a machine."""
    if not target_is_loadgen or not app_cpuset:
        return None, ""
    used = set(cores_in(app_cpuset))
    free = [c for c in range(cores) if c not in used]
    if not free:
        return None, "no core left for the load generator: it shares the app's cores"
    return ",".join(map(str, free)), ""


@contextmanager
def load_generator_for(target, spec) -> Iterator[tuple[LoadGenerator, bool]]:
    """wrk's host: this machine by default. When that is the target itself, apps and wrk share
    a machine (`shared`), and the fair protocol pins them to different cores."""
    shared = target.is_local and str(spec or "local").strip().lower() in LOCAL_NAMES
    host = target if shared else connect(spec)
    try:
        yield load_generator(host), shared
    finally:
        if host is not target:
            host.close()


@dataclass(frozen=True)
class HttpLoad(Parameters):
    """The parameters of notebooks 03 (io_bound) and 04 (cpu_bound): one record, two endpoints,
    each experiment's module a subclass naming its endpoint."""
    ENDPOINT: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    SMOKE: ClassVar[dict] = {**Parameters.SMOKE, "open_loop": "none"}  # the closed loop's one point

    apps: str = "all"
    repetitions: int = 0            # 0 takes the profile's per protocol (REPETITIONS); more gives a spread
    protocols: str = "fair,published"
    memory_levels: str = ""         # "" takes the profile's
    constrained_cpus: str = "1"
    rich_cpus: str = "8"
    rich_memory: str = "2048m"
    iterations: int = 100
    duration_s: int = 0             # 0 takes the profile's
    connections: int = 0            # 0 takes the profile's
    docker_build: str = "offline"
    require_kvm: bool = False
    open_loop: str = "auto"
    open_loop_rates: str = ""
    open_loop_duration_s: int = 0
    p99_bound_ms: float = 100.0
    threads: int = library(0)       # 0 takes the profile's
    timeout_s: int = library(0)
    warmup_s: int | None = library()  # None takes the profile's (0 is no warm-up)
    window_scale: str = library("auto")  # quick's windows follow the device's pace (experiments/windows.py)
    load_generator: str = library("local")
    progress: bool = library(True)
    nanos_accel: str | None = library()
    # parsed when made
    app_names: list[str] = parsed()
    protocol_names: list[str] = parsed()
    reps: int = parsed()            # the sweep's repetitions: the most any protocol makes
    protocol_reps: dict[str, int] = parsed()  # {protocol: repetitions}: reps_at() reads it
    levels: list[str] = parsed()    # the constrained memory levels, each with its unit
    asked: list[tuple[str, float | None, float | None]] = parsed()  # (scenario, CPUs, MiB) before clipping
    load: LoadSettings = parsed()
    open_settings: OpenLoopSettings | None = parsed()
    windows_given: tuple[str, ...] = parsed(())  # the windows the user set: kept as set
    path: str = parsed()            # the URL path wrk requests

    def check(self):
        memory_levels = self.memory_levels or MEMORY_LEVELS[self.profile]
        levels = as_list(memory_levels, [])
        constrained = parse_cpus(self.constrained_cpus)
        asked = [("rich", parse_cpus(self.rich_cpus), parse_memory_mb(self.rich_memory))]
        asked += [("constrained", constrained, parse_memory_mb(level)) for level in levels]
        if self.profile == "smoke" and len(asked) > 1:
            asked = asked[1:]  # one point per runtime: the constrained level, whose limits are read back
        if self.iterations < 1:
            raise ConfigError(f"iterations={self.iterations!r} must be at least 1 (the paper used 100)")
        if self.repetitions < 0:
            raise ConfigError(f"repetitions={self.repetitions!r} must be at least 1 (0 takes one)")
        # 0 keeps the profile's value (None for the warm-up, where 0 means none).
        given = dict(threads=self.threads, connections=self.connections, duration_s=self.duration_s,
                     timeout_s=self.timeout_s, warmup_s=self.warmup_s)
        overrides = {k: int(v) for k, v in given.items() if v not in (None, 0) or (k == "warmup_s" and v == 0)}
        load = replace(LOAD_PROFILES[self.profile], **overrides).check()
        given_scale(self.window_scale)
        windows_given = tuple(sorted({k for k in overrides if k != "threads"}
                                     | ({"open_loop_duration_s"} if self.open_loop_duration_s else set())))
        if not self.p99_bound_ms > 0:
            raise ConfigError("p99_bound_ms must be a positive number of milliseconds (the default: 100)")
        protocol_names = check_protocols(self.protocols)
        open_settings = open_loop_settings(self.profile, self.open_loop, self.open_loop_rates,
                                           self.open_loop_duration_s, load) if "fair" in protocol_names else None
        path = f"{self.ENDPOINT}?iter={self.iterations}" if self.ENDPOINT == "/compute" else self.ENDPOINT
        protocol_reps = {p: check_repetitions(self.repetitions or REPETITIONS[self.profile][p])
                         for p in protocol_names}
        self.set(app_names=check_apps(self.apps, HTTP_APPS), protocol_names=protocol_names,
                 reps=max(protocol_reps.values()), protocol_reps=protocol_reps, levels=levels, load=load,
                 open_settings=open_settings, path=path, asked=asked, windows_given=windows_given)

    def reps_at(self, conditions: dict[str, str]) -> int:
        """The repetitions of the points matching `conditions` (a claim's key=value, `|` for any of
        several): the fewest of the protocols they name (every protocol run when they name none);
        0 for a protocol this record does not run."""
        named = conditions.get("protocol")
        protocols = [p.strip() for p in named.split("|")] if named else self.protocol_names
        return min(self.protocol_reps.get(p, 0) for p in protocols)


def stretched(params: HttpLoad, scale: WindowScale) -> tuple[LoadSettings, OpenLoopSettings | None]:
    """The record's closed- and open-loop settings with the windows the user did not set scaled."""
    given = params.windows_given
    load = replace(params.load, **{k: scale.stretch(getattr(params.load, k))
                                   for k in ("duration_s", "warmup_s", "timeout_s") if k not in given})
    opened = params.open_settings
    if opened is not None:
        duration_s = opened.duration_s if "open_loop_duration_s" in given else scale.stretch(opened.duration_s)
        opened = replace(opened, timeout_s=scale.stretch(opened.timeout_s), duration_s=duration_s)
    return load, opened


def run(params: HttpLoad) -> Path:
    """Measure, write data/<io_bound|cpu_bound>/<run_id>/, return that directory."""

    def check_cells(o: Opening) -> None:
        for _, cpus, mem, _ in scenarios(o.target, params.asked):
            for rt in o.runtimes:
                if rt.below_minimum(Limits(memory_mb=mem)):
                    continue  # a level this runtime cannot boot at: its rows there fail with the reason
                for app in params.app_names:
                    rt.check_limits(app, Limits(cpus=cpus, memory_mb=mem))

    # Every cell has its own limits: checked per cell, not at the record's (it has none).
    with opening(params, params.app_names, EXTRA_COLUMNS, check_limits=False, before=check_cells) as o, \
            load_generator_for(o.target, params.load_generator) as (loadgen, shared):
        run, lg_host = o.run, loadgen.host
        scale = window_scale(o.target, params.profile, params.window_scale)
        settings, open_settings = stretched(params, scale)
        run.note("window_scale", {"scale": scale.scale, "how": scale.how, "pace_ns": scale.pace_ns,
                                  "reference_ns": scale.reference_ns, "closed_loop": asdict(settings),
                                  "open_loop": open_settings.as_dict() if open_settings else None})
        open_gen = open_loop_generator(lg_host, params.open_loop) if open_settings else None
        run.note("load_generator", {"host": lg_host.name, "shares_target": shared, "facts": lg_host.facts(),
                                    "open_loop": open_gen.name if open_gen else None})
        artifacts = o.package(params.app_names, params.docker_build)
        ports = itertools.count(1)

        def limits_at(p: Point) -> Limits:
            _, cpus, mem, _ = p.outer
            return limits_for(p.protocol, cpus, mem, o.cores)

        def row_for(p: Point) -> dict:
            scenario, cpus, mem, clip = p.outer
            lg_cpuset, lg_note = (loadgen_cpuset(shared, limits_at(p).cpuset, o.cores) if p.protocol == "fair"
                                  else (None, ""))
            return dict(app=p.inner, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, cpus=cpus,
                        memory_mb=mem, scenario=scenario, endpoint=params.ENDPOINT,
                        iter=params.iterations if params.ENDPOINT == "/compute" else None,
                        build=o.build_of(p.inner, p.runtime), threads=settings.threads,
                        connections=settings.connections, duration_s=settings.duration_s,
                        loadgen_cpuset=lg_cpuset, limits_note="; ".join(x for x in (clip, lg_note) if x))

        def measure(p: Point, row: dict) -> None:
            artifact = artifact_for(artifacts, p.inner, p.runtime)
            measure_load(run, p.runtime, artifact, limits_at(p), PORT_BASE + next(ports) % 200, params.path,
                         loadgen, settings, row["loadgen_cpuset"], row, host=o.target.address,
                         open_gen=open_gen if p.protocol == "fair" else None, open_settings=open_settings)

        sweep(run, o.runtimes, reps=params.reps, outer=scenarios(o.target, params.asked), inner=params.app_names,
              protocols=params.protocol_names, row_for=row_for, measure=measure,
              failed=("requests_per_second", "req/s"), desc=params.EXPERIMENT, progress=params.progress,
              applies=lambda p: p.rep <= params.protocol_reps[p.protocol])  # a protocol with fewer stops early
        return run.dir


def open_loop_settings(profile: str, tool: str, rates: str, duration_s,
                       closed: LoadSettings) -> OpenLoopSettings | None:
    """The profile's open-loop settings with the user's rates and duration; None for 'none'.
    Checked before anything starts (the tool itself is looked for on the load host)."""
    if tool not in OPEN_LOOP_CHOICES:
        raise ConfigError(f"open_loop={tool!r} unknown; choose from {', '.join(OPEN_LOOP_CHOICES)}")
    if tool == "none":
        return None
    base = OPEN_LOOP_PROFILES[profile]
    if duration_s not in (None, "", 0):
        if not str(duration_s).isdigit() or int(duration_s) < 1:
            raise ConfigError(f"open_loop_duration_s={duration_s!r}: whole seconds, at least 1 (0 takes the profile's)")
        base = replace(base, duration_s=int(duration_s))
    return replace(base, rates=parse_rates(rates) if rates else base.rates, timeout_s=closed.timeout_s,
                   connections=closed.connections, threads=min(closed.threads, closed.connections))


def measure_open_loop(run: Run, gen: OpenLoopGenerator, settings: OpenLoopSettings, url: str, saturation_rps: float,
                      lg_cpuset: str | None, row: dict, tag: str,
                      died: Callable[[], str | None] = lambda: None) -> None:
    """Latency at each offered rate (shares of the closed-loop throughput just measured), up to the
    rate the service died at: `died` says why it is gone, None while it runs."""
    rates = offered_rates(settings.rates, saturation_rps)
    for i, (rate, share) in enumerate(rates):
        at = dict(row, load_tool=gen.name, offered_rps=rate, offered_share=round(share, 3) if share else None,
                  duration_s=settings.duration_s, connections=settings.connections, littles_law=None)
        try:
            report = gen.run_at_rate(url, rate, settings, lg_cpuset)
        except EdgebenchError as e:
            run.failed(metric="ol_achieved_rps", unit="req/s", error=f"{gen.name}: {e}", **at)
            continue
        run.save_raw(f"{gen.name}-{tag}-{rate:g}rps", command=report.command, stdout=report.stdout,
                     stderr=report.stderr)
        at = dict(at, window_s=window_of(report))
        reason = died()
        if reason:
            # Its rows said "no request answered" at this and every later rate, and never why.
            error = f"died under load at {rate:g} req/s: {reason}" + (
                f" (not offered: {', '.join(f'{r:g}' for r, _ in rates[i + 1:])} req/s)" if rates[i + 1:] else "")
            run.add(metric="ol_achieved_rps", value=report.requests_per_second, unit="req/s", status="failed",
                    error=error, **at)
            for metric, _ in OPEN_LOOP_METRICS:
                run.failed(metric=metric, unit="ms", error=error, **at)
            return
        run.add(metric="ol_achieved_rps", value=report.requests_per_second, unit="req/s", **at)
        for metric, key in OPEN_LOOP_METRICS:
            value = report.latency_us.get(key)
            if value is None:  # nothing answered: missing, never 0
                run.failed(metric=metric, unit="ms", error=f"no request answered at {rate:g} req/s", **at)
            else:
                run.add(metric=metric, value=value / 1000, unit="ms", **at)
        run.add(metric="ol_errors", value=report.error_count, unit="count", **at)


def window_of(report) -> float | None:
    """The seconds the load tool measured over (its own clock), None when it did not say."""
    return round(report.duration_us / 1e6, 3) if report.duration_us else None


def answers_after(run: Run, loadgen: LoadGenerator, url: str, settings: LoadSettings, lg_cpuset: str | None,
                  tag: str) -> tuple[bool | None, int]:
    """(whether the service answers one connection once the load is gone, None when the load tool
    could not ask (wrk refused a connection: a port closed), the seconds tried). A
    guest's network can stop for good under load while its VM runs on (Unikraft and Nanos, lwIP
    behind QEMU's user-mode network): its run then counts only what came before. One second, then
    up to twice the request timeout before it is called stopped: a slow service's first answer."""
    for seconds in (AFTER_RUN_S, max(3, 2 * settings.timeout_s)):
        probe = replace(settings, threads=1, connections=1, warmup_s=0, duration_s=seconds)
        try:
            after = loadgen.run(url, probe, lg_cpuset)
        except EdgebenchError:
            return None, seconds  # it could not be asked: nothing is claimed about the service
        run.save_raw(f"{loadgen.name}-after-{tag}-{seconds}s", command=after.command, stdout=after.stdout,
                     stderr=after.stderr)
        if after.requests > after.error_count - after.errors.get("status", 0):  # an HTTP error is an answer
            return True, seconds
    return False, seconds


def died_reason(rt, instance) -> str | None:
    """Why the service's process is gone, None while it runs (or when it has no pid to ask)."""
    if instance.pid is None or is_alive(rt.target, instance.pid):
        return None
    return rt.failure_reason(instance.plan) or "the service exited"


@dataclass(frozen=True)
class AfterLoad:
    """How a closed-loop run's service came out of it: its process gone (`died`, why), alive but
    silent to one connection for `silent_s` seconds after the run, or neither (still serving).
    Every experiment that loads a service with a closed loop judges its run by this one test."""
    died: str = ""
    silent_s: int = 0

    @property
    def gone(self) -> bool:
        return bool(self.died or self.silent_s)

    def stopped(self) -> str:
        """For a run nothing answered (LoadReport.nothing_answered's `stopped`), "" while it serves."""
        return (f"nor did one connection get an answer in {self.silent_s} s after the run: the service stopped "
                "answering (a longer run would not help)") if self.silent_s else ""

    def nothing_answered(self, report, longer: str = "") -> str:
        """Why a run nothing answered has no rate: the service died, stopped, or (LoadReport's
        advice, `longer`) was perhaps only slow."""
        return self.died or report.nothing_answered(longer, self.stopped())

    def status(self, report) -> dict:
        """The status of a run that answered some: ok, or failed with what it answered kept (the
        window holds a dead stretch, so its rate and latencies are not the service's)."""
        if self.died:
            return {"status": "failed", "error": f"died under load: {self.died}"}
        if self.silent_s:
            return {"status": "failed", "error": f"stopped answering under load after {report.requests} answers "
                                                 f"(one connection after the run got none in {self.silent_s} s)"}
        return {"status": "ok"}


def after_load(run: Run, rt, instance, loadgen: LoadGenerator, url: str, settings: LoadSettings,
               lg_cpuset: str | None, tag: str) -> AfterLoad:
    """Whether the service outlived its closed-loop run: alive, and answering one connection."""
    reason = died_reason(rt, instance)
    if reason:
        return AfterLoad(died=reason)
    answers, tried_s = answers_after(run, loadgen, url, settings, lg_cpuset, tag)
    if answers:
        return AfterLoad()
    # Silent or not asked: a service killed meanwhile (an OOM kill) is dead, not stopped; one
    # that could not be asked, and is alive, is claimed nothing of.
    reason = died_reason(rt, instance)
    if reason:
        return AfterLoad(died=reason)
    return AfterLoad() if answers is None else AfterLoad(silent_s=tried_s)


def measure_load(run: Run, rt, artifact, limits: Limits, port: int, path: str, loadgen: LoadGenerator,
                 settings: LoadSettings, lg_cpuset: str | None, row: dict, host: str = "127.0.0.1",
                 open_gen: OpenLoopGenerator | None = None, open_settings: OpenLoopSettings | None = None) -> None:
    tag = f"{row['scenario']}-{row['memory_mb']:g}-{row['app']}-{rt.name}-{row['protocol']}-rep{row['rep']}"
    try:
        instance, _ = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        run.failed(metric="requests_per_second", unit="req/s", error=f"start: {e}", **row)
        return
    try:
        row = with_instance(row, limits, instance)
        url = f"http://{host}:{instance.port}{path}"
        loadgen.warm_up(url, settings, lg_cpuset)
        report = loadgen.run(url, settings, lg_cpuset)
        run.save_raw(f"wrk-{tag}", command=report.command, stdout=report.stdout, stderr=report.stderr,
                     limits_applied=instance.limits_applied)
        after = after_load(run, rt, instance, loadgen, url, settings, lg_cpuset, tag)
        if report.nothing_answered():
            why = after.nothing_answered(report, f"duration_s; PROFILE=standard runs "
                                                 f"{LOAD_PROFILES['standard'].duration_s} s")
            # The service's own output (a VM's console) is what can tell a stalled stack from a slow app.
            output = run.save_raw(f"output-{tag}", command=f"{rt.name} output of the service that answered nothing",
                                  stdout=rt.app_output(instance)[-8000:])
            run.failed(metric="requests_per_second", unit="req/s", error=f"{why}; its output: raw/{output.name}",
                       **row)
            return
        row = dict(row, load_tool=loadgen.name)
        # duration_s is what was asked; window_s what the load tool measured over.
        closed_row = dict(row, littles_law=round(report.littles_law_ratio(settings.connections) or 0, 4) or None,
                          window_s=window_of(report))
        # What it answered before it died or stopped is kept, failed, in every row of the run.
        closed_row.update(after.status(report))
        run.add(metric="requests_per_second", value=report.requests_per_second, unit="req/s", **closed_row)
        for metric, key, unit in LATENCY_METRICS:
            run.add(metric=metric, value=report.latency_us[key] / 1000, unit=unit, **closed_row)
        run.add(metric="requests", value=report.requests, unit="count", **closed_row)
        for kind, count in report.errors.items():
            run.add(metric=f"errors_{kind}", value=count, unit="count", **closed_row)
        if open_gen and open_settings and not after.gone:
            measure_open_loop(run, open_gen, open_settings, url, report.requests_per_second, lg_cpuset, row, tag,
                              lambda: died_reason(rt, instance))
    finally:
        rt.stop(instance)


def plan(params: HttpLoad, runtimes: list[str], facts: dict | None = None) -> estimate.Work:
    """One start and one load run (warm-up, the measured seconds, a second that checks it still
    answers, then the open-loop rates under the fair protocol) per (scenario, runtime, app,
    protocol, repetition), each protocol its own repetitions; on a device with `facts`, none at a
    level it cannot apply to the runtime (estimate.not_run), though every runtime is packaged."""
    apps, protocols, levels = params.app_names, params.protocol_names, params.levels
    reps = params.protocol_reps
    given = given_scale(params.window_scale)
    load, opened = stretched(params, WindowScale(given or 1.0, "given"))  # a scale given by hand, here
    closed_s = load.warmup_s + load.duration_s
    open_s = len(opened.rates) * opened.duration_s if opened else 0.0
    runs = len(apps) * sum(reps.values())  # closed-loop runs per level and runtime, each with its own start
    busy = runs * closed_s + len(apps) * reps.get("fair", 0) * open_s  # the open loop follows each fair run
    points = not_run = window = 0
    seconds = estimate.SESSION_S
    for name in runtimes:
        here = sum(not estimate.not_run(name, mem, facts) for _, _, mem in params.asked)  # levels it runs
        per_level = sum(reps.values()) * estimate.pairs([name], apps)
        points += len(params.asked) * per_level
        not_run += (len(params.asked) - here) * per_level
        # the second after each run is set but does not follow the device's pace
        seconds += estimate.model_seconds([name], len(apps), here * runs, here * (busy + runs * AFTER_RUN_S),
                                          apps) - estimate.SESSION_S
        window += estimate.window_seconds([name], here * busy, apps)  # every load run lasts its set time
    return estimate.Work(points=points, seconds=seconds, window_s=window, not_run=not_run,
                         windows_follow_pace=given is None and params.profile in SCALED_PROFILES,
                         apps=apps, levels=("rich + " if params.asked[0][0] == "rich" else "")
                         + f"memory {','.join(levels)}, protocols {','.join(protocols)}",
                         repetitions=params.reps, protocol_reps=dict(reps))
