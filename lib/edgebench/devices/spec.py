"""What each emulated device is: architecture, QEMU machine and CPU, size, kernel command line, and
its place on this machine (the folder with its image, its own /30 network)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from ipaddress import IPv4Network
from pathlib import Path

from edgebench.errors import ConfigError

# Debian's name for each kernel architecture, and what boots it.
DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
KERNEL_PACKAGE = {"x86_64": "linux-image-amd64", "aarch64": "linux-image-arm64"}
CONSOLE = {"x86_64": "ttyS0", "aarch64": "ttyAMA0"}
SUITE = "bookworm"
# Each device gets 10.232.<index>.0/30: .1 is this machine's end of the device's tap link, .2 the
# device. The tests' network namespaces use 10.231.0.0/16 (tests/sshhost.py).
LAN_SUPERNET = IPv4Network("10.232.0.0/16")


def devices_dir() -> Path:
    """Where images and the running devices' state live: outside the project, so every clone and a
    CI run on the same machine share one build. EDGEBENCH_DEVICES_DIR moves it."""
    base = os.environ.get("EDGEBENCH_DEVICES_DIR")
    if base:
        return Path(base)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "edgebench" / "devices"


def ssh_config_path() -> Path:
    """The project's ssh configuration: one Host block per running device (devices.machine writes it)."""
    return devices_dir() / "ssh_config"


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    what: str                     # one line for `make help` and the README
    arch: str | None              # the kernel's name (uname -m); None = this machine's
    machine: str                  # QEMU -M
    cpu: str                      # QEMU -cpu under TCG
    cpus: int
    memory_mb: int
    lan_index: int                # its /30 in LAN_SUPERNET
    cmdline_extra: tuple[str, ...] = ()
    disk_gib: int = 24            # sparse: Docker images, LXD's image and the VM kits grow into it
    # Another device whose image and disk this one boots: the same board booted another way (one
    # SD card, two cmdline.txt). Its image, key, address and what was provisioned are that board's,
    # and only one of the two runs at a time.
    board: str = ""
    # How many times slower than the plan's models this device runs under TCG on a 2-core x86-64
    # host (the median over its quick notebooks there), for `make plan` until it has a history of
    # its own: without it a fresh debian-v2 planned time to ready at 3 minutes, and it took 98.
    typical_pace: float = 1.0

    @property
    def image_name(self) -> str:
        return self.board or self.name

    @property
    def guest_arch(self) -> str:
        return self.arch or platform.machine()

    @property
    def debian_arch(self) -> str:
        arch = DEBIAN_ARCH.get(self.guest_arch)
        if arch is None:
            raise ConfigError(f"device {self.name}: no Debian image is known for {self.guest_arch}; "
                              f"devices run {', '.join(DEBIAN_ARCH)}")
        return arch

    @property
    def foreign(self) -> bool:
        """Another architecture than this machine's: its packages' scripts run through qemu-user."""
        return self.guest_arch != platform.machine()

    @property
    def lan(self) -> IPv4Network:
        return IPv4Network((int(LAN_SUPERNET.network_address) + self.lan_index * 256, 30))

    @property
    def host_address(self) -> str:
        return str(self.lan.network_address + 1)

    @property
    def address(self) -> str:
        return str(self.lan.network_address + 2)

    @property
    def tap(self) -> str:
        return f"ebdev{self.lan_index}"

    @property
    def memcg(self) -> bool:
        return "cgroup_disable=memory" not in self.cmdline_extra

    @property
    def dir(self) -> Path:
        """The board's folder: its image, key, pinned host key and, while it runs, run/."""
        return devices_dir() / self.image_name

    def description(self, accel: str = "tcg") -> str:
        """What /etc/edgebench-device says on the device once booted, and so every row and figure
        from it: the target's facts read it."""
        cpu = "" if self.guest_arch == "x86_64" else f" {self.cpu}"
        memcg = "" if self.memcg else ", memory controller off"
        return (f"emulated device ({self.guest_arch}, QEMU {self.machine}{cpu} under {accel.upper()}, "
                f"{self.cpus} vCPUs, {self.memory_mb} MiB{memcg})")


# debian-v2's CPU under TCG: an older model QEMU emulates plainly (SSE4.2, POPCNT; no AVX, XSAVE,
# PKU, 5-level paging or SVM). `max` gave wrong AVX results (below); `max` with AVX turned off
# soft-locked the device's kernel after 48 minutes (both vCPUs looping on an instruction-fetch
# page fault under `handle_mm_fault`).
X86_TCG_CPU = "Nehalem"

# A Raspberry Pi 3B+/4 class board: Cortex-A72, 2 vCPUs of its 4 cores (this machine has two), 1 GiB.
# Its pace (as debian-v2's below; its complete quick run of 2026-12-01, beside debian-v2, the
# notebooks run whole in one sitting): cpu bound 6.4x, io bound 6.5x, page faults 11x, lxd appendix
# 11x, microbenchmarks 11.5x, home automation 11.6x, static footprint 18x, face recognition 18.6x,
# min memory 19.4x, boot time 19.6x. The median, 11.5. (It was 50, from its first four notebooks
# against models since made to stretch quick's load windows: the plan said 28 hours for 8.)
_PI = dict(arch="aarch64", machine="virt", cpu="cortex-a72", cpus=2, memory_mb=1024, typical_pace=12.0)

DEVICES: dict[str, DeviceSpec] = {d.name: d for d in (
    # On `-cpu max` TCG emulated AMD's SVM (KVM's modules stay unloaded, so the device's own VMs run
    # under TCG and say so) and AVX, which QEMU 7.2's TCG (Debian 12's) computes wrongly: face
    # recognition's float32 PCA gave 78-82% accuracy there, a different answer per runtime and run,
    # against 89% on this machine; kept off AVX, 89% and this machine's predictions.
    DeviceSpec("debian-v2", "Debian 12 for this machine's architecture, systemd, cgroup v2 unified",
               arch=None, machine="pc", cpu=X86_TCG_CPU, cpus=2, memory_mb=2048, lan_index=1,
               cmdline_extra=("modprobe.blacklist=kvm_amd,kvm_intel",),
               # The work's pace, the models' set load windows taken out (quick; native, Docker and
               # LXD; its complete quick run of 2026-12-01, the notebooks run whole in one sitting):
               # cpu bound 5.2x, io bound 5.9x, page faults 9.1x, lxd appendix 9.6x, home automation
               # 9.7x, microbenchmarks 10x, time to ready 14.8x, boot time 16.3x, face recognition
               # 19x, static footprint 19.1x, min memory 20.5x. The median, 10 (26 before, from
               # stops 38-50, against models since made to stretch quick's load windows).
               typical_pace=10.0),
    DeviceSpec("pi-arm64", "Debian 12 arm64 on QEMU virt, Cortex-A72, 2 vCPUs, 1 GiB (a Raspberry Pi 3B+/4)",
               lan_index=2, **_PI),
    DeviceSpec("pi-arm64-nomemcg", "pi-arm64 booted with the memory controller off (cgroup_disable=memory), as "
               "a stock Raspberry Pi OS kernel boots", lan_index=2, cmdline_extra=("cgroup_disable=memory",),
               board="pi-arm64", **_PI),
)}


def is_device(name: str | None) -> bool:
    return bool(name) and name.strip() in DEVICES


def device_spec(name: str) -> DeviceSpec:
    try:
        return DEVICES[name.strip()]
    except KeyError:
        raise ConfigError(f"no device named {name!r}; choose one of {', '.join(DEVICES)}") from None
