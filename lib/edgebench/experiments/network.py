"""Docker host vs bridge networking (paper 001/004, §3.0.1): iperf3 throughput and the TCP
round-trip time the kernel measured for the iperf3 stream, from the load-generator host to an
iperf3 server natively, in a container on the host's network, and behind Docker's bridge.

Which runtimes take part follows from what they declare, not from their names: every runtime
with more than one network mode (`Runtime.network_modes`: Docker's bridge and host) runs the
server in each mode, and a runtime whose only mode is the host's own network (native) is the
baseline. The server is an ordinary TCP service: started with `Runtime.start` (the probe polls
for an accepted connection, as for every service) and stopped with `Runtime.stop`. Its points go
through the sweep as every experiment's do: one order, one resuming, a failure its point's row."""

from __future__ import annotations

import itertools
import json

from edgebench.apps import APPS
from edgebench.errors import EdgebenchError
from edgebench.experiments.http_load import load_generator_for
from edgebench.experiments.packaging import package_all
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.results import Run
from edgebench.runtimes import Limits, Runtime
from edgebench.targets import sh

APP = "iperf3"
PORT_BASE = 15201
READY_TIMEOUT_S = 20


def iperf3_points(runtimes: list[Runtime]) -> list[tuple[Runtime, str]]:
    """(runtime, network mode) to measure: the baseline (a runtime on the host's network only),
    then every mode of each runtime that has several; none without such a runtime (then there is
    nothing to compare). Runtime classes do too (the plan counts them)."""
    runnable = [rt for rt in runtimes if rt.runs(APPS[APP])]
    compared = [(rt, mode) for rt in runnable if len(rt.network_modes) > 1 for mode in rt.network_modes]
    if not compared:
        return []
    return [(rt, "host") for rt in runnable if rt.network_modes == ("host",)] + compared


def measure_docker_networking(run: Run, target, runtimes: list[Runtime], reps: int, seconds: int, load_generator,
                              progress: bool = True) -> None:
    """iperf3 from the load generator to a server in every (runtime, mode) of iperf3_points,
    through the sweep: its order, its resuming, a failed point a row with the reason."""
    points = iperf3_points(runtimes)
    if not points:
        run.note("network", "no runtime with more than one network mode (Docker: host and bridge) is "
                            "available on the target: host vs bridge not measured")
        return
    with load_generator_for(target, load_generator) as (loadgen, _shared):
        host = loadgen.host
        if not host.which("iperf3"):
            run.note("network", f"no iperf3 on the load generator {host.name}: install iperf3 there")
            return
        taking_part = list(dict.fromkeys(rt for rt, _ in points))
        artifacts = package_all(run, target, taking_part, [APP], "offline")
        ports = itertools.count()

        def row_for(p: Point) -> dict:
            return dict(app=APP, protocol="fair", benchmark="network", cpus=None, memory_mb=None,
                        runtime=p.runtime.name, rep=p.rep, build=p.runtime.build_for("offline"),
                        point=p.inner if len(p.runtime.network_modes) > 1 else p.runtime.name,
                        note=f"iperf3 -c {target.address} -t {seconds}, from {host.name}")

        def measure(p: Point, row: dict) -> None:
            artifact = artifact_for(artifacts, APP, p.runtime)
            iperf3_point(run, p.runtime, artifact, p.inner, dict(row, build=artifact.build), host, target.address,
                         seconds, PORT_BASE + next(ports) % 50)

        sweep(run, taking_part, reps=reps, inner=list(dict.fromkeys(mode for _, mode in points)), row_for=row_for,
              measure=measure, failed=("network_throughput", "Gbps"), desc="network", progress=progress,
              applies=lambda p: (p.runtime, p.inner) in points)


def iperf3_point(run: Run, rt: Runtime, artifact, mode: str, row: dict, host, address: str, seconds: int,
                 port: int) -> None:
    try:
        instance, _ = rt.start(artifact, Limits(network=mode), port, timeout_s=READY_TIMEOUT_S)
    except EdgebenchError as e:
        raise EdgebenchError(f"iperf3 server: {e}") from None
    try:
        cmd = ["iperf3", "-c", address, "-p", str(instance.port), "-t", str(seconds), "-J"]
        r = host.run(cmd, timeout=seconds + 60, check=False)
        run.save_raw(f"iperf3-{row['point']}-{row['rep']}", command=sh(cmd), stdout=r.stdout, stderr=r.stderr,
                     exit_code=r.exit_code)
    finally:
        rt.stop(instance)
    try:
        report = json.loads(r.stdout)
        received = report["end"]["sum_received"]["bits_per_second"]
        rtt_us = report["end"]["streams"][0]["sender"].get("mean_rtt")
    except (ValueError, KeyError, IndexError):
        raise EdgebenchError(f"iperf3 gave no report: {(r.stderr or r.stdout)[-300:]}") from None
    run.add(metric="network_throughput", value=received / 1e9, unit="Gbps", **row)
    run.add(metric="network_rtt", value=rtt_us / 1000 if rtt_us is not None else None, unit="ms",
            **dict(row, note=row["note"] + "; mean TCP RTT of the stream (tcp_info)"))
