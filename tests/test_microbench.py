"""sysbench through tools/steps in native and Docker; the network measurement; the parsing."""

from __future__ import annotations

import shutil
import uuid

import pytest
from conftest import need_tool
from edgebench.apps import APPS, place_app
from edgebench.errors import ConfigError
from edgebench.experiments import lxd_appendix, microbenchmarks
from edgebench.results import load_results
from edgebench.runtimes import Limits
from edgebench.runtimes.docker import DockerRuntime
from edgebench.runtimes.native import NativeRuntime
from edgebench.tools import sysbench as sb

CPU_OUTPUT = """sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)
CPU speed:
    events per second:  9407.82

General statistics:
    total time:                          0.2116s
    total number of events:              2000

Latency (ms):
         min:                                    0.20
         avg:                                    0.21
         max:                                    0.33
         95th percentile:                        0.23
         sum:                                  419.31
"""


def test_parse_cpu_output():
    parsed = sb.parse(CPU_OUTPUT)
    assert parsed["total_time_s"] == 0.2116 and parsed["events"] == 2000
    assert parsed["events_per_s"] == 9407.82
    assert (parsed["latency_avg_ms"], parsed["latency_p95_ms"], parsed["latency_max_ms"]) == (0.21, 0.23, 0.33)
    assert "mib_per_s" not in parsed  # absent, not zero


def test_fileio_is_three_phases_in_one_instance():
    words = sb.fileio(4, 1, 2)
    assert words.count(sb.SEP) == 2
    assert words[words.index(sb.SEP) - 1] == "prepare" and words[-1] == "cleanup"
    assert "--file-total-size=4M" in words


def test_bad_appendix_counts_fail_before_anything_starts():
    with pytest.raises(ConfigError, match="positive"):
        lxd_appendix.Params(file_counts="0", runtimes="native")
    with pytest.raises(ConfigError, match="positive whole numbers"):
        lxd_appendix.Params(thread_counts="1,many", runtimes="native")


def test_the_appendix_plan_counts_its_panels_in_the_tool_runtimes():
    params = lxd_appendix.Params(profile="quick", file_counts="8,32", thread_counts="1,16,256")
    work = lxd_appendix.plan(params, ["native", "docker", "nanos"])  # Nanos runs no sysbench
    assert work.runtimes == ["native", "docker"] and work.repetitions == microbenchmarks.REPETITIONS["quick"]
    assert work.points == work.repetitions * (2 + 2 * 3) * 2


def test_same_sysbench_in_native_and_docker(local, docker_ready, cgroups_ready, no_leftovers):
    need_tool(local, "sysbench")
    built = place_app(local, APPS["sysbench"])
    outputs = {}
    for rt in (NativeRuntime(local, f"t{uuid.uuid4().hex[:6]}"), DockerRuntime(local, f"t{uuid.uuid4().hex[:6]}")):
        try:
            artifact = rt.package(built, "offline" if rt.name == "docker" else "native")
            result = rt.run_batch(artifact, ["-dir", rt.scratch_dir(), *sb.fileio(2, 1, 1)],
                                  Limits(cpus=1, memory_mb=256, cpuset="0", swap=False), timeout_s=120)
            assert result.ok, result.stderr
            steps = sb.steps_record(result.stdout)
            assert [s["argv"][-1] for s in steps] == ["prepare", "run", "cleanup"]
            assert all(s["exit_code"] == 0 for s in steps)
            outputs[rt.name] = steps
            assert result.limits_applied.memory_mb == 256 and result.limits_applied.cpus == 1
        finally:
            rt.cleanup()
    # The same binary: the same banner line in both.
    assert outputs["native"][0]["stdout"].splitlines()[0] == outputs["docker"][0]["stdout"].splitlines()[0]
    assert sb.parse(outputs["docker"][1]["stdout"])["read_mib_per_s"] > 0


def test_microbenchmarks_quick_with_network(monkeypatch, local, docker_ready, cgroups_ready, no_leftovers):
    need_tool(local, "sysbench")
    need_tool(local, "iperf3")
    monkeypatch.setattr(microbenchmarks, "TABLE2_POINTS", microbenchmarks.TABLE2_POINTS[:1])
    run_dir = microbenchmarks.run(microbenchmarks.Params(runtimes="native,docker", repetitions=1, profile="quick",
                                                         progress=False, run_id=f"test-{uuid.uuid4().hex[:6]}"))
    try:
        check_quick_run(load_results(run_dir))
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def check_quick_run(df):
    assert (df["status"] == "ok").all(), df[df["status"] != "ok"][["runtime", "point", "error"]]
    net = df[df["metric"] == "network_throughput"]
    assert set(net["point"]) == {"native", "host", "bridge"}
    assert (net["value"] > 0).all()
    assert set(df[df["benchmark"] == "cpu"]["runtime"]) == {"native", "docker"}
