"""A plain Linux VM under QEMU: paper 002's "Linux guest" baseline beside the unikernels.

- kit (provisioning, untimed): the distribution's generic kernel and busybox-static, fetched
  as packages and unpacked in the target's workspace, never installed (runtimes/linux_guest.py).
- package (untimed): an initramfs per app with busybox, the virtio network modules, the app's
  binary (Go's static one, or a Debian tool's with its libraries and data files) and an /init;
  its size is the image size, the kernel's beside it.
- start: QEMU (`pc` on x86_64, `virt` on arm64) with `-kernel` and
  `-initrd`, the requested vCPUs and memory, the port forwarded by QEMU's user-mode network, the
  serial console on stdout (where the app's own output lands), pinned to the granted cores with
  every QEMU thread. KVM where the target can give it to guests, TCG otherwise; each row reads
  the accelerator back from QEMU (runtimes/qemu.py).
- stop: QEMU, found by the tag in its environment, as for Nanos.
- batch: the guest's /init prints the program's exit status and powers off; the launcher turns
  that line into its own exit status.

The guest's clock is set from the emulated RTC at boot, so the app's own 'listening' reading is
not used: the console goes through `probe -stamp`, and the listening line (and the boot's
phases) are timed where they reach the host.
"""

from __future__ import annotations

from dataclasses import replace

from edgebench.apps import BuiltApp
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.provisioning.needs import Preparation, TargetNeeds
import edgebench.runtimes.linux_guest as linux_guest
import edgebench.runtimes.qemu as qemu
from edgebench.runtimes.base import app_env
from edgebench.runtimes.contract import Artifact, Availability, Instance, LaunchPlan, Limits
from edgebench.runtimes.vm import StampedConsoleVm, console_args, user_network
from edgebench.runtimes.vm import boot_events as vm_boot_events
from edgebench.targets import Target
from edgebench.scripts import shell_script

# A VM has a memory size even when the run sets no limit.
DEFAULT_MEMORY_MB = 512
# (machine types, default machine, serial console device) per architecture.
MACHINES = {
    # microvm is offered, not the default. It has no HPET or ACPI PM timer, so when the kernel's
    # PIT calibration of the TSC fails (about half of the boots under TCG here, QEMU 7.2 and
    # Debian's 6.1), it stalls for good ("tsc: No reference (HPET/PMTIMER) available"): under
    # TCG it is told the TSC's frequency (tsc_khz_words).
    "x86_64": (("pc", "microvm"), "pc", "ttyS0"),
    "aarch64": (("virt",), "virt", "ttyAMA0"),
}
# romfile=: no iPXE option ROM to load (seconds under TCG); the kernel needs none. microvm's
# virtio-mmio devices have no ROM; QEMU names them on the kernel command line.
NET_DEVICE = {"pc": "virtio-net-pci,romfile=", "virt": "virtio-net-pci,romfile=", "microvm": "virtio-net-device"}
# The kernel's early console: its first line (before the decompressed kernel's console is up)
# marks the end of firmware and decompression. aarch64's earlycon is left out (untested there).
EARLY_CONSOLE = {"x86_64": "earlyprintk=serial,ttyS0,115200"}

TSC_KHZ = shell_script("linux_vm_tsc_khz.sh")


def kit_dir(target: Target) -> str:
    return f"{target.workspace}/linux-vm/kit"


class LinuxVmRuntime(StampedConsoleVm):
    name = "linux-vm"
    colour = "#e377c2"
    # Debian's 6.1 kernel with an 8 MB initramfs (QEMU 7.2, pc): 96 MiB serves, 80 MiB panics
    # ("deadlocked on memory"), 64 MiB hangs before its console says anything.
    min_memory_mb = 96
    languages = ("go", "tool")

    @classmethod
    def runs(cls, app) -> bool:
        """Go apps, and Debian's tools that serve (nginx, Redis): a batch tool's phases run
        through tools/steps, which the initramfs' /init does not."""
        return app.language == "go" or (app.language == "tool" and app.is_service)

    @classmethod
    def runs_what(cls) -> str:
        return "Go apps and Debian's tools that serve, such as nginx and Redis"

    @classmethod
    def target_needs(cls, arch: str) -> TargetNeeds:
        needs = qemu.qemu_needs(arch, "linux-vm runtime")
        return replace(needs, by_hand=(*needs.by_hand, "a kernel package (linux-image-*) and busybox-static "
                                       "for apt-get download"))

    @classmethod
    def prepare_target(cls, prep: Preparation) -> None:
        """Fetch the guest's kernel and busybox once (apt-get download; nothing installed)."""
        target = prep.target
        if kit(target) is not None:
            return
        arch = linux_guest.DEB_ARCH.get(target.facts().get("arch", ""))
        if arch is None or not target.which("apt-get"):
            prep.missing["linux-vm kit"] = ("no guest kernel: the kit comes from Debian packages (linux-image-<arch>, "
                                            "busybox-static) and this target has no apt-get or an unknown architecture")
            return
        if prep.check:
            prep.did(f"download linux-image-{arch} and busybox-static into {kit_dir(target)}")
            return
        prep.log(f"fetching the linux-vm guest kit (linux-image-{arch}, busybox-static)")
        r = target.run(["sh", "-c", linux_guest.FETCH_KIT, "fetch-kit", kit_dir(target), arch], timeout=600,
                       check=False)
        if not r.ok or kit(target) is None:
            prep.fail("linux-vm kit", f"apt-get download failed (exit {r.exit_code}): {r.stderr.strip()[-300:]}")
            return
        prep.did(f"downloaded the linux-vm guest kit ({kit(target)['version']}) into {kit_dir(target)}")

    def __init__(self, target, run_tag=None, machine: str = "default", accel: str = "auto",
                 require_kvm: bool = False):
        super().__init__(target, run_tag)
        machines, default, _ = MACHINES.get(self._arch(), ((), None, ""))
        self.machine = default if machine in ("default", None, "") else machine
        if machines and self.machine not in machines:
            raise ConfigError(f"linux-vm machine {machine!r} unknown on {self._arch()}; choose from "
                              f"{', '.join(machines)}")
        self.choose_accel(accel, require_kvm)

    @classmethod
    def machines_for(cls, arch: str) -> tuple[str, ...]:
        return MACHINES.get(arch, ((),))[0]

    def options(self) -> dict:
        """What a variant of this runtime (another machine type) is made with."""
        return {"accel": self.accel, "require_kvm": self.require_kvm}

    def kit(self) -> dict | None:
        if "_kit" not in self.__dict__:
            self._kit = kit(self.target)
        return self._kit

    def availability(self) -> Availability:
        if self._arch() not in MACHINES:
            return Availability(False, f"linux-vm knows no QEMU machine for {self._arch()}; it runs on x86_64 "
                                "and aarch64 targets")
        missing = self.qemu_missing()
        if missing is not None:
            return missing
        if self.kit() is None:
            return Availability(False, f"no guest kernel and busybox in {kit_dir(self.target)}; run `make provision` "
                                "(it downloads linux-image-<arch> and busybox-static with apt-get)")
        return self.kvm_missing() or self.inside_emulation() or Availability(True)

    def describe(self) -> str:
        k, no_kvm = self.kit() or {}, self.kvm_unusable()
        return (f"kernel {k.get('version')}, {k.get('busybox_version', '').replace('_', ' ')}; machine {self.machine}; "
                f"{'VMs run under TCG: ' + no_kvm if no_kvm else 'kvm: yes'}")

    # -- images --------------------------------------------------------------------
    def package(self, built: BuiltApp, build: str = "native") -> Artifact:
        if not self.runs(built.app):
            raise ConfigError(f"{built.app.name} ({built.app.language}, {built.app.kind}) cannot run on linux-vm in "
                              "edgebench: its initramfs holds one program (a Go binary or a tool that serves); "
                              "leave it out of the linux-vm runs")
        k = self.kit()
        if k is None:
            raise EdgebenchError(self.availability().reason)
        modules_dir = f"{k['root']}/lib/modules/{k['version']}"
        wanted = (*linux_guest.NET_MODULES["pci"], *linux_guest.NET_MODULES["mmio"])
        modules, builtin = linux_guest.needed_modules(self.target, modules_dir, wanted)
        try:
            order = linux_guest.load_order(wanted, modules, builtin)
        except ValueError as e:
            raise EdgebenchError(f"linux-vm on {self.target.name}: {e} ({modules_dir})") from None
        out = f"{self.target.workspace}/linux-vm/{built.app.name}.initramfs"
        script = linux_guest.initramfs_script(k["busybox"], built.remote_path,
                                              [f"{m}\t{modules[m][0]}" for m in order], out,
                                              f"{self.target.workspace}/linux-vm/{built.app.name}.root",
                                              files=tuple(built.details.get("data", ())))
        r = self.target.run(["sh", "-c", script], timeout=120, check=False)
        if not r.ok:
            raise EdgebenchError(f"packing the linux-vm initramfs of {built.app.name} failed: {r.stderr[-500:]}")
        size = int(self.target.run(["stat", "-c", "%s", out]).stdout.strip())
        kernel_bytes = int(self.target.run(["stat", "-L", "-c", "%s", k["kernel"]]).stdout.strip())
        details = {"initramfs": out, "kernel": k["kernel"], "kernel_version": k["version"],
                   "busybox": k["busybox_version"], "modules": order, "machine": self.machine,
                   "build_command": "sh -c <linux_guest.initramfs_script>"}
        return Artifact(self.name, built.app.name, out, size, built.size_bytes, built, build="initramfs",
                        details=details, extra_sizes=[("kernel_size", kernel_bytes, "bytes", k["kernel"])])

    # -- starting and stopping -------------------------------------------------------
    def qemu_argv(self, artifact: Artifact, limits: Limits, port: int | None, args: list[str]) -> list[str]:
        arch = self._arch()
        _, _, console = MACHINES[arch]
        accel = self.accel_used()
        env = app_env(artifact.built, limits, artifact.built.app.container_port if port is not None else None)
        memory = limits.memory_mb or DEFAULT_MEMORY_MB
        # TCG is QEMU's default, so only KVM is asked for by name.
        argv = [qemu.qemu_binary(arch), "-M", self.machine,
                *(["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else []),
                "-m", f"{int(memory)}M", "-smp", str(qemu.vcpus_for(limits.cpus)),
                "-nodefaults", "-no-user-config", "-display", "none", *self.console_args(), "-no-reboot",
                "-kernel", artifact.details["kernel"], "-initrd", artifact.ref,
                "-append", linux_guest.kernel_cmdline(console, env, args, (
                    *([EARLY_CONSOLE[arch]] if arch in EARLY_CONSOLE else []), *self.tsc_khz_words()))]
        if port is not None:
            argv += user_network(port, artifact.built.app.container_port, NET_DEVICE[self.machine])
        return argv

    def tsc_khz_words(self) -> list[str]:
        """On microvm under TCG, `tsc_early_khz=` with the target's TSC frequency (TCG's guest TSC
        counts at the host's rate): the kernel's fallback when its PIT calibration fails, where
        microvm has no other reference. [] elsewhere, or when the frequency is not known."""
        if self.machine != "microvm" or self.accel_used() != "tcg":
            return []
        if "_tsc_khz" not in self.__dict__:
            r = self.target.run(["sh", "-c", TSC_KHZ], check=False)
            self._tsc_khz = int(r.stdout.strip()) if r.ok and r.stdout.strip().isdigit() else None
        return [f"tsc_early_khz={self._tsc_khz}"] if self._tsc_khz else []

    def console_args(self) -> list[str]:
        return console_args(self.machine)

    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        return self.stamped_plan(artifact, limits, port, artifact.built.service_args(artifact.built.app.container_port))

    def boot_phases(self, instance: Instance) -> dict[str, int]:
        """On the host's clock: the boot events the console showed (boot_events)."""
        return boot_events(self.console_lines(instance.plan))

    def versions_brief(self) -> dict:
        k = self.kit() or {}
        return {"kernel_version": k.get("version"), "busybox_version": k.get("busybox_version"),
                "machine": self.machine}

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        out = self.target.read_text(plan.stdout_path, missing_ok=True) or ""
        err = self.target.read_text(plan.stderr_path, missing_ok=True) or ""
        lines = [x.strip() for x in (out + "\n" + err).replace("\r", "").splitlines() if x.strip()]
        # A guest too small for its kernel and initramfs panics (panic=-1 -no-reboot: QEMU exits).
        code = linux_guest.parse_exit(out)
        if code is not None:
            lines.append(f"the app exited with status {code} and the guest powered off")
        if any("Kernel panic" in x or "Out of memory" in x for x in lines):
            lines.append(f"the guest ran out of memory at {plan.limits.memory_mb or DEFAULT_MEMORY_MB:g} MiB; "
                         "raise the memory limit")
        return " | ".join(lines[-3:]) or None

    # -- batch -------------------------------------------------------------------------
    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        plan = self.stamped_plan(artifact, limits, None, args)
        self.watch_batch(plan)
        return plan


def boot_events(lines: list[tuple[int, str]]) -> dict[str, int]:
    """Boot events from host-stamped console lines [(unix ns, line)] (vm.boot_events): the
    firmware's, kernel_first_output (the kernel's first line, from its early console: firmware and
    decompression are behind it), guest_init (the initramfs' /init runs: the kernel is booted) and
    app_exec (modules and network up, the app is started)."""
    return vm_boot_events(lines, {f"{linux_guest.MARK} init": "guest_init", f"{linux_guest.MARK} exec": "app_exec"})


def kit(target: Target) -> dict | None:
    """The guest kit on the target (kernel, its version, busybox), or None when it is not there."""
    root = f"{kit_dir(target)}/root"
    r = target.run(["sh", "-c", linux_guest.DESCRIBE_KIT, "describe-kit", root], check=False)
    if not r.ok:
        return None
    out = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    return {**out, "root": root}
