"""Building a device's image on this machine, once: Debian 12 from the mirror this machine uses,
with mmdebstrap (another architecture's package scripts run through qemu-user and binfmt), systemd
as init, openssh-server, Debian's kernel; then an ext4 disk made from the tree with `mkfs.ext4 -d`
(no loop mount). The kernel and initramfs are copied beside the disk: QEMU boots them directly.

A key is made for the device and only it may log in (root, as provisioning and cgroups need); the
device's host key, generated inside the image, is read from the tree and pinned in the project's
known_hosts before the device ever boots. The image is cached under its recipe's digest: a second
`make device` only boots it, and a changed recipe builds anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from edgebench.devices.spec import CONSOLE, DEVICES, KERNEL_PACKAGE, SUITE, DeviceSpec
from edgebench.errors import EdgebenchError
from edgebench.provisioning.apt import install_argv, update_argv
from edgebench.runtimes.qemu import qemu_system

# Bump when the recipe changes in a way the fields below do not show.
RECIPE_VERSION = 1
# A minimal real install (debootstrap's default set: required and important), plus what a user's
# device has that it lacks: systemd as init, D-Bus (Docker's systemd cgroup driver talks to systemd
# over it), sshd, the kernel and what its initramfs needs.
PACKAGES = ("systemd-sysv", "dbus", "openssh-server", "udev", "kmod", "initramfs-tools", "iproute2",
            "procps", "ca-certificates")
# The device's two network interfaces, told apart by MAC: QEMU's user-mode network (the way out to
# the mirror, and SSH forwarded to a local port) and the device's own link to this machine.
WAN_MAC = "52:54:00:eb:00:01"
LAN_MAC = "52:54:00:eb:01:01"
DEVICE_FILE = "/etc/edgebench-device"
SLIRP_DNS = "10.0.2.3"
# What of a device's spec is in its image; the rest (CPU, size, kernel command line) is how it boots.
IMAGE_FIELDS = ("name", "guest_arch", "address", "disk_gib")
DEFAULT_MIRROR = "http://deb.debian.org/debian"

# What the initramfs needs to mount the root file system on QEMU's virtio disk (the kernel has these
# as modules). Listed instead of initramfs-tools' default of most of the drivers: under qemu-user
# its thousands of small programs took most of an arm64 build (37 of 38 minutes here).
INITRAMFS_MODULES = ("virtio_pci", "virtio_blk", "ext4", "crc32c_generic")

# Commands this machine needs to build and boot a device, and the Debian package of each.
HOST_TOOLS = {"mmdebstrap": "mmdebstrap", "mkfs.ext4": "e2fsprogs", "ssh-keygen": "openssh-client",
              "ip": "iproute2"}
FOREIGN_TOOLS = {"arch-test": "arch-test", "update-binfmts": "binfmt-support"}
QEMU_USER = {"aarch64": ("qemu-aarch64-static", "qemu-user-static"),
             "x86_64": ("qemu-x86_64-static", "qemu-user-static")}


class DeviceError(EdgebenchError):
    """A device cannot be built, booted or reached; the message says what to change."""


def mirror_uri() -> str:
    """The Debian mirror this machine's apt uses: the device is built from it and reaches it through
    QEMU's user-mode network, as a real device does through its router."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        for words in (line.split() for line in lines):
            if words[:1] in (["deb"], ["URIs:"]):
                uri = next((w.rstrip("/") for w in words[1:] if "://" in w), "")
                if uri.endswith("/debian"):
                    return uri
    return DEFAULT_MIRROR


def mirror_lines() -> list[str]:
    uri = mirror_uri()
    security = uri[: -len("/debian")] + "/debian-security"
    return [f"deb {uri} {SUITE} main", f"deb {uri} {SUITE}-updates main", f"deb {security} {SUITE}-security main"]


def board(spec: DeviceSpec) -> DeviceSpec:
    """The device whose image `spec` boots (itself, or the board it shares)."""
    return DEVICES[spec.board] if spec.board else spec


def recipe(spec: DeviceSpec) -> dict:
    """Everything the image is made from; its digest names the cached build."""
    spec = board(spec)
    return {"version": RECIPE_VERSION, "suite": SUITE, "arch": spec.debian_arch,
            "packages": [*PACKAGES, KERNEL_PACKAGE[spec.guest_arch]], "mirror": mirror_lines(),
            "initramfs_modules": list(INITRAMFS_MODULES), "device": {k: getattr(spec, k) for k in IMAGE_FIELDS}}


def recipe_digest(spec: DeviceSpec) -> str:
    return hashlib.sha256(json.dumps(recipe(spec), sort_keys=True).encode()).hexdigest()[:16]


def built(spec: DeviceSpec) -> dict | None:
    """The cached image's record (image.json) when it matches today's recipe and is whole."""
    try:
        record = json.loads((spec.dir / "image.json").read_text())
    except (OSError, ValueError):
        return None
    whole = all((spec.dir / record.get(k, "-")).exists() for k in ("disk", "kernel", "initrd"))
    return record if whole and record.get("recipe_digest") == recipe_digest(spec) else None


BOOT_TOOLS = ("ip",)  # of HOST_TOOLS, what a boot of a built image needs besides QEMU


def host_missing(spec: DeviceSpec, boot_only: bool = False) -> dict[str, str]:
    """command: Debian package, for what this machine lacks to build and boot `spec` (or, with
    boot_only, to boot an image already built: a cached image outlives the packages it was built
    with, as on a machine provisioned afresh)."""
    tools = {t: HOST_TOOLS[t] for t in BOOT_TOOLS} if boot_only else dict(HOST_TOOLS)
    binary, package = qemu_system(spec.guest_arch)
    tools[binary] = package
    if spec.foreign and not boot_only:
        tools.update(FOREIGN_TOOLS)
        tools[QEMU_USER[spec.guest_arch][0]] = QEMU_USER[spec.guest_arch][1]
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return {tool: pkg for tool, pkg in tools.items() if shutil.which(tool, path=path) is None}


def ensure_host_tools(spec: DeviceSpec, log: Callable[[str], None], boot_only: bool = False) -> None:
    """Install what is missing with apt-get (root), or say what to install."""
    missing = host_missing(spec, boot_only)
    if not missing:
        return None if boot_only else ensure_binfmt(spec)
    packages = sorted(set(missing.values()))
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise DeviceError(f"building device {spec.name} needs {', '.join(sorted(missing))}: install "
                          f"{' '.join(packages)} (apt-get install as root) and run `make device` again")
    log(f"installing {' '.join(packages)} (to build and boot {spec.name})")
    for argv, timeout in ((update_argv(), 900), (install_argv(packages), 1800)):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise DeviceError(f"`{' '.join(argv)}` failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    still = host_missing(spec, boot_only)
    if still:
        raise DeviceError(f"after installing {' '.join(packages)}, still missing: {', '.join(still)}")
    if not boot_only:
        ensure_binfmt(spec)


def ensure_binfmt(spec: DeviceSpec) -> None:
    """A foreign image's package scripts run through qemu-user, which the kernel's binfmt_misc
    starts. In a container or a VM without systemd nothing mounts it: mount it and enable QEMU's."""
    if not spec.foreign:
        return
    misc = Path("/proc/sys/fs/binfmt_misc")
    if not (misc / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(misc)], capture_output=True, timeout=30)
    entry = misc / f"qemu-{spec.guest_arch}"
    if not entry.exists():
        subprocess.run(["update-binfmts", "--enable", f"qemu-{spec.guest_arch}"], capture_output=True, timeout=60)
    if not entry.exists():
        raise DeviceError(f"this machine cannot run {spec.guest_arch} programs (no binfmt_misc entry {entry}): "
                          f"building {spec.name} needs binfmt_misc mounted and qemu-user-static registered "
                          "(`update-binfmts --enable`); a container needs --privileged for that")


def _run(argv: list[str], log_file: Path, timeout: float) -> None:
    with open(log_file, "a") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        try:
            r = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DeviceError(f"`{argv[0]}` took over {timeout:.0f} s building the device; see {log_file}") from None
    if r.returncode != 0:
        tail = "\n".join(log_file.read_text().splitlines()[-12:])
        raise DeviceError(f"`{' '.join(argv[:3])} ...` failed (exit {r.returncode}); the end of {log_file}:\n{tail}")


def network_units(spec: DeviceSpec) -> dict[str, str]:
    """systemd-networkd's files: DHCP on the user-mode network, the device's fixed address on its link."""
    return {
        "10-wan.network": f"[Match]\nMACAddress={WAN_MAC}\n\n[Network]\nDHCP=ipv4\n",
        "20-lan.network": (f"[Match]\nMACAddress={LAN_MAC}\n\n[Network]\nAddress={spec.address}/{spec.lan.prefixlen}\n"
                           "LinkLocalAddressing=no\nIPv6AcceptRA=no\n"),
    }


def customize(spec: DeviceSpec, root: Path, client_public_key: str) -> None:
    """What a person setting up a board does after flashing it: name, fstab, network, a key for root."""
    (root / "etc/hostname").write_text(f"{spec.name}\n")
    (root / "etc/hosts").write_text(f"127.0.0.1 localhost\n127.0.1.1 {spec.name}\n::1 localhost ip6-localhost\n")
    (root / "etc/fstab").write_text("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
    resolv = root / "etc/resolv.conf"
    if resolv.is_symlink() or resolv.exists():
        resolv.unlink()
    resolv.write_text(f"nameserver {SLIRP_DNS}\n")
    units = root / "etc/systemd/network"
    units.mkdir(parents=True, exist_ok=True)
    for name, text in network_units(spec).items():
        (units / name).write_text(text)
    ssh = root / "root/.ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    (ssh / "authorized_keys").write_text(client_public_key.strip() + "\n")
    os.chmod(ssh / "authorized_keys", 0o600)
    # Read by the target's facts: every row and figure from this device says what it is. Written
    # again at each boot, with how it was booted (devices.machine).
    (root / DEVICE_FILE.lstrip("/")).write_text(device_file(spec, "tcg"))


def device_file(spec: DeviceSpec, accel: str) -> str:
    return f"name={spec.name}\narch={spec.guest_arch}\ndescription={spec.description(accel)}\n"


def setup_hooks() -> list[str]:
    """Before any package is installed: the initramfs' module list (a file no package owns)."""
    modules = "\\n".join(INITRAMFS_MODULES)
    return ['--setup-hook=mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d" && '
            'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/edgebench" && '
            f'printf "{modules}\\n" > "$1/usr/share/initramfs-tools/modules.d/edgebench"']


def customize_hooks(spec: DeviceSpec) -> list[str]:
    """mmdebstrap hooks run inside the tree (a foreign one through qemu-user): units enabled as
    `systemctl enable` does on a device, and a serial console for the kernel's."""
    return ["--customize-hook=chroot \"$1\" systemctl enable systemd-networkd.service",
            f"--customize-hook=chroot \"$1\" systemctl enable serial-getty@{CONSOLE[spec.guest_arch]}.service"]


def build(spec: DeviceSpec, log: Callable[[str], None] = print, rebuild: bool = False) -> dict:
    """The device's image, built unless today's recipe is cached. Returns image.json's record."""
    spec = board(spec)
    record = None if rebuild else built(spec)
    if record is not None:
        return record
    if os.geteuid() != 0:
        raise DeviceError(f"building device {spec.name} needs root (mmdebstrap makes a tree owned by root, and "
                          "the device's network link is a tap device); run `make device` as root")
    ensure_host_tools(spec, log)
    start = time.monotonic()
    folder = spec.dir
    folder.mkdir(parents=True, exist_ok=True)
    build_log = folder / "build.log"
    build_log.write_text("")
    tree = folder / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    for stale in ("disk.raw", "image.json"):
        (folder / stale).unlink(missing_ok=True)
    key = folder / "id_ed25519"
    if not key.exists():
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"edgebench-{spec.name}", "-f", str(key)],
             build_log, 60)
    log(f"building {spec.name}: Debian {SUITE} {spec.debian_arch} with mmdebstrap (log: {build_log})")
    try:
        _run(["mmdebstrap", "--variant=important", f"--arch={spec.debian_arch}",
              f"--include={','.join(recipe(spec)['packages'])}", *setup_hooks(), *customize_hooks(spec),
              SUITE, str(tree), *mirror_lines()], build_log, 3600)
        customize(spec, tree, (folder / "id_ed25519.pub").read_text())
        kernel, initrd, version = _boot_files(tree)
        shutil.copyfile(kernel, folder / "vmlinuz")
        shutil.copyfile(initrd, folder / "initrd.img")
        host_key = (tree / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
        log(f"making the {spec.disk_gib} GiB disk (sparse) from the tree")
        _run(["mkfs.ext4", "-q", "-F", "-L", "edgebench-root", "-d", str(tree), str(folder / "disk.raw"),
              f"{spec.disk_gib}G"], build_log, 1800)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    record = {"name": spec.name, "arch": spec.guest_arch, "recipe_digest": recipe_digest(spec),
              "recipe": recipe(spec), "kernel_version": version, "disk": "disk.raw", "kernel": "vmlinuz",
              "initrd": "initrd.img", "host_key": " ".join(host_key[:2]),
              "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "build_seconds": round(time.monotonic() - start, 1)}
    (folder / "image.json").write_text(json.dumps(record, indent=1) + "\n")
    log(f"built {spec.name} in {record['build_seconds']:.0f} s (kernel {version})")
    return record


def _boot_files(tree: Path) -> tuple[Path, Path, str]:
    kernels = sorted((tree / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise DeviceError("the image has no kernel in /boot (did its linux-image package install?)")
    kernel = kernels[-1]
    version = kernel.name[len("vmlinuz-"):]
    initrd = tree / "boot" / f"initrd.img-{version}"
    if not initrd.exists():
        raise DeviceError(f"the image has kernel {version} but no initramfs for it (initramfs-tools failed?)")
    return kernel, initrd, version
