"""The interface every runtime implements (the records it returns are in contract.py).

A runtime packages an app once (untimed), then starts it any number of times with limits
and a port. Starting is split so that time to ready can be measured the same way for all:
`launch_plan` does the untimed preparation and returns the argv that launches the app;
the probe on the target spawns that argv and polls the port; `attach` then resolves the
running instance and reads its limits back from the kernel (cgroup) or the VM.

The same shape fits a VM runtime (package = build a disk image; plan argv = the VMM or ops
command; attach = find QEMU's PID and read its -smp/-m) and a system container (package =
image import; plan argv = `lxc start` or `lxc exec`).

The module holds Runtime: the methods every runtime implements, and the parts all of them share
(checking limits, starting with a port retry and a watchdog, batch runs through tools/steps, the
counting cgroup), with the helpers those use. It is one module because it is the contract: a
runtime author reads it top to bottom to see both what to write and what is done for them, and a
shared step changed here changes for every runtime at once.
"""

from __future__ import annotations

import json
import shlex
import uuid
from abc import ABC, abstractmethod
from typing import ClassVar

from edgebench.apps import BuiltApp, place_probe
from edgebench.cgroups import FaultCounters, NativeCgroup, create_counting_cgroup, read_fault_counters
from edgebench.errors import BelowMinimum, ConfigError, EdgebenchError
from edgebench.provisioning.needs import Preparation, TargetNeeds
from edgebench.python_apps import python_env
from edgebench.runtimes.contract import (Artifact, Availability, BatchOutcome, BatchResult, Instance, LaunchPlan,
                                         Limits, ProbeResult, StartFailed)
from edgebench.runtimes.tags import run_tag_prefix
from edgebench.targets import Target, sh
from edgebench.tools.counters import EVENTS, Count, PerfSupport, parse_perf_csv, perf_stat_argv, perf_support
from edgebench.waiting import wait_until

# <= 1 ms as the protocol asks; finer, because the lag is up to one interval plus one request.
PROBE_INTERVAL = "200us"
DEFAULT_READY_TIMEOUT_S = 60
# On an emulated device (`make device`, QEMU under TCG) a start takes 10-50 times what it takes on the
# hardware the device stands for, and more while its host is busy: node-http in Docker passed 60 s on
# debian-v2, LXD's node-http on 0.5 CPU too. There the experiments' ready timeouts, margins for
# telling a failed start from a slow one, are this many times longer, so a slow start is measured.
EMULATED_READY_FACTOR = 5
# How the probe says the timeout came first (tools/probe: exit 2).
PROBE_TIMEOUTS = ("not ready after", "launcher still running after")
WATCHDOG_S = 1.0  # how often a detached app's liveness is checked while the probe waits
PORT_TRIES = 64   # ports tried after a busy one
# What a start says when another program took its port between the check and the bind (Docker's
# proxy, LXD's proxy device, a native app, QEMU's user-mode network for a VM's forwarded port);
# such a start is tried again on the next free port.
PORT_TAKEN = ("address already in use", "port is already allocated", "could not set up host forwarding rule")
PORT_RACES = 3    # starts tried again after their port was taken


class Runtime(ABC):
    name: ClassVar[str]
    # The colour this runtime has in every figure (the registry's order is the figures' order).
    colour: ClassVar[str] = "grey"
    # Below this a runtime cannot start an app at all; refused before anything starts.
    min_memory_mb: ClassVar[float] = 4
    # App languages (apps.App.language) this runtime can run.
    languages: ClassVar[tuple[str, ...]] = ("go", "node", "tool", "python")
    # Why the app's own clock readings cannot be compared with the target's; None: they can.
    foreign_clock: ClassVar[str | None] = None
    # How it can package an app (`package(build=...)`); the first is what every experiment uses
    # unless the user asks for another one this runtime has (docker_build="published").
    build_modes: ClassVar[tuple[str, ...]] = ("native",)
    # A batch program writes its scratch files inside the runtime's own filesystem, unless the
    # runtime shares the host's (then: a folder in the target's workspace, /tmp may be tmpfs).
    shares_host_filesystem: ClassVar[bool] = False
    # How it can connect a service to the network, asked for with Limits.network; the first is
    # the default. "host": the app uses the host's own network stack. () : one way only, its own
    # (a proxy device, a VM's user-mode network); LaunchPlan.network_path says which.
    network_modes: ClassVar[tuple[str, ...]] = ()
    # Chosen by runtimes="auto" where available; False: only when named (a variant of another).
    in_auto: ClassVar[bool] = True
    # Its memory limit is a cgroup's, which a kernel without the memory controller (a stock
    # Raspberry Pi OS) accepts and does not apply; False where it needs none (a VM's -m).
    memory_by_cgroup: ClassVar[bool] = True
    # What it needs on a target (packages and what runs them, versions to record): provisioning,
    # its table and meta.json iterate the registry's declarations (edgebench.provisioning.parts).
    needs: ClassVar[TargetNeeds | None] = None

    def __init__(self, target: Target, run_tag: str | None = None):
        self.target = target
        # Everything it starts is named after the run tag (runtimes/tags.py).
        self.run_tag = run_tag_prefix() + (run_tag or f"adhoc-{uuid.uuid4().hex[:8]}")
        self._live: dict[str, Instance | LaunchPlan] = {}
        self._seq = 0

    # -- what each runtime provides ------------------------------------------------
    @classmethod
    def target_needs(cls, arch: str) -> TargetNeeds:
        """What it needs on a target of this architecture."""
        return cls.needs or TargetNeeds(f"{cls.name} runtime")

    @classmethod
    def prepare_target(cls, prep: Preparation) -> None:
        """Start what must run once the packages are there (`make provision`); nothing by default."""
        return None

    @classmethod
    def runs(cls, app) -> bool:
        """Whether this runtime can run `app` (apps.App) at all; asked before anything starts."""
        return app.language in cls.languages

    @classmethod
    def runs_what(cls) -> str:
        """What `runs` accepts, in words for an error message."""
        return f"{', '.join(cls.languages)} apps"

    @classmethod
    def leftovers(cls, target: Target, tag_prefix: str = "") -> list[str]:
        """What runs whose tag starts with `tag_prefix` left on the target, of the kinds only this
        runtime makes (containers, instances); cgroups and tagged processes: tags.leftovers."""
        return []

    @abstractmethod
    def availability(self) -> Availability:
        """Can this runtime run on the target? If not, the reason names what to install or start."""

    def describe(self) -> str:
        """One line for the provisioning table once it is available: versions, mode."""
        return ""

    @abstractmethod
    def package(self, built: BuiltApp, build: str = "offline") -> Artifact:
        """Make the artifact once (untimed) and measure its size."""

    @abstractmethod
    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        """Untimed preparation, then the argv whose spawning is 'the launch'."""

    def published_launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        """The launch as the papers' artifact timed it; the same as `launch_plan` unless the
        artifact's command did more (ops run rebuilt the Nanos image every time)."""
        return self.launch_plan(artifact, limits, port)

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
    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        """Untimed preparation of a batch run; argv runs the program to completion in the
        foreground. Sets counting_cgroup (created by `prepare_counting`) where it can."""

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        """After the program exited, before stop_plan: limits it ran under, and what else the
        runtime can tell (OOM kill, accelerator, what its counts cover)."""
        return BatchOutcome()

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        """Why a launch died (OOM kill, exit status), if the runtime can tell."""
        return None

    def memory_thrash(self, plan: LaunchPlan) -> str | None:
        """While the app still runs but never became ready: whether its memory limit thrashes
        (cgroups.memory_thrash), if the runtime can read its cgroup."""
        return None

    # -- batch programs ----------------------------------------------------------------
    def perf_support(self, events: tuple[str, ...]):
        """Asked once per runtime object: perf's answer does not change during a run."""
        cache = self.__dict__.setdefault("_perf_support", {})
        if events not in cache:
            cache[events] = perf_support(self.target, events)
        return cache[events]

    def counting_cgroup_name(self, plan_name: str) -> str:
        return f"edgebench/{plan_name}"

    def prepare_counting(self, relpath: str) -> str | None:
        """Create the counting cgroup; None (and the caller notes why) without root."""
        if not self.target.is_root:
            return None
        create_counting_cgroup(self.target, relpath)
        return relpath

    def count_in_cgroup(self, plan: LaunchPlan, cgroup: NativeCgroup | None = None) -> None:
        """Run the plan's command inside `cgroup`, or a new one without limits, where its faults
        are counted after it exits; without root, note why there is none."""
        if cgroup is None:
            if not self.target.is_root:
                plan.counting_note = f"a cgroup needs root on {self.target.name}"
                return
            cgroup = NativeCgroup(self.target, plan.name)
            cgroup.create(None, None, None, True)
        plan.argv = cgroup.wrap(plan.argv)
        plan.state["cgroup"] = cgroup
        plan.counting_cgroup = cgroup.relpath

    def run_batch(self, artifact: Artifact, args: list[str], limits: Limits, timeout_s: float = 600,
                  protocol: str = "fair", events=EVENTS) -> BatchResult:
        """Run a program to completion under limits, timed on the target, and count it.

        fair: perf counts the run's cgroup system-wide (`perf stat -a -G`) around the probe, so
        only the workload (and a container's init) is counted, whoever launched it.
        published: the paper's `perf stat -- COMMAND` inside the timed span: the launcher
        process tree is counted (for `docker run`, the client, not the container).
        The cgroup's memory.stat faults are read in both."""
        if protocol not in ("fair", "published"):
            raise ConfigError(f"protocol {protocol!r} unknown; use 'fair' or 'published'")
        self.check_limits(artifact.app, limits)
        probe = place_probe(self.target)
        # No events: nothing counted (a benchmark that reports its own numbers needs no perf).
        support = self.perf_support(tuple(events)) if events else PerfSupport(False, False, reason="not asked")
        plan = self.batch_plan(artifact, args, limits)
        self._live[plan.name] = plan
        logs = self.logs_dir()
        perf_out = f"{logs}/{plan.name}.perf"
        timed = [probe, "-batch", "-timeout", f"{timeout_s:g}s", "-stdout", plan.stdout_path,
                 "-stderr", plan.stderr_path, "--"]
        perf_scope, perf_note = "", support.reason
        if protocol == "published" and support.ok:
            argv = [*timed, *perf_stat_argv(events, perf_out), *plan.argv]
            perf_scope = f"command: {plan.argv[0]} and its children"
        elif protocol == "fair" and support.ok and support.system_wide and plan.counting_cgroup:
            argv = [*perf_stat_argv(events, perf_out, plan.counting_cgroup), *timed, *plan.argv]
            perf_scope = f"cgroup {plan.counting_cgroup} (system-wide)"
        else:
            argv = [*timed, *plan.argv]
            if support.ok and protocol == "fair" and not plan.counting_cgroup:
                perf_note = f"no cgroup to count: {plan.counting_note}"
        try:
            self.target.run(["mkdir", "-p", logs])
            self.target.run(["rm", "-f", perf_out])
            r = self.target.run(argv, timeout=timeout_s + 60, check=False)
            try:
                line = json.loads(r.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                raise EdgebenchError(f"{self.name}/{plan.app}: the batch probe gave no result "
                                     f"(exit {r.exit_code}): {r.stderr[-800:]}") from None
            stdout = self.target.read_text(plan.stdout_path, missing_ok=True) or ""
            stderr = self.target.read_text(plan.stderr_path, missing_ok=True) or ""
            perf_text = self.target.read_text(perf_out, missing_ok=True) if perf_scope else None
            perf = parse_perf_csv(perf_text or "") if perf_scope else {}
            for event in events:
                if event not in perf:
                    why = support.unsupported.get(event) or perf_note or (
                        f"perf wrote no value (output: {(perf_text or r.stderr)[-200:]!r})")
                    perf[event] = Count(None, why)
            faults = (read_fault_counters(self.target, plan.counting_cgroup) if plan.counting_cgroup
                      else FaultCounters(None, None, "", plan.counting_note or "no counting cgroup"))
            faults = minus_before_launch(faults, plan.faults_before_exec)
            outcome = self.batch_outcome(plan)
        finally:
            self.stop_plan(plan)
            self._live.pop(plan.name, None)
        elapsed = line.get("elapsed_ns")
        return BatchResult(line.get("exit_code"), stdout, stderr, elapsed / 1e9 if elapsed else None,
                           sh(argv), outcome.limits_applied, outcome.details, protocol=protocol,
                           outcome=outcome,
                           start_unix_ns=line.get("start_unix_ns"), timed_out=bool(line.get("timed_out")),
                           launcher_rusage=line.get("children_rusage"), cgroup_faults=faults, perf=perf,
                           perf_scope=perf_scope, raw={"probe": r.stdout, "probe_stderr": r.stderr,
                                                       "perf": perf_text})

    # -- shared mechanics ------------------------------------------------------------
    def below_minimum(self, limits: Limits) -> bool:
        """Whether the memory asked for is below what this runtime can start anything with."""
        return limits.memory_mb is not None and limits.memory_mb < self.min_memory_mb

    def check_limits(self, app: str, limits: Limits) -> None:
        if self.below_minimum(limits):
            raise BelowMinimum(f"memory {limits.memory_mb:g} MiB is below what {self.name} can start "
                              f"{app} with (minimum {self.min_memory_mb:g} MiB); raise the memory limit")
        if limits.network is not None and limits.network not in self.network_modes:
            has = (f"it has {', '.join(self.network_modes)}" if self.network_modes
                   else "it connects services one way only: leave network unset")
            raise ConfigError(f"{self.name} has no network mode {limits.network!r}; {has}")
        cores = self.target.facts().get("cores")
        if limits.cpus is not None and cores and limits.cpus > cores:
            raise ConfigError(f"cpus={limits.cpus:g} is more than {self.target.name} has ({cores}); "
                              f"ask for at most {cores}")

    def build_for(self, requested: str | None) -> str:
        """The build mode to package with: the requested one where this runtime has it."""
        return requested if requested in self.build_modes else self.build_modes[0]

    def scratch_dir(self) -> str:
        """Where a batch program writes its files, as the program sees the path."""
        if self.shares_host_filesystem:
            return f"{self.target.workspace}/scratch/{self.run_tag}"
        return "/tmp/edgebench"

    def scratch_storage(self) -> str:
        """What holds scratch_dir() (a disk benchmark's row names it): the host's filesystem
        natively; a runtime with its own root filesystem says what backs it."""
        if self.shares_host_filesystem:
            # df names ext4 as such (`stat -f` says ext2/ext3 for all three).
            r = self.target.run(["df", "-PT", self.target.workspace], check=False)
            lines = r.stdout.strip().splitlines()
            fstype = lines[-1].split()[1] if r.ok and len(lines) > 1 else "type unknown"
            return f"host filesystem ({fstype}), {self.scratch_dir()}"
        return f"{self.name} root filesystem, {self.scratch_dir()}"

    def new_name(self, app: str) -> str:
        self._seq += 1
        return f"eb-{self.run_tag}-{self.name}-{app}-{self._seq}"

    def logs_dir(self) -> str:
        return f"{self.target.workspace}/logs/{self.run_tag}"

    def free_port(self, port: int) -> int:
        """`port`, or the next one nothing listens on: another program or another run may hold
        it (Docker would fail with "address already in use", ops refuse it)."""
        return self.target.free_port(port, PORT_TRIES)

    def ready_timeout(self, timeout_s: float) -> float:
        """How long a start on this target may take before it counts as failed (see
        EMULATED_READY_FACTOR)."""
        return timeout_s * EMULATED_READY_FACTOR if self.target.facts().get("emulated_device") else timeout_s

    def start(self, artifact: Artifact, limits: Limits, port: int,
              timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> tuple[Instance, ProbeResult]:
        """Launch through the probe (the same path for every runtime) and wait until ready, on
        `port` or, when something else holds it, the next free one (Instance.port says which). A
        start whose port was taken between the check and the bind is tried again on the next one.
        On an emulated device the timeout is `ready_timeout(timeout_s)`. An app whose configuration
        names its port (nginx's) is started on that port, whatever `port` says."""
        timeout_s = self.ready_timeout(timeout_s)
        if artifact.built.app.fixed_port:
            port = artifact.built.app.container_port
        for _ in range(PORT_RACES):
            try:
                return self._start_on(artifact, limits, port, timeout_s)
            except StartFailed as e:
                # A port free when checked can be taken before the app binds it: by an outgoing
                # connection's ephemeral port, or by another run's start.
                taken = any(words in str(e).lower() for words in PORT_TAKEN)
                if not taken or artifact.built.app.fixed_port or e.plan is None:
                    raise
                port = e.plan.port + 1
        return self._start_on(artifact, limits, port, timeout_s)

    def _start_on(self, artifact: Artifact, limits: Limits, port: int,
                  timeout_s: float) -> tuple[Instance, ProbeResult]:
        probe = place_probe(self.target)
        readiness = artifact.built.app.readiness
        if readiness is None:
            raise ConfigError(f"{artifact.app} is a {artifact.built.app.kind} program, not a service: run it with "
                              "run_batch")
        free = self.free_port(port)
        if free != port and artifact.built.app.fixed_port:
            raise ConfigError(f"{artifact.app} listens on port {port}, which its configuration names "
                              f"(apps/{artifact.app}), and something on {self.target.name} already listens there; "
                              "stop it, or change the port in that configuration and in apps.py")
        plan = self.launch_plan(artifact, limits, free)
        self._live[plan.name] = plan  # first: from here on, cleanup() knows what the plan created
        plan.readiness = readiness
        cmd = [probe, *readiness.probe_args(plan.port), "-interval", PROBE_INTERVAL, "-timeout", f"{timeout_s:g}s",
               "-stdout", plan.stdout_path, "-stderr", plan.stderr_path,
               *(["-after-launcher"] if plan.detaches else []), "--", *plan.argv]
        result = None
        try:
            if plan.detaches:
                result = self._probe_with_watchdog(cmd, plan, timeout_s)
            else:
                # The probe sees the app's own exit (it is the launcher's child), so it fails fast.
                r = self.target.run(cmd, timeout=timeout_s + 30, check=False)
                try:
                    result = ProbeResult.parse(r.stdout, r.command)
                except (ValueError, IndexError):
                    raise StartFailed(f"probe gave no result (exit {r.exit_code}): {r.stderr[-500:]}", plan) from None
            if result.error or result.ready_unix_ns is None:
                said = self.failure_reason(plan)
                thrash = self.memory_thrash(plan)
                timed_out = (result.error or "").startswith(PROBE_TIMEOUTS) and not thrash
                reason = said or result.error or "not ready"
                if said and timed_out:  # the app's last words, and that it was still going
                    reason = f"{reason} ({result.error})"
                reason = f"{reason}; {thrash}" if thrash else reason
                raise StartFailed(f"{self.name}/{plan.app} did not become ready: {reason}", plan, result,
                                  timed_out=timed_out)
            instance = self.attach(plan, result.pid)
        except BaseException:
            # The probe's pid: an app the timeout cut off is still running, and without limits
            # a native one is in no cgroup that stopping would empty.
            self.stop_plan(plan, result.pid if result is not None else None)
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
        polls = max(1, int(WATCHDOG_S / 0.02))

        def answer() -> ProbeResult | None:
            # Each call waits up to WATCHDOG_S on the target itself: no pause between calls.
            r = self.target.run(["sh", "-c", f'for i in $(seq {polls}); do [ -s "$1" ] && '
                                 '{ cat "$1"; exit 0; }; sleep 0.02; done; exit 1', "wait-probe", out],
                                check=False)
            if r.ok:
                return ProbeResult.parse(r.stdout, sh(cmd))
            died = self.died(plan)
            if died:
                raise StartFailed(f"{self.name}/{plan.app} did not become ready: {died}", plan)
            return None

        try:
            result = wait_until(answer, timeout_s + 10, 0)
        finally:
            self.target.run(["kill", "-9", str(pid)], check=False)
        if result is None:
            raise StartFailed(f"probe gave no result within {timeout_s:g} s", plan, timed_out=True)
        return result

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
        """When the app started listening, on the target's clock: by default its own reading."""
        return parse_listen_line(self.app_output(instance))

    # -- first starts: an image that is not on the device yet ---------------------
    # Why a first start does not apply ("" = it fetches its images from a registry).
    no_image_fetch: ClassVar[str] = "it has no image that a device fetches before a start"

    def publish_image(self, artifact: Artifact, registry) -> Artifact:
        """Put the artifact's image in the registry (untimed); the artifact that pulls it."""
        raise ConfigError(f"{self.name}: {self.no_image_fetch}")

    def drop_image(self, artifact: Artifact) -> None:
        """Remove the image from the device, so that the next start must fetch it."""
        raise ConfigError(f"{self.name}: {self.no_image_fetch}")

    def fetch_image(self, artifact: Artifact) -> dict:
        """Fetch the published image onto the device, timed there: {"fetch_ms", "layers_fetched",
        "layers_present", "command", "output"}."""
        raise ConfigError(f"{self.name}: {self.no_image_fetch}")

    def boot_phases(self, instance: Instance) -> dict[str, int]:
        """Phases of a start before the app listens that the runtime can time on the target's
        clock ({name: unix ns}; a VM's console lines); none by default."""
        return {}


def app_env(built: BuiltApp, limits: Limits, port: int | None = None) -> list[str]:
    """The environment every runtime gives an app, as NAME=value: its port (services), and
    GOMAXPROCS for Go when the protocol sets it (the fair protocol: the granted CPUs); a Python
    app its interpreter's paths, and THREADS (OpenCV's threads) as Go's GOMAXPROCS."""
    env = [f"PORT={port}"] if port is not None else []
    if limits.gomaxprocs and built.app.language == "go":
        env.append(f"GOMAXPROCS={limits.gomaxprocs}")
    if built.app.language == "python":
        env += python_env(built.details)
        if limits.gomaxprocs:
            env.append(f"THREADS={limits.gomaxprocs}")
    return env


def minus_before_launch(faults: FaultCounters, before: FaultCounters | None) -> FaultCounters:
    """A cgroup that already held processes before the launch (a system container's init):
    only what happened after it is the program's."""
    if before is None or faults.pgfault is None:
        return faults
    minor, major = before.pgfault or 0, before.pgmajfault or 0
    return FaultCounters(faults.pgfault - minor, faults.pgmajfault - major if faults.pgmajfault is not None else None,
                         faults.source, f"minus the {minor} faults counted in the cgroup before the launch")


def parse_listen_line(output: str) -> int | None:
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and '"listening"' in line:
            try:
                return int(json.loads(line)["unix_ns"])
            except (ValueError, KeyError, TypeError):
                return None
    return None
