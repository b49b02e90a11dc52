"""Booting, reaching and stopping an emulated device.

QEMU boots the image's kernel directly, with two network interfaces: QEMU's user-mode network (the
device's way out to the Debian mirror, through this machine's sockets, and SSH forwarded to a
loopback port) and a tap link to this machine on the device's own /30. The link is what makes the
device an ordinary target: the apps it serves are reached at its address, as a board's on a LAN,
by a load generator here. Nothing is routed or forwarded: only this machine and the device are on
the link.

QEMU runs in a session of its own, so the device outlives `make device`; Ctrl-C while it boots stops
it. The project's ssh configuration (`ssh_config_path()`) names every running device, with its key
and its host key pinned at build time; `edgebench.targets.connect` reads it for the device names.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

from edgebench.devices.image import DEVICE_FILE, LAN_MAC, WAN_MAC, DeviceError, built, device_file, ensure_host_tools
from edgebench.devices.spec import CONSOLE, DEVICES, DeviceSpec, ssh_config_path
from edgebench.runtimes.qemu import kvm_unusable, qemu_binary
from edgebench.runtimes.tags import kill_pid
from edgebench.targets import LocalTarget, connect
from edgebench.waiting import wait_until

BOOT_TIMEOUT_S = {"x86_64": 300, "aarch64": 900}   # under TCG; a KVM boot takes seconds
STOP_TIMEOUT_S = 90


def state_path(spec: DeviceSpec) -> Path:
    return spec.dir / "run" / "state.json"


def _alive(pid: int, disk: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    zombie = any(line.startswith("State:") and "Z" in line for line in status.splitlines())
    return not zombie and any(str(disk).encode() in arg for arg in cmdline)


def board_running(spec: DeviceSpec) -> dict | None:
    """The state (name, pid, ports, accelerator) of whichever device runs on this board, or None."""
    try:
        state = json.loads(state_path(spec).read_text())
    except (OSError, ValueError):
        return None
    return state if _alive(state.get("pid", -1), spec.dir / "disk.raw") else None


def running(spec: DeviceSpec) -> dict | None:
    """The running device's state, or None (also when its board runs as the other device)."""
    state = board_running(spec)
    return state if state and state.get("name") == spec.name else None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise DeviceError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


def _link_up(spec: DeviceSpec) -> None:
    """The tap link, this machine's end at .1 of the device's /30 (made anew: a stale one from a
    QEMU that was killed would keep its old state)."""
    _ip("link", "del", spec.tap, check=False)
    taken = [line for line in _ip("-o", "-4", "addr", "show").stdout.splitlines()
             if f" {spec.host_address}/" in line]
    if taken:
        raise DeviceError(f"{spec.host_address} is already used on this machine ({taken[0].split()[1]}); "
                          f"device {spec.name} needs {spec.lan}: free it and run `make device` again")
    _ip("tuntap", "add", "dev", spec.tap, "mode", "tap")
    _ip("addr", "add", f"{spec.host_address}/{spec.lan.prefixlen}", "dev", spec.tap)
    _ip("link", "set", spec.tap, "up")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accelerator(spec: DeviceSpec) -> tuple[str, str]:
    """("kvm", "") where this machine can give a guest of its own architecture KVM, else ("tcg", why)."""
    if spec.foreign:
        return "tcg", f"an {spec.guest_arch} guest on a {os.uname().machine} machine is emulated"
    why = kvm_unusable(LocalTarget())
    return ("tcg", why) if why else ("kvm", "")


def qemu_argv(spec: DeviceSpec, accel: str, ssh_port: int) -> list[str]:
    run = spec.dir / "run"
    cmdline = ["root=/dev/vda", "rw", f"console={CONSOLE[spec.guest_arch]}", "panic=-1", *spec.cmdline_extra]
    cpu = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg", "-cpu", spec.cpu]
    # cache=unsafe: the guest's flushes stop at this machine's page cache (dpkg's many fsyncs took
    # most of an emulated apt-get install). What the guest wrote survives QEMU being killed; only
    # a crash of this machine would lose it, and the image is a cache that `make device` rebuilds.
    return [qemu_binary(spec.guest_arch), "-M", spec.machine, *cpu, "-smp", str(spec.cpus),
            "-m", f"{spec.memory_mb}M", "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-serial", f"file:{run / 'console.log'}",
            "-kernel", str(spec.dir / "vmlinuz"), "-initrd", str(spec.dir / "initrd.img"),
            "-append", " ".join(cmdline),
            "-drive", f"file={spec.dir / 'disk.raw'},format=raw,if=none,id=disk,cache=unsafe",
            "-device", "virtio-blk-pci,drive=disk",
            "-netdev", f"user,id=wan,hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
            "-device", f"virtio-net-pci,netdev=wan,mac={WAN_MAC},romfile=",
            "-netdev", f"tap,id=lan,ifname={spec.tap},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=lan,mac={LAN_MAC},romfile="]


def _ssh_banner(address: str, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=timeout) as s:
            s.settimeout(timeout)
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def _console_tail(spec: DeviceSpec, n: int = 8) -> str:
    try:
        lines = (spec.dir / "run" / "console.log").read_text(errors="replace").splitlines()
    except OSError:
        return "(no console output)"
    return "\n".join(line.strip() for line in lines[-n:])


def start(spec: DeviceSpec, log: Callable[[str], None] = print) -> dict:
    """Boot the built image and wait until its sshd answers with the pinned key. Idempotent."""
    state = running(spec)
    if state is not None:
        log(f"{spec.name} is running (pid {state['pid']}, {state['address']})")
        return state
    other = board_running(spec)
    if other is not None:
        raise DeviceError(f"{spec.name} boots {spec.image_name}'s disk, and {other['name']} runs on it now: "
                          f"`make device-stop NAME={other['name']}` first")
    record = built(spec)
    if record is None:
        raise DeviceError(f"device {spec.name} is not built: run `make device NAME={spec.name}`")
    if os.geteuid() != 0:
        raise DeviceError(f"starting device {spec.name} needs root (its network link is a tap device)")
    ensure_host_tools(spec, log, boot_only=True)
    run = spec.dir / "run"
    run.mkdir(parents=True, exist_ok=True)
    (run / "console.log").write_text("")
    accel, why = accelerator(spec)
    ssh_port = _free_port()
    argv = qemu_argv(spec, accel, ssh_port)
    begin, proc = time.monotonic(), None
    try:
        _link_up(spec)
        with open(run / "qemu.log", "w") as qemu_log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qemu_log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        state = {"name": spec.name, "pid": proc.pid, "address": spec.address, "ssh_port": ssh_port,
                 "accel": accel, "accel_reason": why, "argv": argv,
                 "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        state_path(spec).write_text(json.dumps(state, indent=1) + "\n")
        log(f"booting {spec.name} ({accel}{': ' + why if why else ''}); console: {run / 'console.log'}")
        deadline = begin + BOOT_TIMEOUT_S[spec.guest_arch] * (1 if accel == "tcg" else 0.2)
        _wait_for_ssh(spec, proc, record, accel, deadline - time.monotonic())
        state["ssh_seconds"] = round(time.monotonic() - begin, 1)
        state["boot_state"] = _wait_for_services(spec, deadline, log)
    except BaseException:  # Ctrl-C, SIGTERM or a failed boot: no QEMU and no link is left behind
        if proc is not None:
            kill_pid(LocalTarget(), proc.pid, grace_s=5)
            proc.wait(timeout=10)  # our child: reaped here, not left a zombie
        _cleanup(spec)
        raise
    state["boot_seconds"] = round(time.monotonic() - begin, 1)
    state_path(spec).write_text(json.dumps(state, indent=1) + "\n")
    write_ssh_config()
    log(f"{spec.name} is up in {state['boot_seconds']:.0f} s (sshd after {state['ssh_seconds']:.0f} s, then "
        f"its services): TARGET={spec.name} "
        f"(ssh -F {ssh_config_path()} {spec.name})")
    return state


def _wait_for_ssh(spec: DeviceSpec, proc: subprocess.Popen, record: dict, accel: str, timeout_s: float) -> None:
    write_known_hosts(spec, record)

    def sshd_answers() -> bool:
        if proc.poll() is not None:
            raise DeviceError(f"QEMU for {spec.name} exited ({proc.returncode}) while booting; "
                              f"{spec.dir / 'run'}/qemu.log and the console's end:\n{_console_tail(spec)}")
        return _ssh_banner(spec.address)

    if wait_until(sshd_answers, timeout_s, 1):
        write_ssh_config(extra=[spec])
        with connect(spec.name) as target:  # the pinned key and the device's key, as every run uses them
            target.write_text(DEVICE_FILE, device_file(spec, accel))
        return
    raise DeviceError(f"{spec.name} did not answer SSH within {timeout_s:.0f} s; the console's end:\n"
                      f"{_console_tail(spec)}")


def _wait_for_services(spec: DeviceSpec, deadline: float, log: Callable[[str], None]) -> str:
    """Wait until systemd has started the device's services: sshd answers well before them (under
    TCG LXD's daemon takes half a minute more), and a plan or test made in between would find
    LXD or Docker "not answering". Returns systemd's state; a boot still going at the deadline,
    or a degraded one, is said with the units concerned, and the device is used as it is."""
    with connect(spec.name) as target:
        left = max(5, int(deadline - time.monotonic()))
        r = target.run(["timeout", str(left), "systemctl", "is-system-running", "--wait"],
                       timeout=left + 15, check=False)
        boot_state = (r.stdout.strip().splitlines() or ["unknown"])[-1]
        if boot_state == "running":
            return boot_state
        def column(argv: list[str], n: int) -> list[str]:
            out = target.run(argv + ["--plain", "--no-legend", "--no-pager"], timeout=30, check=False).stdout
            return [line.split()[n] for line in out.splitlines() if len(line.split()) > n]
        units = column(["systemctl", "list-units", "--failed"], 0)
        waiting = column(["systemctl", "list-jobs"], 1)  # JOB UNIT TYPE STATE
    log(f"{spec.name}'s boot is {boot_state}" + (f"; failed units: {', '.join(units)}" if units else "")
        + (f"; still starting: {', '.join(waiting[:6])}" if waiting else "")
        + " (journalctl -b on the device says why); going on")
    return boot_state


def write_known_hosts(spec: DeviceSpec, record: dict) -> None:
    (spec.dir / "known_hosts").write_text(f"{spec.address} {record['host_key']}\n")


def write_ssh_config(extra: list[DeviceSpec] = ()) -> Path:
    """One Host block per running device (and `extra`, while it boots), for Fabric and for ssh -F."""
    blocks = []
    for spec in DEVICES.values():
        if spec in extra or running(spec) is not None:
            blocks.append(f"Host {spec.name}\n  HostName {spec.address}\n  User root\n"
                          f"  IdentityFile {spec.dir / 'id_ed25519'}\n  IdentitiesOnly yes\n"
                          f"  UserKnownHostsFile {spec.dir / 'known_hosts'}\n  StrictHostKeyChecking yes\n")
    path = ssh_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Written by edgebench (make device): the emulated devices that are running.\n"
                    + "\n".join(blocks))
    return path


def _cleanup(spec: DeviceSpec) -> None:
    _ip("link", "del", spec.tap, check=False)
    state_path(spec).unlink(missing_ok=True)
    write_ssh_config()


def stop(spec: DeviceSpec, log: Callable[[str], None] = print) -> bool:
    """Power the device off (its disk stays consistent), or kill QEMU when it does not go in time.
    True when one was running."""
    state = running(spec)
    if state is None:
        if board_running(spec) is None:  # a stale link or state of a QEMU that was killed
            _cleanup(spec)
        return False
    log(f"stopping {spec.name} (pid {state['pid']})")
    try:
        with connect(spec.name, connect_timeout_s=5) as target:
            target.run(["systemctl", "poweroff"], timeout=15, check=False)
        wait_until(lambda: running(spec) is None, STOP_TIMEOUT_S, 0.5)
    except Exception as e:  # unreachable or hung: QEMU is stopped all the same
        log(f"{spec.name} did not power off ({e}); stopping QEMU")
    finally:
        if running(spec) is not None:
            kill_pid(LocalTarget(), state["pid"], grace_s=5)
        _cleanup(spec)
    return True


def stop_all(log: Callable[[str], None] = print) -> list[str]:
    return [spec.name for spec in DEVICES.values() if stop(spec, log)]
