"""Container overhead on an embedded board (paper 003): disk, memory bandwidth, HPC kernels and
HTTP, native against containers, with each run's energy and Energy-Delay Product (EDP) where the
device has a power meter.

Every benchmark program is the target's own binary (fio, IOZone, NPB) or one the target compiles
(apps/stream), run through `tools/steps` in each runtime, so a difference is the runtime's, not
the build's. Runtimes that run no Linux binaries (the unikernels, the Linux VM) are absent from
the disk, memory and HPC parts with that reason; the HTTP part runs wherever the app runs.

Protocols:
- `published`: the paper's tools and settings: IOZone in throughput mode (4 threads, one 100 MB
  file each, 32 KiB records: write, re-write, read, re-read) where the target has iozone; STREAM
  with 4 OpenMP threads, NTIMES=50, arrays of 25.4, 76.3 and 228.9 MiB, best rate per kernel;
  NPB with 4 threads; ab with a fixed number of requests (the paper does not give its settings).
- `fair`: fio for the same four operations (read cold: fio drops the file's cached pages first;
  re-read warm), one OpenMP thread per core bound to its core, and the same cpuset and limits for
  every runtime; ab for a fixed time after a warm-up, and wrk with the same connections beside it,
  pinned apart from the app when they share the machine.
Both protocols keep every repetition (the paper reports the mean of 5). After each ab or wrk run
one connection asks the app again (http_load.after_load): a run whose app died or stopped
answering keeps what it measured, failed.

The measuring of each family is in `container_overhead_benchmarks`; this module checks the parameters
(`Params`), opens the run and plans it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments import estimate
from edgebench.experiments.common import as_list, check_apps, check_protocols, check_repetitions, opening
from edgebench.experiments.container_overhead_benchmarks import (CROSSCHECK_MIN_S, IOZONE, PAPER_THREADS, Bench,
                                                                 Settings, measure_disk, measure_hpc, measure_memory,
                                                                 measure_network, npb_app, package_tools)
from edgebench.experiments.http_load import AFTER_RUN_S
from edgebench.experiments.parameters import Limited, library, parsed
from edgebench.targets import LocalTarget
from edgebench.tools import energy, npb, stream

EXPERIMENT = "container_overhead"
BENCHMARKS = ("disk", "memory", "hpc", "network")
EXTRA_COLUMNS = ["benchmark", "operation", "point", "tool", "threads", "npb_class", "array_mib", "storage",
                 "network", "load_tool", "connections", "duration_s", "file_mb", "window_s", "energy_meter", "build",
                 "accelerator",
                 "cpus_applied", "memory_mb_applied", "cpuset_applied", "limits_note", "note"]

PROFILE_SETTINGS = {
    "smoke": Settings(repetitions=1, file_mb=4, record_kib=32, stream_mib=(25.4,), stream_ntimes=2,
                      npb_classes=npb.PROFILE_CLASSES["smoke"], npb_benchmarks=("ep",), ab_requests=500, seconds=1,
                      connections=10, idle_s=0.5, size_files_for_window=False),
    "quick": Settings(repetitions=2, file_mb=16, record_kib=32, stream_mib=(76.3,), stream_ntimes=10,
                      npb_classes=npb.PROFILE_CLASSES["quick"], npb_benchmarks=npb.BENCHMARKS, ab_requests=2000,
                      seconds=2,
                      connections=10, idle_s=1.0),
    "standard": Settings(repetitions=5, file_mb=100, record_kib=32, stream_mib=stream.PAPER_ARRAY_MIB,
                         stream_ntimes=stream.PAPER_NTIMES, npb_classes=npb.PROFILE_CLASSES["standard"],
                         npb_benchmarks=npb.BENCHMARKS, ab_requests=10000, seconds=10, connections=10,
                         idle_s=10.0),
}


@dataclass(frozen=True)
class Params(Limited):
    EXPERIMENT: ClassVar[str] = EXPERIMENT

    repetitions: int = 0             # 0 takes the profile's
    protocols: str = "fair,published"
    benchmarks: str = "all"
    apps: str = "go-http,node-http"  # checked only where the network part runs
    cpus: str = ""                   # "" for no limit
    memory: str = ""                 # "" for no limit; with a unit
    stream_mib: str = ""             # "" takes the profile's (so do the next three)
    npb_classes: str = ""
    npb_benchmarks: str = ""
    file_mb: int = 0
    power_meter: str = "auto"
    load_generator: str = "local"
    crosscheck: bool = library(True)
    progress: bool = library(True)
    # parsed when made
    parts: list[str] = parsed()           # the benchmark families, of BENCHMARKS
    protocol_names: list[str] = parsed()
    settings: Settings = parsed()         # the profile's, with the overrides above
    reps: int = parsed()
    app_names: list[str] = parsed()       # [] without the network part

    def check(self):
        parts = check_benchmarks(self.benchmarks)
        protocol_names = check_protocols(self.protocols)
        settings = settings_for(self.profile, self.stream_mib, self.npb_classes, self.npb_benchmarks, self.file_mb)
        reps = check_repetitions(self.repetitions or settings.repetitions)
        app_names = check_apps(self.apps) if "network" in parts else []
        energy.check_spec(self.power_meter)
        self.limits()  # parsed once; refused here, before connecting
        self.set(parts=parts, protocol_names=protocol_names, settings=settings, reps=reps, app_names=app_names)


def check_benchmarks(value) -> list[str]:
    names = as_list(value, BENCHMARKS)
    wrong = [n for n in names if n not in BENCHMARKS]
    if wrong or not names:
        raise ConfigError(f"benchmarks={value!r}: choose from {', '.join(BENCHMARKS)} (or all)")
    return names


def settings_for(profile: str, stream_mib: str = "", npb_classes: str = "", npb_benchmarks: str = "",
                 file_mb: int = 0) -> Settings:
    """The profile's settings with the user's overrides ("" and 0 keep the profile's), checked
    before anything starts."""
    s = PROFILE_SETTINGS[profile]
    if stream_mib:
        try:
            sizes = tuple(float(x) for x in as_list(stream_mib, []))
        except ValueError:
            raise ConfigError(f"stream_mib={stream_mib!r}: MiB per array, such as '25.4,76.3'") from None
        if not sizes or min(sizes) <= 0:
            raise ConfigError(f"stream_mib={stream_mib!r}: positive MiB per array, such as '25.4,76.3'")
        s = replace(s, stream_mib=sizes)
    if npb_classes:
        classes = tuple(c.upper() for c in as_list(npb_classes, []))
        if not classes or any(c not in npb.CLASSES for c in classes):
            raise ConfigError(f"npb_classes={npb_classes!r}: choose from {', '.join(npb.CLASSES)}")
        s = replace(s, npb_classes=classes)
    if npb_benchmarks:
        names = tuple(n.lower() for n in as_list(npb_benchmarks, npb.BENCHMARKS))
        if not names or any(n not in npb.BENCHMARKS for n in names):
            raise ConfigError(f"npb_benchmarks={npb_benchmarks!r}: choose from {', '.join(npb.BENCHMARKS)}")
        s = replace(s, npb_benchmarks=names)
    if file_mb:
        if file_mb < 1:
            raise ConfigError(f"file_mb={file_mb!r}: whole MB per thread's file, at least 1")
        s = replace(s, file_mb=file_mb, size_files_for_window=False)
    return s


def run(params: Params) -> Path:
    """Paper 003's four benchmark families, native vs containers, with energy and EDP per run;
    writes data/container_overhead/<run_id>/ and returns that directory."""
    parts, protocol_names, app_names, s = params.parts, params.protocol_names, params.app_names, params.settings
    # A runtime that runs no Linux tool is absent from the tool parts, not refused: no limit checked per app.
    with opening(params, ["fio", "stream", *app_names], EXTRA_COLUMNS, check_limits=False) as o:
        run, tgt, cpus_v, mem_v, clip = o.run, o.target, o.cpus, o.memory_mb, o.clip
        tool_runtimes = [rt for rt in o.runtimes if rt.runs(IOZONE)]
        run.note("absent_runtimes", {rt.name: f"{rt.name} runs no Linux tool binaries (fio, STREAM, NPB): "
                                              f"only the network part runs there"
                                     for rt in o.runtimes if rt not in tool_runtimes})
        meter, reason = energy.find_meter(tgt, params.power_meter)
        idle_w = None
        if meter:
            try:
                idle_w = meter.idle_power(s.idle_s)
            except EdgebenchError as e:
                meter, reason = None, f"the power meter failed while measuring idle power: {e}"
        run.note("power_meter", {"meter": meter.describe() if meter else None, "missing_reason": reason,
                                 "idle_w": idle_w, "idle_s": s.idle_s})
        b = Bench(run, tgt, tool_runtimes, o.runtimes, s, protocol_names, params.reps, o.cores, cpus_v, mem_v, clip,
                  meter, reason or "", idle_w, params.progress)
        if "disk" in parts and tool_runtimes:
            apps_needed = ["fio"] * ("fair" in protocol_names) + [IOZONE] * ("published" in protocol_names)
            measure_disk(b, package_tools(b, apps_needed))
        if "memory" in parts and tool_runtimes:
            measure_memory(b, package_tools(b, ["stream"]), params.crosscheck)
        if "hpc" in parts and tool_runtimes:
            found, missing = npb.find_binaries(tgt, list(s.npb_benchmarks), list(s.npb_classes))
            run.note("npb", {"version": npb.VERSION, "found": {f"{k[0]}.{k[1]}": v for k, v in found.items()},
                             "missing": {f"{k[0]}.{k[1]}": v for k, v in missing.items()}})
            apps_found = [npb_app(bench, cls, path) for (bench, cls), path in found.items()]
            measure_hpc(b, list(s.npb_benchmarks), list(s.npb_classes), package_tools(b, apps_found), missing)
        if "network" in parts:
            measure_network(b, app_names, params.load_generator)
        return run.dir


# Rough costs on the reference machine (2 cores), for the run plan only: fio's throughput over
# all threads, STREAM's bandwidth, one NPB kernel per class with OpenMP on every core, ab's rate.
PLAN_DISK_MB_PER_S = 400.0
PLAN_STREAM_MB_PER_S = 20000.0
PLAN_NPB_S = {"S": 0.3, "W": 3.0, "A": 30.0}
PLAN_AB_RPS = 4000.0


def plan(params: Params, runtimes: list[str]) -> estimate.Work:
    """Disk (four fio operations), STREAM per array size, each NPB kernel and class present on
    the target, and ab (with wrk beside it, fair) per app and network mode."""
    parts, protocols, s, reps = params.parts, params.protocol_names, params.settings, params.reps
    tools = [r for r in runtimes if r in estimate.TOOL_RUNTIMES]
    points, seconds, levels = 0, estimate.SESSION_S + s.idle_s, []
    windows = s.idle_s  # of seconds, the set times a slower device does not stretch
    runs = reps * len(protocols)
    if "disk" in parts:
        # fio's four operations over PAPER_THREADS files (published: IOZone, only where installed),
        # each at least the profile's window under fair, after one calibration run.
        window = s.seconds if s.size_files_for_window else 0
        per_run = 4 * (max(PAPER_THREADS * s.file_mb / PLAN_DISK_MB_PER_S, window) + 1)
        points += runs * len(tools)  # one point measures all four operations
        seconds += estimate.model_seconds(tools, 1, runs, per_run * reps * ("fair" in protocols)) - estimate.SESSION_S
        windows += estimate.window_seconds(tools, 4 * window * reps * ("fair" in protocols))
        levels.append(f"disk {s.file_mb} MB x {PAPER_THREADS}")
    if "memory" in parts:
        per_size = [10 * s.stream_ntimes * mib * 1.048576 / PLAN_STREAM_MB_PER_S + 1 for mib in s.stream_mib]
        points += len(s.stream_mib) * runs * len(tools)
        seconds += (estimate.model_seconds(tools, 1, runs * len(s.stream_mib), sum(per_size) * runs)
                    - estimate.SESSION_S)
        seconds += 2 * CROSSCHECK_MIN_S + 4  # stress-ng and sysbench once, natively
        windows += 2 * CROSSCHECK_MIN_S
        levels.append(f"STREAM {','.join(f'{m:g}' for m in s.stream_mib)} MiB")
    if "hpc" in parts:
        kernels = [(b, c) for c in s.npb_classes for b in s.npb_benchmarks]
        if str(params.target) in ("local", "localhost", ""):
            kernels = list(npb.find_binaries(LocalTarget(), list(s.npb_benchmarks), list(s.npb_classes))[0])
        points += len(kernels) * runs * len(tools)
        seconds += estimate.model_seconds(tools, 0, runs * len(kernels), sum(PLAN_NPB_S[c] for _, c in kernels) * runs)
        seconds -= estimate.SESSION_S
        levels.append(f"NPB {len(kernels)} binaries ({','.join(s.npb_classes)})")
    apps = []
    if "network" in parts:
        apps = params.app_names
        modes = sum(2 if r == "docker" else 1 for r in runtimes)
        # warm-up, ab, wrk, and the second after each that checks the app still answers
        fair = (1 + 2 * s.seconds + 2 * AFTER_RUN_S) * reps if "fair" in protocols else 0
        published = (s.ab_requests / PLAN_AB_RPS + AFTER_RUN_S) * reps if "published" in protocols else 0
        points += runs * sum((2 if r == "docker" else 1) * len(estimate.runnable(r, apps)) for r in runtimes)
        seconds += len(apps) * (modes * (fair + published + runs * 0.5)
                                + sum(estimate.RUNTIME_COST_S.get(r, (5, 0))[0] for r in runtimes))
        windows += len(apps) * modes * 2 * s.seconds * reps * ("fair" in protocols)  # ab and wrk, each timed
        levels.append("ab")
    return estimate.Work(points=points, seconds=seconds, apps=apps, levels="; ".join(levels), repetitions=reps,
                         window_s=windows)
