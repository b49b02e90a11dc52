"""Docker host vs bridge networking (paper 001/004, §3.0.1): iperf3 throughput and the TCP
round-trip time the kernel measured for the iperf3 stream, from the load-generator host to an
iperf3 server natively, in a container on the host's network, and behind Docker's bridge."""

from __future__ import annotations

import json
import time

from tqdm import tqdm

from edgebench.apps import APPS, place_app
from edgebench.errors import EdgebenchError
from edgebench.experiments.http_load import load_generator_for
from edgebench.results import Run
from edgebench.runtimes.docker import LABEL
from edgebench.targets import sh

PORT_BASE = 15201
MODES = ("native", "host", "bridge")   # native: no container; host: --network host; bridge: -p


def _wait_listening(target, port: int, timeout_s: float = 20) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if target.run(["sh", "-c", f"ss -Hltn 'sport = :{port}' | grep -q ."], check=False).ok:
            return True
        time.sleep(0.05)
    return False


def _server(target, docker, image: str | None, mode: str, port: int, name: str) -> str:
    """Start a one-shot iperf3 server (-1: exits after one test); returns what stops it."""
    if mode == "native":
        target.run(f"nohup iperf3 -s -1 -p {port} >/dev/null 2>&1 & echo $!")
        return f"pkill -f 'iperf3 -s -1 -p {port}' || true"
    net = ["--network", "host"] if mode == "host" else ["-p", f"{port}:{port}"]
    target.run(["docker", "run", "-d", "--rm", "--name", name, "--label", f"{LABEL}={docker.run_tag}", *net,
                image, "iperf3", "-s", "-1", "-p", str(port)])
    return sh(["docker", "rm", "-f", name])


def measure_docker_networking(run: Run, target, selection, reps: int, seconds: int, load_generator,
                              progress: bool = True) -> None:
    docker = next((rt for rt in selection.runtimes if rt.name == "docker"), None)
    base = dict(app="iperf3", protocol="fair", benchmark="network", build="offline", cpus=None, memory_mb=None)
    if docker is None:
        run.note("network", "Docker is not available on the target: host vs bridge not measured")
        return
    try:
        image = docker.package(place_app(target, APPS["iperf3"]), "offline").ref
    except EdgebenchError as e:
        for mode in MODES:
            run.failed(metric="network_throughput", unit="Gbps", error=str(e), runtime="docker", point=mode,
                       rep=1, **base)
        return
    with load_generator_for(target, load_generator) as (loadgen, _shared):
        host = loadgen.host
        if not host.which("iperf3"):
            run.note("network", f"no iperf3 on the load generator {host.name}: install iperf3 there")
            return
        address = target.address
        steps = [(rep, mode) for rep in range(1, reps + 1) for mode in (MODES if rep % 2 else MODES[::-1])]
        for k, (rep, mode) in enumerate(tqdm(steps, desc="network", disable=not progress)):
            port = PORT_BASE + k % 50
            row = dict(base, runtime="native" if mode == "native" else "docker", point=mode, rep=rep,
                       note=f"iperf3 -c {address} -t {seconds}, from {host.name}")
            stop = _server(target, docker, image, mode, port, f"eb-{docker.run_tag}-iperf3-{k}")
            try:
                if not _wait_listening(target, port):
                    run.failed(metric="network_throughput", unit="Gbps", error="iperf3 server never listened",
                               **row)
                    continue
                cmd = ["iperf3", "-c", address, "-p", str(port), "-t", str(seconds), "-J"]
                r = host.run(cmd, timeout=seconds + 60, check=False)
                run.save_raw(f"iperf3-{mode}-{rep}", command=sh(cmd), stdout=r.stdout, stderr=r.stderr,
                             exit_code=r.exit_code)
                try:
                    report = json.loads(r.stdout)
                    received = report["end"]["sum_received"]["bits_per_second"]
                    rtt_us = report["end"]["streams"][0]["sender"].get("mean_rtt")
                except (ValueError, KeyError, IndexError):
                    run.failed(metric="network_throughput", unit="Gbps",
                               error=f"iperf3 gave no report: {(r.stderr or r.stdout)[-300:]}", **row)
                    continue
                run.add(metric="network_throughput", value=received / 1e9, unit="Gbps", **row)
                run.add(metric="network_rtt", value=rtt_us / 1000 if rtt_us is not None else None, unit="ms",
                        **dict(row, note=row["note"] + "; mean TCP RTT of the stream (tcp_info)"))
            finally:
                target.run(["sh", "-c", stop], check=False)
