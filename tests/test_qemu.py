"""What runtimes/qemu.py reads from QEMU without a VM: command lines, the accelerator from open
files, the captured /proc state, the architecture's binary and package; and, on stand-in
processes (a copy of `sleep` named like QEMU), finding processes by tag and the batch watcher."""

import os
import shutil
import subprocess
import time
import uuid

import pytest

from edgebench.cgroups import taskset
from edgebench.runtimes import qemu, tags
from edgebench.runtimes.qemu import (accelerator, applied_limits, launch_facts, parse_qemu_argv, parse_qemu_state,
                                     qemu_binary, qemu_size_mb, qemu_system, state_facts, vcpus_for)


def test_smp_memory_and_drive_from_the_command_line():
    launch = parse_qemu_argv(["qemu-system-x86_64", "-smp", "2", "-m", "512",
                              "-drive", "if=none,file=/root/.ops/images/app,format=raw,id=hd0"])
    assert (launch.vcpus, launch.memory_mb, launch.image) == (2, 512.0, "/root/.ops/images/app")
    assert parse_qemu_argv(["qemu", "-smp", "cpus=4,sockets=1", "-m", "size=2G,slots=2"]).vcpus == 4
    assert parse_qemu_argv(["qemu", "-smp=3", "-m=1G"]).memory_mb == 1024.0
    assert parse_qemu_argv(["qemu"]).vcpus == 1 and parse_qemu_argv(["qemu"]).memory_mb == 128.0  # QEMU's defaults
    assert parse_qemu_argv(["qemu", "-smp", "1", "-smp", "6"]).vcpus == 6  # the last one counts


@pytest.mark.parametrize("text, mib", [("128M", 128.0), ("2G", 2048.0), ("256", 256.0), ("1T", 1024.0 * 1024),
                                       ("524288K", 512.0), ("64MB", 64.0), ("size=1G,maxmem=4G", 1024.0),
                                       ("lots", None)])
def test_memory_sizes(text, mib):
    assert qemu_size_mb(text) == mib


@pytest.mark.parametrize("argv, requested", [
    (["-machine", "q35,accel=kvm:tcg"], ("kvm", "tcg")),
    (["-M", "accel=tcg"], ("tcg",)),
    (["-accel", "kvm"], ("kvm",)),
    (["--accel", "tcg,thread=multi"], ("tcg",)),
    (["-enable-kvm"], ("kvm",)),
    (["-machine", "q35"], ()),
    ([], ()),
])
def test_accelerators_asked_for_in_qemus_order(argv, requested):
    assert parse_qemu_argv(["qemu", *argv]).accel_requested == requested


def test_network_user_mode_with_forwards_tap_and_none():
    user = parse_qemu_argv(["qemu", "-netdev", "user,id=n0,hostfwd=tcp::18301-:8080,hostfwd=tcp::2222-:22",
                            "-device", "virtio-net,netdev=n0"])
    assert user.network == "qemu user-mode (slirp), hostfwd tcp::18301-:8080 tcp::2222-:22"
    assert parse_qemu_argv(["qemu", "-netdev", "user,id=n0"]).network == "qemu user-mode (slirp)"
    assert parse_qemu_argv(["qemu", "-netdev", "tap,id=n0,ifname=tap3,script=no"]).network == "tap tap3"
    assert parse_qemu_argv(["qemu", "-netdev", "bridge,id=n0,br=br0"]).network == "bridge"
    assert parse_qemu_argv(["qemu"]).network == "none"


@pytest.mark.parametrize("requested, fds, expected, evidence", [
    (("kvm", "tcg"), ["/dev/kvm", "anon_inode:kvm-vm", "anon_inode:kvm-vcpu:0"], "kvm", "QEMU holds anon_inode:kvm-vm"),
    (("kvm", "tcg"), ["/dev/null", "socket:[1]"], "tcg", "QEMU holds no KVM VM (fell back from kvm:tcg)"),
    ((), ["/dev/null"], "tcg", "no accelerator asked for: QEMU's default, TCG"),
    (("kvm",), ["/dev/null"], "unknown", "asked for KVM only, but QEMU holds no KVM VM"),
    (("kvm", "tcg"), None, "unknown", "command line allows kvm:tcg; QEMU's files unreadable"),
    (("tcg",), None, "tcg", "command line: tcg"),
    ((), None, "tcg", "command line: no accelerator (TCG)"),
    (("kvm",), None, "kvm", "command line: kvm only"),
])
def test_accelerator_decided_by_open_files_then_command_line(requested, fds, expected, evidence):
    assert accelerator(requested, fds) == (expected, evidence)


STATE = ("== cmdline\nqemu-system-x86_64\n-machine\naccel=kvm:tcg\n-smp\n2\n-m\n256M\n"
         "-netdev\nuser,id=n0,hostfwd=tcp::18301-:8080\n"
         "== fds\n/dev/null\n/dev/kvm\nanon_inode:kvm-vm\n== affinity\n0-1\n")


def test_captured_state_is_split_and_read_as_facts():
    cmdline, fds, affinity = parse_qemu_state(STATE)
    assert cmdline[:3] == ["qemu-system-x86_64", "-machine", "accel=kvm:tcg"] and len(cmdline) == 9
    assert fds == ["/dev/null", "/dev/kvm", "anon_inode:kvm-vm"] and affinity == ["0-1"]
    assert parse_qemu_state("== cmdline\nqemu\n== fds\n== affinity\n") == (["qemu"], None, [])
    facts = state_facts(STATE)
    assert {k: facts[k] for k in ("qemu_pid", "vcpus", "memory_mb", "accel_requested", "accelerator",
                                  "network", "image", "qemu_cpuset")} == {
        "qemu_pid": None, "vcpus": 2, "memory_mb": 256.0, "accel_requested": "kvm:tcg", "accelerator": "kvm",
        "network": "qemu user-mode (slirp), hostfwd tcp::18301-:8080", "image": None, "qemu_cpuset": "0-1"}
    assert state_facts("") is None and state_facts(None) is None


def test_facts_become_applied_limits():
    facts = launch_facts(["qemu", "-smp", "3", "-m", "1G"], None, ["2", "3"], pid=42)
    assert facts["qemu_pid"] == 42 and facts["accel_requested"] == "(default)" and facts["accelerator"] == "tcg"
    applied = applied_limits(facts)
    assert (applied.cpus, applied.memory_mb, applied.cpuset, applied.swap_mb, applied.cgroup_path) == \
        (3.0, 1024.0, "2,3", None, "QEMU command line")


@pytest.mark.parametrize("arch, binary, package", [
    ("x86_64", "qemu-system-x86_64", "qemu-system-x86"),
    ("amd64", "qemu-system-x86_64", "qemu-system-x86"),
    ("aarch64", "qemu-system-aarch64", "qemu-system-arm"),
    ("arm64", "qemu-system-aarch64", "qemu-system-arm"),
    ("armv7l", "qemu-system-arm", "qemu-system-arm"),
    ("armv6l", "qemu-system-arm", "qemu-system-arm"),
])
def test_qemu_system_for_the_targets_architecture(arch, binary, package):
    assert qemu_system(arch) == (binary, package)
    assert qemu_binary(arch) == binary


def test_an_architecture_without_a_known_package():
    assert qemu_system("riscv64") is None
    assert qemu_binary("riscv64") == "qemu-system-riscv64"  # QEMU's own naming, for the message
    assert qemu.QEMU_BINARIES == {"qemu-system-x86_64", "qemu-system-aarch64", "qemu-system-arm"}


def test_whole_vcpus_and_pinning_prefix():
    assert [vcpus_for(c) for c in (None, 0.5, 1, 1.2, 2)] == [1, 1, 1, 2, 2]
    assert taskset("0-1") == ["taskset", "-c", "0-1"] and taskset(None) == []  # every QEMU thread inherits it


# -- stand-ins on this machine: a copy of sh named like QEMU (its QEMU options are the script's
# $0...), with a tag of the tests' own (not EDGEBENCH_VM, which other tests' leftover checks use).
@pytest.fixture
def fake_qemu(tmp_path):
    shell = shutil.which("sh")
    if not shell:
        pytest.skip("no sh on PATH")
    path = tmp_path / "qemu-system-fake"
    shutil.copy(os.path.realpath(shell), path)
    return str(path)


def _stop(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait(timeout=5)


def test_tagged_processes_found_by_environment(local, fake_qemu):
    tag = f"EDGEBENCH_QEMU_TEST=t-{uuid.uuid4().hex[:8]}"
    # `read` blocks in the shell itself: a loop of `sleep` would start children carrying the tag.
    argv = [fake_qemu, "-c", "read x", "-smp", "2", "-m", "64M"]
    proc = subprocess.Popen(["env", tag, *argv], stdin=subprocess.PIPE)
    try:
        pid = qemu.wait_for_qemu(local, tag, timeout_s=5)
        assert pid == proc.pid
        assert tags.tagged(local, tag) == [(proc.pid, "qemu-system-fak")]  # comm: 15 characters
        assert tags.tagged(local, tag[:-3], prefix=True) == [(proc.pid, "qemu-system-fak")]
        assert tags.tagged(local, tag[:-3]) == []  # exact by default
        facts = qemu.read_facts(local, pid)
        assert (facts["qemu_pid"], facts["vcpus"], facts["memory_mb"]) == (proc.pid, 2, 64.0)
        assert facts["qemu_argv"] == argv
        assert facts["accelerator"] == "tcg" and facts["qemu_cpuset"]  # its files are readable: no KVM VM
        if shutil.which("taskset"):
            assert qemu.pin_threads(local, pid, "0")
            assert qemu.read_facts(local, pid)["qemu_cpuset"] == "0"
    finally:
        _stop(proc)
    assert tags.tagged(local, tag) == []


def test_watcher_captures_the_state_of_a_short_lived_qemu(local, fake_qemu, tmp_path):
    tag = f"EDGEBENCH_QEMU_TEST=w-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "state"
    argv = qemu.watched(tag, str(out), ["env", tag, fake_qemu, "-c", "sleep 0.5; :", "-smp", "4", "-m", "32M"])
    started = time.monotonic()
    r = subprocess.run(argv, timeout=30)
    assert r.returncode == 0 and time.monotonic() - started < 10
    facts = state_facts(out.read_text())
    assert (facts["vcpus"], facts["memory_mb"], facts["accelerator"]) == (4, 32.0, "tcg")


def test_the_kvm_fact_says_what_a_guest_would_get(local):
    """This project's CI machine has a /dev/kvm that runs no guest (a nested one without vmx or
    svm): its facts said kvm: yes while every VM row said tcg. arm64 shows no such flag."""
    import os
    from edgebench.runtimes.qemu import kvm_reason
    kvm = local.facts(refresh=True)["kvm"]
    usable = os.access("/dev/kvm", os.R_OK | os.W_OK)
    flags = open("/proc/cpuinfo").read().split()
    if not usable:
        assert kvm in ("no", "no-permission")
    elif os.uname().machine.startswith(("x86", "i")) and not ({"vmx", "svm"} & set(flags)):
        assert kvm == "no-guests"
    else:
        assert kvm == "yes"
    assert kvm_reason("yes", "pi") is None
    assert "no vmx or svm" in kvm_reason("no-guests", "ci") and "absent" in kvm_reason("no", "pi")
