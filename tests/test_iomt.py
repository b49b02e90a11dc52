"""Integration: the IoMT workloads run for real natively and in Docker, their outputs agree,
their faults are counted on the workload itself, and the published protocol counts the client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import TAG_PREFIX, need, sigint_default
from edgebench.apps import APPS, place_app
from edgebench.errors import ConfigError
from edgebench.experiments import iomt, page_faults
from edgebench.paths import PROJECT_ROOT
from edgebench.results import NOT_MEASURABLE, Run, load_meta, load_results
from edgebench.runtimes import Limits
from edgebench.runtimes.docker import DockerRuntime
from edgebench.runtimes.native import NativeRuntime
from edgebench.tools.counters import perf_support
from edgebench.waiting import wait_until

# Large enough that the program's own faults dwarf a runtime's start-up (runc init, sh).
SIZES = {"lzw": ["-size", "4MB"], "aes": ["-size", "4MB"], "kmeans": ["-points", "100K"]}


@pytest.fixture(scope="module")
def perf_ready(local):
    support = perf_support(local)
    need("perf", None if support.ok and support.system_wide else support.reason or "perf unusable")
    return support


@pytest.fixture(scope="module")
def runtimes(local, docker_ready, cgroups_ready):
    rts = {"native": NativeRuntime(local, f"t{uuid.uuid4().hex[:6]}"),
           "docker": DockerRuntime(local, f"t{uuid.uuid4().hex[:6]}")}
    yield rts
    for rt in rts.values():
        rt.cleanup()


@pytest.fixture(scope="module")
def artifacts(local, runtimes):
    built = place_app(local, APPS["iomt"])
    return {"native": runtimes["native"].package(built), "docker": runtimes["docker"].package(built, "offline")}


def run(runtimes, artifacts, name, args, protocol="fair"):
    result = runtimes[name].run_batch(artifacts[name], args, Limits(swap=False), timeout_s=300, protocol=protocol)
    assert result.ok, f"{name}: exit {result.exit_code}: {result.stderr[-500:]}"
    return result, iomt.parse_record(result.stdout)


@pytest.mark.parametrize("workload", iomt.WORKLOADS)
def test_outputs_agree_and_faults_are_the_workloads_own(workload, runtimes, artifacts, perf_ready, no_leftovers):
    args = ["-workload", workload, "-seed", "7", *SIZES[workload]]
    records = {}
    for name in ("native", "docker"):
        result, rec = run(runtimes, artifacts, name, args)
        records[name] = rec
        inprocess = rec["rusage"]["minflt"] + rec["rusage"]["majflt"]
        cgroup = result.cgroup_faults.pgfault
        assert cgroup is not None, result.cgroup_faults.note
        # The same faults seen from inside and from the cgroup (which also holds a container's
        # init and the launch wrapper): within 20%.
        assert abs(cgroup - inprocess) <= 0.2 * inprocess, (name, cgroup, inprocess)
        perf = result.perf["page-faults"].value
        assert perf is not None and abs(perf - inprocess) <= 0.2 * inprocess, (name, perf, inprocess)
        assert result.perf_scope.startswith("cgroup edgebench/")
        assert 0 < rec["phases_ns"]["work"] <= rec["total_ns"] and result.wall_s * 1e9 > rec["total_ns"]
    assert records["native"]["checksum"] == records["docker"]["checksum"]
    assert records["native"]["input_checksum"] == records["docker"]["input_checksum"]
    # Another seed is another input: the checksum is not a constant.
    _, other = run(runtimes, artifacts, "native", ["-workload", workload, "-seed", "8", *SIZES[workload]])
    assert other["checksum"] != records["native"]["checksum"]


def test_published_protocol_counts_the_docker_client(runtimes, artifacts, perf_ready, no_leftovers):
    counts = {}
    for protocol in ("published", "fair"):
        for size in ("100KB", "16MB"):
            result, _ = run(runtimes, artifacts, "docker", ["-workload", "lzw", "-size", size], protocol)
            counts[protocol, size] = result.perf["page-faults"].value
        assert result.perf_scope.startswith("command: docker" if protocol == "published" else "cgroup")
    # perf around `docker run` sees the client, whose faults do not depend on the input...
    assert counts["published", "16MB"] < 1.3 * counts["published", "100KB"], counts
    # ...while the workload's own faults grow with it.
    assert counts["fair", "16MB"] > 2 * counts["fair", "100KB"], counts


def test_unsupported_counters_are_missing_with_the_reason(runtimes, artifacts, perf_ready, no_leftovers, tmp_path):
    result, _ = run(runtimes, artifacts, "native", ["-workload", "aes", "-size", "100KB"])
    for event, count in result.perf.items():
        if event in perf_ready.unsupported:
            assert count.value is None and count.note, event
        else:
            assert count.value is not None, (event, count.note)
    assert result.perf["page-faults"].value  # software events count everywhere perf runs
    # The rows say so: what was not counted is `not measurable` with the reason, not an empty ok row.
    row = dict(app="iomt", runtime="native", protocol="fair", rep=1, workload="aes", input_size="100KB",
               input_bytes=100000)
    with Run("iomt", {"target": "local"}, {"target": "local"}, extra_columns=iomt.EXTRA_COLUMNS,
             data_dir=tmp_path) as out:
        iomt.record_batch(out, result, Limits(swap=False), row, "t")
    rows = load_results(out.dir).set_index("metric")
    for event in perf_ready.unsupported:
        column = iomt.PERF_COLUMNS[event]
        assert rows.loc[column, "status"] == NOT_MEASURABLE and rows.loc[column, "error"] == result.perf[event].note
    assert rows.loc["perf_page_faults", "status"] == "ok" and rows.loc["perf_page_faults", "value"] > 0
    assert not rows[rows["status"] == "ok"]["value"].isna().any()


def test_batch_timeout_kills_the_program(runtimes, artifacts, local, cgroups_ready, no_leftovers):
    # k-means on 20M points runs for minutes: the probe kills it after its timeout.
    rt = runtimes["native"]
    started = time.monotonic()
    result = rt.run_batch(artifacts["native"], ["-workload", "kmeans", "-points", "20M"], Limits(), timeout_s=1)
    assert result.timed_out and not result.ok
    assert time.monotonic() - started < 30
    running = local.run(["sh", "-c", "ps -eo stat=,args= | grep -v '^Z' || true"]).stdout
    assert "apps/iomt/iomt -workload kmeans -points 20M" not in running


def test_bad_parameters_fail_before_anything_starts():
    # Refused when the record is made, before anything runs.
    with pytest.raises(ConfigError, match="unknown workload 'zip'"):
        iomt.Params(workloads="zip", runtimes="native")
    with pytest.raises(ConfigError, match="input size '10 parsecs'"):
        iomt.Params(workloads="lzw", sizes="10 parsecs", runtimes="native")
    with pytest.raises(ConfigError, match="entropy 'loud'"):
        page_faults.Params(entropy="loud", runtimes="native")
    with pytest.raises(ConfigError, match="unknown runtime 'podman'"):
        iomt.run(iomt.Params(runtimes="podman", profile="quick"))
    assert iomt.parse_size("10KB") == 10_000 and iomt.parse_size("1M") == 1_000_000


def test_each_table_takes_its_own_sizes():
    def labels(table):
        return {workload: sizes.split(",") for workload, sizes in table["quick"].items()}

    assert iomt.Params(profile="quick").size_plan == labels(iomt.SIZES)
    faults = page_faults.Params(profile="quick")
    assert faults.workload_names == ["lzw", "aes"] and faults.size_plan == labels(page_faults.SIZES)
    assert iomt.Params(sizes="100KB,10MB", workloads="aes").inputs == [("aes", "100KB", 100_000),
                                                                      ("aes", "10MB", 10_000_000)]


CHILD = """
import sys
from edgebench.experiments import iomt
iomt.run(iomt.Params(runtimes="docker", workloads="kmeans", sizes="1K,20M", repetitions=2, protocols="fair",
                   run_id=sys.argv[1], progress=False))
print("completed")
"""


def test_ctrl_c_keeps_rows_and_stops_the_container(tmp_path, docker_ready, cgroups_ready, no_leftovers):
    run_id = f"interrupt-iomt-{uuid.uuid4().hex[:8]}"
    run_dir = tmp_path / "iomt" / run_id
    proc = subprocess.Popen([sys.executable, "-c", CHILD, run_id], cwd=PROJECT_ROOT, text=True,
                            env=dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default)
    try:
        # Wait for the 20M-point run's container (the 1K runs have written their rows by then).
        def large_run_started() -> bool:
            if "20000000" in subprocess.run(["docker", "ps", "--format", "{{.Command}}", "--no-trunc"],
                                            capture_output=True, text=True).stdout:
                return True
            assert proc.poll() is None, proc.communicate()
            return False

        assert wait_until(large_run_started, 120, 0.1), "the large run never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGINT, err[-2000:]
        meta = load_meta(run_dir)
        assert meta["status"] == "interrupted"
        df = load_results(run_dir)
        assert (df[df.metric == "end_to_end_latency"]["input_size"] == "1K").sum() == 2
        # This session's containers only: another run may share the daemon (CI's, a user's).
        labels = subprocess.run(["docker", "ps", "-a", "--format", '{{.Label "edgebench.run"}}'],
                                capture_output=True, text=True).stdout.split()
        assert not [label for label in labels if label.startswith(TAG_PREFIX)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
