"""A real second "host" for SSH tests: a network namespace running its own sshd.

``ssh_host(workdir)`` builds, for the duration of a ``with`` block:

* a network namespace ``<name>-<pid>`` (``-<n>`` appended for nested calls in
  one process), with ``lo`` up;
* a veth pair: ``10.231.X.Y+1/30`` on the root-namespace side and
  ``10.231.X.Y+2/30`` inside the namespace. The /30 is derived from the
  namespace name and moved along if any interface on this machine already has
  an address in it;
* an ``/usr/sbin/sshd -D -e`` running inside the namespace, listening only on
  the namespace address, port 22, public-key authentication only, with the
  host key, client key, authorized_keys, sshd_config, known_hosts, ssh_config
  and sshd log all in ``workdir``.

The namespace has no default route and this module never enables forwarding
or NAT, so everything sent from inside it can reach only its own loopback or
the root-namespace end of the veth pair.

It is a separate *network* stack only: the filesystem, users and process
table are this machine's. Processes started over SSH run as root in this
machine's filesystem, and servers they start listen on the namespace's
loopback (reach them with ``exec_in_ns`` or through the SSH connection).

On exit, also after an exception, sshd and every process still inside the
namespace are killed and the veth pair and the namespace are deleted.
Namespaces left behind by a test process that died without cleaning up
(same ``name``, dead pid) are removed the next time ``ssh_host`` is entered.

Needs root, ``ip`` (iproute2), ``sshd`` (openssh-server) and ``ssh-keygen``;
``unavailable_reason()`` says why not when they are missing. The OpenSSH
client is needed only by tests that run ``ssh``; Fabric/paramiko does not use
it.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from ipaddress import IPv4Network, ip_interface
from pathlib import Path
from typing import Iterator

from edgebench.waiting import wait_until

__all__ = ["SSHHost", "ssh_host", "unavailable_reason", "ALIAS"]

#: The ``Host`` alias written into every generated ssh_config.
ALIAS = "edgebench-testhost"

_SUPERNET = IPv4Network("10.231.0.0/16")  # 16384 /30 blocks
_N_BLOCKS = _SUPERNET.num_addresses // 4
_CMD_TIMEOUT = 30
_READY_TIMEOUT = 10.0

_lock = threading.Lock()
_active: set[str] = set()
_seq = itertools.count(1)


@dataclass
class SSHHost:
    """A live test host; valid only inside the ``with ssh_host(...)`` block."""

    host: str  # sshd's address inside the namespace, e.g. "10.231.17.6"
    port: int  # 22
    user: str  # "root"
    key_file: Path  # client's private key (ed25519, no passphrase)
    # known_hosts with one line, "<host> ssh-ed25519 AAAA..." (the host's
    # key filed under its IP only: ssh looks keys up under HostName, not
    # under the ssh_config alias, unless HostKeyAlias is set).
    known_hosts: Path
    # ssh_config with "Host <alias>" -> HostName/User/Port/IdentityFile/
    # IdentitiesOnly/UserKnownHostsFile (+ StrictHostKeyChecking yes,
    # BatchMode yes, GlobalKnownHostsFile /dev/null). Use with ssh -F, or
    # Fabric's Config(runtime_ssh_path=...).
    ssh_config: Path
    alias: str  # the Host alias in ssh_config ("edgebench-testhost")
    netns: str  # network namespace name
    # extras
    host_side_ip: str = ""  # root-namespace end of the veth pair
    host_veth: str = ""  # root-namespace interface name
    host_public_key: str = ""  # "ssh-ed25519 AAAA..." (no comment)
    client_public_key: str = ""  # "ssh-ed25519 AAAA... comment"
    sshd_pid: int = 0
    sshd_log: Path | None = None
    sshd_config: Path | None = None
    workdir: Path | None = None
    _ip: str = field(default="ip", repr=False)

    def exec_in_ns(self, *argv: str, **kwargs) -> subprocess.CompletedProcess:
        """Run ``argv`` inside the namespace (``ip netns exec``).

        Defaults: capture_output=True, text=True, check=False, timeout=60;
        any of these (or other ``subprocess.run`` arguments) may be overridden.
        """
        opts = {"capture_output": True, "text": True, "check": False, "timeout": 60}
        opts.update(kwargs)
        return subprocess.run([self._ip, "netns", "exec", self.netns, *map(str, argv)], **opts)

    def ssh_argv(self, *remote: str) -> list[str]:
        """``ssh -F <ssh_config> <alias> [remote...]`` as an argv list."""
        return ["ssh", "-F", str(self.ssh_config), self.alias, *remote]


# ---------------------------------------------------------------- helpers


def _which(prog: str) -> str | None:
    found = shutil.which(prog)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin"):
        p = Path(d, prog)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=_CMD_TIMEOUT)
    if check and cp.returncode != 0:
        raise RuntimeError(
            f"command failed ({cp.returncode}): {' '.join(argv)}\n{cp.stdout}{cp.stderr}".rstrip()
        )
    return cp


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _netns_names(ip: str) -> list[str]:
    cp = _run([ip, "netns", "list"], check=False)
    # lines look like "name" or "name (id: 3)"
    return [ln.split()[0] for ln in cp.stdout.splitlines() if ln.strip()]


def _netns_pids(ip: str, ns: str) -> list[int]:
    cp = _run([ip, "netns", "pids", ns], check=False)
    pids = []
    for tok in cp.stdout.split():
        if tok.isdigit() and int(tok) != os.getpid():
            pids.append(int(tok))
    return pids


def _kill_netns_procs(ip: str, ns: str, grace: float = 3.0, spare: int | None = None) -> None:
    """SIGTERM, then SIGKILL, every process in ``ns`` (except ``spare``)."""
    pids = [p for p in _netns_pids(ip, ns) if p != spare]
    if not pids:
        return
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    def alive() -> list[int]:
        return [p for p in _netns_pids(ip, ns) if p != spare and _pid_alive(p)]

    if wait_until(lambda: not alive(), grace, 0.05):
        return
    for pid in alive():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_until(lambda: not [p for p in _netns_pids(ip, ns) if p != spare], grace, 0.05)


def _veth_names(ns: str) -> tuple[str, str]:
    # IFNAMSIZ is 16 including the NUL: keep names short and derived from ns.
    tag = f"{zlib.crc32(ns.encode()) & 0xFFFFFFF:07x}"
    return f"ebh{tag}", f"ebn{tag}"


def _destroy(ip: str, ns: str) -> None:
    """Kill everything in ``ns``, delete its veth pair and the namespace."""
    if ns in _netns_names(ip):
        _kill_netns_procs(ip, ns)
    host_veth, _ = _veth_names(ns)
    if Path("/sys/class/net", host_veth).exists():
        _run([ip, "link", "del", host_veth], check=False)
    if ns in _netns_names(ip):
        _run([ip, "netns", "del", ns], check=False)


def _sweep_stale(ip: str, name: str) -> None:
    """Remove namespaces ``<name>-<pid>[-n]`` whose creating process is gone."""
    pat = re.compile(rf"^{re.escape(name)}-(\d+)(?:-\d+)?$")
    for ns in _netns_names(ip):
        m = pat.match(ns)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            _destroy(ip, ns)


def _used_networks() -> list[IPv4Network]:
    out = []
    cp = _run([_which("ip") or "ip", "-o", "-4", "addr", "show"], check=False)
    for ln in cp.stdout.splitlines():
        parts = ln.split()
        if "inet" in parts:
            try:
                out.append(ip_interface(parts[parts.index("inet") + 1]).network)
            except (ValueError, IndexError):
                pass
    return out


def _pick_subnet(ns: str) -> IPv4Network:
    used = _used_networks()
    start = zlib.crc32(ns.encode()) % _N_BLOCKS
    for i in range(_N_BLOCKS):
        idx = (start + i) % _N_BLOCKS
        net = IPv4Network((int(_SUPERNET.network_address) + 4 * idx, 30))
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError(f"no free /30 left in {_SUPERNET}")


def _keygen(path: Path, comment: str) -> str:
    for p in (path, path.with_name(path.name + ".pub")):
        p.unlink(missing_ok=True)
    _run([_which("ssh-keygen") or "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    path.chmod(0o600)
    return path.with_name(path.name + ".pub").read_text().strip()


def _wait_for_sshd(proc: subprocess.Popen, host: str, port: int, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout  # also how long a banner may take to come
    last_err: Exception | None = None

    def answers() -> bool:
        nonlocal last_err
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with status {proc.returncode}\n{_tail(log)}")
        try:
            with socket.create_connection((host, port), timeout=1.0) as s:
                s.settimeout(max(0.5, deadline - time.monotonic()))
                banner = s.recv(256)
            if banner.startswith(b"SSH-"):
                return True
            last_err = RuntimeError(f"unexpected banner {banner!r}")
        except OSError as e:
            last_err = e
        return False

    if wait_until(answers, timeout, 0.05):
        return
    raise RuntimeError(
        f"sshd in netns did not accept connections on {host}:{port} within {timeout:.0f} s "
        f"(last error: {last_err})\n{_tail(log)}"
    )


def _tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no sshd log)"
    return "sshd log tail:\n" + "\n".join(lines[-n:])


# ---------------------------------------------------------------- public API


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """None if this machine can run ``ssh_host``; otherwise a reason to skip."""
    if os.name != "posix" or not Path("/proc/self/ns/net").exists():
        return "needs Linux network namespaces"
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth, sshd)"
    ip = _which("ip")
    if not ip:
        return "`ip` not found (apt-get install iproute2)"
    if not Path("/usr/sbin/sshd").is_file():
        return "/usr/sbin/sshd not found (apt-get install openssh-server)"
    if not _which("ssh-keygen"):
        return "ssh-keygen not found (apt-get install openssh-client)"
    probe = f"ebprobe-{os.getpid()}"
    hv, nv = f"ebph{os.getpid() % 100000}", f"ebpn{os.getpid() % 100000}"
    try:
        cp = _run([ip, "netns", "add", probe], check=False)
        if cp.returncode != 0:
            return f"cannot create a network namespace: {cp.stderr.strip()}"
        cp = _run([ip, "netns", "exec", probe, "true"], check=False)
        if cp.returncode != 0:
            return f"cannot enter a network namespace: {cp.stderr.strip()}"
        cp = _run([ip, "link", "add", hv, "type", "veth", "peer", "name", nv, "netns", probe], check=False)
        if cp.returncode != 0:
            return f"cannot create a veth pair: {cp.stderr.strip()}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"network namespace probe failed: {e}"
    finally:
        _run([ip, "link", "del", hv], check=False)
        _run([ip, "netns", "del", probe], check=False)
    return None


@contextmanager
def ssh_host(workdir: Path, name: str = "ebtest") -> Iterator[SSHHost]:
    """Start a namespaced sshd; yield an :class:`SSHHost`; tear it all down.

    ``workdir`` receives the keys, configs and ``sshd.log`` (kept afterwards
    for post-mortems). Raises RuntimeError (with the sshd log tail) if sshd
    does not accept connections within 10 s.
    """
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(f"cannot create SSH test host: {reason}")
    ip = _which("ip")
    assert ip
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    with _lock:
        _sweep_stale(ip, name)
        ns = f"{name}-{os.getpid()}"
        if ns in _active:
            ns = f"{ns}-{next(_seq)}"
        _active.add(ns)

    proc: subprocess.Popen | None = None
    log_fh = None
    try:
        _destroy(ip, ns)  # a leftover with our own name is by definition stale
        with _lock:
            net = _pick_subnet(ns)
        host_side = str(net.network_address + 1)
        ns_side = str(net.network_address + 2)
        hv, nv = _veth_names(ns)

        _run([ip, "netns", "add", ns])
        _run([ip, "link", "add", hv, "type", "veth", "peer", "name", nv, "netns", ns])
        _run([ip, "addr", "add", f"{host_side}/30", "dev", hv])
        _run([ip, "link", "set", hv, "up"])
        _run([ip, "netns", "exec", ns, "ip", "link", "set", "lo", "up"])
        _run([ip, "netns", "exec", ns, "ip", "addr", "add", f"{ns_side}/30", "dev", nv])
        _run([ip, "netns", "exec", ns, "ip", "link", "set", nv, "up"])

        host_key = workdir / "ssh_host_ed25519_key"
        client_key = workdir / "client_ed25519_key"
        host_pub = _keygen(host_key, f"edgebench-hostkey@{ns}")
        client_pub = _keygen(client_key, f"edgebench-client@{ns}")
        host_pub_nocomment = " ".join(host_pub.split()[:2])

        authorized = workdir / "authorized_keys"
        authorized.write_text(client_pub + "\n")
        authorized.chmod(0o600)

        port, user = 22, "root"
        known_hosts = workdir / "known_hosts"
        kh_name = ns_side if port == 22 else f"[{ns_side}]:{port}"
        known_hosts.write_text(f"{kh_name} {host_pub_nocomment}\n")

        pidfile = workdir / "sshd.pid"
        sshd_config = workdir / "sshd_config"
        sshd_config.write_text(
            "\n".join(
                [
                    f"ListenAddress {ns_side}",
                    f"Port {port}",
                    f"HostKey {host_key}",
                    f"PidFile {pidfile}",
                    f"AuthorizedKeysFile {authorized}",
                    "PermitRootLogin prohibit-password",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "StrictModes no",
                    "UseDNS no",
                    "PrintMotd no",
                    "PrintLastLog no",
                    "X11Forwarding no",
                    "AllowTcpForwarding yes",
                    "MaxStartups 64",
                    "MaxSessions 64",
                    "LogLevel VERBOSE",
                    "Subsystem sftp internal-sftp",
                    "",
                ]
            )
        )

        ssh_config = workdir / "ssh_config"
        ssh_config.write_text(
            "\n".join(
                [
                    f"Host {ALIAS}",
                    f"    HostName {ns_side}",
                    f"    User {user}",
                    f"    Port {port}",
                    f"    IdentityFile {client_key}",
                    "    IdentitiesOnly yes",
                    f"    UserKnownHostsFile {known_hosts}",
                    "    GlobalKnownHostsFile /dev/null",
                    "    StrictHostKeyChecking yes",
                    "    BatchMode yes",
                    "    ConnectTimeout 10",
                    "",
                ]
            )
        )

        # sshd insists on its privilege-separation directory (root-owned,
        # not group/world-writable). Shared with any system sshd; harmless.
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)

        sshd_log = workdir / "sshd.log"
        log_fh = open(sshd_log, "ab")
        # nsenter (not `ip netns exec`, which mounts a fresh /sys and so hides the cgroup
        # filesystem) joins only the network namespace and execs sshd in place: proc.pid is sshd.
        proc = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{ns}", "/usr/sbin/sshd", "-D", "-e", "-f", str(sshd_config)],
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=log_fh,
            start_new_session=True,
        )
        _wait_for_sshd(proc, ns_side, port, sshd_log, _READY_TIMEOUT)

        yield SSHHost(
            host=ns_side,
            port=port,
            user=user,
            key_file=client_key,
            known_hosts=known_hosts,
            ssh_config=ssh_config,
            alias=ALIAS,
            netns=ns,
            host_side_ip=host_side,
            host_veth=hv,
            host_public_key=host_pub_nocomment,
            client_public_key=client_pub,
            sshd_pid=proc.pid,
            sshd_log=sshd_log,
            sshd_config=sshd_config,
            workdir=workdir,
            _ip=ip,
        )
    finally:
        try:
            if proc is not None and proc.poll() is None:
                # Sessions and anything started over SSH go first, while the
                # listening sshd is still alive to reap its per-connection
                # children (otherwise they linger as zombies until init
                # gets to them).
                _kill_netns_procs(ip, ns, spare=proc.pid)
                time.sleep(0.1)
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
            _destroy(ip, ns)
        finally:
            if log_fh is not None:
                log_fh.close()
            with _lock:
                _active.discard(ns)
