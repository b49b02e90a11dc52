"""What runtimes and experiments exchange: the limits asked for, the artifacts, launch plans,
running instances and batch results, each with typed fields, so that no experiment has to know
which runtime produced one (a VM's accelerator, a system container's faults before the launch)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from edgebench.apps import HTTP_READY, BuiltApp, Readiness
from edgebench.cgroups import AppliedLimits, FaultCounters
from edgebench.errors import EdgebenchError
from edgebench.tools.counters import Count


@dataclass(frozen=True)
class Limits:
    """What a run asks for. None means no limit."""
    cpus: float | None = None
    memory_mb: float | None = None
    cpuset: str | None = None        # cores to pin to ("0", "0-1"); None = no pinning
    swap: bool = True                # False: memory+swap = memory (docker --memory-swap=--memory)
    gomaxprocs: int | None = None    # set GOMAXPROCS for Go apps; None = Go's default
    # Services: one of the runtime's `network_modes` (docker: "bridge", "host"); None = its first.
    network: str | None = None

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
    # Runs when named in `runtimes`, but "auto" leaves it out, saying `reason` (a VM inside an
    # emulated device: it works, minutes per start).
    named_only: bool = False

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
    # Sizes beyond app and image that this kind of artifact has: (metric, value, unit, what).
    extra_sizes: list[tuple[str, int | None, str, str | None]] = field(default_factory=list)


@dataclass
class LaunchPlan:
    runtime: str
    app: str
    name: str                      # unique per start; container / cgroup / VM name
    argv: list[str]                # spawned by the probe (fair) or the artifact's script (published)
    port: int
    readiness: Readiness = HTTP_READY   # what the probe polls for (set from the app by `start`)
    # The launcher exits once the app runs (docker run -d). The probe then polls only after it
    # returns: see tools/probe (early connects through docker-proxy stall on ARP for 1 s).
    detaches: bool = False
    stdout_path: str = ""
    stderr_path: str = ""
    network_path: str = "loopback"
    limits: Limits = field(default_factory=Limits)
    state: dict = field(default_factory=dict)  # runtime-private (cgroup, container name)
    # Batch runs: a cgroup (path below each hierarchy's root) holding only this run's
    # processes, created before the launch and kept until stop_plan, so that its fault
    # counters can be read after the program exits. None, with the reason, where impossible.
    counting_cgroup: str | None = None
    counting_note: str = ""
    # A counting cgroup that already held processes before the launch (a system container's
    # init): its counts then, subtracted so that only the program's remain.
    faults_before_exec: FaultCounters | None = None

    @property
    def ready_url(self) -> str:
        """As seen on the target itself, where the probe runs (HTTP services)."""
        return self.readiness.url(self.port)


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
    details: dict = field(default_factory=dict)  # everything else the runtime read, kept in raw/
    accelerator: str | None = None  # VMs: kvm or tcg, read back from the VMM; None: not a VM
    pinned_to: str | None = None    # VMs: the cores every VMM thread is pinned to (not only the vCPUs)


@dataclass
class BatchOutcome:
    """What a runtime can tell about a batch run after the program exited, before it is stopped."""
    limits_applied: AppliedLimits | None = None
    oom_killed: bool | None = None
    accelerator: str | None = None   # VMs: kvm or tcg
    faults_scope: str = ""           # what the cgroup's fault counts cover, when not the program alone
    rusage_counts_missing: str = ""  # why the program's own getrusage counts are not counts
    details: dict = field(default_factory=dict)


@dataclass
class BatchResult:
    """A program run to completion. Times are taken on the target by the probe (-batch),
    from just before the launch command is spawned until it exits."""
    exit_code: int | None
    stdout: str
    stderr: str
    wall_s: float | None
    command: str
    limits_applied: AppliedLimits | None = None
    details: dict = field(default_factory=dict)
    protocol: str = "fair"
    start_unix_ns: int | None = None
    timed_out: bool = False
    launcher_rusage: dict | None = None    # of the process the probe waited for (the CLI for docker)
    cgroup_faults: FaultCounters | None = None
    perf: dict[str, Count] = field(default_factory=dict)  # event -> value or missing with reason
    perf_scope: str = ""                   # what perf counted: "cgroup ..." or "command ..."
    raw: dict = field(default_factory=dict)  # probe line, perf output, as captured
    outcome: BatchOutcome = field(default_factory=BatchOutcome)

    @property
    def oom_killed(self) -> bool | None:
        return self.outcome.oom_killed

    @property
    def accelerator(self) -> str | None:
        return self.outcome.accelerator

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


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
    """The app did not become ready; the message carries the runtime's own reason. `timed_out`:
    it was still starting when the timeout came (nothing died, no memory thrash seen), so on a
    slow device a longer wait might have seen it ready."""

    def __init__(self, message: str, plan: LaunchPlan | None = None, probe: ProbeResult | None = None,
                 timed_out: bool = False):
        super().__init__(message)
        self.plan, self.probe, self.timed_out = plan, probe, timed_out
