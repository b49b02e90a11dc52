"""Boot time, split (paper 002, Unikraft's Fig. 3): where the time from launch to ready goes.

Every start is the fair protocol of time to ready (the probe on the target takes the clock just
before it spawns the launch command and polls the port every <= 1 ms), and every event after it
is a reading of the host's clock, never the guest's:
- a VM's console lines, stamped by `probe -stamp` as they reach the host (linux-vm:
  `boot_events`): firmware_start (SeaBIOS's first line: QEMU is up), firmware_handover (its
  jump to the kernel), kernel_first_output (the kernel's early console: decompression is
  behind it), guest_init (/init runs: the kernel is booted), app_exec (the app is started);
- listen: the app's listening line (its own reading where its clock is the target's, else where
  the line reached the host);
- ready: the probe's first HTTP 200.

Rows: `event_<name>` (ms since launch) for every event a start showed, and `phase_<name>`, the
time from the previous event the start showed to that one (column `phase_from`), so each
start's phases add up to its time to ready whatever its runtime could show. For a VM, paper
002's split: `vmm_part` (launch to the firmware's hand-over: QEMU and its firmware),
`guest_part` (hand-over to the app's start, the paper's "first guest instruction to main()")
and `total_boot` (launch to the app's start); missing with the reason where the console does not
show the hand-over (microvm's qboot prints nothing, nor does the firmware of the QEMU ops runs for
Nanos: its first event is Nanos' own first line).

linux-vm runs once per machine type in `machines` (pc, microvm). Under TCG (here) a VM's
kernel runs emulated: seconds where KVM takes milliseconds; every VM row says which.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from edgebench.apps import HTTP_APPS, place_probe
from edgebench.errors import ConfigError
from edgebench.experiments import estimate
from edgebench.experiments.common import (Opening, check_apps, opening, check_profile, check_repetitions, run_tag_for)
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.experiments.protocols import with_instance
from edgebench.experiments.sweep import Point, artifact_for, sweep
from edgebench.results import Run
from edgebench.runtimes import RUNTIMES, Limits, Runtime, StartFailed
from edgebench.runtimes.vm import VmRuntime

EXPERIMENT = "boot_time"
EXTRA_COLUMNS = ["machine", "phase_from", "build", "network", "accelerator", "cpus_applied", "memory_mb_applied",
                 "cpuset_applied", "limits_note"]
# In boot order; "launch" is the probe's clock reading before it spawns the launch command.
EVENTS = ("launch", "firmware_start", "firmware_handover", "kernel_first_output", "guest_init", "app_exec",
          "listen", "ready")
READY_TIMEOUT_S = 90  # a TCG boot takes ~8 s here; a stalled one fails at this
PORT_BASE = 18400


@dataclass(frozen=True)
class Params(Limited):
    EXPERIMENT: ClassVar[str] = EXPERIMENT
    SMOKE: ClassVar[dict] = {**Limited.SMOKE, "machines": "default"}  # each VM runtime's own machine

    apps: str = "go-http"
    machines: str = "pc,microvm"  # QEMU machine types for the VM runtimes ("default": each one's own)
    repetitions: int = 0          # starts per app and runtime; 0 takes the profile's
    cpus: str = "1"
    memory: str = "256m"
    docker_build: str = "offline"
    require_kvm: bool = False
    progress: bool = library(True)
    nanos_accel: str | None = library()
    # parsed when made
    app_names: list[str] = parsed()
    reps: int = parsed()
    machine_names: list[str] = parsed()  # ["default"] when none is named

    def check(self):
        reps = check_repetitions(self.repetitions or check_profile(self.profile)["repetitions"])
        app_names = check_apps(self.apps, HTTP_APPS)
        self.limits()  # parsed once; refused here, before connecting
        # A machine no VM runtime offers is refused once the target's architecture is known (machine_variants).
        machine_names = [m.strip() for m in self.machines.split(",") if m.strip()] or ["default"]
        self.set(app_names=app_names, reps=reps, machine_names=machine_names)


def phases(events: dict[str, float]) -> list[tuple[str, str, float]]:
    """[(phase = the event it ends at, the event it starts from, ms)] between consecutive events
    the start showed, in boot order; they add up to launch -> the last event."""
    seen = [(name, events[name]) for name in EVENTS if name in events]
    return [(name, prev, at - prev_at) for (prev, prev_at), (name, at) in zip(seen, seen[1:])]


def paper_split(events: dict[str, float]) -> dict[str, float | str]:
    """Paper 002's split of a VM's boot: vmm_part (launch to the firmware's hand-over),
    guest_part (hand-over to the app's start) and total_boot (launch to the app's start); a
    reason string where the console did not show the events one needs."""
    no_exec = "the console showed no app start (the guest's /init line; ops-run guests have none)"
    no_handover = "the console showed no firmware hand-over (qboot and ops-run guests print none)"
    split: dict[str, float | str] = {
        "vmm_part": events["firmware_handover"] - events["launch"] if "firmware_handover" in events else no_handover,
        "guest_part": (no_handover if "firmware_handover" not in events else
                       events["app_exec"] - events["firmware_handover"] if "app_exec" in events else no_exec),
        "total_boot": events["app_exec"] - events["launch"] if "app_exec" in events else no_exec}
    return split


def start_events(run: Run, rt: Runtime, artifact, limits: Limits, port: int, row: dict) -> None:
    """One start: its events and phases as rows, then stop it."""
    try:
        instance, probe = rt.start(artifact, limits, port, timeout_s=READY_TIMEOUT_S)
    except StartFailed as e:
        if e.probe:
            run.save_raw(f"probe-{row['app']}-{row['runtime']}-{row['machine'] or 'host'}-rep{row['rep']}",
                         command=e.probe.command, stdout=e.probe.raw)
        run.failed(metric="time_to_ready", unit="ms", error=str(e), **row)
        return
    try:
        start = probe.start_unix_ns
        marks = dict(rt.boot_phases(instance))
        listen = rt.listen_unix_ns(instance)
        row = with_instance(row, limits, instance)
        console = getattr(rt, "console_lines", None)
        run.save_raw(f"probe-{row['app']}-{row['runtime']}-{row['machine'] or 'host'}-rep{row['rep']}",
                     command=probe.command, stdout=probe.raw, app_stdout=rt.app_output(instance),
                     console_stamps=console(instance.plan) if console else None, boot_events=marks,
                     instance_details=instance.details)
        if listen is not None and start <= listen <= probe.ready_unix_ns:
            marks["listen"] = listen
        elif rt.foreign_clock:
            run.not_measurable(metric="event_listen", unit="ms", why=rt.foreign_clock, **row)
        else:
            run.failed(metric="event_listen", unit="ms", error=(
                "the app printed no listening line" if listen is None else
                "the app's listening reading lies outside the probe's span: its clock is not the target's"), **row)
        marks["ready"] = probe.ready_unix_ns
        events = {"launch": 0.0, **{name: (ns - start) / 1e6 for name, ns in marks.items()
                                    if start <= ns <= probe.ready_unix_ns}}
        run.add(metric="time_to_ready", value=events["ready"], unit="ms", **row)
        for name in EVENTS[1:]:
            if name in events:
                run.add(metric=f"event_{name}", value=events[name], unit="ms", **row)
        for name, prev, ms in phases(events):
            run.add(metric=f"phase_{name}", value=ms, unit="ms", phase_from=prev, **row)
        if isinstance(rt, VmRuntime):
            for metric, value in paper_split(events).items():
                if isinstance(value, str):  # what this machine's console prints, not a fault
                    run.not_measurable(metric=metric, unit="ms", why=value, **row)
                else:
                    run.add(metric=metric, value=value, unit="ms", **row)
    finally:
        rt.stop(instance)


def machine_variants(selection_runtimes: list[Runtime], wanted: list[str], run_id: str) -> list[Runtime]:
    """The runtimes to measure: each as selected, and a VM runtime once more per further machine
    type it offers (linux-vm: pc and microvm; unikraft: pc only). A machine no VM runtime knows
    is refused before anything starts."""
    vms = [rt for rt in selection_runtimes if hasattr(rt, "machine")]
    if vms:
        arch = vms[0].target.facts().get("arch") or "x86_64"
        known = {m for cls in RUNTIMES.values() if hasattr(cls, "machines_for") for m in cls.machines_for(arch)}
        unknown = [m for m in wanted if m != "default" and m not in known]
        if unknown:
            raise ConfigError(f"machines {', '.join(unknown)} unknown on {arch}; the VM runtimes offer "
                              f"{', '.join(sorted(known))} (or 'default')")
    out = []
    for rt in selection_runtimes:
        if rt not in vms:
            out.append(rt)
            continue
        for m in wanted:
            if m in ("default", rt.machine):
                out.append(rt)
            elif m in type(rt).machines_for(rt._arch()):
                out.append(type(rt)(rt.target, run_tag_for(run_id), **rt.options(), machine=m))
    return list(dict.fromkeys(out))


def run(params: Params) -> Path:
    """Start every (app, runtime[, machine]) `repetitions` times, runtimes interleaved; writes
    data/boot_time/<run_id>/ and returns that directory."""
    app_names, measured = params.app_names, []

    def variants(o: Opening) -> None:  # refuses an unknown machine, before the run opens
        measured.extend(machine_variants(o.runtimes, params.machine_names, o.run_id))
        for rt in measured:
            for app in app_names:
                rt.check_limits(app, o.limits("fair"))

    with opening(params, app_names, EXTRA_COLUMNS, check_limits=False, before=variants) as o:
        run, limits = o.run, o.limits("fair")
        try:
            run.note("limits", limits.as_dict())
            place_probe(o.target)
            artifacts = o.package(app_names, params.docker_build)
            ports = itertools.count()

            def row_for(p: Point) -> dict:
                return dict(app=p.inner, runtime=p.runtime.name, machine=getattr(p.runtime, "machine", ""),
                            protocol="fair", rep=p.rep, cpus=limits.cpus, memory_mb=limits.memory_mb,
                            limits_note=o.clip, build=o.build_of(p.inner, p.runtime))

            def measure(p: Point, row: dict) -> None:
                artifact = artifact_for(artifacts, p.inner, p.runtime)
                start_events(run, p.runtime, artifact, limits, PORT_BASE + next(ports) % 200, row)

            sweep(run, measured, reps=params.reps, inner=app_names, row_for=row_for, measure=measure,
                  failed=("time_to_ready", "ms"), desc="boot time", progress=params.progress)
            return run.dir
        finally:
            for rt in measured:
                if rt not in o.runtimes:
                    rt.cleanup()


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """One start per (runtime[, machine], app, repetition); each app packaged once per runtime."""
    apps, reps, machines = params.app_names, params.reps, params.machine_names
    variants = [rt for name in runtimes for rt in ([name] * len(machines) if name == "linux-vm" else [name])]
    points, seconds = 0, estimate.SESSION_S
    for name in variants:
        points += len(estimate.runnable(name, apps)) * reps
        seconds += estimate.model_seconds([name], len(apps), len(apps) * reps, 0, apps) - estimate.SESSION_S
    return estimate.Work(points=points, seconds=seconds, apps=apps,
                         levels=f"linux-vm machines {','.join(machines)}", repetitions=reps)
