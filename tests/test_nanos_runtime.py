"""The Nanos runtime against a real ops, Nanos kernel and QEMU on this machine.

Skips with the reason where ops (or its local kernel, or QEMU) is missing: ops and Nanos are in
no package registry, so a fresh machine without internet has neither. VMs run with whatever
accelerator the machine gives them (TCG here: slow, but a real VM); the tests check that the
row says which. Every test checks that no VM, ops or tagged process is left behind. What every
runtime promises (a start, its port, its limits, its timeout, a batch run) is in
test_runtime_contract.py; here, what is Nanos' own."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import interrupt_while_a_vm_boots, need, need_tool, qemu_alive, redis_set_get, vm_tagged_processes
from edgebench.apps import APPS, place_app
from edgebench.experiments.iomt import parse_record, workload_args
from edgebench.runtimes.contract import Limits
from edgebench.runtimes.nanos import NanosRuntime


@pytest.fixture(scope="module")
def nanos(local):
    rt = NanosRuntime(local, "nanostest")
    why = rt.availability()
    need("nanos", None if why else why.reason)
    yield rt
    rt.cleanup()


@pytest.fixture(scope="module")
def go_image(nanos, local):
    return nanos.package(place_app(local, APPS["go-http"]))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_package_records_image_and_kernel_sizes(go_image):
    d = go_image.details
    assert d["image_allocated_bytes"] == go_image.size_bytes > go_image.raw_size_bytes
    assert d["image_apparent_bytes"] >= d["image_allocated_bytes"] // 2  # sparse, but not empty
    assert 100_000 < d["kernel_bytes"] < go_image.size_bytes
    assert d["program_mode"] == "static Go binary"
    assert "Ports" not in d["config"]["RunConfig"] and d["config"]["Env"]["PORT"] == "8080"


def test_the_launch_runs_the_prepared_image_pinned_with_the_port_forwarded(nanos, go_image, no_leftovers):
    """What `ops run` is given (a start itself, under these limits: test_runtime_contract.py)."""
    port = free_port()
    plan = nanos.launch_plan(go_image, Limits(cpus=1, memory_mb=128, cpuset="0"), port)
    try:
        assert "-s" in plan.argv and f"{port}-8080" in plan.argv  # no image build in the timed span
        assert plan.argv[plan.argv.index("taskset"):][:3] == ["taskset", "-c", "0"]  # every QEMU thread
        assert plan.network_path.startswith("qemu user-mode") and f"{port}-:8080" in plan.network_path
    finally:
        nanos.stop_plan(plan)


def test_two_vcpus_and_no_pinning_under_published_limits(nanos, go_image, no_leftovers):
    inst, probe = nanos.start(go_image, Limits(cpus=2, memory_mb=256), free_port(), timeout_s=120)
    try:
        assert (inst.limits_applied.cpus, inst.limits_applied.memory_mb) == (2.0, 256.0)
        assert inst.details["pinned_to"] is None and inst.limits_applied.cpuset == "0-1"
        assert inst.details["accelerator_evidence"]
        # The console, stamped on the host's clock: Nanos' first line, then the app's listening line.
        listening = [json.loads(x) for x in nanos.app_output(inst).splitlines() if '"listening"' in x]
        assert listening and listening[0]["num_cpu"] == 2  # the guest sees the vCPUs asked for
        assert probe.start_unix_ns < nanos.boot_phases(inst)["kernel_first_output"] <= nanos.listen_unix_ns(inst)
        qemu = inst.pid
        assert qemu_alive(qemu)
    finally:
        nanos.stop(inst)
    assert not qemu_alive(qemu)
    assert not nanos.tagged(inst.plan.state["tag"])


def test_sigkill_to_ops_leaves_qemu_and_stop_still_finds_it(nanos, go_image, no_leftovers):
    inst, _ = nanos.start(go_image, Limits(memory_mb=128), free_port(), timeout_s=120)
    try:
        ops = [pid for pid, comm in nanos.tagged(inst.plan.state["tag"]) if comm == "ops"]
        assert ops, "ops should still be running in the foreground"
        for pid in ops:
            subprocess.run(["kill", "-KILL", str(pid)])
        time.sleep(0.5)
        assert qemu_alive(inst.pid), "ops' QEMU survives a SIGKILL to ops (what the runtime designs for)"
    finally:
        nanos.stop(inst)
    assert not qemu_alive(inst.pid)


def test_cleanup_finds_a_vm_the_bookkeeping_lost(local, go_image, no_leftovers):
    rt = NanosRuntime(local, "nanoslost")
    inst, _ = rt.start(go_image, Limits(memory_mb=128), free_port(), timeout_s=120)
    rt._live.clear()  # as if the process crashed between launch and bookkeeping
    rt.cleanup()
    assert not qemu_alive(inst.pid)


def test_batch_runs_iomt_to_completion_and_agrees_with_native(nanos, local, no_leftovers):
    from edgebench.runtimes.native import NativeRuntime
    built = place_app(local, APPS["iomt"])
    args = workload_args("aes", "100KB", 7, "random", 8, 2, 20)
    artifact = nanos.package(built)
    result = nanos.run_batch(artifact, args, Limits(cpus=1, memory_mb=256, cpuset="0"), timeout_s=300)
    assert result.ok, result.stderr[-500:]
    rec = parse_record(result.stdout)  # the JSON line among the kernel's console lines
    assert result.accelerator in ("kvm", "tcg")
    assert (result.limits_applied.cpus, result.limits_applied.memory_mb, result.limits_applied.cpuset) == \
        (1.0, 256.0, "0")
    assert result.cgroup_faults.pgfault and result.cgroup_faults.pgfault > 1000  # QEMU touching guest RAM
    native = NativeRuntime(local, "nanostest-native")
    ref = native.run_batch(native.package(built), args, Limits(), timeout_s=120)
    assert parse_record(ref.stdout)["checksum"] == rec["checksum"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_while_a_vm_boots_leaves_no_vm(nanos, sig, tmp_path, no_leftovers):
    interrupt_while_a_vm_boots("nanos", sig, tmp_path)


def test_node_runs_as_the_node_binary_with_its_libraries(nanos, local, no_leftovers):
    artifact = nanos.package(place_app(local, APPS["node-http"]))
    assert artifact.build == "ops+node-binary" and "node binary" in artifact.details["program_mode"]
    port = free_port()
    inst, _ = nanos.start(artifact, Limits(memory_mb=256), port, timeout_s=180)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/compute?iter=5", timeout=30) as r:
            assert r.status == 200 and "sha256" in json.loads(r.read())
        assert "node binary" in inst.details["program_mode"]
    finally:
        nanos.stop(inst)


def test_boot_phases_start_at_nanos_first_line_not_at_ops_own():
    rt = NanosRuntime.__new__(NanosRuntime)
    console = [(100, "\x1b[1;33mversion lookup failed, using local."), (110, "\x1b[0mrunning local instance"),
               (120, "booting /root/.ops/images/edgebench-go-http ..."), (900, "[0.745204] en1: assigned 10.0.2.15"),
               (950, '{"event":"listening","app":"go-http"}'), (990, "[2.573220] en1: assigned FE80::1")]
    rt.console_lines = lambda _plan: console
    inst = type("I", (), {"plan": None})()
    assert rt.boot_phases(inst) == {"kernel_first_output": 900}
    rt.console_lines = lambda _plan: console[:3]
    assert rt.boot_phases(inst) == {}


@pytest.mark.parametrize("service", ["nginx", "redis"])
def test_debians_nginx_and_redis_serve_on_nanos_as_elf_programs(nanos, local, service, no_leftovers):
    """Paper 002 ran Redis and nginx in every runtime: on Nanos, the target's own binaries with the
    libraries they link, nginx from its single (master) process, its page at the path its
    arguments name."""
    app = APPS[service]
    need_tool(local, app.entry)
    artifact = nanos.package(place_app(local, app))
    assert artifact.build == "ops+tool-binary" and "Debian's" in artifact.details["program_mode"]
    config = artifact.details["config"]
    assert config["MapDirs"]  # /etc and /tmp (and nginx's page)
    if service == "nginx":
        assert "daemon off; master_process off;" in config["Args"]
    port = app.container_port if app.fixed_port else free_port()
    inst, probe = nanos.start(artifact, Limits(cpus=1, memory_mb=256), port, timeout_s=120)
    try:
        assert probe.ready_after_ns and probe.error is None
        if service == "nginx":
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as r:
                assert r.status == 200 and len(r.read()) == 612
        else:
            assert redis_set_get(port) == b"+OK\r\n$1\r\nv\r\n"
        assert "kernel_first_output" in nanos.boot_phases(inst)
    finally:
        nanos.stop(inst)
    assert not vm_tagged_processes()
