"""The linux-vm runtime: the guest's parts (module order, kernel command line, /init's exit line)
on their own, then real VMs: Debian's kernel and busybox-static (fetched by provisioning) under
this machine's QEMU, under TCG here (a nested /dev/kvm that cannot run guests), which each row
must say. Every test that starts a VM checks that no QEMU is left behind. What every runtime
promises (a start, its port, its limits, its timeout, a batch run) is in test_runtime_contract.py."""

from __future__ import annotations

import base64
import signal
import urllib.request

import pytest

from conftest import free_port, interrupt_while_a_vm_boots, need, qemu_alive, redis_set_get, vm_tagged_processes
from edgebench.apps import APPS, place_app
from edgebench.experiments.iomt import parse_record, workload_args
from edgebench.runtimes import linux_guest
from edgebench.runtimes.contract import Limits
from edgebench.errors import EdgebenchError
from edgebench.runtimes.linux_vm import LinuxVmRuntime

# -- the guest's parts ------------------------------------------------------------------------

# LIST_MODULES' output for Debian 12's kernel (abridged), and a kernel with virtio built in.
LISTED = """\
virtio_ring\t/k/drivers/virtio/virtio_ring.ko\t
virtio\t/k/drivers/virtio/virtio.ko\tvirtio_ring
virtio_pci_modern_dev\t/k/drivers/virtio/virtio_pci_modern_dev.ko\t
virtio_pci_legacy_dev\t/k/drivers/virtio/virtio_pci_legacy_dev.ko\t
virtio_pci\t/k/drivers/virtio/virtio_pci.ko\tvirtio_ring,virtio_pci_modern_dev,virtio_pci_legacy_dev,virtio
virtio_mmio\t/k/drivers/virtio/virtio_mmio.ko.zst\tvirtio,virtio_ring
virtio_net\t/k/drivers/net/virtio_net.ko\tvirtio_ring,virtio,net_failover
net_failover\t/k/drivers/net/net_failover.ko\tfailover
failover\t/k/net/core/failover.ko\t
== builtin
kernel/drivers/tty/serial/8250/8250.ko
"""


def test_modules_load_dependencies_first():
    modules, builtin = linux_guest.parse_modules(LISTED)
    assert modules["virtio_mmio"] == ("/k/drivers/virtio/virtio_mmio.ko.zst", ["virtio", "virtio_ring"])
    assert builtin == {"8250"}
    order = linux_guest.load_order(("virtio_pci", "virtio_mmio", "virtio_net"), modules, builtin)
    assert sorted(order) == sorted(modules)  # each once
    for name, (_, deps) in modules.items():
        assert all(order.index(d) < order.index(name) for d in deps), (name, order)


def test_built_in_modules_are_not_loaded_and_a_missing_one_is_named():
    modules, _ = linux_guest.parse_modules(LISTED)
    order = linux_guest.load_order(("virtio_net",), modules, {"virtio", "virtio_ring", "failover"})
    assert order == ["net_failover", "virtio_net"]
    with pytest.raises(ValueError, match="net_failover is neither built in nor among.*needed by virtio_net"):
        linux_guest.load_order(("virtio_net",), {k: v for k, v in modules.items() if k != "net_failover"}, set())
    with pytest.raises(ValueError, match="cycle"):
        linux_guest.load_order(("a",), {"a": ("a.ko", ["b"]), "b": ("b.ko", ["a"])}, set())


class _ModulesTarget:
    """Answers LIST_MODULES with every file of LISTED (no depends) and READ_DEPENDS with the
    files asked for; `cut` drops the listing's end, as a command timed out mid-way does."""
    name = "dev"

    def __init__(self, cut: bool = False):
        self.cut, self.read = cut, []

    def run(self, argv, timeout=None, check=True):
        from edgebench.targets import CommandResult
        script, args = argv[2], argv[4:]
        if script == linux_guest.LIST_MODULES:
            lines = ["\t".join(line.split("\t")[:2]) + "\t" for line in LISTED.splitlines() if "\t" in line]
            out = "\n".join(lines) + "\n== builtin\nkernel/drivers/tty/serial/8250/8250.ko\n"
            out += "" if self.cut else "== end\n"
            return CommandResult("dev", "", out.replace("== end\n", "") if self.cut else out, "",
                                 None if self.cut else 0, 1)
        self.read += args
        rows = [line for line in LISTED.splitlines() if "\t" in line and line.split("\t")[1] in args]
        return CommandResult("dev", "", "\n".join(rows) + "\n== end\n", "", 0, 1)


def test_only_the_modules_a_boot_loads_are_read_and_a_cut_listing_is_an_error():
    """Found on the emulated debian-v2: reading every module's depends took 400 s under TCG, the
    120 s command timeout cut the listing before net/core, and linux-vm said failover was missing."""
    target = _ModulesTarget()
    modules, builtin = linux_guest.needed_modules(target, "/k", ("virtio_net",))
    assert linux_guest.load_order(("virtio_net",), modules, builtin) == [
        "virtio_ring", "virtio", "failover", "net_failover", "virtio_net"]
    assert "/k/drivers/virtio/virtio_pci.ko" not in target.read  # not needed, not read
    with pytest.raises(EdgebenchError, match="list-modules in /k on dev did not finish"):
        linux_guest.needed_modules(_ModulesTarget(cut=True), "/k", ("virtio_net",))


def test_kernel_command_line_carries_env_and_arguments_as_base64_lines():
    line = linux_guest.kernel_cmdline("ttyS0", ["PORT=8080", "GOMAXPROCS=1"], ["-dir", "/tmp/x y", ""])
    words = line.split(" ")
    assert words[:3] == ["console=ttyS0", "quiet", "panic=-1"]
    fields = dict(w.split("=", 1) for w in words[3:])
    assert base64.b64decode(fields["eb_env"]).decode() == "PORT=8080\nGOMAXPROCS=1\n"
    assert base64.b64decode(fields["eb_args"]).decode() == "-dir\n/tmp/x y\n\n"  # spaces and empty words kept
    assert linux_guest.kernel_cmdline("ttyAMA0", [], []) == "console=ttyAMA0 quiet panic=-1"
    early = linux_guest.kernel_cmdline("ttyS0", [], [], ("earlyprintk=serial,ttyS0,115200", "tsc_early_khz=2445406"))
    assert early == "console=ttyS0 quiet panic=-1 earlyprintk=serial,ttyS0,115200 tsc_early_khz=2445406"
    with pytest.raises(ValueError, match="newline"):
        linux_guest.kernel_cmdline("ttyS0", [], ["a\nb"])


def test_exit_status_is_the_last_exit_line_of_the_console():
    console = "edgebench-guest: init\r\nedgebench-guest: exec\r\nhello\r\nedgebench-guest: exit 3\r\n[ 2.1] reboot\r\n"
    assert linux_guest.parse_exit(console) == 3
    assert linux_guest.parse_exit("edgebench-guest: exec\nKernel panic\n") is None


def test_stamped_console_lines_parse_without_the_serials_carriage_returns():
    from edgebench.runtimes.vm import parse_stamped
    text = "100\tedgebench-guest: init\r\n250\t{\"event\":\"listening\"}\r\nno stamp\n300\t\n"
    assert parse_stamped(text) == [(100, "edgebench-guest: init"), (250, '{"event":"listening"}'), (300, "")]


# A pc boot's console as `probe -stamp` recorded it (ns shortened): SeaBIOS on the debug port,
# the kernel's early console, then /init.
PC_CONSOLE = [(100, "SeaBIOS (version 1.16.2-debian-1.16.2-1)"), (110, "BUILD: gcc: (Debian 12.2.0-14)"),
              (115, "Booting from ROM..."), (120, "Booting from c000:0054"), (4500, "Memory KASLR using RDTSC..."),
              (4600, "Poking KASLR using RDTSC..."),
              (7000, "edgebench-guest: init"), (7100, "insmod warning"), (7250, "edgebench-guest: exec"),
              (7400, '{"event":"listening"}')]


def test_boot_events_come_from_firmware_kernel_and_init_lines():
    from edgebench.runtimes.linux_vm import boot_events
    assert boot_events(PC_CONSOLE) == {"firmware_start": 100, "firmware_handover": 120, "kernel_first_output": 4500,
                                       "guest_init": 7000, "app_exec": 7250}
    # microvm: qboot says nothing; a kernel without an early console says nothing before /init.
    microvm = [(3900, "Memory KASLR using RDTSC..."), (6100, "edgebench-guest: init"), (6300, "edgebench-guest: exec")]
    assert boot_events(microvm) == {"kernel_first_output": 3900, "guest_init": 6100, "app_exec": 6300}
    assert boot_events(microvm[1:]) == {"guest_init": 6100, "app_exec": 6300}
    assert boot_events([]) == {}


def test_pc_joins_the_firmware_debug_port_to_the_console_and_microvm_does_not(local):
    pc, micro = LinuxVmRuntime(local, "x"), LinuxVmRuntime(local, "x", machine="microvm")
    assert "isa-debugcon,iobase=0x402,chardev=console" in pc.console_args()
    assert micro.console_args() == ["-serial", "stdio"]
    # microvm has no HPET or PM timer: under TCG its kernel is told the TSC's rate (else it can
    # stall for good when its PIT calibration fails); pc needs nothing.
    if micro.accel_used() == "tcg":
        [word] = micro.tsc_khz_words()
        assert word.startswith("tsc_early_khz=") and 100_000 < int(word.split("=")[1]) < 10_000_000
    assert pc.tsc_khz_words() == []


# -- real VMs ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vm(local):
    rt = LinuxVmRuntime(local, "linuxvmtest")
    why = rt.availability()
    need("linux-vm", None if why else why.reason)
    yield rt
    rt.cleanup()


@pytest.fixture(scope="module")
def go_vm(vm, local):
    return vm.package(place_app(local, APPS["go-http"]))


def test_package_packs_busybox_the_modules_and_the_app(vm, go_vm, local):
    d = go_vm.details
    assert go_vm.build == "initramfs" and go_vm.ref.endswith("go-http.initramfs")
    assert go_vm.size_bytes > go_vm.raw_size_bytes  # the app plus busybox and modules
    kernel = dict((m, v) for m, v, _, _ in go_vm.extra_sizes)["kernel_size"]
    assert 1_000_000 < kernel < 50_000_000
    listing = local.run(["sh", "-c", f"{vm.kit()['busybox']} cpio -t <{go_vm.ref}"]).stdout.split()
    assert {"init", "app/program", "bin/busybox", "etc/modules"} <= {p.removeprefix("./") for p in listing}
    assert d["modules"][-1] in ("virtio_net", "virtio_mmio") and "virtio_ring" in d["modules"]


def test_microvm_serves_and_its_boot_has_no_firmware_phase(vm, go_vm, local, no_leftovers):
    """microvm, the machine beside the default pc (whose start every runtime's contract checks:
    test_runtime_contract.py): qboot prints nothing, so the boot's first phase is the kernel's."""
    rt = LinuxVmRuntime(local, "linuxvmtest", machine="microvm")
    port = free_port()
    inst, probe = rt.start(go_vm, Limits(cpus=1, memory_mb=128, cpuset="0", gomaxprocs=1), port, timeout_s=120)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/io", timeout=10) as r:
            assert r.status == 200 and r.read() == b"ok\n"
        applied = inst.limits_applied
        assert (applied.cpus, applied.memory_mb, applied.cpuset) == (1.0, 128.0, "0")
        # No vmx/svm here: the row says TCG, and why, from QEMU's own open files.
        assert inst.accelerator == ("tcg" if rt.kvm_unusable() else "kvm")
        assert any(w in inst.details["accelerator_evidence"] for w in ("TCG", "KVM", "kvm"))
        assert inst.details["machine"] == "microvm" and inst.details["kernel_version"]
        # The boot's phases on the host's clock, in order, inside the probe's span.
        phases, listen = rt.boot_phases(inst), rt.listen_unix_ns(inst)
        assert probe.start_unix_ns < phases["guest_init"] <= phases["app_exec"] <= listen <= probe.ready_unix_ns
        assert probe.start_unix_ns < phases["kernel_first_output"] < phases["guest_init"]
        assert "firmware_start" not in phases
        qemu = inst.pid
        assert qemu_alive(qemu)
    finally:
        rt.stop(inst)
    assert not qemu_alive(qemu)
    assert not vm_tagged_processes()


def test_a_service_whose_app_exited_says_so(vm, go_vm, tmp_path):
    plan = vm.launch_plan(go_vm, Limits(memory_mb=128), free_port())  # nothing started
    console = "edgebench-guest: exec\r\nlisten tcp :8080: bind: address already in use\r\nedgebench-guest: exit 1\r\n"
    plan.stdout_path, plan.stderr_path = str(tmp_path / "out"), str(tmp_path / "err")
    (tmp_path / "out").write_text(console)
    reason = vm.failure_reason(plan)
    assert "address already in use" in reason and "the app exited with status 1" in reason


def test_batch_runs_iomt_and_agrees_with_native(vm, local, no_leftovers):
    from edgebench.runtimes.native import NativeRuntime
    built = place_app(local, APPS["iomt"])
    args = workload_args("aes", "100KB", 7, "random", 8, 2, 20)
    result = vm.run_batch(vm.package(built), args,
                          Limits(cpus=1, memory_mb=256, cpuset="0"), timeout_s=300)
    assert result.ok, result.stdout[-800:]
    rec = parse_record(result.stdout)  # the JSON line among the console's lines
    assert result.cgroup_faults.pgfault and result.cgroup_faults.pgfault > 1000  # QEMU touching guest RAM
    assert "host side: QEMU" in result.outcome.faults_scope
    native = NativeRuntime(local, "linuxvmtest-native")
    ref = native.run_batch(native.package(built), args, Limits(), timeout_s=120)
    assert parse_record(ref.stdout)["checksum"] == rec["checksum"]


def test_an_unknown_machine_is_refused(local):
    from edgebench.errors import ConfigError
    with pytest.raises(ConfigError, match="linux-vm machine 'q35' unknown on x86_64; choose from pc, microvm"):
        LinuxVmRuntime(local, "x", machine="q35")


def test_node_is_refused_with_the_reason(vm, local):
    from edgebench.errors import ConfigError
    with pytest.raises(ConfigError, match="node-http \\(node, http\\) cannot run on linux-vm"):
        vm.package(place_app(local, APPS["node-http"]))


def test_a_batch_tool_is_refused_and_a_serving_one_is_not(vm):
    assert vm.runs(APPS["redis"]) and vm.runs(APPS["nginx"]) and vm.runs(APPS["go-http"])
    assert not vm.runs(APPS["fio"]) and not vm.runs(APPS["node-http"])


@pytest.mark.parametrize("service", ["redis", "nginx"])
def test_debians_services_run_from_the_initramfs_with_their_libraries(vm, local, service, no_leftovers):
    """A dynamic binary in the guest: the libraries ldd names and the data files go in at their
    paths, so the same redis-server and nginx serve there as natively."""
    app = APPS[service]
    need(app.entry, None if local.which(app.entry) else f"no {app.entry} (apt-get install {app.package})")
    artifact = vm.package(place_app(local, app))
    listing = {p.removeprefix("./") for p in
               local.run(["sh", "-c", f"{vm.kit()['busybox']} cpio -t <{artifact.ref}"]).stdout.split()}
    assert "lib64/ld-linux-x86-64.so.2" in listing and "etc/passwd" in listing
    assert any(p.endswith("/libc.so.6") for p in listing)
    for f in artifact.built.details.get("data", []):
        assert f.lstrip("/") in listing
    port = app.container_port if app.fixed_port else free_port()
    inst, probe = vm.start(artifact, Limits(cpus=1, memory_mb=256), port, timeout_s=120)
    try:
        assert probe.ready_after_ns and probe.error is None
        if service == "redis":
            assert redis_set_get(port) == b"+OK\r\n$1\r\nv\r\n"
        else:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as r:
                assert r.status == 200 and len(r.read()) == 612
        phases = vm.boot_phases(inst)  # pc, the default machine: SeaBIOS on the debug port first
        assert phases["firmware_start"] < phases["firmware_handover"] < phases["kernel_first_output"]
        qemu = inst.pid
    finally:
        vm.stop(inst)
    assert not qemu_alive(qemu)


def test_interrupted_while_a_vm_boots_leaves_no_vm(vm, tmp_path, no_leftovers):
    interrupt_while_a_vm_boots("linux-vm", signal.SIGINT, tmp_path)
    assert list(tmp_path.rglob("meta.json"))  # the run's record is on disk


def test_a_vm_inside_an_emulated_device_runs_only_when_named(vm, local, monkeypatch):
    # linux-vm inside the emulated debian-v2 (TCG inside TCG) answered after 247 s: every notebook's
    # ready timeout (20-90 s) failed it, and iomt's batch timeout is an hour. "auto" leaves it out there.
    from edgebench.experiments.common import select_runtimes
    from edgebench.drivers.plan import available_runtimes
    facts = dict(local.facts(), emulated_device="emulated device (x86_64, QEMU pc under TCG, 2 vCPUs, 2048 MiB)")
    monkeypatch.setattr(local, "facts", lambda: facts)
    inside = LinuxVmRuntime(local, "t")
    inside._no_kvm = "the emulated device has no KVM"  # as on the devices, whatever this machine has
    a = inside.availability()
    assert a.ok and a.named_only and "247 s" in a.reason and "name it in RUNTIMES" in a.reason
    if LinuxVmRuntime(local, "t").kvm_unusable():  # here, as on the devices, QEMU gets TCG
        auto = select_runtimes(local, "auto", "t", ["go-http"])
        assert "linux-vm" not in [r.name for r in auto.runtimes] and "247 s" in auto.skipped["linux-vm"]
        assert "linux-vm" not in available_runtimes(local)
    named = select_runtimes(local, "native,linux-vm", "t", ["go-http"])
    assert [r.name for r in named.runtimes] == ["native", "linux-vm"]
    monkeypatch.undo()
    assert not LinuxVmRuntime(local, "t").availability().named_only  # on this machine itself: auto
