"""Off-the-shelf services (paper 002, Unikraft's Figs. 5 and 6): Redis on one core in every
runtime that can run it, loaded by redis-benchmark from the load-generator host.

The service is Debian's redis-server (the target's own binary: natively, in a Docker image
bundled from it offline, bind-mounted into LXD), without persistence, ready when it answers
PING. Each start is measured once per protocol:
- `published`: the page's load (`redis-benchmark -c 30 -n 100000 -P 16 -t get,set`), the
  service limited to one CPU by quota only, the load generator wherever the OS puts it;
- `fair`: the same load, the service pinned to its core(s) and the load generator (when it
  shares the machine) pinned to the others, so neither takes the other's core.
Rows per test (GET, SET): `throughput` (req/s) and the latency redis-benchmark reports
(`latency_mean`, `latency_p50`, `latency_p95`, `latency_p99`, ms). redis-benchmark has no time
limit: a service that stalls fails its row (under `timeout`) with the reason, never hangs.

Docker runs in each network mode (host, bridge). A runtime that runs no Linux tool binaries
(linux-vm's initramfs holds one static Go binary; Nanos and Unikraft run their own images) is
absent with the reason in meta.json. nginx (Fig. 6) is not here yet.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from edgebench.apps import place_probe
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import (as_list, check_profile, check_protocols, check_repetitions, open_run,
                                          resolve_limits, runtime_options, session)
from edgebench.experiments.http_load import load_generator_for, loadgen_cpuset
from edgebench.experiments.protocols import fair_limits, package_all, published_limits, with_instance
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.load import RedisBenchmark
from edgebench.results import Run, new_run_id
from edgebench.runtimes import Limits, Runtime, StartFailed

EXPERIMENT = "services"
SERVICES = ("redis",)
EXTRA_COLUMNS = ["test", "network_mode", "build", "network", "accelerator", "cpus_applied", "memory_mb_applied", "cpuset_applied",
                 "limits_note", "note"]
PORT_BASE = 16400
READY_TIMEOUT_S = 30
CONNECTIONS, PIPELINE = 30, 16          # the page's settings
REQUESTS = {"quick": 20_000, "standard": 100_000}
LIMIT_S = {"quick": 120, "standard": 600}  # per redis-benchmark run (both tests)


def modes_of(rt: Runtime) -> tuple[str, ...]:
    """Network modes a runtime serves in: each of several (Docker: bridge, host), else its one."""
    return rt.network_modes if len(rt.network_modes) > 1 else ("",)


def measure_redis(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict, bench: RedisBenchmark,
                  address: str, requests: int, limit_s: float, loadgen_cores: str | None) -> None:
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
        except EdgebenchError as e:
            run.save_raw(f"redis-benchmark-{label}", command="redis-benchmark", stderr=str(e),
                         app_stdout=rt.app_output(instance)[-4000:])
            gone = rt.died(instance.plan)
            run.failed(metric="throughput", unit="req/s", error=f"{e}{f'; the service: {gone}' if gone else ''}", **row)
            return
        first = next(iter(reports.values()))
        run.save_raw(f"redis-benchmark-{label}", command=first.command, stdout=first.stdout, stderr=first.stderr)
        note = f"redis-benchmark -c {CONNECTIONS} -n {requests} -P {PIPELINE}" + (
            f", pinned to cores {loadgen_cores}" if loadgen_cores else "")
        for test, report in reports.items():
            cells = dict(row, test=test, note=note)
            run.add(metric="throughput", value=report.requests_per_second, unit="req/s", **cells)
            for key in ("mean", "p50", "p95", "p99"):
                value = report.latency_us.get(key)
                run.add(metric=f"latency_{key}", value=value / 1000 if value is not None else None, unit="ms", **cells)
    finally:
        rt.stop(instance)


def run_services(target="local", runtimes="auto", services="redis", repetitions: int | None = None,
                 protocols="published,fair", cpus="1", memory="", docker_build: str = "offline",
                 load_generator="local", profile: str = "standard", run_id: str | None = None,
                 progress: bool = True, require_kvm=False, nanos_accel: str | None = None) -> Path:
    """Every (service, runtime, network mode, protocol) `repetitions` times, runtimes interleaved."""
    prof = check_profile(profile)
    reps = check_repetitions(repetitions if repetitions not in (None, "", 0) else prof["repetitions"])
    names = as_list(services, list(SERVICES))
    unknown = [s for s in names if s not in SERVICES]
    if unknown:
        raise ConfigError(f"services {', '.join(unknown)} unknown; choose from {', '.join(SERVICES)}")
    protocol_names = check_protocols(protocols)
    run_id = run_id or new_run_id()
    params = dict(target=str(target), runtimes=runtimes, services=names, repetitions=reps, protocols=protocol_names,
                  cpus=cpus, memory=memory, docker_build=docker_build, load_generator=str(load_generator),
                  profile=profile)
    with session(target, runtimes, run_id, [], runtime_options(require_kvm, nanos_accel)) as (tgt, selection):
        cpus_v, mem_v, clip_note = resolve_limits(tgt, cpus, memory or None)
        cores = tgt.facts()["cores"]
        limits = {"fair": fair_limits(cpus_v, mem_v, cores), "published": published_limits(cpus_v, mem_v)}
        serving = [rt for rt in selection.runtimes if "tool" in rt.languages]
        with load_generator_for(tgt, load_generator) as (loadgen, shared), \
                open_run(EXPERIMENT, params, tgt, extra_columns=EXTRA_COLUMNS, run_id=run_id) as run:
            run.note("skipped_runtimes", selection.skipped)
            run.note("absent_runtimes", {rt.name: f"{rt.name} runs no Linux tool binaries: Debian's redis-server "
                                                  "cannot run there" for rt in selection.runtimes if rt not in serving})
            run.note("limits", {k: v.as_dict() for k, v in limits.items()})
            bench = RedisBenchmark(loadgen.host)
            run.note("load_generator", {"host": loadgen.host.name, "shares_target": shared})
            place_probe(tgt)
            artifacts = package_all(run, tgt, serving, names, docker_build)
            all_modes = list(dict.fromkeys(m for rt in serving for m in modes_of(rt)))
            inner = [(s, m) for s in names for m in all_modes]
            ports = iter(range(10**9))

            def row_for(p: Point) -> dict:
                service, mode = p.inner
                artifact = artifacts.get((service, p.runtime.name))
                lim = limits[p.protocol]
                return dict(app=service, runtime=p.runtime.name, protocol=p.protocol, rep=p.rep, network_mode=mode,
                            cpus=lim.cpus, memory_mb=lim.memory_mb, limits_note=clip_note,
                            build=artifact.build if artifact else "")

            def measure(p: Point, row: dict) -> None:
                service, mode = p.inner
                if mode not in modes_of(p.runtime):
                    return  # Docker's bridge is no mode of native: no row, nothing started
                artifact = artifact_for(artifacts, service, p.runtime)
                lim = limits[p.protocol]
                lim = replace(lim, network=mode) if mode else lim
                lg_cores = loadgen_cpuset(shared, lim.cpuset, cores)[0] if p.protocol == "fair" else None
                address = tgt.address if not shared else "127.0.0.1"
                measure_redis(run, p.runtime, artifact, lim, PORT_BASE + next(ports) % 200, row, bench, address,
                              REQUESTS[profile], LIMIT_S[profile], lg_cores)

            sweep(run, serving, reps=reps, inner=inner, protocols=protocol_names, row_for=row_for, measure=measure,
                  failed=("throughput", "req/s"), desc="services", progress=progress)
            return run.dir


def collect(run_id: str = "", **params) -> Path:
    """Replot run_id ('latest' or an id) if given, else measure now."""
    from edgebench.experiments.common import collect as _collect
    return _collect(EXPERIMENT, run_services, run_id, **params)


def plan_services(params: dict, runtimes: list[str]):
    """One start and one redis-benchmark run per (runtime, network mode, protocol, repetition)."""
    from edgebench import plan
    from edgebench.runtimes import RUNTIMES
    profile = params.get("profile", "standard")
    reps = plan.reps_or(params.get("repetitions"), check_profile(profile)["repetitions"])
    protocols = plan.names(params.get("protocols", "published,fair"), ["fair", "published"])
    serving = [n for n in runtimes if n in RUNTIMES and "tool" in RUNTIMES[n].languages]
    modes = {n: len(RUNTIMES[n].network_modes) if len(RUNTIMES[n].network_modes) > 1 else 1 for n in serving}
    starts = reps * len(protocols)
    # ~1.5 s per 20k requests of both tests at the page's pipelining (0.5-0.75 M req/s here).
    busy = starts * 1.5 * REQUESTS.get(profile, 100_000) / 20_000
    seconds = sum(plan.model_seconds([n], 1, starts * modes[n], busy * modes[n]) for n in serving) or plan.SESSION_S
    return plan.Work(points=sum(starts * modes[n] for n in serving), seconds=seconds, apps=["redis"],
                     levels=f"protocols {','.join(protocols)}", repetitions=reps, runtimes=serving)
