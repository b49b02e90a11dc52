"""The native runtime on this machine (LocalTarget), with and without cgroup limits, beyond what
every runtime promises (test_runtime_contract.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import urllib.request

import pytest

from conftest import cgroup_roots, free_port, need
from edgebench.apps import APPS, place_app
from edgebench.runtimes import Limits, NativeRuntime, StartFailed
from edgebench.runtimes.tags import is_alive

LIMITED = Limits(cpus=1, memory_mb=128, cpuset="0", swap=False, gomaxprocs=1)


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


def expected_compute(n: int) -> str:
    """The apps' documented /compute: sha256 over bytes 0..63, then n-1 times over the digest."""
    h = hashlib.sha256(bytes(range(64))).digest()
    for _ in range(n - 1):
        h = hashlib.sha256(h).digest()
    return h.hex()


def listening_event(output: str) -> dict:
    lines = [json.loads(x) for x in output.splitlines() if x.strip().startswith("{") and '"listening"' in x]
    assert len(lines) == 1, f"expected one listening line in app stdout, got: {output!r}"
    return lines[0]


@pytest.fixture(scope="module")
def runtime(local):
    rt = NativeRuntime(local)
    why = rt.availability()
    need("native", None if why else why.reason)
    yield rt
    rt.cleanup()


@pytest.fixture(scope="module")
def artifacts(local, runtime):
    return {name: runtime.package(place_app(local, APPS[name])) for name in ("go-http", "node-http")}


def cgroup_dirs(instance) -> list[str]:
    cg = instance.plan.state.get("cgroup")
    return list(cg.dirs) if cg else []


@pytest.mark.parametrize("app", ["go-http", "node-http"])
def test_unlimited_start_serves_and_stop_leaves_nothing(local, runtime, artifacts, app, no_leftovers):
    instance, probe = runtime.start(artifacts[app], Limits(), free_port())
    try:
        assert instance.pid and is_alive(local, instance.pid)
        assert cgroup_dirs(instance) == []  # no limits: no cgroup of our own
        assert "edgebench" not in (instance.limits_applied.cgroup_path or "")
        assert get(instance.url + "/io") == (200, b"ok\n")
        event = listening_event(runtime.app_output(instance))
        assert event["app"] == app and event["port"] == instance.port and event["pid"] == instance.pid
        listen_ns = runtime.listen_unix_ns(instance)
        assert probe.start_unix_ns <= listen_ns <= probe.ready_unix_ns
        if app == "go-http":
            assert "GOMAXPROCS" not in " ".join(instance.plan.argv)
            assert 1 <= event["gomaxprocs"] <= event["num_cpu"]  # Go's own default
    finally:
        runtime.stop(instance)
    assert not is_alive(local, instance.pid)
    assert instance.name not in runtime._live


@pytest.mark.parametrize("app", ["node-http"])  # go-http: test_runtime_contract.py
def test_limited_start_applies_limits(local, runtime, artifacts, app, cgroups_ready, no_leftovers):
    instance, probe = runtime.start(artifacts[app], LIMITED, free_port())
    dirs = cgroup_dirs(instance)
    try:
        assert dirs and all(os.path.isdir(d) for d in dirs)
        applied = instance.limits_applied
        assert applied.cpus == 1.0
        assert applied.memory_mb == 128
        assert applied.cpuset == "0"
        assert "edgebench" in applied.cgroup_path and instance.name in applied.cgroup_path
        if os.path.exists("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes") or \
                os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            assert applied.swap_mb == 0
        assert get(instance.url + "/io") == (200, b"ok\n")
        event = listening_event(runtime.app_output(instance))
        assert event["num_cpu"] == 1  # pinned to core 0
        if app == "go-http":
            assert event["gomaxprocs"] == 1
        else:
            assert event["gomaxprocs"] is None
        listen_ns = runtime.listen_unix_ns(instance)
        assert isinstance(listen_ns, int) and probe.start_unix_ns <= listen_ns <= probe.ready_unix_ns
    finally:
        runtime.stop(instance)
    assert not is_alive(local, instance.pid)
    assert not [d for d in dirs if os.path.exists(d)], "cgroup directories left after stop()"


def test_compute_digest_same_for_go_and_node(runtime, artifacts, cgroups_ready, no_leftovers):
    bodies = {}
    for app in ("go-http", "node-http"):
        instance, _ = runtime.start(artifacts[app], LIMITED, free_port())
        try:
            bodies[app] = get(instance.url + "/compute?iter=5")
        finally:
            runtime.stop(instance)
    assert bodies["go-http"] == bodies["node-http"]
    status, body = bodies["go-http"]
    assert status == 200
    assert json.loads(body) == {"iter": 5, "sha256": expected_compute(5)}


def test_too_little_memory_is_oom_killed_at_start(runtime, artifacts, cgroups_ready, no_leftovers):
    # node needs more than 8 MiB to start: the kernel OOM-kills it inside the cgroup.
    with pytest.raises(StartFailed) as e:
        runtime.start(artifacts["node-http"], Limits(memory_mb=8, swap=False), free_port(), timeout_s=20)
    msg = str(e.value)
    assert "native/node-http did not become ready" in msg
    assert "OOM" in msg and "oom_kill" in msg
    assert e.value.probe is not None and e.value.probe.launcher_exit_code == 137  # SIGKILL
    assert not e.value.timed_out  # killed, not slow: a longer wait would not help
    assert not runtime._live
    left = [f"{root}/edgebench/{e.value.plan.name}" for root in cgroup_roots()]
    assert cgroup_roots() and not [p for p in left if os.path.exists(p)]  # v1 and v2 alike


def test_leftover_checks_see_this_sessions_launches_and_no_one_elses(local, runtime, artifacts, cgroups_ready):
    """What a lost launch left (its tagged process, its cgroup) is listed until stopped; a process
    tagged by another run on this machine (another prefix) is never this session's."""
    from conftest import TAG_PREFIX, leftovers
    from edgebench.runtimes import tags
    assert runtime.run_tag.startswith(TAG_PREFIX)
    other = subprocess.Popen(["env", f"{tags.LAUNCH_TAG}=eb-someone-else-native-x-1", "sleep", "60"])
    instance, _ = runtime.start(artifacts["go-http"], LIMITED, free_port())
    try:
        found = leftovers()
        assert any(f"process {instance.pid} " in x for x in found), found
        assert any(x.startswith("cgroup ") and instance.name in x for x in found), found
        assert not any(f"process {other.pid} " in x for x in found), found
        assert any(f"process {other.pid} " in x for x in tags.leftovers(local, ""))  # everyone's
    finally:
        runtime.stop(instance)
        other.kill()
        other.wait()
    assert not [x for x in leftovers() if instance.name in x or f"process {instance.pid} " in x]


def test_ctrl_c_while_the_cgroup_is_made_leaves_no_cgroup(runtime, artifacts, cgroups_ready, monkeypatch,
                                                           no_leftovers):
    """Found through a JupyterLab kernel interrupt: the cgroup existed before any plan held it,
    so nothing cleaned it up. The interrupt lands here after the directories are written."""
    from edgebench.cgroups import NativeCgroup
    made = []
    real_create = NativeCgroup.create

    def create_then_ctrl_c(self, *args, **kwargs):
        real_create(self, *args, **kwargs)
        made.extend(d for d in self.dirs if os.path.isdir(d))
        raise KeyboardInterrupt

    monkeypatch.setattr(NativeCgroup, "create", create_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        runtime.start(artifacts["go-http"], LIMITED, free_port())
    assert made, "the cgroup was never created: the test did not reach its case"
    assert not [d for d in made if os.path.isdir(d)]
