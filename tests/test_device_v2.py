"""The cgroup v2 paths on a real cgroup v2 machine: the emulated debian-v2 device (`make device`),
reached over SSH as a user's laptop or board is. This machine is cgroup v1 (hybrid), so everything
here is the only place these paths run for real: native limits through cgroup.subtree_control,
memory.max, cpu.max and cpuset.cpus, read back; an OOM kill counted from memory.events; Docker on
systemd's cgroup driver and LXD on v2, both running Debian's own node. What the kernel holds is
read from the files themselves, not only through the library's reader. And the emulated CPU computes
as this one does (slow: EDGEBENCH_SLOW=1)."""

from __future__ import annotations

import os
import urllib.request

import pytest

from conftest import need
from edgebench import cgroups
from edgebench.apps import APPS, place_app
from edgebench.experiments.iomt import batch_args
from edgebench.results import load_results
from edgebench.runtimes import DockerRuntime, Limits, LxdRuntime, NativeRuntime
from edgebench.runtimes.contract import StartFailed
from edgebench.runtimes.lxd import PROXY_TOO_SLOW

MiB = 2**20
# cpus 0.5 on core 1: each of the three values differs from the device's defaults.
LIMITED = Limits(cpus=0.5, memory_mb=96, cpuset="1", swap=False, gomaxprocs=1)


def kernel_holds(target, cgroup_path: str) -> dict[str, str]:
    """memory.max, memory.swap.max, cpu.max and cpuset.cpus of a v2 cgroup, as the files say."""
    d = f"/sys/fs/cgroup{cgroup_path}"
    out = target.run(["sh", "-c", 'cd "$1" && for f in memory.max memory.swap.max cpu.max cpuset.cpus; do '
                      'printf "%s=%s\\n" "$f" "$(cat $f)"; done', "read", d]).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read()


def assert_limited(target, instance) -> None:
    applied = instance.limits_applied
    assert applied.cgroup_version == 2
    assert (applied.cpus, applied.memory_mb, applied.cpuset, applied.swap_mb) == (0.5, 96, "1", 0)
    assert kernel_holds(target, applied.cgroup_path) == {
        "memory.max": str(96 * MiB), "memory.swap.max": "0", "cpu.max": "50000 100000", "cpuset.cpus": "1"}
    # Served at the device's own address, reached from here as a load generator reaches a board.
    assert get(f"http://{target.address}:{instance.port}/io") == (200, b"ok\n")


@pytest.fixture(scope="module")
def go_http(debian_v2):
    return place_app(debian_v2, APPS["go-http"])


@pytest.fixture(scope="module")
def node_http(debian_v2):
    """node-http on Debian's own nodejs, the node a user's Debian or Raspberry Pi OS device has:
    its libnode reads part of Node from /usr/share/nodejs, which Docker's offline image and LXD's
    mounts must carry (they did not, and node died at start in both), and native's footprint must
    count (it did not). conftest's device has it (device_prep.TEST_PACKAGES)."""
    return place_app(debian_v2, APPS["node-http"])


def test_the_device_is_what_it_says(debian_v2):
    facts = debian_v2.facts()
    assert facts["cgroup_version"] == 2 and facts["cgroup_unified"] is None  # unified, not hybrid
    assert facts["emulated_device"].startswith(f"emulated device ({facts['arch']}, QEMU pc under ")
    assert debian_v2.run(["cat", "/proc/1/comm"]).stdout.strip() == "systemd"
    assert debian_v2.address == "10.232.1.2"
    # TCG emulates SVM: with KVM's modules loaded, the device's own VMs would nest KVM in the emulator.
    assert facts["kvm"] == "no"
    # Nehalem under TCG, no AVX: QEMU 7.2 computes it wrongly (face recognition's predictions changed with it).
    flags = debian_v2.run(["sh", "-c", "grep -m1 '^flags' /proc/cpuinfo"]).stdout.split()
    assert "sse4_2" in flags and not {"avx", "avx2", "fma", "f16c", "vaes"} & set(flags), flags
    # `make device` returns once systemd has started the device's services, not when sshd first
    # answers: LXD's daemon takes half a minute more under TCG, and a plan made in between left
    # LXD out ("does not answer") without a word.
    # (degraded, after provisioning, would name its units: the boot has ended either way.)
    assert debian_v2.run(["systemctl", "is-system-running"], check=False).stdout.strip() in ("running", "degraded")


def test_a_device_whose_boot_is_not_clean_is_said_with_the_unit_that_failed(debian_v2):
    import time
    from edgebench.devices import device_spec, machine
    said = []
    before = debian_v2.run(["systemctl", "is-system-running"], check=False).stdout.strip()
    debian_v2.run(["systemd-run", "--unit=edgebench-fails", "false"])
    try:
        state = machine._wait_for_services(device_spec("debian-v2"), time.monotonic() + 60, said.append)
    finally:
        debian_v2.run(["systemctl", "reset-failed", "edgebench-fails.service"], check=False)
    assert state == "degraded" and "edgebench-fails.service" in said[0], said
    assert machine._wait_for_services(device_spec("debian-v2"), time.monotonic() + 60, said.append) == before


def test_native_limits_are_applied_and_read_back(debian_v2, go_http, local):
    runtime = NativeRuntime(debian_v2)
    # The device says it is emulated, and its starts may take five times as long as elsewhere:
    # under TCG, with `make test`'s other session busy beside it, LXD's node-http on 0.5 CPU was
    # not ready after 60 s.
    assert debian_v2.facts()["emulated_device"]
    assert (runtime.ready_timeout(60), NativeRuntime(local).ready_timeout(60)) == (300, 60)
    try:
        artifact = runtime.package(go_http)
        instance, _ = runtime.start(artifact, LIMITED, debian_v2.free_port(18080))
        path = instance.limits_applied.cgroup_path
        try:
            assert path == f"/edgebench/{instance.plan.name}"
            assert_limited(debian_v2, instance)
        finally:
            runtime.stop(instance)
        assert not debian_v2.run(["test", "-d", f"/sys/fs/cgroup{path}"], check=False).ok
    finally:
        runtime.cleanup()


def test_an_oom_kill_is_counted_from_memory_events(debian_v2):
    group = cgroups.NativeCgroup(debian_v2, "test-oom")
    group.create(cpus=None, memory_mb=16, cpuset=None, swap=False)
    try:
        assert cgroups.oom_kills(debian_v2, cgroup_dirs=group.dirs) == 0
        # tail keeps a line of /dev/zero's endless zeros: it grows until the kernel kills it.
        r = debian_v2.run(group.wrap(["tail", "/dev/zero"]), timeout=60, check=False)
        assert r.exit_code == 137, r.stderr
        events = debian_v2.run(["cat", f"{group.dirs[0]}/memory.events"]).stdout
        assert "oom_kill 1" in events.splitlines()
        assert cgroups.oom_kills(debian_v2, cgroup_dirs=group.dirs) == 1
    finally:
        group.destroy()


def test_docker_limits_on_systemds_cgroup_driver(debian_v2, node_http):
    assert debian_v2.run(["docker", "info", "--format", "{{.CgroupDriver}} {{.CgroupVersion}}"]).stdout.split() \
        == ["systemd", "2"]
    runtime = DockerRuntime(debian_v2)
    try:
        artifact = runtime.package(node_http, "offline")
        # The footprint's native Node is node with what it loads beyond the C runtime: Debian's
        # node binary alone is a 27 KB launcher, and the offline image measured 3,079x native.
        native = NativeRuntime(debian_v2).package(node_http)
        assert node_http.details["node_library_bytes"] > 20 * MiB
        assert 1.0 < artifact.size_bytes / native.size_bytes < 1.3
        instance, _ = runtime.start(artifact, LIMITED, debian_v2.free_port(18080))
        try:
            path = instance.limits_applied.cgroup_path
            assert path.startswith("/system.slice/docker-") and path.endswith(".scope"), path
            assert_limited(debian_v2, instance)
        finally:
            runtime.stop(instance)
    finally:
        runtime.cleanup()


def test_docker_batch_counted_on_systemds_cgroup_driver(debian_v2):
    """A finished container's faults: its scope goes with it, so it runs in a slice of its own whose
    memory.stat keeps the counts, and perf counts that slice system-wide (these were missing on
    every Docker row of page faults on the arm64 board). perf: device_prep.TEST_PACKAGES."""
    runtime = DockerRuntime(debian_v2)
    try:
        artifact = runtime.package(place_app(debian_v2, APPS["iomt"]), "offline")
        result = runtime.run_batch(artifact, batch_args("lzw", 200_000, 7, "sensor", 3, 2, 5),
                                   Limits(cpus=1, memory_mb=128, swap=False), timeout_s=300, protocol="fair")
        assert result.ok, result.stderr
        assert result.cgroup_faults.source.startswith("/sys/fs/cgroup/eb_"), result.cgroup_faults
        assert result.cgroup_faults.source.endswith(".slice/memory.stat")
        assert result.cgroup_faults.pgfault > 100, result.cgroup_faults
        assert result.perf_scope.startswith("cgroup eb_") and result.perf_scope.endswith(".slice (system-wide)")
        assert result.perf["page-faults"].value > 100, result.perf
        # The slice went with the run.
        assert DockerRuntime.leftovers(debian_v2, runtime.run_tag) == []
        assert not debian_v2.run(["test", "-d", result.cgroup_faults.source.rpartition("/")[0]], check=False).ok
    finally:
        runtime.cleanup()


def start_lxd(runtime: LxdRuntime, artifact, port: int):
    """One retry when LXD's own fixed 10 s wait for its proxy helper ran out (said in the reason):
    under TCG it does now and then, and this test is about limits."""
    try:
        return runtime.start(artifact, LIMITED, port)
    except StartFailed as e:
        if PROXY_TOO_SLOW not in str(e):
            raise
        print(f"retrying once: {e}")
        return runtime.start(artifact, LIMITED, port)


def test_lxd_limits_on_v2(debian_v2, node_http):
    """In exec mode the app starts after `lxc start` returned, so LXD's proxy helper does not race
    node for the emulated CPUs during LXD's fixed 10 s wait for it. In service mode (the
    experiments' default) that race failed both starts of this test on a slower CI machine; here,
    with three busy loops on the host, service mode's `lxc start` took 26-37 s and exec mode's
    19-21 s. The limits sit on the container's cgroup either way."""
    runtime = LxdRuntime(debian_v2, start_mode="exec")
    try:
        artifact = runtime.package(node_http)
        instance, _ = start_lxd(runtime, artifact, debian_v2.free_port(18080))
        try:
            assert instance.details["start_mode"] == "exec"
            assert instance.limits_applied.cgroup_path.lstrip("/") == runtime.container_cgroup(instance.name)
            assert_limited(debian_v2, instance)
        finally:
            runtime.stop(instance)
    finally:
        runtime.cleanup()


def test_lxd_restarts_when_apparmor_came_after_it(debian_v2):
    """LXD chooses AppArmor confinement when it starts: one started before apparmor_parser was
    installed failed to create any container. tools/lxd/setup.sh restarts it once, and only then."""
    from edgebench.paths import TOOLS_DIR
    setup = debian_v2.upload_if_changed(TOOLS_DIR / "lxd" / "setup.sh", f"{debian_v2.workspace}/bin/lxd-setup.sh",
                                        "755")
    pid = debian_v2.run(["pidof", "lxd"]).stdout.split()[0]
    again = debian_v2.run([setup], timeout=300)
    assert "restarting LXD" not in again.stderr + again.stdout
    assert debian_v2.run(["pidof", "lxd"]).stdout.split()[0] == pid
    debian_v2.run(["touch", "/var/lib/dpkg/info/apparmor.list"])  # as if apparmor came just now
    restarted = debian_v2.run([setup], timeout=300)
    assert "restarting LXD: apparmor was installed after it started" in restarted.stderr + restarted.stdout
    assert debian_v2.run(["pidof", "lxd"]).stdout.split()[0] != pid


@pytest.fixture
def slow_enough():
    need("device-slow", None if os.environ.get("EDGEBENCH_SLOW") == "1" else
         "face recognition under TCG takes minutes: EDGEBENCH_SLOW=1 runs it")


@pytest.mark.slow
def test_face_recognition_predicts_on_the_device_as_on_this_machine(slow_enough, debian_v2, local):
    # On `-cpu max` QEMU 7.2's TCG computed AVX wrongly: 78-82% accuracy on the device, a different
    # answer per runtime and run, against 89% here. The same program must give the same predictions.
    from edgebench.experiments import face_recognition as fr
    accuracy = {}
    for target in ("local", "debian-v2"):
        run_dir = fr.run(fr.Params(target=target, runtimes="native", repetitions=2, protocols="published",
                                   images=40, profile="quick", progress=False))
        df = load_results(run_dir)
        accuracy[target] = df[df["metric"] == "accuracy"]
        assert len(accuracy[target]) == 2, df[["runtime", "status", "error"]]
    assert set(accuracy["debian-v2"]["predictions_sha256"]) == set(accuracy["local"]["predictions_sha256"])
    assert accuracy["local"]["predictions_sha256"].nunique() == 1
