"""Time to ready (paper 000, Fig. 3): from issuing the launch to the first HTTP 200.

Two protocols, recorded in the `protocol` column:
- `fair`: the probe on the target takes the clock just before it spawns the launch command and
  polls the port every <= 1 ms with plain sockets (no process per poll). Artifacts are built
  beforehand. The app's own clock reading at listen time splits the launch into "until the
  app listens" and "until the probe sees it". The same limits, pinning and GOMAXPROCS for all.
- `published`: the artifact's method: `date +%s%3N`, the launch command, then `curl` every
  50 ms until it succeeds, `date +%s%3N` again. Only `--cpus`/`--memory`, Go's default
  GOMAXPROCS.

Warm and cold starts, in the `cache` column (reported apart, never averaged together): a `cold` start of the
fair protocol is launched right after the target's page cache was dropped (`sync`, then
`echo 3 > /proc/sys/vm/drop_caches`, as root or through passwordless sudo), so the runtime's own
programs (dockerd's shims, runc, QEMU), the image's layers or the app's binary come from the
storage again; every other start is `warm`. Each fair start records the page cache just before
its launch (`page_cache_mb_at_launch`; `page_cache_dirty_mb_at_launch` the part of it not yet on
disk, which no drop removes: a writer beside the start) and its process's major faults at ready
(`major_faults_at_ready`: pages read from the storage). A target where the cache cannot be
dropped fails its cold rows with the reason. The published protocol is the artifact's warm
method only.

A `first` start (paper 001: a device that starts a service it has never run) begins with the
image absent: it is removed from the device (every tag), pulled from a registry on the
load-generator host (`registry`: Debian's docker-registry over TLS, edgebench.runtimes.image_registry), then
started like a fair start. Its rows add the pull (`image_pull`, timed on the device, with the
layers it fetched), `first_start` (pull plus time to ready) and, measured after the start on the
same path, the pull's two parts alone: the layers' transfer (`image_transfer`) and their gzip
decompression and extraction (`image_unpack`). LXD's first start is its base image (the
debootstrap import tarballs, kept in the registry as blobs): removed from LXD, fetched with curl
(`image_transfer`) and `lxc image import`ed (`image_unpack`: LXD stores and hashes it; the dir
pool unpacks a root filesystem at every container's creation, untimed in every LXD start), one
after the other. Runtimes without images to fetch (native, a VM's disk built on the device) have
no first starts; the run's notes say so.
"""

from __future__ import annotations

import contextlib
import itertools
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from edgebench.experiments import estimate
from edgebench.apps import HTTP_APPS, place_probe
from edgebench.errors import ConfigError, MissingTool
from edgebench.experiments.common import (PROFILES, Opening, as_list, check_apps, check_protocols,
                                          check_repetitions, opening)
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.protocols import with_instance, with_limits_note
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.runtimes.image_registry import check_registry_host, registry_host, serving, transfer_and_unpack
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Limits, Runtime, StartFailed
from edgebench.targets import Target, sh

EXPERIMENT = "time_to_ready"
EXTRA_COLUMNS = ["cache", "build", "network", "accelerator", "cpus_applied", "memory_mb_applied", "cpuset_applied",
                 "limits_note"]
PUBLISHED_POLL_S = 0.05
READY_TIMEOUT_S = 60
PORT_BASE = 18080
PORT_SPAN = 200

# The artifact's timing loop, bounded so a never-ready app cannot hang the run.
_PUBLISHED_SCRIPT = r"""
url=$1; detaches=$2; shift 2
start=$(date +%s%3N)
if [ "$detaches" = 1 ]; then "$@" >/dev/null 2>"$EB_ERR" || { echo "launch-failed $start"; exit 3; }; pid=
else "$@" >"$EB_OUT" 2>"$EB_ERR" </dev/null & pid=$!; fi
n=0
until curl -sf -o /dev/null "$url"; do
  n=$((n+1)); [ $n -gt $EB_MAX_POLLS ] && { echo "timeout $start $pid"; exit 2; }
  sleep __POLL__
done
end=$(date +%s%3N)
echo "ready $start $end $pid $n"
""".replace("__POLL__", str(PUBLISHED_POLL_S))


CACHES = ("warm", "cold", "first")
OUTSIDE_LIMITS = "measured outside the app's limits (before its start, or apart from it)"
FIRST_EXTRA_S = 1.5  # the plan's cost of removing, pulling and separately fetching and unpacking an image
COLD_EXTRA_S = 1.0  # the plan's cost of a drop and the cold reads, per cold start
_DROP_PAGE_CACHE = "sync && echo 3 > /proc/sys/vm/drop_caches"


def drop_page_cache(target) -> str | None:
    """Drop the target's page cache (dentries and inodes too); None, or why it could not."""
    r = target.run(["sh", "-c", _DROP_PAGE_CACHE], timeout=300, check=False)
    if r.ok:
        return None
    if target.which("sudo"):
        r = target.run(["sudo", "-n", "sh", "-c", _DROP_PAGE_CACHE], timeout=300, check=False)
        if r.ok:
            return None
    return (f"cannot drop the page cache on {target.name} ({(r.stderr or r.stdout).strip()[-200:] or r.exit_code}): "
            "cold starts need root there, or passwordless sudo; or set caches='warm'")


def major_faults(target, pid: int | None) -> int | None:
    """Major page faults of the started process so far (/proc/PID/stat's majflt): the pages it
    had to read from the storage, the physical mark of a cold start (a warm one finds them in the
    page cache). For a VM the process is QEMU, for a container its main process; None where the
    target does not show it."""
    if not pid:
        return None
    text = target.read_text(f"/proc/{pid}/stat", missing_ok=True) or ""
    fields = text.rpartition(")")[2].split()
    return int(fields[9]) if len(fields) > 9 and fields[9].isdigit() else None


def page_cache_at_launch(target) -> tuple[float | None, float | None]:
    """The target's page cache (/proc/meminfo's Cached) in MiB, a cold start's condition read just
    before its launch (and a warm one's, for contrast), and the part of it dirty or being written
    back, read at the same instant: no drop removes pages not yet on disk, so a writer beside a
    cold start (another program, a VM) shows here rather than as a cache the drop missed."""
    kib = {}
    for line in (target.read_text("/proc/meminfo", missing_ok=True) or "").splitlines():
        name, _, rest = line.partition(":")
        if rest.split() and rest.split()[0].isdigit():
            kib[name] = int(rest.split()[0])
    cached = kib["Cached"] / 1024 if "Cached" in kib else None
    dirty = (kib["Dirty"] + kib["Writeback"]) / 1024 if "Dirty" in kib and "Writeback" in kib else None
    return cached, dirty


def check_caches(value) -> list[str]:
    names = as_list(value, list(CACHES))
    wrong = [c for c in names if c not in CACHES]
    if wrong or not names:
        raise ConfigError(f"caches={value!r}: use any of {', '.join(CACHES)} (a list such as 'warm,cold')")
    return names


@dataclass(frozen=True)
class Params(Limited):
    """The parameters of notebook 02."""
    EXPERIMENT: ClassVar[str] = EXPERIMENT
    SMOKE: ClassVar[dict] = {**Limited.SMOKE, "caches": "warm"}

    apps: str = "all"
    repetitions: int = 0                # 0 takes the profile's
    protocols: str = "fair,published"
    caches: str = "warm,cold,first"
    cpus: str = "8"                     # "" for no CPU limit
    memory: str = "2048m"               # "" for no memory limit
    registry: str = field(default="local", metadata={"also": Target})  # or a connected Target (Python callers)
    docker_build: str = "offline"
    require_kvm: bool = False
    progress: bool = library(True)
    nanos_accel: str | None = library()
    # parsed when made
    app_names: list[str] = parsed()
    protocol_names: list[str] = parsed()
    cache_names: list[str] = parsed()
    reps: int = parsed()

    def check(self):
        self.set(reps=check_repetitions(self.repetitions or PROFILES[self.profile]["repetitions"]),
                 app_names=check_apps(self.apps, HTTP_APPS), protocol_names=check_protocols(self.protocols),
                 cache_names=check_caches(self.caches))
        self.limits()  # parsed once, refused here before connecting; run() clips them to the target


def measure_fair(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict) -> tuple[float, dict] | None:
    """One fair start: its time to ready in ms and its row with the limits read back from the
    running app, or None when it failed (a failed row says why)."""
    try:
        instance, probe = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        if e.probe:
            run.save_raw(f"probe-{row['app']}-{rt.name}-rep{row['rep']}", command=e.probe.command,
                         stdout=e.probe.raw)
        run.failed(metric="time_to_ready", unit="ms", error=str(e), **row)
        return None
    try:
        output = rt.app_output(instance)
        listen_ns = rt.listen_unix_ns(instance)
        run.save_raw(f"probe-{row['app']}-{rt.name}-rep{row['rep']}", command=probe.command, stdout=probe.raw,
                     app_stdout=output, limits_applied=instance.limits_applied,
                     instance_details=instance.details)
        row = with_instance(row, limits, instance)
        run.add(metric="time_to_ready", value=probe.ready_after_ns / 1e6, unit="ms", **row)
        if probe.first_connect_unix_ns:
            run.add(metric="time_to_first_connect", unit="ms",
                    value=(probe.first_connect_unix_ns - probe.start_unix_ns) / 1e6, **row)
        if rt.foreign_clock:  # the app's clock is the guest's: nothing to compare it with here
            run.not_measurable(metric="time_to_listen", unit="ms", why=rt.foreign_clock, **row)
            run.not_measurable(metric="probe_lag", unit="ms", why=rt.foreign_clock, **row)
        elif listen_ns is None:
            why = "the app printed no listening line"
            run.failed(metric="time_to_listen", unit="ms", error=why, **row)
            run.failed(metric="probe_lag", unit="ms", error=why, **row)
        elif not probe.start_unix_ns <= listen_ns <= probe.ready_unix_ns:
            # A VM's guest clock is its own: a reading outside the probe's span is not comparable.
            run.failed(metric="time_to_listen", unit="ms", error=(
                f"the app's clock reading ({listen_ns}) lies outside the probe's span "
                f"({probe.start_unix_ns}..{probe.ready_unix_ns}): its clock is not the target's"), **row)
        else:
            run.add(metric="time_to_listen", value=(listen_ns - probe.start_unix_ns) / 1e6, unit="ms", **row)
            run.add(metric="probe_lag", value=(probe.ready_unix_ns - listen_ns) / 1e6, unit="ms", **row)
        for phase, ns in rt.boot_phases(instance).items():
            run.add(metric=f"time_to_{phase}", value=(ns - probe.start_unix_ns) / 1e6, unit="ms", **row)
        run.add(metric="probe_attempts", value=probe.attempts, unit="count", **row)
        faults = major_faults(rt.target, instance.pid)
        if faults is not None:
            run.add(metric="major_faults_at_ready", value=faults, unit="count", **row)
        return probe.ready_after_ns / 1e6, row
    finally:
        rt.stop(instance)


def outside_limits(row: dict) -> dict:
    """A row of the point that was not measured on the limited app (the page cache before its start,
    the image pull): it carries the point's asked limits, and says they were not in force."""
    return with_limits_note(row, OUTSIDE_LIMITS)


def pull_image(run: Run, rt: Runtime, published, row: dict) -> dict:
    """Remove the image from the device, then pull it (a first start's first part): what
    Runtime.fetch_image says."""
    row = outside_limits(row)
    rt.drop_image(published)
    pulled = rt.fetch_image(published)
    run.save_raw(f"pull-{row['app']}-{rt.name}-rep{row['rep']}", command=pulled["command"], stdout=pulled["output"])
    run.add(metric="image_pull", value=pulled["fetch_ms"], unit="ms", **row)
    run.add(metric="layers_fetched", value=pulled["layers_fetched"], unit="count", **row)
    run.add(metric="layers_present", value=pulled["layers_present"], unit="count", **row)
    return pulled


def measure_pull_parts(run: Run, rt: Runtime, published, registry, row: dict, pulled: dict) -> None:
    """The pull's transfer and unpacking: timed within the fetch where the runtime's fetch is the
    two in sequence (LXD: curl, then lxc image import), else each alone, measured after the start
    so it is not disturbed (Docker's pull does both at once, layer by layer)."""
    row = outside_limits(row)
    parts = pulled.get("parts") or transfer_and_unpack(registry, published.ref,
                                                       f"{rt.target.workspace}/first-start-layers")
    run.save_raw(f"layers-{row['app']}-{rt.name}-rep{row['rep']}", command=parts["command"], stdout=parts["output"])
    run.add(metric="image_transfer", value=parts["transfer_ms"], unit="ms", **row)
    run.add(metric="image_unpack", value=parts["unpack_ms"], unit="ms", **row)
    run.add(metric="image_compressed", value=parts["compressed_bytes"] / 2**20, unit="MiB", **row)


def published_command(launch, timeout_s: float = READY_TIMEOUT_S) -> str:
    """The artifact's timing loop around a launch plan. Prints `ready START END PID POLLS`
    (milliseconds from `date +%s%3N`), `timeout START PID` or `launch-failed START`."""
    return (f"EB_OUT={shlex.quote(launch.stdout_path)} EB_ERR={shlex.quote(launch.stderr_path)} "
            f"EB_MAX_POLLS={int(timeout_s / PUBLISHED_POLL_S)} "
            + sh(["sh", "-c", _PUBLISHED_SCRIPT, "published-ttr", launch.ready_url,
                  "1" if launch.detaches else "0", *launch.argv]))


def measure_published(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict) -> None:
    launch = rt.published_launch_plan(artifact, limits, rt.free_port(port))
    launch.readiness = artifact.built.app.readiness or launch.readiness
    timeout_s = rt.ready_timeout(READY_TIMEOUT_S)  # longer on an emulated device, as for the fair starts
    script = published_command(launch, timeout_s)
    pid = None
    try:
        r = rt.target.run(script, timeout=timeout_s + 30, check=False)
        run.save_raw(f"published-{row['app']}-{rt.name}-rep{row['rep']}", command=script,
                     stdout=r.stdout, stderr=r.stderr, exit_code=r.exit_code)
        fields = r.stdout.split()
        if fields and fields[0] == "ready":
            start, end = int(fields[1]), int(fields[2])
            pid = int(fields[3]) if len(fields) > 4 and fields[3] else None
            instance = rt.attach(launch, pid)
            pid = instance.pid  # what the runtime resolved the launch to (the app, or its VMM)
            run.add(metric="time_to_ready", value=float(end - start), unit="ms",
                    **with_instance(row, limits, instance))
        else:
            reason = rt.failure_reason(launch) or r.stdout.strip() or r.stderr.strip()[-300:]
            run.failed(metric="time_to_ready", unit="ms", error=f"not ready: {reason}", **row)
            if len(fields) > 2 and fields[2].isdigit():
                pid = int(fields[2])
    finally:
        rt.stop_plan(launch, pid)


def start_kinds(protocols: list[str], caches: list[str]) -> list[tuple[str, str]]:
    """(protocol, cache) of each start: the fair protocol warm and/or cold, the published warm."""
    return [(p, c) for p in protocols for c in (caches if p == "fair" else ["warm"])]


def run(params: Params) -> Path:
    """Measure every (app, runtime, protocol[, cache]) `repetitions` times, runtimes interleaved;
    write data/time_to_ready/<run_id>/ and return that directory."""
    app_names, protocol_names, cache_names = params.app_names, params.protocol_names, params.cache_names

    def check_tools(o: Opening) -> None:
        if "published" in protocol_names and not o.target.which("curl"):
            raise MissingTool("curl", f"the published protocol polls with curl, which {o.target.name} lacks; install "
                              "curl there or set protocols='fair'")
        if "first" in cache_names and any(not rt.no_image_fetch for rt in o.runtimes):
            with registry_host(o.target, params.registry) as host:  # before minutes of packaging, not after
                check_registry_host(host)

    with opening(params, app_names, EXTRA_COLUMNS, before=check_tools) as o:
        run, tgt = o.run, o.target
        limits = {protocol: o.limits(protocol) for protocol in ("fair", "published")}
        run.note("limits", {k: v.as_dict() for k, v in limits.items()})
        place_probe(tgt)
        artifacts = o.package(app_names, params.docker_build)
        ports = itertools.count(1)
        fetching = [rt for rt in o.runtimes if not rt.no_image_fetch] if "first" in cache_names else []
        if "first" in cache_names:
            run.note("no_first_starts", {rt.name: rt.no_image_fetch for rt in o.runtimes if rt not in fetching})
        stack = contextlib.ExitStack()
        published, image_registry = {}, None
        if fetching:
            host = stack.enter_context(registry_host(tgt, params.registry))
            # Named after the run's tag as the runtimes name what they start (tags.py).
            image_registry = stack.enter_context(serving(host, tgt, fetching[0].run_tag))
            run.note("registry", image_registry.describe())
            for rt in fetching:
                for app in app_names:
                    if (app, rt.name) in artifacts:
                        published[(app, rt.name)] = rt.publish_image(artifacts[(app, rt.name)], image_registry)

        def row_for(p: Point) -> dict:
            protocol, cache = p.protocol
            return dict(app=p.inner, runtime=p.runtime.name, protocol=protocol, cache=cache, rep=p.rep,
                        cpus=limits[protocol].cpus, memory_mb=limits[protocol].memory_mb,
                        limits_note=o.clip, build=o.build_of(p.inner, p.runtime))

        def measure(p: Point, row: dict) -> None:
            protocol, cache = p.protocol
            artifact = artifact_for(artifacts, p.inner, p.runtime)
            port = PORT_BASE + next(ports) % PORT_SPAN
            if cache == "cold":
                why = drop_page_cache(tgt)
                if why:
                    run.failed(metric="time_to_ready", unit="ms", error=why, **row)
                    return
            pulled = None
            if cache == "first":
                artifact = artifact_for(published, p.inner, p.runtime)
                pulled = pull_image(run, p.runtime, artifact, row)
            if protocol == "fair":
                cached, dirty = page_cache_at_launch(tgt)
                if cached is not None:
                    run.add(metric="page_cache_mb_at_launch", value=cached, unit="MiB", **outside_limits(row))
                if dirty is not None:
                    run.add(metric="page_cache_dirty_mb_at_launch", value=dirty, unit="MiB", **outside_limits(row))
            how = measure_fair if protocol == "fair" else measure_published
            started = how(run, p.runtime, artifact, limits[protocol], port, row)
            if cache == "first":
                if started is not None:  # its start ran under the limits read back in its row
                    ready_ms, started_row = started
                    run.add(metric="first_start", value=pulled["fetch_ms"] + ready_ms, unit="ms", **started_row)
                measure_pull_parts(run, p.runtime, artifact, image_registry, row, pulled)

        with stack:
            sweep(run, o.runtimes, reps=params.reps, inner=app_names,
                  protocols=start_kinds(protocol_names, cache_names), row_for=row_for, measure=measure,
                  failed=("time_to_ready", "ms"), desc="time to ready", progress=params.progress,
                  applies=lambda p: p.protocol[1] != "first" or p.runtime in fetching)
        return run.dir


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """One start per (runtime, app, protocol, repetition); each app packaged once per runtime."""
    apps, protocols, caches, reps = params.app_names, params.protocol_names, params.cache_names, params.reps
    kinds = start_kinds(protocols, caches)
    per_cache = {c: len(apps) * sum(k == c for _, k in kinds) * reps for c in CACHES}
    starts = len(apps) * len(kinds) * reps
    # A cold start first syncs and drops the cache (~0.5 s here), then reads everything back; a
    # first start (runtimes with images only) removes, pulls, and fetches and unpacks once more.
    fetching = {n for n in runtimes if n in RUNTIMES and not RUNTIMES[n].no_image_fetch}
    seconds = estimate.SESSION_S + (2.0 if fetching and per_cache["first"] else 0.0)  # the registry's start
    points = 0
    for name in runtimes:
        own = starts - (0 if name in fetching else per_cache["first"])
        extra = per_cache["cold"] * COLD_EXTRA_S + (per_cache["first"] * FIRST_EXTRA_S if name in fetching else 0)
        seconds += estimate.model_seconds([name], len(apps), own, extra, apps) - estimate.SESSION_S
        points += round(own * estimate.app_share(name, apps))
    return estimate.Work(points=points, seconds=seconds, apps=apps,
                         levels=f"protocols {','.join(protocols)}; caches {','.join(caches)}", repetitions=reps)
