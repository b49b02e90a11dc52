"""The Docker runtime on this machine, with offline (FROM scratch) images, beyond what every runtime
promises (test_runtime_contract.py)."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
import uuid

import pytest

from conftest import free_port
from edgebench.apps import APPS, place_app
from edgebench.cgroups import kernel_oom_kill
from edgebench.runtimes import DockerRuntime, Limits, StartFailed


def docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)


def container_exists(name_or_id: str) -> bool:
    return docker("inspect", "--type", "container", name_or_id).returncode == 0


def memsw_accounting() -> bool:
    return os.path.exists("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")


@pytest.fixture(scope="module")
def runtime(local, docker_ready):
    rt = DockerRuntime(local, run_tag=f"it-docker-{uuid.uuid4().hex[:8]}")
    yield rt
    rt.cleanup()


@pytest.fixture(scope="module")
def built(local, docker_ready):
    return {name: place_app(local, APPS[name]) for name in ("go-http", "node-http")}


@pytest.fixture(scope="module")
def artifacts(runtime, built):
    return {name: runtime.package(b, "offline") for name, b in built.items()}


def test_offline_images_have_plausible_sizes(artifacts, built):
    go, node = artifacts["go-http"], artifacts["node-http"]
    assert go.ref == "edgebench/go-http:offline" and node.ref == "edgebench/node-http:offline"
    assert go.build == node.build == "offline"
    binary = built["go-http"].local_path.stat().st_size
    assert go.raw_size_bytes == binary
    # FROM scratch + the static binary: the image is the binary, give or take metadata.
    assert go.size_bytes > 0 and abs(go.size_bytes - binary) <= 0.2 * binary
    # The node image carries the node binary and its libraries, far more than the script.
    assert node.raw_size_bytes == built["node-http"].size_bytes
    assert node.size_bytes >= built["node-http"].details["node_binary_bytes"] > node.raw_size_bytes
    # The reported size is docker's own.
    for a in (go, node):
        out = docker("image", "inspect", "-f", "{{.Size}}", a.ref).stdout.strip()
        assert int(out) == a.size_bytes


@pytest.mark.parametrize("app", ["node-http"])  # go-http: test_runtime_contract.py
def test_start_with_limits_reads_them_back_and_stop_removes(runtime, artifacts, app, no_leftovers):
    limits = Limits(cpus=1, memory_mb=64, cpuset="0", swap=False)
    instance, probe = runtime.start(artifacts[app], limits, free_port())
    name = instance.name
    try:
        assert container_exists(name)
        labels = docker("inspect", "-f", "{{index .Config.Labels \"edgebench.run\"}}", name).stdout.strip()
        assert labels == runtime.run_tag
        with urllib.request.urlopen(instance.url + "/io", timeout=10) as r:
            assert (r.status, r.read()) == (200, b"ok\n")
        applied = instance.limits_applied
        assert applied is not None and applied.cgroup_path and "docker" in applied.cgroup_path
        assert applied.cpus == 1.0
        assert applied.memory_mb == 64
        assert applied.cpuset == "0"
        assert applied.swap_mb == (0 if memsw_accounting() else None)
        assert runtime.listen_unix_ns(instance) is not None
    finally:
        runtime.stop(instance)
    assert not container_exists(name)


def test_the_daemons_reason_is_kept_not_the_clis_last_line():
    from edgebench.runtimes.docker import daemon_error
    stderr = ("docker: Error response from daemon: driver failed programming external connectivity on "
              "endpoint eb-x: Bind for 0.0.0.0:18080 failed: port is already allocated.\n"
              "Run 'docker run --help' for more information\n")
    assert "port is already allocated" in daemon_error(stderr)
    assert daemon_error("just one line\n") == "just one line" and daemon_error("") is None


def test_too_little_memory_fails_with_oom_kill(runtime, artifacts, no_leftovers):
    # `docker run -d` succeeds, node is OOM-killed inside the 6 MiB container. docker-proxy keeps
    # accepting, so the probe alone could not tell; the watchdog asks docker and fails at once
    # (well before the 60 s ready timeout) with the reason from `docker inspect`.
    # node's code must already be in the page cache (as after any earlier run), charged to a
    # container that is gone: then the limit bites on the heap, which cannot be reclaimed, and the
    # kernel OOM-kills. From a cold cache node may instead thrash on its own code for a long time
    # (the start then fails at its timeout, naming the thrashing: tests/test_cgroups_parse.py).
    warm = docker("run", "--rm", "--entrypoint", "/usr/local/bin/node", artifacts["node-http"].ref,
                  "-e", "require('http'); require('crypto')")
    assert warm.returncode == 0, warm.stderr
    started = time.monotonic()
    with pytest.raises(StartFailed) as e:
        runtime.start(artifacts["node-http"], Limits(memory_mb=6, swap=False), free_port())
    assert time.monotonic() - started < 15
    msg = str(e.value)
    assert "docker/node-http did not become ready" in msg
    # Docker's flag, or the kernel's log when the flag missed a kill right after start.
    assert "OOMKilled (docker inspect), exit code 137" in msg or \
        "OOMKilled (kernel log: node, pid " in msg and msg.endswith("exit code 137"), msg
    assert not container_exists(e.value.plan.name)
    assert not runtime._live


def test_oom_evidence_comes_from_the_kernel_log_and_a_plain_sigkill_is_not_an_oom(runtime, artifacts, local,
                                                                                   no_leftovers):
    # Both containers exit with 137; only the one the kernel OOM-killed is named in its log, by the
    # container's cgroup. That is the evidence `oom_kill_evidence` falls back on when Docker's
    # OOMKilled flag misses a kill (containerd/containerd#8180).
    node = artifacts["node-http"].ref
    tag = f"edgebench.run={runtime.run_tag}"
    oom = docker("run", "-d", "--label", tag, "--memory", "16m", "--memory-swap", "16m", "--entrypoint",
                 "/usr/local/bin/node", node, "-e", "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))")
    killed = docker("run", "-d", "--label", tag, "--entrypoint", "/usr/local/bin/node", node,
                    "-e", "setTimeout(() => {}, 60000)")
    assert oom.returncode == 0 and killed.returncode == 0, oom.stderr + killed.stderr
    oom_id, killed_id = oom.stdout.strip(), killed.stdout.strip()
    try:
        docker("kill", "-s", "KILL", killed_id)
        for cid in (oom_id, killed_id):
            assert docker("wait", cid).stdout.strip() == "137"
        assert kernel_oom_kill(local, oom_id).startswith("node, pid ")
        assert kernel_oom_kill(local, killed_id) is None
        assert runtime.oom_kill_evidence(runtime.exit_state(oom_id)).startswith("OOMKilled (")
        assert runtime.oom_kill_evidence(runtime.exit_state(killed_id)) is None
        # Docker's flag missing, as in the race: the kernel's log alone names the kill.
        unflagged = dict(runtime.exit_state(oom_id), oom="false")
        assert runtime.oom_kill_evidence(unflagged).startswith("OOMKilled (kernel log: node, pid ")
    finally:
        docker("rm", "-f", oom_id, killed_id)


def test_cleanup_removes_labelled_containers_outside_bookkeeping(local, docker_ready, artifacts, no_leftovers):
    tag = f"it-cleanup-{uuid.uuid4().hex[:8]}"
    other_tag = f"it-other-{uuid.uuid4().hex[:8]}"
    rt = DockerRuntime(local, run_tag=tag)
    tag = rt.run_tag  # with this session's prefix (runtimes/tags.py)
    mine = docker("run", "-d", "--label", f"edgebench.run={tag}", "edgebench/go-http:offline")
    other = docker("run", "-d", "--label", f"edgebench.run={other_tag}", "edgebench/go-http:offline")
    try:
        assert mine.returncode == 0, mine.stderr
        assert other.returncode == 0, other.stderr
        mine_id, other_id = mine.stdout.strip(), other.stdout.strip()
        assert container_exists(mine_id)
        rt.cleanup()
        assert not container_exists(mine_id)
        assert container_exists(other_id), "cleanup() removed a container of another run"
    finally:
        for r in (mine, other):
            if r.stdout.strip():
                docker("rm", "-f", r.stdout.strip())


def test_a_rebuild_removes_the_image_the_tag_left_behind(runtime, built, artifacts, tmp_path):
    # Stand in for an older build of the app: a different image under the app's tag.
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY marker /marker\n")
    (tmp_path / "marker").write_text(uuid.uuid4().hex)
    tag = artifacts["go-http"].ref
    assert docker("build", "-q", "-t", tag, str(tmp_path)).returncode == 0
    older = docker("image", "inspect", "-f", "{{.Id}}", tag).stdout.strip()
    again = runtime.package(built["go-http"], "offline")
    assert again.details["image_id"] != older
    # Not left untagged on the device's disk (it would be one more per app and run).
    assert docker("image", "inspect", older).returncode != 0


def test_two_runs_packaging_one_app_at_once_each_build_in_a_context_of_their_own(local, docker_ready, built):
    """A quick run's docker-crun lost its build context ('lstat .../Dockerfile: no such file') to a
    test session packaging the same app beside it, when both used one folder."""
    from concurrent.futures import ThreadPoolExecutor
    runs = [DockerRuntime(local, run_tag=f"it-ctx-{uuid.uuid4().hex[:8]}") for _ in range(2)]
    contexts = {rt.build_context("go-http", "offline") for rt in runs}
    assert len(contexts) == 2
    with ThreadPoolExecutor(2) as pool:
        packaged = list(pool.map(lambda rt: [rt.package(built["go-http"]) for _ in range(3)], runs))
    assert all(a.details["image_id"] for each in packaged for a in each)
    assert not any(os.path.exists(c) for c in contexts)  # the image has it all
