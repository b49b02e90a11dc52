"""Docker host vs bridge networking: the network mode is a typed choice the runtime declares
(Limits.network), the plans it gives, and the iperf3 experiment run end to end through
Runtime.start and Runtime.stop."""

from __future__ import annotations

import uuid

import pytest

from conftest import need_tool

from edgebench.apps import APPS, TCP_CONNECT, BuiltApp
from edgebench.errors import ConfigError
from edgebench.experiments import microbenchmarks
from edgebench.experiments.network import iperf3_points, measure_docker_networking
from edgebench.plotting.microbenchmarks import network_table
from edgebench.reference import load_reference
from edgebench.results import Run, load_results
from edgebench.runtimes import Artifact, Limits
from edgebench.runtimes.docker import DockerRuntime
from edgebench.runtimes.native import NativeRuntime

IPERF3 = "/usr/bin/iperf3"


def iperf3_artifact(runtime: str) -> Artifact:
    built = BuiltApp(APPS["iperf3"], "x86_64", IPERF3, 0, ["/ws/bin/steps"], details={"steps": "/ws/bin/steps"})
    return Artifact(runtime, "iperf3", "edgebench/iperf3:offline" if runtime == "docker" else IPERF3, 0, 0, built)


def test_iperf3_is_a_tcp_service_run_as_itself():
    app = APPS["iperf3"]
    assert app.is_service and app.readiness == TCP_CONNECT
    assert app.readiness.probe_args(15201) == ["-tcp", "127.0.0.1:15201"]  # a connect is enough
    built = iperf3_artifact("native").built
    assert built.service_argv(15300) == [IPERF3, "-s", "-p", "15300"]  # not through tools/steps
    assert APPS["go-http"].service_args(8080) == []


def test_docker_bridge_and_host_plans(local):
    rt = DockerRuntime(local, f"t{uuid.uuid4().hex[:6]}")
    assert rt.network_modes[0] == "bridge"  # the default every other experiment keeps
    artifact = iperf3_artifact("docker")
    for limits in (Limits(), Limits(network="bridge")):
        bridge = rt.launch_plan(artifact, limits, 15301)
        argv = bridge.argv
        assert argv[argv.index("-p") + 1] == "15301:5201" and "--network" not in argv
        assert argv[argv.index("--entrypoint") + 1] == "iperf3"
        assert argv[argv.index(artifact.ref) + 1:] == ["-s", "-p", "5201"]  # the container's port
        assert bridge.network_path == "docker-proxy+bridge" and bridge.port == 15301
    host = rt.launch_plan(artifact, Limits(network="host"), 15302)
    argv = host.argv
    assert argv[argv.index("--network") + 1] == "host" and "-p" not in argv[:argv.index(artifact.ref)]
    assert argv[argv.index(artifact.ref) + 1:] == ["-s", "-p", "15302"]  # listens on the host's port
    assert "PORT=15302" in argv
    assert host.network_path == "host network" and host.port == 15302 and host.detaches


def test_native_plan_and_unknown_modes(local):
    native = NativeRuntime(local, f"t{uuid.uuid4().hex[:6]}")
    plan = native.launch_plan(iperf3_artifact("native"), Limits(network="host"), 15303)
    assert plan.argv[-4:] == [IPERF3, "-s", "-p", "15303"] and plan.network_path == "loopback"
    with pytest.raises(ConfigError, match="no network mode 'bridge'.*it has host"):
        native.launch_plan(iperf3_artifact("native"), Limits(network="bridge"), 15304)
    with pytest.raises(ConfigError, match="no network mode 'macvlan'.*bridge, host"):
        DockerRuntime(local).launch_plan(iperf3_artifact("docker"), Limits(network="macvlan"), 15305)


def test_runtimes_are_chosen_by_their_network_modes(local):
    class OwnProxy(NativeRuntime):  # like LXD or a VM: one way in, not the host's network
        name = "ownproxy"
        network_modes = ()

    native, docker, other = NativeRuntime(local, "t"), DockerRuntime(local, "t"), OwnProxy(local, "t")
    points = iperf3_points([other, docker, native])
    assert [(rt.name, mode) for rt, mode in points] == [("native", "host"), ("docker", "bridge"), ("docker", "host")]
    assert iperf3_points([native, other]) == []  # nothing to compare: not measured at all


def test_the_plan_counts_the_network_points_the_measurement_makes():
    """native, then Docker's bridge and host; LXD (its own network) takes no part."""
    def network_work(runtimes):
        with_net = microbenchmarks.plan(microbenchmarks.Params(profile="quick"), runtimes)
        without = microbenchmarks.plan(microbenchmarks.Params(profile="quick", network=False), runtimes)
        return with_net.points - without.points, with_net.seconds - without.seconds

    reps = microbenchmarks.REPETITIONS["quick"]
    points, seconds = network_work(["native", "docker", "lxd"])
    assert points == 3 * reps and seconds > 0
    assert network_work(["native", "lxd"]) == (0, 0)  # no runtime with two modes: not measured


def test_host_and_bridge_measured_through_the_runtimes(local, docker_ready, tmp_path, no_leftovers):
    need_tool(local, "iperf3")
    tag = f"t{uuid.uuid4().hex[:6]}"
    runtimes = [NativeRuntime(local, tag), DockerRuntime(local, tag)]
    try:
        with Run("microbenchmarks", {}, local.facts(), extra_columns=microbenchmarks.EXTRA_COLUMNS,
                 run_id=f"test-{tag}", data_dir=tmp_path) as run:
            measure_docker_networking(run, local, runtimes, reps=1, seconds=1, load_generator="local",
                                      progress=False)
    finally:
        for rt in runtimes:
            rt.cleanup()
    df = load_results(run.dir)
    assert (df["status"] == "ok").all(), df[df["status"] != "ok"][["runtime", "point", "error"]]
    thr = df[df["metric"] == "network_throughput"]
    assert sorted(zip(thr["point"], thr["runtime"])) == [("bridge", "docker"), ("host", "docker"),
                                                         ("native", "native")]
    assert (thr["value"] > 0).all() and (thr["unit"] == "Gbps").all()
    rtt = df[df["metric"] == "network_rtt"]
    assert set(rtt["point"]) == {"native", "host", "bridge"} and (rtt["unit"] == "ms").all()
    assert set(df["app"]) == {"iperf3"} and set(df["benchmark"]) == {"network"}
    assert sorted(p.name for p in (run.dir / "raw").iterdir() if "iperf3-" in p.name)
    table = network_table(df, load_reference("microbenchmarks"))
    assert list(table["mode"]) == ["native", "host", "bridge"] and (table["n"] == 1).all()
