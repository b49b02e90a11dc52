"""The interface every runtime implements.

A runtime packages an app once (untimed), then starts it any number of times with limits
and a port. Starting is split so that time to ready can be measured the same way for all:
`launch_plan` does the untimed preparation and returns the argv that launches the app;
the probe on the target spawns that argv and polls the port; `attach` then resolves the
running instance and reads its limits back from the kernel (cgroup) or the VM.

The same shape fits a VM runtime (package = build a disk image; plan argv = the VMM or ops
command; attach = find QEMU's PID and read its -smp/-m) and a system container (package =
image import; plan argv = `lxc start` or `lxc exec`).
"""

from __future__ import annotations

import json
import shlex
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import ClassVar

from edgebench.apps import BuiltApp, place_probe
from edgebench.cgroups import AppliedLimits
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.targets import Target, sh

# <= 1 ms as the protocol asks; finer, because the lag is up to one interval plus one request.
PROBE_INTERVAL = "200us"
DEFAULT_READY_TIMEOUT_S = 60
WATCHDOG_S = 1.0  # how often a detached app's liveness is checked while the probe waits


@dataclass(frozen=True)
class Limits:
    """What a run asks for. None means no limit."""
    cpus: float | None = None
    memory_mb: float | None = None
    cpuset: str | None = None        # cores to pin to ("0", "0-1"); None = no pinning
    swap: bool = True                # False: memory+swap = memory (docker --memory-swap=--memory)
    gomaxprocs: int | None = None    # set GOMAXPROCS for Go apps; None = Go's default

    @property
    def any(self) -> bool:
        # `swap` only means something next to a memory limit.
        return any(v is not None for v in (self.cpus, self.memory_mb, self.cpuset))

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass
class Artifact:
    """What a runtime runs: a binary path, an image tag, a disk image."""
    runtime: str
    app: str
    ref: str                       # path or image reference on the target
    size_bytes: int                # the artifact as stored (image size, file size)
    raw_size_bytes: int            # the app itself (binary or script bundle)
    built: BuiltApp
    build: str = "native"          # how it was made: native, offline, published, ...
    details: dict = field(default_factory=dict)


@dataclass
class LaunchPlan:
    runtime: str
    app: str
    name: str                      # unique per start; container / cgroup / VM name
    argv: list[str]                # spawned by the probe (fair) or the artifact's script (published)
    port: int
    ready_path: str = "/io"
    # The launcher exits once the app runs (docker run -d). The probe then polls only after it
    # returns: see tools/probe (early connects through docker-proxy stall on ARP for 1 s).
    detaches: bool = False
    stdout_path: str = ""
    stderr_path: str = ""
    network_path: str = "loopback"
    limits: Limits = field(default_factory=Limits)
    state: dict = field(default_factory=dict)  # runtime-private (cgroup, container name)

    @property
    def ready_url(self) -> str:
        """As seen on the target itself, where the probe runs."""
        return f"http://127.0.0.1:{self.port}{self.ready_path}"


@dataclass
class Instance:
    runtime: str
    app: str
    name: str
    port: int
    url: str                       # base URL as seen on the target
    pid: int | None
    limits_requested: Limits
    limits_applied: AppliedLimits | None
    network_path: str
    plan: LaunchPlan
    details: dict = field(default_factory=dict)


@dataclass
class BatchResult:
    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float
    command: str
    limits_applied: AppliedLimits | None = None
    details: dict = field(default_factory=dict)


@dataclass
class ProbeResult:
    start_unix_ns: int | None
    first_connect_unix_ns: int | None
    ready_unix_ns: int | None
    ready_after_ns: int | None
    attempts: int
    pid: int | None
    launcher_exit_code: int | None
    error: str | None
    raw: str
    command: str

    @classmethod
    def parse(cls, stdout: str, command: str) -> "ProbeResult":
        line = stdout.strip().splitlines()[-1] if stdout.strip() else "{}"
        d = json.loads(line)
        return cls(d.get("start_unix_ns"), d.get("first_connect_unix_ns"), d.get("ready_unix_ns"),
                   d.get("ready_after_ns"), d.get("attempts", 0), d.get("pid"),
                   d.get("launcher_exit_code"), d.get("error"), stdout, command)


class StartFailed(EdgebenchError):
    """The app did not become ready; the message carries the runtime's own reason."""

    def __init__(self, message: str, plan: LaunchPlan | None = None, probe: ProbeResult | None = None):
        super().__init__(message)
        self.plan, self.probe = plan, probe


class Runtime(ABC):
    name: ClassVar[str]
    # Below this a runtime cannot start an app at all; refused before anything starts.
    min_memory_mb: ClassVar[float] = 4

    def __init__(self, target: Target, run_tag: str | None = None):
        self.target = target
        self.run_tag = run_tag or f"adhoc-{uuid.uuid4().hex[:8]}"
        self._live: dict[str, Instance | LaunchPlan] = {}
        self._seq = 0

    # -- what each runtime provides ------------------------------------------------
    @abstractmethod
    def availability(self) -> Availability:
        """Can this runtime run on the target? If not, the reason names what to install or start."""

    @abstractmethod
    def package(self, built: BuiltApp, build: str = "offline") -> Artifact:
        """Make the artifact once (untimed) and measure its size."""

    @abstractmethod
    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        """Untimed preparation, then the argv whose spawning is 'the launch'."""

    @abstractmethod
    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        """After the launch: find the running app and read its limits back."""

    @abstractmethod
    def app_output(self, instance: Instance) -> str:
        """The app's stdout so far (its first line is its own 'listening' clock reading)."""

    @abstractmethod
    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        """Stop whatever the plan launched and release what it prepared. Idempotent."""

    @abstractmethod
    def run_batch(self, artifact: Artifact, args: list[str], limits: Limits,
                  timeout_s: float = 600) -> BatchResult:
        """Run a program to completion under limits."""

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        """Why a launch died (OOM kill, exit status), if the runtime can tell."""
        return None

    # -- shared mechanics ------------------------------------------------------------
    def check_limits(self, app: str, limits: Limits) -> None:
        if limits.memory_mb is not None and limits.memory_mb < self.min_memory_mb:
            raise ConfigError(f"memory {limits.memory_mb:g} MiB is below what {self.name} can start "
                              f"{app} with (minimum {self.min_memory_mb:g} MiB); raise the memory limit")
        cores = self.target.facts().get("cores")
        if limits.cpus is not None and cores and limits.cpus > cores:
            raise ConfigError(f"cpus={limits.cpus:g} is more than {self.target.name} has ({cores}); "
                              f"ask for at most {cores}")

    def new_name(self, app: str) -> str:
        self._seq += 1
        return f"eb-{self.run_tag}-{self.name}-{app}-{self._seq}"

    def logs_dir(self) -> str:
        return f"{self.target.workspace}/logs/{self.run_tag}"

    def start(self, artifact: Artifact, limits: Limits, port: int,
              timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> tuple[Instance, ProbeResult]:
        """Launch through the probe (the same path for every runtime) and wait until ready."""
        probe = place_probe(self.target)
        plan = self.launch_plan(artifact, limits, port)
        self._live[plan.name] = plan
        cmd = [probe, "-url", plan.ready_url, "-interval", PROBE_INTERVAL, "-timeout", f"{timeout_s:g}s",
               "-stdout", plan.stdout_path, "-stderr", plan.stderr_path,
               *(["-after-launcher"] if plan.detaches else []), "--", *plan.argv]
        try:
            if plan.detaches:
                result = self._probe_with_watchdog(cmd, plan, timeout_s)
            else:
                # The probe sees the app's own exit (it is the launcher's child), so it fails fast.
                r = self.target.run(cmd, timeout=timeout_s + 30, check=False)
                try:
                    result = ProbeResult.parse(r.stdout, r.command)
                except (ValueError, IndexError):
                    raise StartFailed(f"probe gave no result (exit {r.exit_code}): {r.stderr[-500:]}", plan)
            if result.error or result.ready_unix_ns is None:
                reason = self.failure_reason(plan) or result.error or "not ready"
                raise StartFailed(f"{self.name}/{plan.app} did not become ready: {reason}", plan, result)
            instance = self.attach(plan, result.pid)
        except BaseException:
            self.stop_plan(plan, None)
            self._live.pop(plan.name, None)
            raise
        self._live[plan.name] = instance
        return instance, result

    def _probe_with_watchdog(self, cmd: list[str], plan: LaunchPlan, timeout_s: float) -> ProbeResult:
        """For detaching launchers: the app is not the probe's child, and a proxy may keep
        accepting connections after it died (docker-proxy). Run the probe in the background and,
        between waits of up to WATCHDOG_S for its answer, ask the runtime whether the app died."""
        out, err = f"{self.logs_dir()}/{plan.name}.probe", f"{self.logs_dir()}/{plan.name}.probe-err"
        pid = int(self.target.run(f"{sh(cmd)} >{shlex.quote(out)} 2>{shlex.quote(err)} </dev/null & echo $!")
                  .stdout.strip())
        deadline = time.monotonic() + timeout_s + 10
        polls = max(1, int(WATCHDOG_S / 0.02))
        try:
            while True:
                r = self.target.run(["sh", "-c", f'for i in $(seq {polls}); do [ -s "$1" ] && '
                                     '{ cat "$1"; exit 0; }; sleep 0.02; done; exit 1', "wait-probe", out],
                                    check=False)
                if r.ok:
                    return ProbeResult.parse(r.stdout, sh(cmd))
                died = self.died(plan)
                if died:
                    raise StartFailed(f"{self.name}/{plan.app} did not become ready: {died}", plan)
                if time.monotonic() > deadline:
                    raise StartFailed(f"probe gave no result within {timeout_s:g} s", plan)
        finally:
            self.target.run(["kill", "-9", str(pid)], check=False)

    def died(self, plan: LaunchPlan) -> str | None:
        """Why a detached app is already gone, or None while it may still become ready."""
        return None

    def stop(self, instance: Instance) -> None:
        self.stop_plan(instance.plan, instance.pid)
        self._live.pop(instance.name, None)

    def cleanup(self) -> None:
        """Stop everything this runtime object started. Called in `finally` by every experiment."""
        for name, item in list(self._live.items()):
            plan = item.plan if isinstance(item, Instance) else item
            pid = item.pid if isinstance(item, Instance) else None
            try:
                self.stop_plan(plan, pid)
            finally:
                self._live.pop(name, None)

    def listen_unix_ns(self, instance: Instance) -> int | None:
        """The app's own clock reading right after it started listening."""
        return parse_listen_line(self.app_output(instance))


def parse_listen_line(output: str) -> int | None:
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and '"listening"' in line:
            try:
                return int(json.loads(line)["unix_ns"])
            except (ValueError, KeyError, TypeError):
                return None
    return None


def is_alive(target: Target, pid: int) -> bool:
    """Running and not a zombie (an orphan's zombie lingers where PID 1 does not reap)."""
    r = target.run(["sh", "-c", 's=$(awk \'/^State:/{print $2}\' /proc/"$1"/status 2>/dev/null); '
                    '[ -n "$s" ] && [ "$s" != Z ]', "is-alive", str(pid)], check=False)
    return r.ok


def wait_until_gone(target: Target, pid: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(target, pid):
            return True
        time.sleep(0.05)
    return False


def kill_pid(target: Target, pid: int, grace_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited after grace_s."""
    target.run(["kill", "-TERM", str(pid)], check=False)
    if not wait_until_gone(target, pid, grace_s):
        target.run(["kill", "-KILL", str(pid)], check=False)
        wait_until_gone(target, pid, 2.0)

