"""What any runtime whose app runs in a VM needs from QEMU on the target; nothing here knows
which launcher (ops for Nanos, a plain Linux VM, Unikraft) started QEMU.

- which QEMU system binary runs a guest of the target's own architecture, and the Debian
  package that has it (`qemu_system`);
- what a QEMU command line asks for (`parse_qemu_argv`): vCPUs, memory, accelerators in QEMU's
  order of preference, network and disk image;
- which accelerator a running QEMU got (`accelerator`): asked for `accel=kvm:tcg`, QEMU falls
  back to TCG without saying so, but a KVM VM holds an `anon_inode:kvm-vm` among its files;
- a launch's processes, found by a tag in their environment (`tagged`, `find_qemu`): a launcher
  may start QEMU in a process group of its own, which a SIGKILL to the launcher leaves running,
  and QEMU inherits the launcher's environment;
- QEMU's facts read from /proc (`read_facts`), or from its state captured beside a batch run by
  `watched` (a batch VM may exit before anyone could ask), and the limits they amount to
  (`applied_limits`);
- pinning QEMU's threads (vCPUs, I/O, user-mode network: all outside the VM's limits) to the
  granted cores (`pinned`, `pin_threads`), and whether the target can give QEMU KVM
  (`kvm_unusable`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from edgebench.cgroups import QEMU_COMMAND_LINE, AppliedLimits
from edgebench.provisioning.needs import Need, TargetNeeds, Version
from edgebench.runtimes.tags import kill_pid, tagged
from edgebench.targets import Target
from edgebench.waiting import wait_until
from edgebench.scripts import shell_script

KVM_FD = "anon_inode:kvm-vm"

# The QEMU system emulator for a guest of the machine's own architecture: (binary, Debian package).
QEMU_SYSTEM: dict[str, tuple[str, str]] = {
    "x86_64": ("qemu-system-x86_64", "qemu-system-x86"),
    "aarch64": ("qemu-system-aarch64", "qemu-system-arm"),
    "armv7l": ("qemu-system-arm", "qemu-system-arm"),
    "armv6l": ("qemu-system-arm", "qemu-system-arm"),
}
_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}   # Debian's names for the kernel's
QEMU_BINARIES = frozenset(binary for binary, _ in QEMU_SYSTEM.values())


def qemu_system(arch: str) -> tuple[str, str] | None:
    """(binary, Debian package) of QEMU for a guest of this architecture (`uname -m` or Debian's
    name), or None when edgebench knows no package for it."""
    return QEMU_SYSTEM.get(_ARCH_ALIASES.get(arch, arch))


def qemu_binary(arch: str) -> str:
    """The QEMU system binary for this architecture; for an unknown one, QEMU's own naming."""
    known = qemu_system(arch)
    return known[0] if known else f"qemu-system-{arch}"


def qemu_needs(arch: str, purpose: str) -> TargetNeeds:
    """What any VM runtime needs on a target of this architecture: QEMU for it, and qemu-img;
    the KVM fact shows in the provisioning table (without it, every VM runs under TCG)."""
    binary = qemu_binary(arch)
    system = qemu_system(arch)
    packages = (Need(system[1], ((binary,),)),) if system else ()
    unresolved = () if system else (("qemu", f"no QEMU package known for architecture {arch}"),)
    return TargetNeeds(purpose, (*packages, Need("qemu-utils", (("qemu-img",),))),
                       (Version(binary, (binary, "--version")),), ("qemu-system-<arch> and qemu-img",),
                       unresolved, facts=("kvm",))


def vcpus_for(cpus: float | None) -> int:
    """Whole vCPUs: a VM cannot have half a CPU. Go's default GOMAXPROCS is then this number,
    which is what the fair protocol asks for."""
    return max(1, math.ceil(cpus)) if cpus else 1


# -- what a command line asks for ---------------------------------------------------------
@dataclass
class QemuLaunch:
    """What a QEMU command line asks for."""
    vcpus: int
    memory_mb: float | None
    accel_requested: tuple[str, ...]     # in QEMU's order of preference; () = QEMU's default (tcg)
    network: str
    image: str | None


def option_values(argv: list[str], *names: str) -> list[str]:
    """Every value given to these options, as `-opt VALUE` or `-opt=VALUE`, in order."""
    out = []
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(n + "="):
                out.append(a[len(n) + 1:])
    return out


def qemu_size_mb(text: str) -> float | None:
    """MiB from QEMU's `-m` value (`128M`, `2G`, `size=2G,slots=2`; a bare number is MiB)."""
    text = text.split(",")[0].removeprefix("size=").strip()
    units = {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024, "K": 1 / 1024}
    num = text.rstrip("KMGTkmgtBb")
    suffix = text[len(num):].upper().rstrip("B")
    try:
        return float(num) * units[suffix]
    except (ValueError, KeyError):
        return None


def parse_qemu_argv(argv: list[str]) -> QemuLaunch:
    smp = option_values(argv, "-smp")
    vcpus = 1
    if smp:
        first = smp[-1].split(",")[0]
        fields = dict(f.split("=", 1) for f in smp[-1].split(",") if "=" in f)
        vcpus = int(fields.get("cpus") or (first if "=" not in first else 1))
    mem = option_values(argv, "-m")
    accel: list[str] = []
    if "-enable-kvm" in argv or "--enable-kvm" in argv:
        accel = ["kvm"]
    for value in option_values(argv, "-machine", "-M"):
        for f in value.split(","):
            if f.startswith("accel="):
                accel = f[len("accel="):].split(":")
    for value in option_values(argv, "-accel", "--accel"):
        accel = [value.split(",")[0]]
    netdevs = option_values(argv, "-netdev")
    network = "none"
    if netdevs:
        kind, *opts = netdevs[0].split(",")
        if kind == "user":
            fwd = [o.removeprefix("hostfwd=") for o in opts if o.startswith("hostfwd=")]
            network = "qemu user-mode (slirp)" + (f", hostfwd {' '.join(fwd)}" if fwd else "")
        elif kind == "tap":
            ifname = next((o.split("=", 1)[1] for o in opts if o.startswith("ifname=")), "?")
            network = f"tap {ifname}"
        else:
            network = kind
    drive = next((f.split("=", 1)[1] for d in option_values(argv, "-drive") for f in d.split(",")
                  if f.startswith("file=")), None)
    return QemuLaunch(vcpus, qemu_size_mb(mem[-1]) if mem else 128.0, tuple(accel), network, drive)


def accelerator(requested: tuple[str, ...], fd_links: list[str] | None) -> tuple[str, str]:
    """(accelerator, evidence). The open files decide when they can be read; the command line
    only when it leaves no choice."""
    if fd_links is not None:
        if any(KVM_FD in link for link in fd_links):
            return "kvm", f"QEMU holds {KVM_FD}"
        if "kvm" in requested and "tcg" not in requested:
            return "unknown", "asked for KVM only, but QEMU holds no KVM VM"
        return "tcg", ("QEMU holds no KVM VM (fell back from " + ":".join(requested) + ")"
                       if "kvm" in requested else "no accelerator asked for: QEMU's default, TCG")
    if not requested or requested == ("tcg",):
        return "tcg", "command line: " + (":".join(requested) or "no accelerator (TCG)")
    if requested == ("kvm",):
        return "kvm", "command line: kvm only"
    return "unknown", "command line allows " + ":".join(requested) + "; QEMU's files unreadable"


# -- a running QEMU ------------------------------------------------------------------------
_QEMU_STATE = shell_script("qemu_qemu_state.sh")

_WATCH_QEMU = shell_script("qemu_watch_qemu.sh")


def parse_qemu_state(text: str) -> tuple[list[str], list[str] | None, list[str]]:
    """(command line, open files or None when unreadable, CPU affinities) from `_QEMU_STATE`."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = line[3:].strip()
            sections[current] = []
        elif current:
            sections[current].append(line)
    fds = sections.get("fds")
    return sections.get("cmdline", []), (fds if fds else None), sections.get("affinity", [])


def launch_facts(cmdline: list[str], fds: list[str] | None, affinity: list[str], pid: int | None) -> dict:
    """What QEMU was started with and what it runs on, as a row's details."""
    launch = parse_qemu_argv(cmdline)
    accel, evidence = accelerator(launch.accel_requested, fds)
    return {"qemu_pid": pid, "qemu_argv": cmdline, "vcpus": launch.vcpus, "memory_mb": launch.memory_mb,
            "accel_requested": ":".join(launch.accel_requested) or "(default)", "accelerator": accel,
            "accelerator_evidence": evidence, "network": launch.network, "image": launch.image,
            "qemu_cpuset": ",".join(affinity) if affinity else None}


def state_facts(text: str | None) -> dict | None:
    """`launch_facts` from state `watched` captured; None when nothing was captured."""
    return launch_facts(*parse_qemu_state(text), pid=None) if text else None


def read_facts(target: Target, pid: int) -> dict:
    """`launch_facts` of a running QEMU, read from /proc on the target."""
    text = target.run(["sh", "-c", _QEMU_STATE, "qemu-state", str(pid)], check=False).stdout
    return launch_facts(*parse_qemu_state(text), pid=pid)


def applied_limits(facts: dict) -> AppliedLimits:
    """A VM's limits are what QEMU was started with (no cgroup holds the guest's memory)."""
    return AppliedLimits(cpus=float(facts["vcpus"]), memory_mb=facts["memory_mb"], swap_mb=None,
                         cpuset=facts["qemu_cpuset"], cgroup_version=None,
                         cgroup_path=QEMU_COMMAND_LINE, oom_kills=None)


def find_qemu(target: Target, tag: str) -> int | None:
    return next((pid for pid, comm in tagged(target, tag) if comm.startswith("qemu")), None)


def wait_for_qemu(target: Target, tag: str, timeout_s: float = 10) -> int | None:
    return wait_until(lambda: find_qemu(target, tag), timeout_s, 0.05)


def watched(tag: str, state_file: str, argv: list[str]) -> list[str]:
    """argv, run with a watcher beside it that writes the state of the QEMU carrying `tag` to
    state_file as soon as it appears (read back with `state_facts`)."""
    return ["env", f"QEMU_STATE={_QEMU_STATE}", "sh", "-c", _WATCH_QEMU, "watch-qemu", tag, state_file, *argv]


def pin_threads(target: Target, pid: int, cpuset: str) -> bool:
    """Pin every thread of a running QEMU to the granted cores (when it was not started pinned)."""
    return target.run(["taskset", "-a", "-p", "-c", cpuset, str(pid)], check=False).ok


def kvm_unusable(target: Target) -> str | None:
    """Why QEMU cannot have KVM on the target, or None: /dev/kvm missing or not accessible, or
    a CPU without vmx/svm (a nested /dev/kvm that cannot run guests: a VM asking for KVM there
    hangs or falls back to TCG)."""
    return kvm_reason(target.facts().get("kvm"), target.name)


def kvm_reason(kvm: str | None, name: str) -> str | None:
    """The target's `kvm` fact (edgebench.targets) in words, or None where a guest gets KVM."""
    if kvm == "yes":
        return None
    if kvm == "no-guests":
        return f"{name}'s /proc/cpuinfo shows no vmx or svm flag, so QEMU runs without KVM (software emulation)"
    return f"/dev/kvm on {name} is {'absent' if kvm in (None, 'no') else kvm}"


def stop_tagged(target: Target, tag: str) -> None:
    """Kill the QEMU a launch tagged (its launcher may be gone, and QEMU may be in a process
    group of its own), then whatever else carries the tag."""
    for _ in range(3):
        procs = tagged(target, tag)
        if not procs:
            return
        qemus = [p for p, comm in procs if comm.startswith("qemu")]
        for p in qemus or [p for p, _ in procs]:
            kill_pid(target, p, grace_s=2.0)
