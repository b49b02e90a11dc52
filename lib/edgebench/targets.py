"""The device under test: the local machine (the default) or a host reached over SSH.

Both kinds run the same shell command strings, so the localhost path exercises exactly
what a remote run does. Commands are given as argv lists and quoted here; callers that
need shell syntax build it from `shlex.quote`d parts (see `sh`).

The module holds the Target interface, its two kinds (LocalTarget, SSHTarget), the facts every
run records about a device (`facts`, from scripts/target_facts.sh) and `connect`, which picks the
kind from a name. It is one module because the two kinds are the interface's only implementations
and must agree on every detail of running a command (quoting, timeouts, a killed command's exit
status as 128 + the signal, a host that stops answering): side by side, a change to one is seen
against the other.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from edgebench.devices.spec import is_device, ssh_config_path
from edgebench.errors import ConfigError, RemoteCommandError, TargetUnreachable
from edgebench.scripts import shell_script

LOCAL_NAMES = ("", "local", "localhost")
DEFAULT_CONNECT_TIMEOUT_S = 10
DEFAULT_COMMAND_TIMEOUT_S = 120
# How long a command waits for the host to open an SSH channel (paramiko's default is an hour).
# A host that keeps its TCP connection but answers nothing (an emulated device whose guest kernel
# locked up under TCG) otherwise held every later command, and so Ctrl-C's clean-up, for an hour each.
DEFAULT_CHANNEL_TIMEOUT_S = 120


def sh(argv: Sequence[str]) -> str:
    """Quote an argv list into one shell word sequence. Every parameter goes through here."""
    return shlex.join(str(a) for a in argv)


@dataclass
class CommandResult:
    host: str
    command: str
    stdout: str
    stderr: str
    exit_code: int | None  # None: timed out
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def check(self) -> "CommandResult":
        if not self.ok:
            raise RemoteCommandError(self.host, self.command, self.exit_code, self.stderr, self.stdout)
        return self


# Every fact in one round trip (the script says how a missing tool shows); the fleet driver runs it
# on every device at once.
FACTS_SCRIPT = shell_script("target_facts.sh")

_INT_FACTS = ("cores", "cores_online", "memory_kb", "swap_kb", "uid", "cgroup_version", "perf_event_paranoid",
              "llc_kib")


def parse_facts(text: str) -> dict:
    facts: dict = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        facts[key.strip()] = value or None
    for key in _INT_FACTS:
        if facts.get(key) is not None:
            try:
                facts[key] = int(facts[key])
            except ValueError:
                facts[key] = None
    if facts.get("memory_kb"):
        facts["memory_mb"] = round(facts["memory_kb"] / 1024)
    if facts.get("swap_kb") is not None:
        facts["swap_mb"] = round(facts["swap_kb"] / 1024)
    return facts


class Target(ABC):
    """Somewhere commands run. Subclasses provide `_exec`, `put` and `get`."""

    name: str
    is_local: bool

    def __init__(self, command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S):
        self.command_timeout_s = command_timeout_s
        self._facts: dict | None = None

    # -- commands -----------------------------------------------------------------
    def run(self, command: Sequence[str] | str, *, timeout: float | None = None,
            check: bool = True, stdin: str | None = None) -> CommandResult:
        """Run argv (quoted here) or a shell string the library built from quoted parts."""
        cmd = command if isinstance(command, str) else sh(command)
        result = self._exec(cmd, timeout or self.command_timeout_s, stdin)
        return result.check() if check else result

    @abstractmethod
    def _exec(self, cmd: str, timeout: float, stdin: str | None) -> CommandResult: ...

    @abstractmethod
    def put(self, local: Path | str, remote: str) -> None: ...

    @abstractmethod
    def get(self, remote: str, local: Path | str) -> None: ...

    def write_text(self, remote: str, text: str) -> None:
        self.run(f"mkdir -p {shlex.quote(str(Path(remote).parent))} && cat > {shlex.quote(remote)}",
                 stdin=text)

    def read_text(self, remote: str, missing_ok: bool = False) -> str | None:
        r = self.run(["cat", remote], check=not missing_ok)
        return r.stdout if r.ok else None

    def which(self, tool: str) -> str | None:
        r = self.run(f"command -v {shlex.quote(tool)}", check=False)
        return r.stdout.strip() or None if r.ok else None

    def upload_if_changed(self, local: Path, remote: str, mode: str | None = None) -> str:
        """Copy a file unless the target already has identical bytes; returns the remote path.
        The new file is renamed into place: a program another run is executing from that path
        (a probe, an app) keeps running instead of failing the copy with "Text file busy"."""
        digest = hashlib.sha256(Path(local).read_bytes()).hexdigest()
        r = self.run(["sha256sum", remote], check=False)
        if not (r.ok and r.stdout.split()[:1] == [digest]):  # sha256sum may print nothing
            self.run(["mkdir", "-p", str(Path(remote).parent)])
            staged = f"{remote}.part-{os.getpid()}-{secrets.token_hex(3)}"
            self.put(local, staged)
            if mode:
                self.run(["chmod", mode, staged])
            self.run(["mv", "-f", staged, remote])
        elif mode:
            self.run(["chmod", mode, remote])
        return remote

    def free_port(self, port: int, tries: int = 64) -> int:
        """`port`, or the next of `tries` that nothing listens on here. Only listeners count: the
        connections an earlier server on the port accepted (nginx's fixed port after a point) do
        not stop the next one binding it. An outgoing connection's port does, and can be taken
        after this check anyway: `Runtime.start` then tries the next port."""
        r = self.run(["ss", "-Htln"], check=False)
        if not r.ok:  # no ss: what starts there will say what holds the port
            return port
        busy = set()
        for line in r.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[3].rsplit(":", 1)[-1].isdigit():
                busy.add(int(fields[3].rsplit(":", 1)[-1]))
        for candidate in range(port, port + tries):
            if candidate not in busy:
                return candidate
        raise ConfigError(f"ports {port}-{port + tries - 1} on {self.name} are all in use; "
                          "stop what listens there")

    # -- facts --------------------------------------------------------------------
    def facts(self, refresh: bool = False) -> dict:
        """Architecture, cores, memory, kernel, cgroup version, swap, KVM, governor, tool versions."""
        if self._facts is None or refresh:
            r = self.run(["sh", "-c", FACTS_SCRIPT], timeout=60)
            self._facts = parse_facts(r.stdout)
            self._facts["target"] = self.name
        return self._facts

    @property
    def workspace(self) -> str:
        """Where edgebench keeps uploaded binaries, build contexts and logs on the target."""
        return f"{self.facts()['home'].rstrip('/')}/.cache/edgebench"

    @property
    def address(self) -> str:
        """How another host reaches this one (for load generators and URLs)."""
        return "127.0.0.1"

    @property
    def is_root(self) -> bool:
        return self.facts().get("uid") == 0

    def close(self) -> None:  # noqa: B027 - not abstract: a target with no connection has nothing to close
        """Release what the target holds open (an SSH connection); the next command opens it again."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone (communicate() may have reaped it)
        pass


class LocalTarget(Target):
    """This machine, through the same shell commands a remote target gets."""

    is_local = True

    def __init__(self, command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S):
        super().__init__(command_timeout_s)
        self.name = "local"

    def _exec(self, cmd: str, timeout: float, stdin: str | None) -> CommandResult:
        start = time.monotonic()
        # Own session, so a timeout kills the whole pipeline, not just the shell.
        proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdin=subprocess.PIPE if stdin is not None
                                else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
            # A command killed by a signal (an OOM kill's SIGKILL): 128 + the signal, as a shell and
            # an SSH target report it, not Python's negative number.
            code: int | None = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, err = proc.communicate()
            code = None
        except BaseException:  # Ctrl-C: do not leave the child running
            _kill_group(proc.pid)
            proc.wait()
            raise
        return CommandResult(self.name, cmd, out, err, code, time.monotonic() - start)

    def put(self, local, remote) -> None:
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, remote)

    def get(self, remote, local) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(remote, local)


_SPEC_RE = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>[^@:\s]+|\[[0-9a-fA-F:]+\])(?::(?P<port>\d+))?$")


def _interruptible_remote():
    """Fabric's runner, with Ctrl-C let through at once. Fabric re-raises Ctrl-C during a command
    run without a terminal, then waits for the command's output to end, that is for the command
    itself, which nothing reaches (an interrupted NPB build held the run until it finished).
    Closing the channel first ends that wait; SSHTarget then ends the command on the host."""
    from fabric.runners import Remote

    class InterruptibleRemote(Remote):
        def send_interrupt(self, interrupt):
            if not self.using_pty:
                self.channel.close()
            super().send_interrupt(interrupt)

    return InterruptibleRemote


class SSHTarget(Target):
    """A host reached with Fabric. Honours ~/.ssh/config (or `ssh_config`), verifies host keys
    against known_hosts and refuses unknown hosts unless `accept_new_host_key=True`."""

    is_local = False

    def __init__(self, spec: str, *, ssh_config: str | Path | None = None,
                 known_hosts: str | Path | None = None, key_file: str | Path | None = None,
                 accept_new_host_key: bool = False, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
                 channel_timeout_s: float = DEFAULT_CHANNEL_TIMEOUT_S):
        super().__init__(command_timeout_s)
        m = _SPEC_RE.match(spec.strip())
        if not m:
            raise ConfigError(f"target={spec!r} is not 'local', 'host', 'user@host' or 'user@host:port'")
        self.name = spec.strip()
        self._user, self._host = m.group("user"), m.group("host").strip("[]")
        self._port = int(m.group("port")) if m.group("port") else None
        self._ssh_config = ssh_config or os.environ.get("EDGEBENCH_SSH_CONFIG")
        self._known_hosts = known_hosts
        self._key_file = key_file
        self._accept_new = accept_new_host_key
        self._connect_timeout = connect_timeout_s
        self._channel_timeout = channel_timeout_s
        self._conn = None

    def _connection(self):
        if self._conn is not None:
            return self._conn
        import paramiko
        from fabric import Config, Connection

        overrides = {"runners": {"remote": _interruptible_remote()}}
        config = (Config(runtime_ssh_path=str(self._ssh_config), overrides=overrides) if self._ssh_config
                  else Config(overrides=overrides))
        connect_kwargs = {"channel_timeout": self._channel_timeout}
        if self._key_file:
            connect_kwargs["key_filename"] = str(self._key_file)
        conn = Connection(self._host, user=self._user, port=self._port, config=config,
                          connect_timeout=self._connect_timeout, connect_kwargs=connect_kwargs)
        client = conn.client
        # Fabric accepts any host key by default; edgebench does not.
        known = [Path(p).expanduser() for p in self._known_hosts_files(conn)]
        for path in known:
            if path.exists():
                client.load_host_keys(str(path))
        client.set_missing_host_key_policy(
            paramiko.AutoAddPolicy() if self._accept_new else paramiko.RejectPolicy())
        try:
            conn.open()
        except paramiko.SSHException as e:
            if "not found in known_hosts" in str(e):
                raise TargetUnreachable(
                    f"{self.name}: host key unknown ({', '.join(map(str, known)) or 'no known_hosts'}). "
                    "Connect once with ssh to check and record it, or pass accept_new_host_key=True "
                    "(like ssh's StrictHostKeyChecking=accept-new).") from None
            raise TargetUnreachable(f"{self.name}: SSH failed: {e}. Check the user, key and "
                                    "~/.ssh/config entry for this host.") from None
        except (OSError, TimeoutError) as e:
            raise TargetUnreachable(
                f"{self.name}: cannot connect ({e}). Check the address, that sshd runs there and "
                f"that the device is on; connect timeout was {self._connect_timeout:g} s.") from None
        if self._accept_new and known:
            # Like accept-new: remember the key we just trusted, so the next run verifies it.
            known[0].parent.mkdir(parents=True, exist_ok=True)
            client.save_host_keys(str(known[0]))
        self._conn = conn
        return conn

    def _known_hosts_files(self, conn) -> list[str]:
        if self._known_hosts:
            return [str(self._known_hosts)]
        files = conn.ssh_config.get("userknownhostsfile", "~/.ssh/known_hosts").split()
        return [os.path.expanduser(f) for f in files]

    @property
    def address(self) -> str:
        return self._connection().host  # HostName after ~/.ssh/config resolution

    def connect(self) -> "SSHTarget":
        self._connection()
        return self

    def _exec(self, cmd: str, timeout: float, stdin: str | None) -> CommandResult:
        from invoke.exceptions import CommandTimedOut
        import io
        import paramiko

        conn = self._connection()
        start = time.monotonic()
        # The remote shell waits for the command instead of exec'ing it, so a command killed by a
        # signal (an OOM kill's SIGKILL) ends with status 128 + the signal. Exec'd, sshd reports an
        # exit signal, which paramiko does not read: the result had no status, as if it timed out.
        # sshd starts that shell as a process group's leader: its pid, written first, is what a
        # timeout or Ctrl-C ends there (_end_command), as LocalTarget ends its command's group. The
        # command runs in a subshell of that shell, so one that execs replaces the subshell, not the
        # shell whose exit removes the file.
        group_file = f"/tmp/edgebench-command-{secrets.token_hex(6)}.pgid"
        waited = f"{{ echo $$ > {group_file}; }} 2>/dev/null; trap 'rm -f {group_file}' EXIT\n(\n{cmd}\n)\nexit $?"
        try:
            r = conn.run(waited, hide=True, warn=True, timeout=timeout,
                         in_stream=io.StringIO(stdin) if stdin is not None else False)
            if r.exited != -1:
                return CommandResult(self.name, cmd, r.stdout, r.stderr, r.exited, time.monotonic() - start)
            # -1 is paramiko's "no exit status came back": the channel closed first, as when invoke's
            # timer has closed it but its thread has not yet ended, so invoke raised no timeout.
            ended = r
        except CommandTimedOut as e:
            ended = e.result
        except KeyboardInterrupt:
            self._end_command(conn, group_file)
            raise
        except paramiko.SSHException as e:
            if "Timeout opening channel" not in str(e):
                raise
            self.close()  # the next command connects anew, and fails within the connect timeout
            raise TargetUnreachable(
                f"{self.name}: connected, but no SSH channel opened within {self._channel_timeout:g} s: the "
                "host has stopped answering (hung or overloaded; for an emulated device, its console log "
                "says which)") from None
        elapsed = time.monotonic() - start
        if self._end_command(conn, group_file):
            return CommandResult(self.name, cmd, ended.stdout, ended.stderr, None, elapsed)
        self.close()
        # The host, not the command: a row would otherwise blame the app for a host that went.
        how = (f"timed out after {timeout:g} s" if timeout is not None and elapsed >= timeout
               else "ended with no exit status")
        raise TargetUnreachable(
            f"{self.name}: a command {how}, and the host then opened no SSH channel within "
            f"{self._channel_timeout:g} s: it has stopped answering (hung or overloaded; for an emulated "
            "device, its console log says which)") from None

    @staticmethod
    def _end_command(conn, group_file: str) -> bool:
        """After a command timed out or was interrupted: end its process group on the host, and say
        whether the host ran this (waiting at most the channel timeout). Without a terminal, closing
        the command's channel signals nothing there: a timed-out probe or an interrupted build ran
        on, taking the device's CPU from the measurements after it."""
        end = (f"group=$(cat {group_file} 2>/dev/null) && kill -KILL -- -$group 2>/dev/null; "
               f"rm -f {group_file}; true")
        try:
            return conn.run(end, hide=True, warn=True, timeout=30, in_stream=False).exited == 0
        except Exception:  # a timeout, a closed transport, no channel: all say no
            return False

    def put(self, local, remote) -> None:
        self.run(["mkdir", "-p", str(Path(remote).parent)])
        self._connection().put(str(local), remote)

    def get(self, remote, local) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        self._connection().get(remote, str(local))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def device_ssh_config(name: str) -> Path:
    """The project's ssh configuration, when it names the running device `name` (make device)."""
    path = ssh_config_path()
    text = path.read_text() if path.exists() else ""
    if f"Host {name}\n" not in text:
        raise TargetUnreachable(f"device {name} is not running: start it with `make device NAME={name}` "
                                "(it is built the first time)")
    return path


def connect(spec: "str | Target | None" = "local", **ssh_options) -> Target:
    """'local' (default) -> this machine; an emulated device's name (make device) -> it, through the
    project's ssh configuration; 'user@host[:port]' or an ~/.ssh/config alias -> SSH.
    Connects at once, so an unreachable host fails before anything starts."""
    if isinstance(spec, Target):
        return spec
    if spec is None or spec.strip().lower() in LOCAL_NAMES:
        return LocalTarget()
    if is_device(spec):
        ssh_options.setdefault("ssh_config", device_ssh_config(spec.strip()))
    target = SSHTarget(spec, **ssh_options)
    target.connect()
    return target
