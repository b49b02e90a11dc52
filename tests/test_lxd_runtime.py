"""The LXD runtime against the real LXD on this machine (tools/lxd/setup.sh provisions it), with
edgebench's debootstrap image; plus the apt-source parsing the image build relies on.

Skips when LXD is not usable here, unless EDGEBENCH_REQUIRE names lxd. The first run builds the
image (debootstrap from the configured Debian mirror, ~30 s); later runs reuse the cache."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import need, need_tool
from edgebench.apps import APPS, App, BuiltApp, go_build, place_app
from edgebench.errors import ConfigError
from edgebench.runtimes.contract import Limits, StartFailed
from edgebench.runtimes.lxc import RUN_KEY, cpu_allowance, lxd_cpuset, service_definition
from edgebench.runtimes.lxd import LxdRuntime
from edgebench.runtimes.lxd_image import choose_mirror, ensure_image, parse_apt_sources
from edgebench.runtimes import leftovers_on
from edgebench.runtimes.tags import LAUNCH_TAG, is_alive, tagged

MiB = 2**20


# -- no LXD needed -------------------------------------------------------------------------
def test_parse_one_line_and_deb822_sources():
    text = """#os_id=debian
#file=/etc/apt/sources.list
# deb http://old.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib
deb-src http://src.example/debian bookworm main
deb http://security.debian.org/debian-security bookworm-security main

#file=/etc/apt/sources.list.d/debian.sources
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
#file=/etc/apt/sources.list.d/node.sources
Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
"""
    sources = parse_apt_sources(text)
    assert [s.uri for s in sources] == ["http://mirror.example/debian", "http://security.debian.org/debian-security",
                                        "http://deb.debian.org/debian", "https://deb.nodesource.com/node_20.x"]
    assert sources[2].suites == ("bookworm", "bookworm-updates") and sources[2].components == ("main",)
    assert choose_mirror(sources, "bookworm") == "http://mirror.example/debian"
    assert choose_mirror(sources[1:], "bookworm") == "http://deb.debian.org/debian"
    assert choose_mirror(sources, "trixie") is None


def test_lxd_limit_syntax():
    assert cpu_allowance(1) == "100ms/100ms"
    assert cpu_allowance(0.5) == "50ms/100ms"
    assert cpu_allowance(2) == "200ms/100ms"
    assert cpu_allowance(1 / 3) is None  # not whole milliseconds: set through raw.lxc
    assert lxd_cpuset("0") == "0-0"      # a bare number would be a CPU count for LXD
    assert lxd_cpuset("0-1") == "0-1" and lxd_cpuset("0,2") == "0,2"
    text = service_definition(["PORT=8080", "GOMAXPROCS=1", "X=a b"], ["/opt/edgebench/go-http/go-http"])
    assert text.splitlines()[1:] == ["export PORT=8080", "export GOMAXPROCS=1", "export X='a b'",
                                     "exec /opt/edgebench/go-http/go-http"]


def test_availability_names_what_to_do(local, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no lxc on the PATH
    why = LxdRuntime(local).availability()
    assert not why and "no lxc CLI" in why.reason and "install LXD" in why.reason
    monkeypatch.undo()
    need("lxd", None if local.which("lxc") else "lxc is not installed here")
    monkeypatch.setenv("LXD_DIR", str(tmp_path))  # the client looks for the daemon's socket here
    why = LxdRuntime(local).availability()
    assert not why and "does not answer" in why.reason and "tools/lxd/setup.sh" in why.reason


# -- real LXD ----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lxc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["lxc", *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode:
        raise AssertionError(f"lxc {' '.join(args)}: {r.stderr}")
    return r


def lxc_json(path: str):
    r = lxc("query", path, check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def lxd_state() -> dict:
    """What LXD holds: containers (name -> run key), images, storage volumes."""
    instances = lxc_json("/1.0/instances?recursion=1") or []
    volumes = set()
    for pool in lxc_json("/1.0/storage-pools") or []:
        name = pool.rsplit("/", 1)[-1]
        for v in lxc_json(f"/1.0/storage-pools/{name}/volumes") or []:
            volumes.add(v)
    return {"containers": {i["name"]: (i.get("config") or {}).get(RUN_KEY) for i in instances},
            "images": {i["fingerprint"] for i in lxc_json("/1.0/images?recursion=1") or []},
            "volumes": volumes}


def lxc_processes(prefix: str) -> list[str]:
    r = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True)
    return [a for a in r.stdout.splitlines() if a.startswith("lxc ") and prefix in a]


@pytest.fixture(scope="module")
def runtime(local, lxd_ready):
    rt = LxdRuntime(local, run_tag=f"it-lxd-{uuid.uuid4().hex[:8]}")
    yield rt
    rt.cleanup()


@pytest.fixture(scope="module")
def image(local, lxd_ready):
    return ensure_image(local)


@pytest.fixture(scope="module")
def artifacts(local, runtime, image):
    names = ["go-http"] + (["node-http"] if local.which("node") else [])
    return {name: runtime.package(place_app(local, APPS[name])) for name in names}


def forkproxies() -> dict[str, str]:
    """{proxy helper's pid: the pid of the container it forwards into} (`lxd forkproxy -- LXD_PID
    FD LISTEN CONTAINER_PID ...`)."""
    r = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        words = args.split()
        if "forkproxy" in words[:2]:
            listen = next((i for i, w in enumerate(words) if w.startswith(("tcp:", "udp:", "unix:"))), None)
            out[pid] = words[listen + 1] if listen is not None and listen + 1 < len(words) else ""
    return out


def other_runs(prefix: str) -> tuple[set[str], set[str]]:
    """(init pids, names) of the containers another run has (a `make figures` sharing LXD)."""
    others = [i for i in lxc_json("/1.0/instances?recursion=2") or [] if not i["name"].startswith(prefix)]
    return {str((i.get("state") or {}).get("pid")) for i in others}, {i["name"] for i in others}


@pytest.fixture
def lxd_clean(runtime, image):
    """Every LXD test: afterwards no container of the run, no image or volume that was not there
    before (the cached base image and the dir pool stay, on purpose), no `lxc exec` or proxy
    helper left. (LXD's own view; conftest's no_leftovers covers Docker, cgroups and apps.)"""
    before = lxd_state()
    proxies = forkproxies()
    yield
    after = lxd_state()
    # Another run's containers, proxies and volumes (one sharing this LXD) are not this test's.
    def proxies_left() -> list[str]:
        their_pids, _ = other_runs(runtime.name_prefix)
        return [p for p, into in forkproxies().items() if p not in proxies and into not in their_pids]

    # A helper of another run in the middle of its container's start or stop is not yet (or no
    # longer) beside a container LXD lists: looked at again a moment later, it is gone or claimed.
    left = proxies_left() and (time.sleep(2) or proxies_left())
    assert not left, f"an LXD proxy helper (forkproxy) was left running: {left}"
    their_pids, their_names = other_runs(runtime.name_prefix)
    mine = [n for n, tag in after["containers"].items() if tag == runtime.run_tag or n.startswith(runtime.name_prefix)]
    assert not mine, f"containers left: {mine}"
    assert after["images"] - before["images"] <= {image.fingerprint}, "an image was left behind"
    volumes = {v for v in after["volumes"] - before["volumes"] if v.rsplit("/", 1)[-1] not in their_names}
    assert not volumes, f"storage volumes left: {volumes}"
    assert not lxc_processes(runtime.name_prefix), "lxc processes left"
    assert not runtime._live


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


def listening_event(output: str) -> dict:
    lines = [json.loads(x) for x in output.splitlines() if x.strip().startswith("{") and '"listening"' in x]
    assert len(lines) == 1, f"expected one listening line, got {output!r}"
    return lines[0]


V2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def cgroup_file(relpath: str, controller: str, name: str) -> str:
    path = f"/sys/fs/cgroup/{relpath}/{name}" if V2 else f"/sys/fs/cgroup/{controller}/{relpath}/{name}"
    with open(path) as f:
        return f.read().strip()


def kernel_memory_limit(relpath: str) -> int:
    return int(cgroup_file(relpath, "memory", "memory.max" if V2 else "memory.limit_in_bytes"))


def kernel_cpu_quota(relpath: str) -> tuple[int, int]:
    if V2:
        quota, period = cgroup_file(relpath, "cpu", "cpu.max").split()
        return int(quota), int(period)
    return int(cgroup_file(relpath, "cpu", "cpu.cfs_quota_us")), int(cgroup_file(relpath, "cpu", "cpu.cfs_period_us"))


def test_image_cached_under_stable_alias(local, image):
    again = ensure_image(local)
    assert (again.built, again.imported) == (False, False)  # the cache and the import are reused
    assert again.fingerprint == image.fingerprint
    assert again.alias == f"edgebench/{again.details['os']}-{again.suite}"  # edgebench/debian-bookworm here
    assert lxc_json(f"/1.0/images/{image.fingerprint}")["size"] == image.size_bytes > 10 * MiB
    cache = Path(image.cache_dir)
    assert (cache / "fingerprint").read_text().strip() == image.fingerprint
    assert os.access(cache / "rootfs" / "sbin" / "init", os.X_OK)
    assert image.rootfs_bytes > 20 * MiB


def test_go_http_limits_are_what_lxd_was_told_and_what_the_kernel_holds(local, runtime, artifacts, lxd_clean):
    """Beyond what every runtime promises (serving, the limits read back, the listening time:
    test_runtime_contract.py): LXD's own record of the container and the kernel's of its cgroup."""
    limits = Limits(cpus=1, memory_mb=128, cpuset="0", swap=False, gomaxprocs=1)
    instance, probe = runtime.start(artifacts["go-http"], limits, free_port())
    name = instance.name
    try:
        assert name.startswith(f"eb-{runtime.run_tag}-lxd-go-http-")
        assert lxc("config", "get", name, RUN_KEY).stdout.strip() == runtime.run_tag
        # What LXD was told (bytes, not LXD's decimal "MB") and what the kernel holds.
        assert lxc("config", "get", name, "limits.memory").stdout.strip() == str(128 * MiB)
        applied = instance.limits_applied
        cg = applied.cgroup_path.lstrip("/")
        assert cg == runtime.container_cgroup(name) == f"lxc.payload.{name}"
        assert kernel_memory_limit(cg) == 128 * MiB
        assert kernel_cpu_quota(cg) == (100_000, 100_000)
        if os.path.exists("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"):
            assert int(cgroup_file(cg, "memory", "memory.memsw.limit_in_bytes")) == 128 * MiB
            assert applied.swap_mb == 0
        # The app is a process in the container's cgroup, seen from the host.
        assert instance.pid and is_alive(local, instance.pid)
        assert str(instance.pid) in cgroup_file(cg, "memory", "cgroup.procs").split()
        assert instance.network_path.startswith("lxd-proxy")
        # The split of the launch: `lxc start` returned after LXD's own wait for the proxy helper,
        # which the readiness does not include.
        assert instance.details["container_started_unix_ns"] > probe.start_unix_ns
        assert instance.details["init_s"] > 0 and instance.details["first_boot_s"] > 0
        assert instance.details["bridge_ipv4"] is None or instance.details["bridge_ipv4"].count(".") == 3
    finally:
        runtime.stop(instance)
    assert lxc_json(f"/1.0/instances/{name}") is None
    assert not is_alive(local, instance.pid)


def test_node_http_runs_the_targets_node(local, runtime, artifacts, lxd_clean):
    need_tool(local, "node")
    assert "node-http" in artifacts
    art = artifacts["node-http"]
    assert art.details["mounts"]["edgebench-bin"]["path"] == "/usr/local/bin/node"
    assert art.size_bytes > art.details["image_bytes"] + art.details["bound_binary_bytes"]
    instance, _ = runtime.start(art, Limits(cpus=1, memory_mb=128, swap=False), free_port())
    try:
        assert get(instance.url + "/io") == (200, b"ok\n")
        version = lxc("exec", instance.name, "--", "/usr/local/bin/node", "--version").stdout.strip()
        assert version == subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        assert listening_event(runtime.app_output(instance))["app"] == "node-http"
    finally:
        runtime.stop(instance)


def test_too_little_memory_fails_fast_with_the_oom_kill(local, runtime, artifacts, lxd_clean):
    need_tool(local, "node")
    assert "node-http" in artifacts
    launched = time.monotonic()
    with pytest.raises(StartFailed) as e:
        runtime.start(artifacts["node-http"], Limits(memory_mb=8, swap=False), free_port(), timeout_s=30)
    msg = str(e.value)
    assert "lxd/node-http did not become ready" in msg and "OOM-killed" in msg and "oom_kill" in msg
    assert time.monotonic() - launched < 25  # the launcher fails with the app, not at the timeout
    assert lxc_json(f"/1.0/instances/{e.value.plan.name}") is None


def test_a_device_that_cannot_start_says_why_from_the_log_lxd_names(tmp_path):
    """LXD's "Failed to start device ...: Please look in <log>" names a log that goes with the
    container: the reason keeps its words (on debian-v2 one proxy device left only the pointer)."""
    from edgebench.runtimes.contract import LaunchPlan
    from edgebench.targets import LocalTarget
    log = tmp_path / "proxy.edgebench-http.log"
    log.write_text("Status: Starting\nError: Failed to receive fd from listener: connection timed out\n")
    stderr = tmp_path / "launcher.err"
    stderr.write_text(f'Error: Failed to start device "edgebench-http": Please look in {log}\n'
                      "Try `lxc info --show-log eb-x` for more info\n")
    plan = LaunchPlan("lxd", "go-http", "eb-x", [], 8080, stderr_path=str(stderr))
    why = LxdRuntime(LocalTarget(), run_tag="it-lxd-log").failure_reason(plan) or ""
    assert "Please look in" in why and "proxy.edgebench-http.log: Status: Starting | Error: Failed to receive fd" in why
    assert "fixed 10 s" not in why  # the helper started and said what failed
    # On debian-v2 under TCG the helper had not begun within LXD's 10 s: an empty log, said as such.
    log.write_text("")
    why = LxdRuntime(LocalTarget(), run_tag="it-lxd-log").failure_reason(plan) or ""
    assert "proxy.edgebench-http.log: empty" in why and "waits a fixed 10 s for its proxy helper" in why
    log.unlink()  # gone already: said, not an error
    why = LxdRuntime(LocalTarget(), run_tag="it-lxd-log").failure_reason(plan)
    assert "proxy.edgebench-http.log: gone already" in why


def test_exec_start_mode_serves_too(local, lxd_clean, artifacts):
    rt = LxdRuntime(local, run_tag=f"it-lxdx-{uuid.uuid4().hex[:8]}", start_mode="exec")
    try:
        instance, probe = rt.start(artifacts["go-http"], Limits(cpus=0.5, memory_mb=64), free_port())
        try:
            assert get(instance.url + "/io") == (200, b"ok\n")
            assert instance.limits_applied.cpus == 0.5
            assert lxc("config", "get", instance.name, "limits.cpu.allowance").stdout.strip() == "50ms/100ms"
            assert listening_event(rt.app_output(instance))["app"] == "go-http"
            # The app starts only after `lxc start` returned (LXD's ~1 s wait for the proxy).
            assert instance.details["container_started_unix_ns"] < rt.listen_unix_ns(instance)
        finally:
            rt.stop(instance)
    finally:
        rt.cleanup()
    assert not lxc_processes(rt.name_prefix)


BATCH_SOURCE = """package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

func main() {
	host, _ := os.Hostname()
	fmt.Printf("args=%s numcpu=%d host=%s\\n", strings.Join(os.Args[1:], ","), runtime.NumCPU(), host)
	fmt.Fprintln(os.Stderr, "to stderr")
	os.Exit(3)
}
"""


@pytest.fixture(scope="module")
def batch_artifact(local, runtime, image, tmp_path_factory):
    src = tmp_path_factory.mktemp("lxd-batch")
    (src / "go.mod").write_text("module lxdbatch\n\ngo 1.21\n")
    (src / "main.go").write_text(BATCH_SOURCE)
    binary = go_build(src, "lxd-batch-test", local.facts()["arch"])
    remote = local.upload_if_changed(binary, f"{local.workspace}/apps/lxd-batch-test/lxd-batch-test", mode="755")
    app = App("lxd-batch-test", "go", src, ".", kind="batch", readiness=None)
    built = BuiltApp(app, local.facts()["arch"], remote, binary.stat().st_size, [remote], local_path=binary)
    return runtime.package(built)


def test_run_batch_output_exit_code_and_limits(runtime, batch_artifact, lxd_clean):
    limits = Limits(cpus=0.333, memory_mb=64, cpuset="1", swap=False)
    result = runtime.run_batch(batch_artifact, ["a", "b c"], limits, timeout_s=60)
    assert result.exit_code == 3
    # It ran in the container (its hostname is the container's name) on the one pinned core.
    assert result.stdout.strip() == f"args=a,b c numcpu=1 host={result.details['container']}"
    assert result.stderr.strip() == "to stderr"
    applied = result.limits_applied
    assert applied.memory_mb == 64 and applied.cpuset == "1"
    assert abs(applied.cpus - 0.333) < 1e-9  # not whole ms per 100 ms: set through raw.lxc
    assert result.oom_killed is False
    assert result.details["cgroup"].startswith("lxc.payload.eb-")
    assert "pgfault" in (result.details["cgroup_faults_before_exec"] or {})
    assert result.wall_s is None or 0 < result.wall_s < 30


def test_batch_helpers_exec_push_pull(local, runtime, batch_artifact, tmp_path, lxd_clean):
    name = runtime.new_name("helpers")
    runtime.create(name, batch_artifact, Limits(memory_mb=32), network=False)
    try:
        runtime.start_container(name)
        assert runtime.container_cgroup(name) == f"lxc.payload.{name}"
        src = tmp_path / "in.txt"
        src.write_text("pushed from the controller\n")
        runtime.push(name, src, "/tmp/in.txt", from_controller=True)
        argv = runtime.exec_argv(name, ["sh", "-c", 'cat /tmp/in.txt; echo "$FOO" > /tmp/out.txt'], {"FOO": "bar"})
        assert argv[:3] == ["lxc", "exec", name] and "--env=FOO=bar" in argv
        r = local.run(argv, check=False)
        assert r.exit_code == 0 and r.stdout == "pushed from the controller\n"
        runtime.pull(name, "/tmp/out.txt", tmp_path / "out.txt", to_controller=True)
        assert (tmp_path / "out.txt").read_text() == "bar\n"
        assert kernel_memory_limit(runtime.container_cgroup(name)) == 32 * MiB
    finally:
        runtime.delete(name)
    runtime.delete(name)  # idempotent
    assert lxc_json(f"/1.0/instances/{name}") is None


@pytest.mark.parametrize("limits, words", [
    (Limits(cpus=0), ["cpus=0", "positive"]),
    (Limits(cpus=-1), ["cpus=-1", "positive"]),
    (Limits(cpus=0.001), ["0.01"]),
    (Limits(cpus=1000), ["cpus=1000", "at most"]),
    (Limits(memory_mb=2), ["memory 2 MiB", "minimum 4"]),
    (Limits(memory_mb=0), ["memory_mb=0", "positive"]),
    (Limits(cpuset="first"), ["cpuset='first'"]),
    (Limits(cpuset="999"), ["core(s) [999]"]),
    (Limits(gomaxprocs=0), ["gomaxprocs=0"]),
])
def test_invalid_limits_raise_before_anything_starts(runtime, artifacts, batch_artifact, limits, words, lxd_clean):
    before = lxd_state()["containers"]
    for call in (lambda: runtime.launch_plan(artifacts["go-http"], limits, free_port()),
                 lambda: runtime.run_batch(batch_artifact, [], limits, timeout_s=30)):
        with pytest.raises(ConfigError) as e:
            call()
        assert all(w in str(e.value) for w in words), str(e.value)
    assert lxd_state()["containers"] == before


def test_invalid_options_raise(local, runtime, artifacts, lxd_clean):
    with pytest.raises(ConfigError, match="build mode 'published'"):
        runtime.package(artifacts["go-http"].built, "published")
    with pytest.raises(ConfigError, match="start_mode"):
        LxdRuntime(local, start_mode="boot")
    with pytest.raises(ConfigError, match="lxd network 'bridge' unknown; use one of proxy, forward"):
        LxdRuntime(local, network="bridge")


def test_cleanup_removes_tagged_containers_outside_bookkeeping(local, image, lxd_clean):
    tag, other = f"it-cl-{uuid.uuid4().hex[:8]}", f"it-ot-{uuid.uuid4().hex[:8]}"
    rt = LxdRuntime(local, run_tag=tag)
    tag = rt.run_tag  # with this session's prefix (runtimes/tags.py)
    names = {"mine-by-key": f"stray-{tag}", "mine-by-name": f"eb-{tag}-lxd-x-9", "other": f"eb-{other}-lxd-x-1"}
    try:
        lxc("init", "-q", image.alias, names["mine-by-key"], "-c", f"{RUN_KEY}={tag}")
        lxc("init", "-q", image.alias, names["mine-by-name"])
        lxc("init", "-q", image.alias, names["other"], "-c", f"{RUN_KEY}={other}")
        rt.cleanup()
        left = lxd_state()["containers"]
        assert names["mine-by-key"] not in left and names["mine-by-name"] not in left
        assert names["other"] in left, "cleanup() removed a container of another run"
    finally:
        for n in names.values():
            lxc("delete", "--force", n, check=False)


def test_over_ssh_image_batch_and_files(ssh_host, lxd_ready, image, runtime, tmp_path):
    """The same commands through an SSH target (sshd in a network namespace on this machine, so
    the same LXD and the same image cache). Services are not started here: the proxy listens on
    the loopback of LXD's namespace, which the probe inside the test namespace cannot reach."""
    from edgebench.targets import SSHTarget
    target = SSHTarget(f"root@{ssh_host.host}", key_file=ssh_host.key_file, known_hosts=ssh_host.known_hosts)
    rt = LxdRuntime(target, run_tag=f"it-lxds-{uuid.uuid4().hex[:8]}")
    try:
        assert rt.availability()
        assert rt.image().fingerprint == image.fingerprint and not rt.image().built  # the cache, reused
        artifact = rt.package(place_app(target, APPS["go-http"]))
        result = rt.run_batch(artifact, ["-port", "x"], Limits(cpus=1, memory_mb=64, swap=False), timeout_s=60)
        assert result.exit_code == 2 and 'invalid value "x" for flag -port' in result.stderr
        assert result.limits_applied.memory_mb == 64 and result.limits_applied.cpus == 1.0
        name = rt.new_name("files")
        rt.create(name, artifact, Limits(), network=False)
        try:
            rt.start_container(name)
            (tmp_path / "a.txt").write_text("over ssh\n")
            rt.push(name, tmp_path / "a.txt", "/tmp/a.txt", from_controller=True)
            rt.pull(name, "/tmp/a.txt", tmp_path / "b.txt", to_controller=True)
            assert (tmp_path / "b.txt").read_text() == "over ssh\n"
        finally:
            rt.delete(name)
    finally:
        rt.cleanup()
        target.close()
    assert not rt.tagged()


def test_tool_runs_through_steps_with_the_targets_binary(local, runtime, lxd_clean):
    """sysbench (a tool app): the target's binary and the libraries the image lacks are
    bind-mounted, tools/steps is pushed, the phases run in one container."""
    need_tool(local, "sysbench")
    from edgebench.tools import sysbench as sb
    artifact = runtime.package(place_app(local, APPS["sysbench"]), "native")  # as the experiments ask
    assert artifact.details["mounts"]["edgebench-bin"]["path"] == "/usr/local/bin/sysbench"
    result = runtime.run_batch(artifact, ["-dir", "/tmp/edgebench", *sb.fileio(2, 1, 1)],
                               Limits(cpus=1, memory_mb=256), timeout_s=120)
    steps = sb.steps_record(result.stdout)
    assert result.exit_code == 0 and [s["exit_code"] for s in steps] == [0, 0, 0], result.stderr
    assert "2097152 bytes written" in steps[0]["stdout"]
    assert sb.parse(steps[1]["stdout"]).get("read_mib_per_s", 0) > 0


def test_a_base_image_build_that_times_out_says_so():
    """On the emulated pi-arm64 debootstrap outlasted the build's timeout, and the error ended at
    'failed (debootstrap bookworm from http://deb.debian.org/debian):' with nothing after it."""
    from edgebench.errors import EdgebenchError
    from edgebench.runtimes import lxd_image
    from edgebench.targets import CommandResult

    class Board:
        name, workspace, is_root = "pi", "/root/.cache/edgebench", True

        def which(self, tool):
            return f"/usr/bin/{tool}"

        def facts(self):
            return {"arch": "aarch64"}

        def upload_if_changed(self, local, remote, mode=None):
            return remote

        def run(self, argv, timeout=None, check=True, stdin=None):
            if "VERSION_CODENAME" in " ".join(argv):
                out = ("#os_id=debian\n#codename=bookworm\n#file=/etc/apt/sources.list\n"
                       "deb http://deb.debian.org/debian bookworm main\n")
                return CommandResult("pi", "", out, "", 0, 0.1)
            if argv[0].endswith("lxd-build-rootfs.sh"):
                return CommandResult("pi", "", "", "", None, timeout)  # killed at the timeout
            return CommandResult("pi", "", "", "", 1, 0.1)

    with pytest.raises(EdgebenchError, match=r"did not finish within 3600 s \(its log: .*debootstrap.log\)"):
        lxd_image.ensure_image(Board())


# -- LXD's proxy helper is not the only way in ------------------------------------------------
def relays(name: str) -> list[tuple[int, str]]:
    """edgebench's forward processes for the container `name` (tagged with its name)."""
    from edgebench.targets import LocalTarget
    return tagged(LocalTarget(), f"{LAUNCH_TAG}={name}")


def test_forward_network_reaches_the_container_through_its_bridge_address(local, artifacts, lxd_clean):
    rt = LxdRuntime(local, run_tag=f"it-lxdf-{uuid.uuid4().hex[:8]}", network="forward")
    try:
        instance, _ = rt.start(artifacts["go-http"], Limits(cpus=1, memory_mb=128), free_port())
        try:
            assert get(instance.url + "/io") == (200, b"ok\n")
            assert instance.network_path == "edgebench-forward(userland)+lxd-bridge"
            assert lxc("config", "device", "show", instance.name).stdout.strip() in ("{}", "")  # no proxy device
            relay = relays(instance.name)
            assert [comm for _, comm in relay] == ["forward"]
            assert instance.details["bridge_ipv4"] in instance.details["forward"]  # it relays to that address
            assert "network_fallback" not in instance.details  # chosen, not fallen back to
        finally:
            rt.stop(instance)
        assert not relays(instance.name) and not is_alive(local, relay[0][0])
    finally:
        rt.cleanup()
    assert not leftovers_on(local, rt.run_tag)


def proxy_helpers_listening_on(port: int) -> list[int]:
    """Pids of `lxd forkproxy` helpers listening on `port`, read from /proc directly: quick
    enough to stop one before it has told LXD it started."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
        except OSError:
            continue
        if b"forkproxy" in words[:2] and f"tcp:0.0.0.0:{port}".encode() in words:
            found.append(int(entry.name))
    return found


def test_a_proxy_helper_that_misses_lxds_wait_makes_the_run_use_the_forward(local, artifacts, lxd_clean):
    """LXD 5.0 waits a fixed 10 s for `lxd forkproxy` to say it started. Stopping that helper
    (SIGSTOP, as a board too slow to run it would) fails the real start for the real reason; the
    runtime starts again through its own forward and keeps it for the run. A helper that had
    already reported before it was stopped gave the proxy path: tried again on another port."""
    for _ in range(3):
        rt = LxdRuntime(local, run_tag=f"it-lxdp-{uuid.uuid4().hex[:8]}")
        port = free_port()
        done, stopped = threading.Event(), set()

        def stall_the_proxy_helper(port=port, done=done, stopped=stopped):
            while not done.is_set():
                for pid in set(proxy_helpers_listening_on(port)) - stopped:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.add(pid)
                time.sleep(0.001)

        staller = threading.Thread(target=stall_the_proxy_helper, daemon=True)
        staller.start()
        try:
            instance, _ = rt.start(artifacts["go-http"], Limits(cpus=1, memory_mb=128), port)
            done.set()
            try:
                assert stopped, "the proxy helper never ran: nothing was tested"
                if instance.network_path.startswith("lxd-proxy"):
                    continue  # the helper told LXD before it was stopped: the race was lost, not the test
                assert get(instance.url + "/io") == (200, b"ok\n")
                assert instance.network_path == "edgebench-forward(userland)+lxd-bridge"
                assert "fixed 10 s" in instance.details["network_fallback"]
                assert rt.network == "forward"
            finally:
                rt.stop(instance)
            # The rest of the run goes the same way, without waiting for LXD's helper again.
            second, _ = rt.start(artifacts["go-http"], Limits(cpus=1, memory_mb=128), free_port())
            try:
                assert second.network_path == "edgebench-forward(userland)+lxd-bridge"
            finally:
                rt.stop(second)
            break
        finally:
            done.set()
            staller.join(timeout=5)
            for pid in stopped:  # the helpers this test stopped, whether LXD killed them or not
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            rt.cleanup()
            assert not leftovers_on(local, rt.run_tag)
    else:
        pytest.fail("three times the proxy helper reported to LXD before it could be stopped")
