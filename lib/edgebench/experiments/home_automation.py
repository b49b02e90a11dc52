"""Home automation (paper 001, Table 3 'DHT11'): an HTTPS service that reads a temperature and
humidity sensor per request and decides an LED's state (apps/home-automation), natively, in Docker
(bridge and host networking), LXD and every other runtime that runs Go, under wrk over TLS.

The sensor is the target's DHT11 through the kernel's IIO driver where it has one (sysfs, which a
container reads through its own read-only /sys), else a simulated DHT11 with the sensor's timing
(22 ms a fresh read, a reading kept 2 s as the driver keeps it); every row names which (`sensor`,
`sensor_access`). A request's mean time (`request_time`: connections / throughput, exact for
wrk's closed loop) is split with the service's own counters (GET /stats before and after the load)
into the time on the sensor, the rest of the handler, and everything outside the handler (TLS,
HTTP, the network path: Docker's proxy and bridge), so container overhead is not hidden behind
the sensor's time. wrk's latency percentiles are kept beside it. Once the counters are read, one
connection asks again, as after every closed-loop run (http_load.after_load): a service that died
or stopped answering keeps what it measured in failed rows.

Protocols as everywhere: `published` limits the service by CPU quota only, `fair` pins it to its
core(s) and wrk (when it shares the machine) to the others.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from edgebench.apps import place_probe
from edgebench.errors import EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import (check_protocols, check_repetitions, opening)
from edgebench.experiments.http_load import AFTER_RUN_S, after_load, load_generator_for, loadgen_cpuset
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.protocols import with_instance
from edgebench.experiments.sweep import Point, artifact_for, modes_of, sweep
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Limits, Runtime, StartFailed
from edgebench.tools.load import LoadSettings, Wrk

EXPERIMENT = "home_automation"
APP = "home-automation"
EXTRA_COLUMNS = ["network_mode", "sensor", "sensor_access", "build", "network", "accelerator", "cpus_applied",
                 "memory_mb_applied", "cpuset_applied", "limits_note", "note"]
PORT_BASE = 16600
READY_TIMEOUT_S = 60
CONNECTIONS = 4                          # a handful of clients: a house's phones and hubs
# /stats after a load: a service under software emulation may still be closing the load's connections.
STATS_TRIES = 3
WRK_DURATION_S = {"smoke": 1, "quick": 5, "standard": 30}
# Each start carries a whole load run (a minute of wrk in standard): three per cell show the spread
# without the start-time experiments' 20, which here would take hours.
REPETITIONS = {"smoke": 1, "quick": 3, "standard": 3}  # the paper's 3; smoke: one


def sensor_access(sensor: str) -> str:
    """How the service reached its sensor, from the backend it reports."""
    if sensor.startswith("iio:"):
        return "sysfs (kernel DHT11 IIO driver)"
    if sensor == "simulated-dht11":
        return "simulated (no DHT11 on the target)"
    return "unknown"


def service_stats(host, url: str, tries: int = 1) -> dict:
    """The service's counters (GET /stats over TLS; its certificate is its own, hence -k). After
    a load, `tries` gives a service still working through the load's last connections time."""
    for attempt in range(tries):
        r = host.run(["curl", "-sSk", "--max-time", "10", url], timeout=30, check=False)
        if r.ok:
            return json.loads(r.stdout)
        time.sleep(2 * (attempt + 1) if attempt + 1 < tries else 0)
    raise EdgebenchError(f"GET {url} failed{' after the load' if tries > 1 else ''} "
                         f"({tries} tries): {(r.stderr or r.stdout).strip()[-300:]}")


def measure(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict, wrk: Wrk, address: str,
            duration_s: int, loadgen_cores: str | None) -> None:
    try:
        instance, _ = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        run.failed(metric="throughput", unit="req/s", error=f"the service did not start: {e}", **row)
        return
    try:
        row = with_instance(row, limits, instance)
        label = f"{row['runtime']}-{row['network_mode'] or 'own'}-{row['protocol']}-rep{row['rep']}"
        threads = 1
        settings = LoadSettings(threads=threads, connections=CONNECTIONS, duration_s=duration_s)
        base = f"https://{address}:{instance.port}"
        before = service_stats(wrk.host, f"{base}/stats")
        try:
            report = wrk.run(f"{base}/reading", settings, cpuset=loadgen_cores)
        except EdgebenchError as e:
            run.save_raw(f"wrk-{label}", command="wrk", stderr=str(e))
            run.failed(metric="throughput", unit="req/s", error=str(e), **row)
            return
        try:
            after, stats_error = service_stats(wrk.host, f"{base}/stats", tries=STATS_TRIES), ""
        except EdgebenchError as e:  # the load was measured: its rows stay, the counters' say why not
            after, stats_error = None, f"{e}; the service's last output: {rt.app_output(instance)[-300:]!r}"
        run.save_raw(f"wrk-{label}", command=report.command, stdout=report.stdout, stderr=report.stderr,
                     stats_before=before, stats_after=after, stats_error=stats_error or None)
        # After the counters are read, so that its requests are not counted in them.
        outcome = after_load(run, rt, instance, wrk, f"{base}/reading", settings, loadgen_cores, label)
        sensor = (after or before)["sensor"]
        cells = dict(row, sensor=sensor, sensor_access=sensor_access(sensor),
                     note=f"wrk -t{threads} -c{CONNECTIONS} -d{duration_s}s {base}/reading" + (
                         f", pinned to cores {loadgen_cores}" if loadgen_cores else ""))
        if report.nothing_answered():  # missing, never a rate of 0
            run.failed(metric="throughput", unit="req/s", error=outcome.nothing_answered(report), **cells)
            return
        # A service that died or stopped keeps what it measured, failed (`judged`); a row that fails
        # for its own reason (no counters) takes `cells`.
        judged = dict(cells, **outcome.status(report))
        run.add(metric="throughput", value=report.requests_per_second, unit="req/s", **judged)
        for key in ("mean", "p50", "p99"):
            value = report.latency_us.get(key)
            run.add(metric=f"latency_{key}", value=value / 1000 if value is not None else None, unit="ms", **judged)
        run.add(metric="errors", value=report.error_count, unit="count", **judged)
        if after is None:
            for metric in ("fresh_sensor_reads", "sensor_per_request", "handler_rest_per_request"):
                run.failed(metric=metric, unit="ms" if "per_request" in metric else "count", error=stats_error,
                           **cells)
            return
        served = after["requests"] - before["requests"]
        run.add(metric="fresh_sensor_reads", value=after["fresh_reads"] - before["fresh_reads"], unit="count",
                **judged)
        # The mean time a request takes, from the closed loop itself: wrk keeps CONNECTIONS requests
        # in flight, so (Little's law) each takes connections / throughput on average. wrk's own mean
        # over TLS disagreed with its throughput here (679 us against 4 / 33.6k req/s = 119 us).
        mean_ms = CONNECTIONS / report.requests_per_second * 1000 if report.requests_per_second else None
        if served <= 0 or mean_ms is None:
            run.failed(metric="sensor_per_request", unit="ms", error="the service counted no requests", **cells)
            return
        sensor_ms = (after["sensor_ns"] - before["sensor_ns"]) / served / 1e6
        handler_ms = (after["handler_ns"] - before["handler_ns"]) / served / 1e6
        run.add(metric="sensor_per_request", value=sensor_ms, unit="ms", **judged)
        run.add(metric="handler_rest_per_request", value=handler_ms - sensor_ms, unit="ms", **judged)
        # TLS, HTTP, the kernel and the network path (proxy, bridge): wrk's mean minus the handler's.
        run.add(metric="request_time", value=mean_ms, unit="ms", **judged)
        run.add(metric="outside_handler_per_request", value=mean_ms - handler_ms, unit="ms", **judged)
    finally:
        rt.stop(instance)


@dataclass(frozen=True)
class Params(Limited):
    """The parameters of notebook 13: how many starts, the protocols, the service's limits, wrk's host."""
    EXPERIMENT: ClassVar[str] = EXPERIMENT

    repetitions: int = 0            # 0 takes the profile's (REPETITIONS)
    protocols: str = "published,fair"
    cpus: str = "1"                 # the service's CPUs (wrk gets the others under fair)
    memory: str = ""                # "" for no memory limit
    load_generator: str = "local"
    progress: bool = library(True)
    require_kvm: bool = library(False)
    nanos_accel: str | None = library()
    # parsed when made
    reps: int = parsed()
    protocol_names: list[str] = parsed()

    def check(self):
        reps = check_repetitions(self.repetitions or REPETITIONS[self.profile])
        protocol_names = check_protocols(self.protocols)
        self.limits()  # parsed once; refused here, before connecting
        self.set(reps=reps, protocol_names=protocol_names)


def run(params: Params) -> Path:
    """Every (runtime, network mode, protocol) `repetitions` times, runtimes interleaved."""
    reps, protocol_names, profile = params.reps, params.protocol_names, params.profile
    with opening(params, [APP], EXTRA_COLUMNS) as o, \
            load_generator_for(o.target, params.load_generator) as (loadgen, shared):
        run, tgt, cores = o.run, o.target, o.cores
        limits = {protocol: o.limits(protocol) for protocol in ("fair", "published")}
        run.note("limits", {k: v.as_dict() for k, v in limits.items()})
        run.note("load_generator", {"host": loadgen.host.name, "shares_target": shared})
        if not loadgen.host.which("curl"):
            raise EdgebenchError(f"{loadgen.host.name} has no curl to read the service's counters; install curl")
        wrk = Wrk(loadgen.host)
        place_probe(tgt)
        artifacts = o.package([APP], "offline")
        all_modes = list(dict.fromkeys(m for rt in o.runtimes for m in modes_of(rt)))
        ports = iter(range(10**9))

        def row_for(p: Point) -> dict:
            lim = limits[p.protocol]
            return dict(app=APP, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, network_mode=p.inner,
                        cpus=lim.cpus, memory_mb=lim.memory_mb, limits_note=o.clip,
                        build=o.build_of(APP, p.runtime))

        def measure_point(p: Point, row: dict) -> None:
            artifact = artifact_for(artifacts, APP, p.runtime)
            lim = limits[p.protocol]
            lim = replace(lim, network=p.inner) if p.inner else lim
            lg_cores = loadgen_cpuset(shared, lim.cpuset, cores)[0] if p.protocol == "fair" else None
            address = tgt.address if not shared else "127.0.0.1"
            measure(run, p.runtime, artifact, lim, PORT_BASE + next(ports) % 200, row, wrk, address,
                    WRK_DURATION_S[profile], lg_cores)

        sweep(run, o.runtimes, reps=reps, inner=all_modes, protocols=protocol_names, row_for=row_for,
              measure=measure_point, failed=("throughput", "req/s"), desc="home automation",
              progress=params.progress, applies=lambda p: p.inner in modes_of(p.runtime))
        return run.dir


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """One start and one wrk run (and the second after it) per (runtime, network mode, protocol,
    repetition)."""
    reps, protocols = params.reps, params.protocol_names
    modes = {n: max(1, len(RUNTIMES[n].network_modes)) if n in RUNTIMES else 1 for n in runtimes}
    starts = reps * len(protocols)
    busy = starts * (WRK_DURATION_S[params.profile] + AFTER_RUN_S + 0.5)
    seconds = sum(estimate.model_seconds([n], 1, starts * modes[n], busy * modes[n]) - estimate.SESSION_S
                  for n in runtimes)
    return estimate.Work(points=sum(starts * modes[n] for n in runtimes), seconds=estimate.SESSION_S + seconds,
                         window_s=sum(starts * modes[n] * WRK_DURATION_S[params.profile] for n in runtimes),
                         apps=[APP], levels=f"protocols {','.join(protocols)}", repetitions=reps)
