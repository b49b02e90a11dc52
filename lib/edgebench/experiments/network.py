"""Docker host vs bridge networking (paper 001/004, §3.0.1): iperf3 throughput and the TCP
round-trip time the kernel measured for the iperf3 stream, from the load-generator host to an
iperf3 server natively, in a container on the host's network, and behind Docker's bridge.

Which runtimes take part follows from what they declare, not from their names: every runtime
with more than one network mode (`Runtime.network_modes`: Docker's bridge and host) runs the
server in each mode, and a runtime whose only mode is the host's own network (native) is the
baseline. The server is an ordinary TCP service: started with `Runtime.start` (the probe polls
for an accepted connection, as for every service) and stopped with `Runtime.stop`."""

from __future__ import annotations

import json

from tqdm import tqdm

from edgebench.apps import APPS, place_app
from edgebench.errors import EdgebenchError
from edgebench.experiments.http_load import load_generator_for
from edgebench.resume import point_id
from edgebench.results import Run
from edgebench.runtimes import Limits, Runtime
from edgebench.targets import sh

APP = "iperf3"
PORT_BASE = 15201
READY_TIMEOUT_S = 20


def network_points(runtimes: list[Runtime]) -> list[tuple[Runtime, str, str]]:
    """(runtime, network mode, point) to measure: the baseline (a runtime on the host's network
    only; its point is its name), then every mode of each runtime that has several; none
    without such a runtime (then there is nothing to compare)."""
    runnable = [rt for rt in runtimes if rt.runs(APPS[APP])]
    compared = [(rt, mode, mode) for rt in runnable if len(rt.network_modes) > 1 for mode in rt.network_modes]
    if not compared:
        return []
    baseline = [(rt, "host", rt.name) for rt in runnable if rt.network_modes == ("host",)]
    return baseline + compared


def measure_docker_networking(run: Run, target, selection, reps: int, seconds: int, load_generator,
                              progress: bool = True) -> None:
    points = network_points(selection.runtimes)
    base = dict(app=APP, protocol="fair", benchmark="network", cpus=None, memory_mb=None)
    if not points:
        run.note("network", "no runtime with more than one network mode (Docker: host and bridge) is "
                            "available on the target: host vs bridge not measured")
        return
    artifacts, unpackaged = {}, {}
    try:
        built = place_app(target, APPS[APP])
    except EdgebenchError as e:
        unpackaged = {rt.name: str(e) for rt, _, _ in points}
    else:
        for rt in dict.fromkeys(rt for rt, _, _ in points):
            try:
                artifacts[rt.name] = rt.package(built, rt.build_for("offline"))
            except EdgebenchError as e:
                unpackaged[rt.name] = str(e)
    for rt, _, point in points:
        if rt.name in unpackaged:
            run.failed(metric="network_throughput", unit="Gbps", error=unpackaged[rt.name], runtime=rt.name,
                       point=point, rep=1, build=rt.build_for("offline"), **base)
    points = network_points([rt for rt in selection.runtimes if rt.name in artifacts])
    if not points:
        return
    with load_generator_for(target, load_generator) as (loadgen, _shared):
        host = loadgen.host
        if not host.which("iperf3"):
            run.note("network", f"no iperf3 on the load generator {host.name}: install iperf3 there")
            return
        address = target.address
        steps = [(rep, p) for rep in range(1, reps + 1) for p in (points if rep % 2 else points[::-1])]
        for k, (rep, (rt, mode, point)) in enumerate(tqdm(steps, desc="network", disable=not progress)):
            key = point_id("network", rt.name, rep, None, point, None)
            if key in run.ended_points:  # measured in an earlier sitting (edgebench.resume)
                continue
            run.begin_point(key)  # its own loop, not experiments.sweep: each point still gets a quiet check
            ended = False
            try:
                _iperf3_point(run, rt, artifacts[rt.name], mode, point, rep, base, host, address, seconds,
                              PORT_BASE + k % 50)
                ended = True
            finally:
                run.end_point(ended)


def _iperf3_point(run, rt, artifact, mode, point: str, rep: int, base: dict, host, address: str, seconds: int,
                  port: int) -> None:
    row = dict(base, runtime=rt.name, point=point, rep=rep, build=artifact.build,
               note=f"iperf3 -c {address} -t {seconds}, from {host.name}")
    try:
        instance, _ = rt.start(artifact, Limits(network=mode), port, timeout_s=READY_TIMEOUT_S)
    except EdgebenchError as e:
        run.failed(metric="network_throughput", unit="Gbps", error=f"iperf3 server: {e}", **row)
        return
    try:
        cmd = ["iperf3", "-c", address, "-p", str(instance.port), "-t", str(seconds), "-J"]
        r = host.run(cmd, timeout=seconds + 60, check=False)
        run.save_raw(f"iperf3-{point}-{rep}", command=sh(cmd), stdout=r.stdout, stderr=r.stderr,
                     exit_code=r.exit_code)
    finally:
        rt.stop(instance)
    try:
        report = json.loads(r.stdout)
        received = report["end"]["sum_received"]["bits_per_second"]
        rtt_us = report["end"]["streams"][0]["sender"].get("mean_rtt")
    except (ValueError, KeyError, IndexError):
        run.failed(metric="network_throughput", unit="Gbps",
                   error=f"iperf3 gave no report: {(r.stderr or r.stdout)[-300:]}", **row)
        return
    run.add(metric="network_throughput", value=received / 1e9, unit="Gbps", **row)
    run.add(metric="network_rtt", value=rtt_us / 1000 if rtt_us is not None else None, unit="ms",
            **dict(row, note=row["note"] + "; mean TCP RTT of the stream (tcp_info)"))
