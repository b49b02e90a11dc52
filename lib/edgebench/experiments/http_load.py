"""HTTP load (paper 000, Figs. 4-13): throughput, latency and jitter of `/io` (I/O-bound) and
`/compute` (CPU-bound), in a rich scenario (the paper's 8 CPUs / 2048 MB, clipped to the target)
and a constrained sweep (1 CPU at 512/256/128/64 MB by default).

Protocols, in the `protocol` column:
- `published`: as the artifact did it: `--cpus`/`--memory` only, Go's default GOMAXPROCS,
  closed-loop wrk; the paper kept mean and standard deviation (the rows keep everything).
- `fair`: the same pinned cores for every runtime, GOMAXPROCS = granted CPUs, memory+swap =
  memory, and the load generator pinned to cores the app does not use when both share a machine.

A runtime that fails at a memory level (OOM-killed, never ready, every request failing) gives
`failed` rows with the reason, and the sweep goes on.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from edgebench import plan
from edgebench.apps import HTTP_APPS
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import (as_list, check_apps, check_profile, check_protocols, check_repetitions,
                                          open_run, resolve_limits, runtime_options, session)
from edgebench.experiments.common import collect as _collect
from edgebench.experiments.protocols import fair_limits, package_all, published_limits, with_instance
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.load import (LOAD_PROFILES, OPEN_LOOP_CHOICES, OPEN_LOOP_PROFILES, LoadGenerator, LoadSettings,
                            OpenLoopGenerator, OpenLoopSettings, load_generator, offered_rates, open_loop_generator,
                            parse_rates)
from edgebench.results import Run, new_run_id
from edgebench.runtimes import Limits, StartFailed
from edgebench.runtimes.tags import is_alive
from edgebench.targets import LOCAL_NAMES, connect
from edgebench.units import parse_memory_mb

ENDPOINTS = {"io_bound": "/io", "cpu_bound": "/compute"}
EXTRA_COLUMNS = ["scenario", "endpoint", "iter", "build", "network", "threads", "connections",
                 "duration_s", "littles_law", "accelerator", "cpus_applied", "memory_mb_applied", "cpuset_applied",
                 "loadgen_cpuset", "limits_note", "load_tool", "offered_rps", "offered_share"]
PORT_BASE = 18300
# The paper's constrained sweep; quick keeps one level the apps live at and one near the edge.
MEMORY_LEVELS = {"standard": "512m,256m,128m,64m", "quick": "256m,64m"}
READY_TIMEOUT_S = 60
# (metric, key in the report, unit, scale from microseconds)
LATENCY_METRICS = [("latency_mean", "mean", "ms"), ("latency_stdev", "stdev", "ms"),
                   ("latency_p50", "p50", "ms"), ("latency_p90", "p90", "ms"), ("latency_p99", "p99", "ms"),
                   ("latency_p99_9", "p99_9", "ms"), ("latency_max", "max", "ms")]
# Open loop (fair only): latency at fixed offered rates, from each request's due time.
OPEN_LOOP_METRICS = [("ol_latency_p50", "p50"), ("ol_latency_p90", "p90"), ("ol_latency_p99", "p99"),
                     ("ol_latency_p99_9", "p99_9"), ("ol_latency_max", "max")]


def scenarios(target, rich_cpus, rich_memory, constrained_cpus, memory_levels) -> list[tuple[str, float, float, str]]:
    """[(scenario, cpus, memory_mb, clipping note)], rich first, then memory descending."""
    out = []
    cpus, mem, note = resolve_limits(target, rich_cpus, rich_memory)
    out.append(("rich", cpus, mem, note))
    for level in as_list(memory_levels, []):
        c, m, n = resolve_limits(target, constrained_cpus, level)
        out.append(("constrained", c, m, n))
    return out


def loadgen_cpuset(target_is_loadgen: bool, app_cpuset: str | None, cores: int) -> tuple[str | None, str]:
    """Cores for wrk that the app does not use, when both share a machine."""
    if not target_is_loadgen or not app_cpuset:
        return None, ""
    first, _, last = app_cpuset.partition("-")
    used = set(range(int(first), int(last or first) + 1))
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


def run_http_load(experiment: str = "io_bound", target="local", runtimes="auto", apps="all",
                  repetitions: int | None = None, protocols="fair,published", rich_cpus="8",
                  rich_memory="2048m", constrained_cpus="1", memory_levels="",
                  iterations: int = 100, threads: int | None = None, connections: int | None = None,
                  duration_s: int | None = None, timeout_s: int | None = None, warmup_s: int | None = None,
                  docker_build: str = "offline", load_generator="local", profile: str = "standard",
                  run_id: str | None = None, progress: bool = True, require_kvm=False,
                  nanos_accel: str | None = None, open_loop: str = "auto", open_loop_rates: str = "",
                  open_loop_duration_s: int | None = None, p99_bound_ms: float = 100.0) -> Path:
    if experiment not in ENDPOINTS:
        raise ConfigError(f"experiment {experiment!r} unknown; use one of {', '.join(ENDPOINTS)}")
    check_profile(profile)
    # Each repetition is a whole wrk run (35 s in standard); one per cell keeps the default
    # sweep near 25 min per notebook. Ask for more (REPS=3) for a spread across runs.
    reps = check_repetitions(repetitions if repetitions not in (None, "", 0) else 1)
    app_names = check_apps(apps, HTTP_APPS)
    protocol_names = check_protocols(protocols)
    memory_levels = memory_levels or MEMORY_LEVELS[profile]
    for level in as_list(memory_levels, []):
        parse_memory_mb(level)
    if int(iterations) < 1:
        raise ConfigError(f"iterations={iterations!r} must be at least 1 (the paper used 100)")
    # None (or 0, except for the warm-up) keeps the profile's value.
    given = dict(threads=threads, connections=connections, duration_s=duration_s, timeout_s=timeout_s,
                 warmup_s=warmup_s)
    overrides = {k: int(v) for k, v in given.items()
                 if v not in (None, "") and (v != 0 or k == "warmup_s")}
    settings = replace(LOAD_PROFILES[profile], **overrides).check()
    if not isinstance(p99_bound_ms, (int, float)) or not p99_bound_ms > 0:
        raise ConfigError("p99_bound_ms must be a positive number of milliseconds (the default: 100)")
    open_settings = open_loop_settings(profile, open_loop, open_loop_rates, open_loop_duration_s,
                                       settings) if "fair" in protocol_names else None
    endpoint = ENDPOINTS[experiment]
    path = f"{endpoint}?iter={int(iterations)}" if endpoint == "/compute" else endpoint
    run_id = run_id or new_run_id()
    params = dict(experiment=experiment, target=str(target), runtimes=runtimes, apps=app_names,
                  repetitions=reps, protocols=protocol_names, rich_cpus=rich_cpus, rich_memory=rich_memory,
                  constrained_cpus=constrained_cpus, memory_levels=memory_levels, iterations=int(iterations),
                  load=settings.as_dict(), docker_build=docker_build, load_generator=str(load_generator),
                  profile=profile, open_loop=open_loop, p99_bound_ms=p99_bound_ms,
                  open_loop_settings=open_settings.as_dict() if open_settings else None)
    with session(target, runtimes, run_id, app_names, runtime_options(require_kvm, nanos_accel)) as (tgt, selection), \
            load_generator_for(tgt, load_generator) as (loadgen, shared):
        lg_host = loadgen.host
        open_gen = open_loop_generator(lg_host, open_loop) if open_settings else None
        cores = tgt.facts()["cores"]
        plan = scenarios(tgt, rich_cpus, rich_memory, constrained_cpus, memory_levels)
        for _, cpus, mem, _ in plan:
            for rt in selection.runtimes:
                if rt.below_minimum(Limits(memory_mb=mem)):
                    continue  # a level this runtime cannot boot at: its rows there fail with the reason
                for app in app_names:
                    rt.check_limits(app, Limits(cpus=cpus, memory_mb=mem))
        with open_run(experiment, params, tgt, extra_columns=EXTRA_COLUMNS, run_id=run_id) as run:
            run.note("skipped_runtimes", selection.skipped)
            run.note("load_generator", {"host": lg_host.name, "shares_target": shared,
                                        "facts": lg_host.facts(),
                                        "open_loop": open_gen.name if open_gen else None})
            artifacts = package_all(run, tgt, selection.runtimes, app_names, docker_build)
            ports = itertools.count(1)

            def limits_at(p: Point) -> Limits:
                _, cpus, mem, _ = p.outer
                return fair_limits(cpus, mem, cores) if p.protocol == "fair" else published_limits(cpus, mem)

            def row_for(p: Point) -> dict:
                scenario, cpus, mem, clip = p.outer
                artifact = artifacts.get((p.inner, p.runtime.name))
                lg_cpuset, lg_note = (loadgen_cpuset(shared, limits_at(p).cpuset, cores) if p.protocol == "fair"
                                      else (None, ""))
                return dict(app=p.inner, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, cpus=cpus,
                            memory_mb=mem, scenario=scenario, endpoint=endpoint,
                            iter=int(iterations) if endpoint == "/compute" else None,
                            build=artifact.build if artifact else "", threads=settings.threads,
                            connections=settings.connections, duration_s=settings.duration_s,
                            loadgen_cpuset=lg_cpuset, limits_note="; ".join(x for x in (clip, lg_note) if x))

            def measure(p: Point, row: dict) -> None:
                artifact = artifact_for(artifacts, p.inner, p.runtime)
                measure_load(run, p.runtime, artifact, limits_at(p), PORT_BASE + next(ports) % 200, path,
                             loadgen, settings, row["loadgen_cpuset"], row, host=tgt.address,
                             open_gen=open_gen if p.protocol == "fair" else None, open_settings=open_settings)

            sweep(run, selection.runtimes, reps=reps, outer=plan, inner=app_names, protocols=protocol_names,
                  row_for=row_for, measure=measure, failed=("requests_per_second", "req/s"), desc=experiment,
                  progress=progress)
            return run.dir


def open_loop_settings(profile: str, tool: str, rates: str, duration_s, closed: LoadSettings) -> OpenLoopSettings | None:
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
                      lg_cpuset: str | None, row: dict, tag: str) -> None:
    """Latency at each offered rate (shares of the closed-loop throughput just measured)."""
    for rate, share in offered_rates(settings.rates, saturation_rps):
        at = dict(row, load_tool=gen.name, offered_rps=rate, offered_share=round(share, 3) if share else None,
                  duration_s=settings.duration_s, connections=settings.connections, littles_law=None)
        try:
            report = gen.run_at_rate(url, rate, settings, lg_cpuset)
        except EdgebenchError as e:
            run.failed(metric="ol_achieved_rps", unit="req/s", error=f"{gen.name}: {e}", **at)
            continue
        run.save_raw(f"{gen.name}-{tag}-{rate:g}rps", command=report.command, stdout=report.stdout,
                     stderr=report.stderr)
        run.add(metric="ol_achieved_rps", value=report.requests_per_second, unit="req/s", **at)
        for metric, key in OPEN_LOOP_METRICS:
            value = report.latency_us.get(key)
            if value is None:  # nothing answered: missing, never 0
                run.failed(metric=metric, unit="ms", error=f"no request answered at {rate:g} req/s", **at)
            else:
                run.add(metric=metric, value=value / 1000, unit="ms", **at)
        run.add(metric="ol_errors", value=report.error_count, unit="count", **at)


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
        gone = instance.pid is not None and not is_alive(rt.target, instance.pid)
        reason = rt.failure_reason(instance.plan) if gone else None
        if report.nothing_answered():
            why = reason or report.nothing_answered()
            run.failed(metric="requests_per_second", unit="req/s", error=why, **row)
            return
        row = dict(row, load_tool=loadgen.name)
        closed_row = dict(row, littles_law=round(report.littles_law_ratio(settings.connections) or 0, 4) or None)
        status_note = {"status": "ok"} if not gone else {"status": "failed", "error": f"died under load: {reason}"}
        run.add(metric="requests_per_second", value=report.requests_per_second, unit="req/s", **status_note,
                **closed_row)
        for metric, key, unit in LATENCY_METRICS:
            run.add(metric=metric, value=report.latency_us[key] / 1000, unit=unit, **closed_row)
        run.add(metric="requests", value=report.requests, unit="count", **closed_row)
        for kind, count in report.errors.items():
            run.add(metric=f"errors_{kind}", value=count, unit="count", **closed_row)
        if open_gen and open_settings and not gone:
            measure_open_loop(run, open_gen, open_settings, url, report.requests_per_second, lg_cpuset, row, tag)
    finally:
        rt.stop(instance)


def collect(run_id: str = "", experiment: str = "io_bound", **params) -> Path:
    """Replot run_id ('latest' or an id) if given, else measure now."""
    return _collect(experiment, lambda **p: run_http_load(experiment, **p), run_id, **params)


def plan_http_load(params: dict, runtimes: list[str]):
    """One start and one load run (warm-up, then the measured seconds, then the open-loop rates
    under the fair protocol) per (scenario, runtime, app, protocol, repetition)."""
    profile = params.get("profile", "standard")
    apps = plan.names(params.get("apps"), HTTP_APPS)
    protocols = plan.names(params.get("protocols", "fair,published"), ["fair", "published"])
    reps = plan.reps_or(params.get("repetitions"), 1)
    levels = as_list(params.get("memory_levels") or MEMORY_LEVELS[profile], [])
    load = LOAD_PROFILES[profile]
    closed_s = plan.reps_or(params.get("warmup_s"), load.warmup_s) + plan.reps_or(params.get("duration_s"), load.duration_s)
    open_s = 0.0
    if "fair" in protocols and params.get("open_loop", "auto") != "none":
        base = OPEN_LOOP_PROFILES[profile]
        rates = parse_rates(params["open_loop_rates"]) if params.get("open_loop_rates") else base.rates
        open_s = len(rates) * plan.reps_or(params.get("open_loop_duration_s"), base.duration_s)
    cells = (1 + len(levels)) * len(apps) * reps
    busy = cells * (len(protocols) * closed_s + open_s)
    return plan.Work(points=cells * len(protocols) * len(runtimes),
                     seconds=plan.model_seconds(runtimes, len(apps), cells * len(protocols), busy, apps), apps=apps,
                     levels=f"rich + memory {','.join(levels)}, protocols {','.join(protocols)}", repetitions=reps)
