"""Off-the-shelf services (paper 002, Unikraft's Figs. 5 and 6): Redis and nginx on one core in
every runtime that can run them, loaded from the load-generator host.

The services are Debian's redis-server (no persistence, ready when it answers PING) and nginx
(one worker, one static 612-byte page, apps/nginx), the target's own binaries: natively, in a
Docker image bundled from them offline, bind-mounted into LXD. Each start is measured once per
protocol:
- `published`: the page's load (Redis: `redis-benchmark -c 30 -n 100000 -P 16 -t get,set`;
  nginx: `wrk -t14 -c30 -d1m`), the service limited to one CPU by quota only, the load
  generator wherever the OS puts it;
- `fair`: the same load (wrk with one thread per load-generator core), the service pinned to its
  core(s) and the load generator (when it shares the machine) pinned to the others, and each
  Redis test measured for at least MIN_WINDOW_S (2 s quick, 10 s standard: the page's count is
  over in a tenth of a second here), its request count chosen from a first run's rate.
Every row carries `window_s`, the seconds its load lasted.
Rows per test (Redis GET and SET, nginx `static`): `throughput` (req/s) and latency (`latency_mean`,
`latency_p50`, `latency_p99`, ms; Redis also `latency_p95`); nginx also `errors` (wrk's connect,
read, write, timeout and non-2xx counts). A service that stalls fails its row with the reason,
never hangs (redis-benchmark runs under `timeout`; wrk has its own duration). After nginx's wrk run
one connection asks again, as after every closed-loop run (http_load.after_load): a service that
died or stopped answering keeps what it measured in failed rows, and one that answered nothing
has no rate, never a rate of 0.

Docker runs in each network mode (host, bridge). A runtime that runs no Linux tool binaries
(linux-vm's initramfs holds one static Go binary; Nanos and Unikraft run their own images) is
absent with the reason in meta.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from edgebench.apps import APPS, place_probe
from edgebench.cgroups import cores_in
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import as_list, check_protocols, check_repetitions, opening
from edgebench.experiments.http_load import AFTER_RUN_S, after_load, load_generator_for, loadgen_cpuset
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.protocols import with_instance
from edgebench.experiments.sweep import Point, artifact_for, modes_of, sweep
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Limits, Runtime, StartFailed
from edgebench.tools.load import LoadSettings, RedisBenchmark, Wrk

EXPERIMENT = "services"
SERVICES = ("redis", "nginx")
EXTRA_COLUMNS = ["test", "network_mode", "build", "network", "accelerator", "cpus_applied", "memory_mb_applied",
                 "cpuset_applied", "limits_note", "note", "window_s"]
PORT_BASE = 16400
READY_TIMEOUT_S = 30
CONNECTIONS, PIPELINE = 30, 16          # the page's settings
REQUESTS = {"smoke": 5_000, "quick": 20_000, "standard": 100_000}
# `fair` measures each Redis test for at least this long: the page's 100k requests last 33-170 ms
# at 0.6 M req/s, shorter than a shared machine's noise (three runs by hand gave GET 250k-625k).
# A first run at the page's count measures the rate; the kept run asks for enough requests to
# last the window. `published` keeps the page's command.
MIN_WINDOW_S = {"smoke": 0.5, "quick": 2.0, "standard": 10.0}
WINDOW_MARGIN = 1.5
WINDOW_ATTEMPTS = 3  # runs that measure the rate before the kept one; short of it, the row says so
LIMIT_S = {"smoke": 60, "quick": 120, "standard": 600}  # per redis-benchmark run (both tests)
WRK_THREADS = 14                         # the page's nginx load: wrk -t14 -c30 -d1m
WRK_DURATION_S = {"smoke": 1, "quick": 5, "standard": 60}
# Each start carries a whole load run (a minute of wrk in standard): three per cell show the spread
# without the start-time experiments' 20, which here would take hours.
REPETITIONS = {"smoke": 1, "quick": 3, "standard": 3}  # the paper's 3; smoke: one


def measure_redis(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict, bench: RedisBenchmark,
                  address: str, requests: int, limit_s: float, loadgen_cores: str | None,
                  min_window_s: float = 0.0) -> None:
    try:
        instance, _ = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        run.failed(metric="throughput", unit="req/s", error=f"redis did not start: {e}", **row)
        return
    try:
        row = with_instance(row, limits, instance)
        label = f"{row['runtime']}-{row['network_mode'] or 'own'}-{row['protocol']}-rep{row['rep']}"
        try:
            reports = bench.run(address, instance.port, connections=CONNECTIONS, requests=requests,
                                pipeline=PIPELINE, limit_s=limit_s, cpuset=loadgen_cores)
            # The rate is known after a run: ask for one that lasts the window (again, if the rate
            # rose meanwhile; a shared machine's rate moves by 2x between runs).
            for attempt in range(WINDOW_ATTEMPTS):
                shortest_s = min(r.duration_us for r in reports.values()) / 1e6
                if shortest_s >= min_window_s:
                    break
                first = next(iter(reports.values()))
                run.save_raw(f"redis-benchmark-{label}-rate{attempt + 1}", command=first.command,
                             stdout=first.stdout, stderr=first.stderr,
                             note="measured the rate only: its numbers are no rows")
                requests = requests_for(requests, shortest_s, min_window_s)
                reports = bench.run(address, instance.port, connections=CONNECTIONS, requests=requests,
                                    pipeline=PIPELINE, limit_s=limit_s, cpuset=loadgen_cores)
        except EdgebenchError as e:
            run.save_raw(f"redis-benchmark-{label}", command="redis-benchmark", stderr=str(e),
                         app_stdout=rt.app_output(instance)[-4000:])
            gone = rt.died(instance.plan)
            run.failed(metric="throughput", unit="req/s", error=f"{e}{f'; the service: {gone}' if gone else ''}", **row)
            return
        first = next(iter(reports.values()))
        run.save_raw(f"redis-benchmark-{label}", command=first.command, stdout=first.stdout, stderr=first.stderr)
        short = min(r.duration_us for r in reports.values()) / 1e6 < min_window_s
        note = f"redis-benchmark -c {CONNECTIONS} -n {requests} -P {PIPELINE}" + (
            f", pinned to cores {loadgen_cores}" if loadgen_cores else "") + (
            f"; shorter than the {min_window_s:g} s window after {WINDOW_ATTEMPTS} tries" if short else "")
        for test, report in reports.items():
            cells = dict(row, test=test, note=note, window_s=round(report.duration_us / 1e6, 3))
            run.add(metric="throughput", value=report.requests_per_second, unit="req/s", **cells)
            for key in ("mean", "p50", "p95", "p99"):
                value = report.latency_us.get(key)
                run.add(metric=f"latency_{key}", value=value / 1000 if value is not None else None, unit="ms", **cells)
    finally:
        rt.stop(instance)


def requests_for(requests: int, window_s: float, min_window_s: float) -> int:
    """The requests per test that last `min_window_s` at the rate `requests` in `window_s` showed."""
    return math.ceil(requests * min_window_s / max(window_s, 1e-3) * WINDOW_MARGIN)


def measure_nginx(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict, wrk: Wrk, address: str,
                  duration_s: int, loadgen_cores: str | None, protocol: str) -> None:
    try:
        instance, _ = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        run.failed(metric="throughput", unit="req/s", error=f"nginx did not start: {e}", **row)
        return
    try:
        row = with_instance(row, limits, instance)
        label = f"{row['runtime']}-{row['network_mode'] or 'own'}-{row['protocol']}-rep{row['rep']}"
        threads = WRK_THREADS if protocol == "published" else max(1, len(cores_in(loadgen_cores)))
        settings = LoadSettings(threads=threads, connections=CONNECTIONS, duration_s=duration_s)
        url = f"http://{address}:{instance.port}/index.html"
        try:
            report = wrk.run(url, settings, cpuset=loadgen_cores)
        except EdgebenchError as e:
            run.save_raw(f"wrk-{label}", command="wrk", stderr=str(e))
            run.failed(metric="throughput", unit="req/s", error=str(e), **row)
            return
        run.save_raw(f"wrk-{label}", command=report.command, stdout=report.stdout, stderr=report.stderr)
        after = after_load(run, rt, instance, wrk, url, settings, loadgen_cores, label)
        cells = dict(row, test="static", note=f"wrk -t{threads} -c{CONNECTIONS} -d{duration_s}s {url}" + (
            f", pinned to cores {loadgen_cores}" if loadgen_cores else ""),
                     window_s=round(report.duration_us / 1e6, 3) if report.duration_us else duration_s)
        if report.nothing_answered():  # missing, never a rate of 0
            run.failed(metric="throughput", unit="req/s", error=after.nothing_answered(report), **cells)
            return
        cells.update(after.status(report))
        run.add(metric="throughput", value=report.requests_per_second, unit="req/s", **cells)
        for key in ("mean", "p50", "p99"):
            value = report.latency_us.get(key)
            run.add(metric=f"latency_{key}", value=value / 1000 if value is not None else None, unit="ms", **cells)
        run.add(metric="errors", value=report.error_count, unit="count",
                **dict(cells, note=cells["note"] + "; " + ", ".join(f"{k} {v}" for k, v in report.errors.items())))
    finally:
        rt.stop(instance)


@dataclass(frozen=True)
class Params(Limited):
    """The parameters of notebook 12: which services, how many starts, the protocols and the limits."""
    EXPERIMENT: ClassVar[str] = EXPERIMENT
    SMOKE: ClassVar[dict] = {**Limited.SMOKE, "services": "redis"}

    services: str = "all"
    repetitions: int = 0            # 0 takes the profile's (REPETITIONS)
    protocols: str = "published,fair"
    cpus: str = "1"                 # one core, as the page
    memory: str = ""                # "" for no memory limit, as the page
    load_generator: str = "local"
    progress: bool = library(True)
    require_kvm: bool = library(False)
    nanos_accel: str | None = library()
    # parsed when made
    reps: int = parsed()
    service_names: list[str] = parsed()
    protocol_names: list[str] = parsed()

    def check(self):
        reps = check_repetitions(self.repetitions or REPETITIONS[self.profile])
        names = as_list(self.services, list(SERVICES))
        unknown = [s for s in names if s not in SERVICES]
        if unknown:
            raise ConfigError(f"services {', '.join(unknown)} unknown; choose from {', '.join(SERVICES)}")
        protocol_names = check_protocols(self.protocols)
        self.limits()  # parsed once; refused here, before connecting
        self.set(reps=reps, service_names=names, protocol_names=protocol_names)


def run(params: Params) -> Path:
    """Every (service, runtime, network mode, protocol) `repetitions` times, runtimes interleaved."""
    names, reps, protocol_names, profile = params.service_names, params.reps, params.protocol_names, params.profile
    # A runtime that cannot run Debian's binaries is absent from the run, not refused: no app to check.
    with opening(params, [], EXTRA_COLUMNS) as o, \
            load_generator_for(o.target, params.load_generator) as (loadgen, shared):
        run, tgt, cores = o.run, o.target, o.cores
        limits = {protocol: o.limits(protocol) for protocol in ("fair", "published")}
        serving = [rt for rt in o.runtimes if all(rt.runs(APPS[s]) for s in names)]
        run.note("absent_runtimes", {rt.name: f"{rt.name} runs no Linux tool binaries: Debian's "
                                              f"{' and '.join(names)} cannot run there"
                                     for rt in o.runtimes if rt not in serving})
        run.note("limits", {k: v.as_dict() for k, v in limits.items()})
        bench = RedisBenchmark(loadgen.host) if "redis" in names else None
        wrk = Wrk(loadgen.host) if "nginx" in names else None
        run.note("load_generator", {"host": loadgen.host.name, "shares_target": shared})
        place_probe(tgt)
        # Docker's images are bundled from the target's own binaries: the same redis-server and
        # nginx as native (there are no "published" images of edgebench's configuration).
        artifacts = o.package(names, "offline", runtimes=serving)
        all_modes = list(dict.fromkeys(m for rt in serving for m in modes_of(rt)))
        inner = [(s, m) for s in names for m in all_modes]
        ports = iter(range(10**9))

        def row_for(p: Point) -> dict:
            service, mode = p.inner
            lim = limits[p.protocol]
            return dict(app=service, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, network_mode=mode,
                        cpus=lim.cpus, memory_mb=lim.memory_mb, limits_note=o.clip,
                        build=o.build_of(service, p.runtime))

        def measure(p: Point, row: dict) -> None:
            service, mode = p.inner
            artifact = artifact_for(artifacts, service, p.runtime)
            lim = limits[p.protocol]
            lim = replace(lim, network=mode) if mode else lim
            lg_cores = loadgen_cpuset(shared, lim.cpuset, cores)[0] if p.protocol == "fair" else None
            address = tgt.address if not shared else "127.0.0.1"
            app = artifact.built.app
            # A port in the service's own configuration (nginx) is the port it is given everywhere.
            port = app.container_port if app.fixed_port else PORT_BASE + next(ports) % 200
            if service == "redis":
                measure_redis(run, p.runtime, artifact, lim, port, row, bench, address, REQUESTS[profile],
                              LIMIT_S[profile], lg_cores, MIN_WINDOW_S[profile] if p.protocol == "fair" else 0)
            else:
                measure_nginx(run, p.runtime, artifact, lim, port, row, wrk, address, WRK_DURATION_S[profile],
                              lg_cores, p.protocol)

        sweep(run, serving, reps=reps, inner=inner, protocols=protocol_names, row_for=row_for, measure=measure,
              failed=("throughput", "req/s"), desc="services", progress=params.progress,
              applies=lambda p: p.inner[1] in modes_of(p.runtime))
        return run.dir


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """One start and one redis-benchmark run per (runtime, network mode, protocol, repetition)."""
    profile, reps, protocols, services = params.profile, params.reps, params.protocol_names, params.service_names
    serving = [n for n in runtimes if n in RUNTIMES and all(RUNTIMES[n].runs(APPS[s]) for s in services)]
    modes = {n: len(RUNTIMES[n].network_modes) if len(RUNTIMES[n].network_modes) > 1 else 1 for n in serving}
    starts = reps * len(protocols)
    # Redis: ~1.5 s per 20k requests of both tests at the page's pipelining (0.5-0.75 M req/s here),
    # work a slower device stretches, and under fair the minimum windows of GET and SET; nginx:
    # wrk's duration and the second after it (after_load). Windows and durations are set times a
    # slower device does not stretch.
    redis_window = 2 * MIN_WINDOW_S[profile] * WINDOW_MARGIN * ("fair" in protocols) / len(protocols)
    window = {"redis": redis_window, "nginx": WRK_DURATION_S[profile]}
    per_start = {"redis": 1.5 * REQUESTS[profile] / 20_000 + redis_window,
                 "nginx": WRK_DURATION_S[profile] + AFTER_RUN_S + 0.5}
    busy = starts * sum(per_start[s] for s in services)
    windows = starts * sum(window[s] for s in services)
    seconds = sum(estimate.model_seconds([n], len(services), starts * modes[n] * len(services), busy * modes[n])
                  for n in serving) or estimate.SESSION_S
    return estimate.Work(points=sum(starts * modes[n] for n in serving) * len(services), seconds=seconds,
                         window_s=sum(windows * modes[n] for n in serving),
                         apps=services, levels=f"protocols {','.join(protocols)}", repetitions=reps, runtimes=serving)
