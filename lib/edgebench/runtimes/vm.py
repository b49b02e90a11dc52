"""What every runtime whose app runs in a QEMU VM does the same way (Nanos, linux-vm, unikraft): find its
QEMU by the launch's tag and read back what it got, refuse TCG when KVM is required, stop QEMU
(not only its launcher), and say what a batch run's counts cover. How the VM is built and
launched stays in each runtime's own module."""

from __future__ import annotations

from dataclasses import replace

from edgebench.cgroups import taskset
from edgebench.errors import ConfigError, EdgebenchError
import edgebench.runtimes.qemu as qemu
from edgebench.runtimes.base import Runtime
from edgebench.apps import place_probe
from edgebench.runtimes.contract import Availability, BatchOutcome, Instance, LaunchPlan, Limits, StartFailed
from edgebench.runtimes.tags import LAUNCH_TAG, is_alive, kill_pid, tagged
from edgebench.scripts import shell_script

# Machines whose firmware (SeaBIOS) writes to QEMU's debug port 0x402: its banner and its jump to
# the kernel become console lines, stamped on the host like the rest (boot_events). qboot
# (microvm) prints nothing.
DEBUGCON_MACHINES = ("pc",)
# Console lines that mark a boot event (boot_events): SeaBIOS's first line and its hand-over.
FIRMWARE_START, FIRMWARE_HANDOVER = "SeaBIOS (version", "Booting from "

_STAMPED = shell_script("vm_stamped.sh")

ACCEL_MODES = ("auto", "kvm", "tcg")

# What a batch row's facts keep from QEMU's state.
_BATCH_FACTS = ("accelerator_evidence", "accel_requested", "vcpus", "memory_mb", "qemu_cpuset", "qemu_argv")


class VmRuntime(Runtime):
    foreign_clock = ("the app's clock is the VM's, set from the emulated RTC at boot (whole seconds), not the "
                     "target's")
    # What the cgroup's fault counts of a batch run cover.
    batch_faults_scope = "host side: QEMU running the VM (the guest's own faults are not the host's)"
    batch_rusage_missing = ""
    require_kvm = False
    memory_by_cgroup = False  # QEMU's -m gives the guest its memory, with or without the memory controller

    def _arch(self) -> str:
        return self.target.facts().get("arch") or "x86_64"

    accel = "auto"   # what QEMU is asked for: kvm, tcg, or auto (KVM where the target can give it)

    def choose_accel(self, accel: str, require_kvm: bool) -> None:
        """For the runtimes that start QEMU themselves: require_kvm asks for KVM whatever `accel` says."""
        if accel not in ACCEL_MODES:
            raise ConfigError(f"{self.name} accel={accel!r} unknown; choose from {', '.join(ACCEL_MODES)}")
        self.accel = "kvm" if require_kvm else accel
        self.require_kvm = require_kvm

    def kvm_unusable(self) -> str | None:
        """Why QEMU gets no KVM on this target, or None (asked once)."""
        if "_no_kvm" not in self.__dict__:
            self._no_kvm = qemu.kvm_unusable(self.target)
        return self._no_kvm

    def accel_used(self) -> str:
        if self.accel == "auto":
            return "tcg" if self.kvm_unusable() else "kvm"
        return self.accel

    def qemu_missing(self) -> Availability | None:
        """Why this runtime's QEMU cannot start here (not installed), or None."""
        binary = qemu.qemu_binary(self._arch())
        if self.target.which(binary):
            return None
        system = qemu.qemu_system(self._arch())
        return Availability(False, f"no {binary} on {self.target.name}; install QEMU there "
                            f"(apt-get install {system[1] if system else 'qemu-system'})")

    def inside_emulation(self) -> Availability | None:
        """On an emulated device (edgebench's own, `make device`) without KVM, QEMU runs under TCG
        inside TCG: linux-vm's microvm took 247 s to answer there (debian-v2, 2026-11-27), past
        every experiment's ready timeout, where it takes 1-2 s on the machine around it. Such a VM
        runs when named in `runtimes`; "auto" leaves it out, saying why."""
        device = self.target.facts().get("emulated_device")
        if device and self.accel_used() == "tcg":
            return Availability(True, f"{self.name} would run under TCG inside the {device}: a VM there takes "
                                "minutes to start (linux-vm: 247 s on debian-v2), past every experiment's "
                                "ready timeout; name it in RUNTIMES to run it anyway", named_only=True)
        return None

    def kvm_missing(self) -> Availability | None:
        """Why KVM, when it is required, cannot be had here, or None."""
        if self.accel_used() == "kvm" and self.kvm_unusable():
            return Availability(False, f"KVM is required but {self.kvm_unusable()}; run where QEMU gets KVM or "
                                "allow software emulation (TCG)")
        return None

    def console_lines(self, plan: LaunchPlan) -> list[tuple[int, str]]:
        """[(host unix ns, line)] of the console so far, as `probe -stamp` wrote it to
        plan.state["console_stamps"]; [] when the launch does not stamp its console."""
        path = plan.state.get("console_stamps")
        text = self.target.read_text(path, missing_ok=True) if path else None
        return parse_stamped(text or "")

    def versions_brief(self) -> dict:
        """What every row of this runtime records about its versions."""
        return {}

    def attach_details(self, plan: LaunchPlan) -> dict:
        """Facts beyond QEMU's that a runtime adds to a started instance."""
        return {}

    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        pid = qemu.wait_for_qemu(self.target, plan.state["tag"], 5)
        if pid is None:
            raise EdgebenchError(f"{self.name}/{plan.app}: the app answered but no QEMU carrying "
                                 f"{plan.state['tag']} was found")
        facts = qemu.read_facts(self.target, pid)
        self._check_accelerator(facts)
        facts.update(self.versions_brief(), launcher_pid=launcher_pid, pinned_to=plan.limits.cpuset,
                     **self.attach_details(plan))
        plan.state["qemu_pid"] = pid
        return Instance(self.name, plan.app, plan.name, plan.port, f"http://127.0.0.1:{plan.port}", pid,
                        plan.limits, qemu.applied_limits(facts), facts["network"] if plan.port else "none", plan,
                        details=facts, accelerator=facts["accelerator"], pinned_to=plan.limits.cpuset)

    def _check_accelerator(self, facts: dict) -> None:
        if self.require_kvm and facts["accelerator"] != "kvm":
            raise StartFailed(f"KVM is required (require_kvm=True) but the VM ran with {facts['accelerator']} "
                              f"({facts['accelerator_evidence']}); give the user access to /dev/kvm or allow TCG")

    def app_output(self, instance: Instance) -> str:
        # The serial console: QEMU runs in the foreground with its serial port on stdout.
        return self.target.read_text(instance.plan.stdout_path, missing_ok=True) or ""

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        """QEMU first (a launcher killed does not take it down), then the launcher, then the cgroup."""
        tag = plan.state.get("tag")
        if tag:
            qemu.stop_tagged(self.target, tag)
        if pid and is_alive(self.target, pid):
            kill_pid(self.target, pid)
        cgroup = plan.state.pop("cgroup", None)
        if cgroup:
            cgroup.destroy()

    def cleanup(self) -> None:
        super().cleanup()
        # Any VM of this run that the bookkeeping lost (a crash between launch and plan).
        for pid, _ in tagged(self.target, f"{LAUNCH_TAG}=eb-{self.run_tag}-{self.name}-", prefix=True):
            kill_pid(self.target, pid, grace_s=1.0)

    def watch_batch(self, plan: LaunchPlan, launcher: list[str] = ()) -> None:
        """Capture QEMU's state beside a batch launch (the VM may exit before anyone asks), and
        count the launch in a cgroup of its own: the host-side faults of running the VM.
        `launcher`: a prefix that runs the watched command (and may read its output)."""
        state_file = f"{self.logs_dir()}/{plan.name}.qemu"
        plan.state["qemu_state_file"] = state_file
        plan.argv = [*launcher, *qemu.watched(plan.state["tag"], state_file, plan.argv)]
        self.count_in_cgroup(plan)

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        scope = BatchOutcome(faults_scope=self.batch_faults_scope, rusage_counts_missing=self.batch_rusage_missing)
        facts = qemu.state_facts(self.target.read_text(plan.state["qemu_state_file"], missing_ok=True))
        if facts is None:
            return replace(scope, details={"accelerator_evidence": "QEMU's state was not captured while it ran"})
        self._check_accelerator(facts)
        return replace(scope, limits_applied=qemu.applied_limits(facts), accelerator=facts["accelerator"],
                       details={k: facts[k] for k in _BATCH_FACTS} | self.versions_brief())


class StampedConsoleVm(VmRuntime):
    """A VM runtime that starts QEMU itself (linux-vm, unikraft) with its serial console through
    `probe -stamp`: the app's listening line, and the boot's lines, are timed where they reach
    the host, so the guest's clock is never read."""
    foreign_clock = None

    def qemu_argv(self, artifact, limits: Limits, port: int | None, args: list[str]) -> list[str]:
        raise NotImplementedError

    def stamped_plan(self, artifact, limits: Limits, port: int | None, args: list[str]) -> LaunchPlan:
        self.check_limits(artifact.app, limits)
        name = self.new_name(artifact.app)
        logs = self.logs_dir()
        self.target.run(["mkdir", "-p", logs])
        tag = f"{LAUNCH_TAG}={name}"
        stamps = f"{logs}/{name}.console"
        # Pinned at launch: every QEMU thread (vCPUs, I/O, user-mode network) inherits the cores.
        argv = ["env", tag, *taskset(limits.cpuset), *stamped_console(stamps, place_probe(self.target)),
                *self.qemu_argv(artifact, limits, port, args)]
        network = ("none" if port is None else
                   f"qemu user-mode (slirp) hostfwd tcp::{port}-:{artifact.built.app.container_port}")
        return LaunchPlan(self.name, artifact.app, name, argv, port or 0, limits=limits,
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          network_path=network, state={"tag": tag, "console_stamps": stamps})

    def listen_unix_ns(self, instance: Instance) -> int | None:
        """When the app's listening line reached the host (its own clock reading is the guest's)."""
        return next((ns for ns, line in self.console_lines(instance.plan) if '"event":"listening"' in line), None)


def parse_stamped(text: str) -> list[tuple[int, str]]:
    """`probe -stamp` output: 'unix_ns<TAB>line' per line, the serial's carriage returns dropped."""
    out = []
    for line in text.splitlines():
        ns, tab, rest = line.partition("\t")
        if tab and ns.isdigit():
            out.append((int(ns), rest.rstrip("\r")))
    return out


def stamped_console(stamps: str, probe: str) -> list[str]:
    """The prefix that runs a QEMU command line with its console stamped into `stamps` (_STAMPED)."""
    return ["sh", "-c", _STAMPED, "console-stamp", stamps, probe]


def user_network(port: int, guest_port: int, device: str) -> list[str]:
    """QEMU's user-mode network with the host's `port` forwarded to the guest's, on every address
    of the host (as Docker's -p and ops' forwards are): a load generator on another host reaches it."""
    return ["-netdev", f"user,id=n0,hostfwd=tcp::{port}-:{guest_port}", "-device", f"{device},netdev=n0"]


def console_args(machine: str) -> list[str]:
    """The serial console on stdout; on `pc` the firmware's debug port joins it (one stream,
    so the host stamps both in order)."""
    if machine not in DEBUGCON_MACHINES:
        return ["-serial", "stdio"]
    return ["-chardev", "stdio,mux=on,id=console", "-serial", "chardev:console",
            "-device", "isa-debugcon,iobase=0x402,chardev=console"]


def boot_events(lines: list[tuple[int, str]], marks: dict[str, str]) -> dict[str, int]:
    """Boot events from host-stamped console lines [(unix ns, line)], in boot order:
    firmware_start (SeaBIOS's banner: QEMU itself is up), firmware_handover (it jumps to the
    kernel), kernel_first_output (the guest's first line), then the guest's own events: `marks`
    {line prefix: event}. An event the console did not show is left out: qboot prints nothing,
    a kernel without an early console says nothing before its first mark."""
    events: dict[str, int] = {}
    for ns, line in lines:
        mark = next((event for prefix, event in marks.items() if line.startswith(prefix)), None)
        if mark:
            events.setdefault(mark, ns)
        elif line.startswith(FIRMWARE_START):
            events.setdefault("firmware_start", ns)
        elif line.startswith(FIRMWARE_HANDOVER) and "kernel_first_output" not in events:
            events["firmware_handover"] = ns  # the last one ("Booting from ROM..." then "from c000:0054")
        elif "firmware_start" in events and "firmware_handover" not in events:
            continue  # the rest of SeaBIOS's lines
        elif line.strip() and not any(event in events for event in marks.values()):
            events.setdefault("kernel_first_output", ns)
    return events
